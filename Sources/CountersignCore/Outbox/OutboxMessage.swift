public import Foundation

/// A message the broker must send to somebody else (a push service, an
/// app backend's webhook endpoint), kept in the store's outbox from the moment
/// the change it announces commits: it is written in the same transaction,
/// so a change is never made without its message, and a crash before the
/// send only delays it. Its ``id`` stays the same on every attempt.
public struct OutboxMessage: Sendable, Equatable {
    /// What a message is and who sends it.
    public enum Kind: String, Sendable, CaseIterable {
        /// A Web Push (RFC 8030) to the device ``OutboxMessage/target``;
        /// the payload is a ``PushNotice``.
        case webPush = "web_push"
        /// A Standard Webhooks message to the endpoint
        /// ``OutboxMessage/target``; the payload is its body.
        case webhook
        /// A CIBA ping (CIBA Core §10.2) for the request of the event
        /// ``OutboxMessage/target``; the payload is its body.
        case cibaPing = "ciba_ping"
        /// An email (an ``Invitation``'s) to the mail server; the payload
        /// is a ``MailMessage``, the target the invitation's id.
        case mail

        /// Whether its payload holds a secret (an invitation's enrollment
        /// token): wiped from the row once the message is finished, so that
        /// the database keeps it only while it waits to be sent.
        public var payloadIsSecret: Bool { self == .mail }

        /// How the kind's messages are retried.
        public var backoff: DeliveryBackoff {
            switch self {
            case .webPush: .push
            case .webhook, .cibaPing, .mail: .webhook
            }
        }
    }

    /// Where a message stands.
    public enum State: String, Sendable, CaseIterable {
        /// Waiting for its next attempt, at ``OutboxMessage/nextAttemptAt``.
        case queued
        /// Accepted by its receiver.
        case delivered
        /// Given up on: refused for good, or out of time.
        case failed
        /// Not needed any more (the event was decided, the device removed).
        case cancelled
    }

    /// `msg_` and 128 random bits; the receiver can drop a repeat by it.
    public var id: String
    public var kind: Kind
    /// Who it goes to: for ``Kind/webPush`` a device id, for
    /// ``Kind/webhook`` an endpoint id, for ``Kind/mail`` an invitation id.
    public var target: String
    /// Who answers its attempts, as it was when the message was queued: the
    /// origin of the URL they go to (``receiver(of:)``: a push service, an
    /// app's server), or ``mailReceiver``. The outbox shares its delivery
    /// slots among receivers (``attemptsPerReceiver``).
    public var receiver: String
    /// The event it is about, if any.
    public var eventID: String?
    /// The plaintext body; the sender encrypts or signs it per attempt.
    public var payload: Data
    public var createdAt: Date
    /// After this, it is not attempted again (``State/failed``).
    public var deliverUntil: Date
    public var nextAttemptAt: Date
    /// Attempts made so far.
    public var attempts: Int
    public var state: State
    /// Why the last attempt did not deliver it, for an operator.
    public var lastError: String?
    /// When it was delivered, failed or cancelled.
    public var finishedAt: Date?

    public init(
        id: String = OutboxMessage.newID(), kind: Kind, target: String, receiver: String, eventID: String?,
        payload: Data, createdAt: Date, deliverUntil: Date, nextAttemptAt: Date? = nil, attempts: Int = 0,
        state: State = .queued, lastError: String? = nil, finishedAt: Date? = nil
    ) {
        self.id = id
        self.kind = kind
        self.target = target
        self.receiver = receiver
        self.eventID = eventID
        self.payload = payload
        self.createdAt = createdAt
        self.deliverUntil = deliverUntil
        self.nextAttemptAt = nextAttemptAt ?? createdAt
        self.attempts = attempts
        self.state = state
        self.lastError = lastError
        self.finishedAt = finishedAt
    }

    /// A new message id.
    public static func newID() -> String { "msg_" + SecretToken.generate(bytes: 16) }

    /// The receiver of messages sent to `url`: its origin (RFC 6454), the
    /// scheme and host in lower case and the port, written even when it is
    /// the scheme's default. Every device subscribed at one push service,
    /// and every endpoint on one server, share it. A URL that does not
    /// parse is its own receiver (its attempts fail at once).
    public static func receiver(of url: String) -> String {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased(), !host.isEmpty
        else { return url }
        let port = components.port ?? (scheme == "http" ? 80 : 443)
        return "\(scheme)://\(host):\(port)"
    }

    /// The receiver of every mail message: the broker's one mail server.
    public static let mailReceiver = "mail"

    /// The receiver of a message queued before receivers were kept (its
    /// row has none): its kind and target, the share it had then. The
    /// stores' claims compute the same text for such a row.
    public static func receiver(kind: Kind, target: String) -> String { kind.rawValue + ":" + target }

    /// The most attempts an instance makes to one receiver at a time: the
    /// HTTP client's connections per host. A receiver that accepts
    /// connections and never answers holds each attempt until its deadline
    /// (12–15 s): without a share per receiver, its backlog at the head of
    /// the queue took every slot, and everyone else's pushes and webhooks
    /// waited behind it. The share is per receiver, not per device or
    /// endpoint: a push service that stops answering holds at most this
    /// many attempts, however many of its devices have pushes queued.
    public static let attemptsPerReceiver = 8
}

/// A message a delivery worker holds for one attempt. Nobody else takes it
/// until ``leaseUntil``; its outcome is recorded only with the same
/// ``claim``, so a worker that outlived its lease cannot overwrite what the
/// next one recorded.
public struct ClaimedOutboxMessage: Sendable, Equatable {
    public var message: OutboxMessage
    public var claim: String
    public var leaseUntil: Date

    public init(message: OutboxMessage, claim: String, leaseUntil: Date) {
        self.message = message
        self.claim = claim
        self.leaseUntil = leaseUntil
    }
}

/// How one attempt went, as the outbox records it.
public enum OutboxOutcome: Sendable, Equatable {
    case delivered
    /// Try again at this time; the reason is kept for an operator.
    case retry(at: Date, reason: String)
    case failed(reason: String)
    case cancelled(reason: String)
}

extension OutboxMessage {
    /// What this attempt's failure means for the message: another attempt
    /// after its kind's back-off (or the receiver's `retryAfter`), or failed
    /// once it is out of time.
    public func afterFailedAttempt(reason: String, retryAfter: TimeInterval? = nil, now: Date) -> OutboxOutcome {
        kind.backoff.afterFailure(
            attempts: attempts + 1, reason: reason, retryAfter: retryAfter, deliverUntil: deliverUntil, now: now)
    }
}
