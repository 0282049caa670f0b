/// The grant a family of refresh tokens belongs to, read from the family's
/// stored id: each grant names its families its own way, and a refresh
/// tells them apart by parsing it here, once.
public enum RefreshFamily: Sendable, Equatable {
    /// Everything a sign-in by approval's code buys: `oidc:<event id>`.
    case signIn(eventID: String)
    /// A CIBA grant's: `ciba:<event id>`.
    case ciba(eventID: String)
    /// What a hosted verification's code buys: `challenge:<number>`.
    case verification(challengeID: Int64)

    /// The grant of the family `id`, or nil for none the broker names.
    public init?(_ id: String) {
        guard let colon = id.firstIndex(of: ":") else { return nil }
        let rest = String(id[id.index(after: colon)...])
        guard !rest.isEmpty else { return nil }
        switch id[..<colon] {
        case "oidc": self = .signIn(eventID: rest)
        case "ciba": self = .ciba(eventID: rest)
        case "challenge":
            guard let number = Int64(rest) else { return nil }
            self = .verification(challengeID: number)
        default: return nil
        }
    }

    /// The family's stored id.
    public var id: String {
        switch self {
        case .signIn(let eventID): Self.signInPrefix + eventID
        case .ciba(let eventID): "ciba:" + eventID
        case .verification(let challengeID): "challenge:\(challengeID)"
        }
    }

    /// How every sign-in's family id starts: what the stores' collection
    /// of ended sign-ins matches their tokens by.
    public static let signInPrefix = "oidc:"
}
