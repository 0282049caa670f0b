import Foundation

/// Links that open the broker's web approver (`/approve/`) with what it
/// needs in the fragment, which browsers never send to a server (nor to
/// its logs).
public enum WebApproverLink {
    /// Opens the approver ready to pair with a trusted device of `user`: the
    /// browser makes its key and asks; a trusted device confirms.
    public static func pairing(broker: String, apiKeyID: String, user: String) -> String {
        link(broker, [("pair", nil), ("api_key", apiKeyID), ("user", user)])
    }

    /// Opens the approver ready to enroll as a trusted device of `user` with
    /// a one-time enrollment token the app backend asked for.
    public static func enrollment(broker: String, apiKeyID: String, user: String, token: String) -> String {
        link(broker, [("enroll", token), ("api_key", apiKeyID), ("user", user)])
    }

    /// A broker at a loopback address is linked at `localhost` on its
    /// port: a browser keeps passkeys (the screen lock) for a name, never
    /// for an address, and a broker on loopback answers to both (its
    /// passkeys' relying party is `localhost`, signing.md §10).
    static func base(of broker: String) -> String {
        var base = broker
        while base.hasSuffix("/") { base.removeLast() }
        guard var url = URLComponents(string: base), Origin(url: base)?.isLoopback == true else { return base }
        url.host = "localhost"
        return url.string ?? base
    }

    private static func link(_ broker: String, _ parameters: [(String, String?)]) -> String {
        let base = base(of: broker)
        // As URLSearchParams reads them: unreserved characters as they are,
        // everything else percent-encoded.
        let unreserved = CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let fragment = parameters.map { name, value in
            value.map { "\(name)=\($0.addingPercentEncoding(withAllowedCharacters: unreserved) ?? $0)" } ?? name
        }.joined(separator: "&")
        return "\(base)/approve/#\(fragment)"
    }
}
