import Foundation

/// A web origin (scheme, host, port), used to check the `htu` of proofs and
/// the `aud` of decisions against the addresses the broker answers on.
public struct Origin: Sendable, Hashable, CustomStringConvertible {
    /// `http` or `https`, lowercased.
    public let scheme: String
    /// Host name or address, lowercased.
    public let host: String
    /// Port, with the scheme's default filled in.
    public let port: Int

    /// Parses the origin part of an absolute URL; nil for anything else.
    public init?(url: String) {
        guard let components = URLComponents(string: url),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host?.lowercased(), !host.isEmpty
        else { return nil }
        self.scheme = scheme
        self.host = host
        self.port = components.port ?? (scheme == "https" ? 443 : 80)
    }

    /// Whether browsers treat pages of this origin as a secure context
    /// (W3C Secure Contexts, "potentially trustworthy"): https, or a host
    /// on this machine. Only there do they give a page passkeys, service
    /// workers and notifications.
    public var isPotentiallyTrustworthy: Bool {
        scheme == "https" || host.hasSuffix(".localhost") || isLoopback
    }

    /// Whether this host is this machine's own: `localhost`, an address
    /// of 127.0.0.0/8 written as one (not a name such as
    /// `127.example.com`), or ::1.
    public var isLoopback: Bool {
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    /// Whether a decision addressed to this origin was addressed to the
    /// broker at `broker`: the same origin, or, for a broker on this
    /// machine's loopback, any loopback name of it on the same scheme and
    /// port, since it answers at all of them (its web approver is linked at
    /// `localhost`, its agents may talk to `127.0.0.1`).
    public func names(sameBrokerAs broker: Origin) -> Bool {
        self == broker || (isLoopback && broker.isLoopback && scheme == broker.scheme && port == broker.port)
    }

    public var description: String {
        let defaultPort = scheme == "https" ? 443 : 80
        let hostPart = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return port == defaultPort ? "\(scheme)://\(hostPart)" : "\(scheme)://\(hostPart):\(port)"
    }
}
