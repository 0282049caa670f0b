public import Foundation

/// Who asks for a pending event.
public enum PendingRequester: Sendable, Equatable {
    /// The app backend, with its secret key.
    case backend
    /// A requester: anyone with the API key id (which ships inside apps),
    /// from this client address.
    case requester(address: String)
}

/// How many pending events may be open at once, so that prompts cannot be
/// made without bound and nobody can use up another's share.
public struct PendingLimits: Sendable, Equatable {
    /// The backend's own pending events per user; and a requester's per
    /// user from one address. Requesters' events never count against the
    /// backend's, nor one address's against another's.
    public var perUser: Int
    /// Requesters' pending events per user, from all addresses together.
    public var perUserFromRequesters: Int
    /// Requesters' pending events from one address, for all users of all apps.
    public var perAddress: Int
    /// Requesters' events created for one user within ``rateWindow``,
    /// pending or not: a requester whose prompts are answered at once can
    /// still not ask without end.
    public var requestsPerUser: Int
    /// Requesters' events created from one address within ``rateWindow``.
    public var requestsPerAddress: Int
    /// At most ``RequestRate/kept``.
    public var rateWindow: TimeInterval

    public init(
        perUser: Int = 3, perUserFromRequesters: Int = 10, perAddress: Int = 10, requestsPerUser: Int = 30,
        requestsPerAddress: Int = 120, rateWindow: TimeInterval = 3600
    ) {
        self.perUser = perUser
        self.perUserFromRequesters = perUserFromRequesters
        self.perAddress = perAddress
        self.requestsPerUser = requestsPerUser
        self.requestsPerAddress = requestsPerAddress
        self.rateWindow = rateWindow
    }
}

extension PendingLimits {
    /// The limits a sign-in at one of the broker's own pages (the
    /// console's, an OpenID Connect app's) is held to: those of its address
    /// (a requester's pending events and its rate there) and a running
    /// fraud protection, but not the per-user ones, which anyone anywhere
    /// could fill by asking for someone's name again and again, keeping
    /// them from signing in for an hour. Number matching and "this wasn't
    /// me" answer the prompts such asking makes.
    public var forSignInPage: PendingLimits {
        var limits = self
        limits.perUserFromRequesters = .max
        limits.requestsPerUser = .max
        return limits
    }
}

/// The rule on opening one more pending event: the stores read the open
/// ones it is counted with (each list the expiry times of still-pending
/// events) and ask.
public enum PendingCap {
    /// The open pending events a new one is counted with.
    public struct Open: Sendable {
        /// The user's, from the same kind of requester (for a requester, from
        /// the same address).
        public var sameRequester: [Date]
        /// The user's, from any requester (empty for the backend).
        public var userFromRequesters: [Date]
        /// From the same address, any user (empty for the backend).
        public var fromAddress: [Date]
        /// Until when a fraud report protects the user, if it ever did.
        public var protectedUntil: Date?
        /// How many events requesters created for the user, by minute, in
        /// the minutes the rate window touches (empty for the backend).
        public var createdForUser: [RequestRate.Minute]
        /// How many events requesters at this address created, by minute,
        /// in the minutes the rate window touches (empty for the backend).
        public var createdFromAddress: [RequestRate.Minute]

        public init(
            sameRequester: [Date], userFromRequesters: [Date] = [], fromAddress: [Date] = [],
            protectedUntil: Date? = nil, createdForUser: [RequestRate.Minute] = [],
            createdFromAddress: [RequestRate.Minute] = []
        ) {
            self.sameRequester = sameRequester
            self.userFromRequesters = userFromRequesters
            self.fromAddress = fromAddress
            self.protectedUntil = protectedUntil
            self.createdForUser = createdForUser
            self.createdFromAddress = createdFromAddress
        }
    }

    /// Which limit a new event would pass.
    public enum Limit: Sendable, Equatable {
        case perUser, perUserFromRequesters, perAddress
        /// The user reported a request as fraud a short while ago
        /// (``FraudProtection``): requesters wait.
        case userProtected
        /// Requesters asked for this user too often within the rate window.
        case userRate
        /// Requesters at this address asked too often within the rate window.
        case addressRate

