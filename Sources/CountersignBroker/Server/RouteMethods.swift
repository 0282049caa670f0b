import HTTPTypes
import Hummingbird

/// The methods each route answers, to tell a request for a path that
/// exists under other methods (405, with `Allow`) from one for no path at
/// all (404).
struct RouteMethods: Sendable {
    private let routes: [(path: RouterPath, methods: [HTTPRequest.Method])]

    init(_ descriptions: [Router<BrokerRequestContext>.RouteDescription]) {
        var routes: [(path: RouterPath, methods: [HTTPRequest.Method])] = []
        for description in descriptions {
            if let index = routes.firstIndex(where: { $0.path.description == description.path.description }) {
                routes[index].methods.append(description.method)
            } else {
                routes.append((description.path, [description.method]))
            }
        }
        self.routes = routes
    }

    /// The methods the route for `path` answers; empty when none matches.
    /// As in the router, a literal component wins over a capture:
    /// `devices/self` is its own route, not `devices/:device`.
    func allowed(on path: String) -> [HTTPRequest.Method] {
        let parts = path.split(separator: "/")
        var best: (captures: Int, methods: [HTTPRequest.Method])?
        for route in routes where route.path.count == parts.count {
            guard zip(route.path, parts).allSatisfy({ $0 ~= $1 }) else { continue }
            let captures = zip(route.path, parts).filter { !($0.0 == $0.1) }.count
            if best == nil || captures < best!.captures {
                best = (captures, route.methods)
            } else if captures == best!.captures {
                best!.methods += route.methods
            }
        }
        return (best?.methods ?? []).sorted { $0.rawValue < $1.rawValue }
    }
}

extension APIError {
    /// A path that exists, asked for with a method it does not answer.
    static func methodNotAllowed(_ method: HTTPRequest.Method, allowed: [HTTPRequest.Method]) -> Self {
        let list = allowed.map(\.rawValue).joined(separator: ", ")
        return Self(
            .methodNotAllowed, .methodNotAllowed, "\(method.rawValue) is not allowed here; use \(list)",
            headers: [.allow: list])
    }
}
