public import Foundation

/// A RADIUS client (a NAS: a VPN server, a firewall, a Wi-Fi controller)
/// the broker answers: the addresses its requests come from, the secret it
/// shares with the broker, and the app whose users' devices approve.
public struct RADIUSClient: Sendable, Equatable {
    /// How a login is approved through this client.
    public enum Mode: String, Sendable, CaseIterable {
        /// Number matching: the first request is answered Access-Challenge
        /// with the number to type on the device; the next, carrying the
        /// State, once the device decided.
        case challenge
        /// For gear that cannot show a challenge: the request waits for the
        /// device's decision, with no number to type.
        case push
    }

    /// Its name: shown to the approver as the requester, and used by the
    /// `radius` commands. Lower-case letters, digits, `.`, `-` and `_`,
    /// at most 64.
    public var name: String
    /// The address range its requests come from, in CIDR notation.
    public var network: String
    /// The API key whose users' trusted devices approve its logins.
    public var apiKeyID: String
    /// The shared secret (RFC 2865 §3).
    public var secret: String
    public var mode: Mode
    /// Whether every Access-Request must carry a Message-Authenticator
    /// (RFC 3579 §3.2). On unless an operator relaxed it for old gear.
    public var requireMessageAuthenticator: Bool
    /// The RADIUS server that checks the password first, if any; without
    /// one the login is passwordless (approval only).
    public var upstream: Upstream?
    public var createdAt: Date

    /// A RADIUS server the broker asks first: the password typed at the
    /// NAS is its to check, and only a login it accepts is asked of the
    /// device.
    public struct Upstream: Sendable, Equatable {
        /// `host:port`, or `[IPv6]:port`.
        public var address: String
        /// The secret the broker shares with it, as its client.
        public var secret: String
        /// Whether its answers must carry a Message-Authenticator: on
        /// unless it is a server without the BlastRADIUS fix (FreeRADIUS
        /// before 3.2.5, an unpatched NPS).
        public var requireMessageAuthenticator: Bool

        public init(address: String, secret: String, requireMessageAuthenticator: Bool = true) {
            self.address = address
            self.secret = secret
            self.requireMessageAuthenticator = requireMessageAuthenticator
        }
    }

    public init(
        name: String, network: String, apiKeyID: String, secret: String, mode: Mode = .challenge,
        requireMessageAuthenticator: Bool = true, upstream: Upstream? = nil, createdAt: Date
    ) {
        self.name = name
        self.network = network
        self.apiKeyID = apiKeyID
        self.secret = secret
        self.mode = mode
        self.requireMessageAuthenticator = requireMessageAuthenticator
        self.upstream = upstream
        self.createdAt = createdAt
    }

    /// What is wrong with `name` as a client's name, or nil.
    public static func problem(withName name: String) -> String? {
        let allowed = name.utf8.allSatisfy {
            ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
        }
        guard !name.isEmpty, name.utf8.count <= 64, allowed else {
            return "a RADIUS client's name is 1 to 64 lower-case letters, digits, '.', '-' or '_'"
        }
        return nil
    }

    /// The shortest secret taken: RFC 2865 §3 asks for at least 16 octets,
    /// and a short one can be guessed offline from one captured exchange.
    public static let minimumSecretLength = 16
    /// The longest secret taken: most gear accepts no more than 64.
    public static let maximumSecretLength = 128

    /// What is wrong with `secret` as a shared secret, or nil.
    public static func problem(withSecret secret: String) -> String? {
        let bytes = Array(secret.utf8)
        guard bytes.count >= minimumSecretLength, bytes.count <= maximumSecretLength else {
            return
                "a RADIUS shared secret is \(minimumSecretLength) to \(maximumSecretLength) characters (RFC 2865 §3 asks for at least 16)"
        }
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return "a RADIUS shared secret is printable ASCII without spaces, which every NAS can be given"
        }
        return nil
    }

    /// A new secret: 32 letters and digits (190 bits), which every NAS's
    /// configuration takes without quoting.
    public static func newSecret() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
        return String(decoding: SecretToken.symbols(32, from: alphabet), as: UTF8.self)
    }
}

/// A RADIUS server's UDP address as written: `host:port`, or `[IPv6]:port`.
public struct RADIUSAddress: Sendable, Equatable {
    public let host: String
    public let port: Int

    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (1...65535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.contains("["), !host.contains("]"), !host.contains("/") else { return nil }
        self.host = host
        self.port = port
    }
}