        /// What the refusal says.
        public var message: String {
            switch self {
            case .perUser: "too many pending events for this user"
            case .perUserFromRequesters: "too many pending events for this user from requesters"
            case .perAddress: "too many pending events from this address"
            case .userRate: "too many requests for this user lately"
            case .addressRate: "too many requests from this address lately"
            case .userProtected:
                "this user reported a request as not theirs; new requests are refused for a while"
            }
        }
    }

    public enum Verdict: Sendable, Equatable {
        case admit
        /// Refused; room opens in `retryAfter` seconds, when enough of the
        /// open ones have expired.
        case refuse(Limit, retryAfter: Int)
    }

    public static func decide(_ open: Open, for requester: PendingRequester, limits: PendingLimits, now: Date)
        -> Verdict
    {
        if case .requester = requester, let until = open.protectedUntil, until > now {
            return .refuse(.userProtected, retryAfter: max(1, Int(until.timeIntervalSince(now).rounded(.up))))
        }
        var checks: [(Limit, [Date], Int)] = [(.perUser, open.sameRequester, limits.perUser)]
        if case .requester = requester {
            checks += [
                (.perUserFromRequesters, open.userFromRequesters, limits.perUserFromRequesters),
                (.perAddress, open.fromAddress, limits.perAddress),
            ]
        }
        for (limit, expiries, maximum) in checks where expiries.count >= maximum {
            let sorted = expiries.sorted()
            // Room for one more once all but maximum - 1 of them have expired.
            let freed = sorted[sorted.count - maximum]
            return .refuse(limit, retryAfter: max(1, Int(freed.timeIntervalSince(now).rounded(.up))))
        }
        if case .requester = requester {
            let rates = [
                (Limit.userRate, open.createdForUser, limits.requestsPerUser),
                (.addressRate, open.createdFromAddress, limits.requestsPerAddress),
            ]
            for (limit, minutes, maximum) in rates {
                if let freed = RequestRate.roomAt(minutes, maximum: maximum, window: limits.rateWindow, now: now) {
                    return .refuse(limit, retryAfter: max(1, Int(freed.timeIntervalSince(now).rounded(.up))))
                }
            }
        }
        return .admit
    }
}

/// Requests counted over a long window (an hour) in a bounded number of
/// reads, whatever the rate: the store keeps one counter per key and minute
/// (``Minute``), reads those of the minutes the window touches (61 for an
/// hour) and adds one to the current minute's for each event it admits.
/// A request counts until the end of its minute has left the window: up
/// to a minute longer than its own time would, never shorter.
public enum RequestRate {
    /// The length of a counter's stretch of time.
    public static let minute: TimeInterval = 60
    /// How long the stores keep counters: longer than any rate window.
    public static let kept: TimeInterval = 86_400

    /// One counter: events in the minute numbered `number` (seconds since
    /// 1970 divided by ``minute``, rounded down).
    public struct Minute: Sendable, Equatable {
        public var number: Int64
        public var count: Int

        public init(number: Int64, count: Int) {
            self.number = number
            self.count = count
        }
    }

    /// The number of the minute `date` falls in.
    public static func number(of date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / minute).rounded(.down))
    }

    /// The oldest minute still counted at `now`: the one the window starts in.
    public static func oldestCounted(at now: Date, window: TimeInterval) -> Int64 { number(of: now - window) }

    /// nil while the counted minutes hold fewer than `maximum` events;
    /// else when there is room for one more: when enough of the oldest
    /// minutes have left the window.
    public static func roomAt(_ minutes: [Minute], maximum: Int, window: TimeInterval, now: Date) -> Date? {
        let counted = minutes.filter { $0.number >= oldestCounted(at: now, window: window) }
            .sorted { $0.number < $1.number }
        var total = counted.reduce(0) { $0 + $1.count }
        guard total >= maximum else { return nil }
        for minute in counted {
            total -= minute.count
            if total < maximum {
                return Date(timeIntervalSince1970: Double(minute.number + 1) * Self.minute) + window
            }
        }
        return now + window
    }
}
