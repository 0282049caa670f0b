public import Foundation

/// The rules for where the hosted verification page may send a browser back
/// to: only to a URL registered for the API key.
///
/// - Registered URLs must be https, loopback http (RFC 8252 §7.3), or a
///   private-use scheme in reverse-domain form (RFC 8252 §7.1), with no
///   fragment (RFC 6749 §3.1.2).
/// - A requested URL matches a registered one exactly, except that a
///   loopback URL matches whatever port the native app listens on.
public enum RedirectURL {
    /// Why a URL cannot be registered.
    public enum Problem: String, Sendable, Equatable {
        case notAURL = "not an absolute URL"
        case fragment = "a redirect URL must not have a fragment"
        case insecureHTTP = "http is allowed only for loopback addresses (127.0.0.1 or [::1])"
        case badScheme =
            "a custom scheme must be in reverse-domain form (com.example.app), letters, digits, '.', '+' or '-' only"
        case dangerousScheme = "this scheme can run code in the browser"
        case tooLong = "a redirect URL may be at most 2048 bytes"
    }

    /// The problem with registering `url`, or nil if it may be registered.
    public static func problem(registering url: String) -> Problem? {
        guard url.utf8.count <= 2048 else { return .tooLong }
        // Named before parsing: a parser refuses "my_app://" as a whole,
        // while the person registering it needs to hear that the scheme is wrong.
        if let colon = url.firstIndex(of: ":"), !url[..<colon].contains("/"), !url[..<colon].isEmpty,
            !isValidScheme(String(url[..<colon]))
        {
            return .badScheme
        }
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased() else {
            return .notAURL
        }
        guard components.fragment == nil else { return .fragment }
        switch scheme {
        case "https":
            return components.host?.isEmpty == false ? nil : .notAURL
        case "http":
            return isLoopback(components) ? nil : .insecureHTTP
        case "javascript", "data", "vbscript", "file", "blob", "about":
            return .dangerousScheme
        default:
            guard isValidScheme(scheme), scheme.contains(".") else { return .badScheme }
            return nil
        }
    }

    /// Whether a redirect URL sent with a request may be used, given the
    /// URLs registered for the API key.
    public static func isAllowed(_ requested: String, registered: [String]) -> Bool {
        guard problem(registering: requested) == nil else { return false }
        if registered.contains(requested) { return true }
        guard var components = URLComponents(string: requested), isLoopback(components) else { return false }
        components.port = nil
        let portless = components.string
        return registered.contains { entry in
            guard var candidate = URLComponents(string: entry), isLoopback(candidate) else { return false }
            candidate.port = nil
            return candidate.string == portless
        }
    }

    /// `url` with the query items added, keeping any it has.
    public static func appending(_ items: [URLQueryItem], to url: String) -> String? {
        guard var components = URLComponents(string: url) else { return nil }
        components.queryItems = (components.queryItems ?? []) + items
        // URLComponents leaves '+' alone, which form decoders read as a space.
        components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        return components.string
    }

    private static func isLoopback(_ components: URLComponents) -> Bool {
        components.scheme?.lowercased() == "http" && ["127.0.0.1", "[::1]", "::1"].contains(components.host ?? "")
    }

    /// RFC 3986 §3.1: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
    private static func isValidScheme(_ scheme: String) -> Bool {
        guard let first = scheme.unicodeScalars.first, first.isASCII, CharacterSet.letters.contains(first) else {
            return false
        }
        return scheme.unicodeScalars.allSatisfy {
            $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "+-.".unicodeScalars.contains($0))
        }
    }
}
