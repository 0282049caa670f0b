public import CountersignCore
public import CountersignSenders
public import CountersignStore
public import Foundation
public import Logging

/// What every controller shares: the store, the rules, the broker's keys,
/// the waiters, and the clock every expiry is judged by.
///
/// A class: every route closure and many async frames hold it, and a
/// reference is one word where the struct was some 350 bytes to copy.
public final class BrokerEnvironment: Sendable {
    public let store: any CountersignStore
    public let policy: ApprovalPolicy
    /// The broker's issuer URL (`iss` of its tokens).
    public let issuer: String
    /// The origins proofs and decisions may name.
    public let origins: Set<Origin>
    public let keys: BrokerKeys
    public let hub: WakeHub
    /// The broker's clock; tests inject their own.
    public let now: @Sendable () -> Date
    /// Limits of email/phone verification.
    public let verification: VerificationPolicy
    /// Where one-time codes go.
    public let sender: any CodeSender
    /// Seals and opens TOTP secrets; nil when no TOTP key is configured.
    public let vault: TOTPVault?
    /// How many TOTP codes may be tried.
    public let codeLimits: CodeLimits
    /// What the broker counts.
    public let metrics: BrokerMetrics
    /// Proxies whose `X-Forwarded-For` is believed.
    public let trustedProxies: [IPNetwork]
    /// Web Push to devices; nil sends none (and refuses subscriptions).
    public let push: PushSettings?

    public init(
        store: any CountersignStore, policy: ApprovalPolicy, issuer: String, origins: Set<Origin>, keys: BrokerKeys,
        hub: WakeHub = WakeHub(), verification: VerificationPolicy = VerificationPolicy(),
        sender: any CodeSender = DevelopmentSender(outbox: nil, logger: Logger(label: "device-broker")),
        vault: TOTPVault? = nil, codeLimits: CodeLimits = CodeLimits(), metrics: BrokerMetrics = BrokerMetrics(),
        trustedProxies: [IPNetwork] = [], push: PushSettings? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.policy = policy
        self.issuer = issuer
        self.origins = origins
        self.keys = keys
        self.hub = hub
        self.verification = verification
        self.sender = sender
        self.vault = vault
        self.codeLimits = codeLimits
        self.metrics = metrics
        self.trustedProxies = trustedProxies
        self.push = push
        self.now = now
    }

    /// Where invitations go: the email channel of ``sender``, if it sends
    /// whole mails (SMTP or the development sender; a webhook does not).
    var mailSender: (any MailSender)? {
        sender as? any MailSender ?? (sender as? RoutingSender)?.mail
    }

    /// The API document of an event, with its event token if settled.
    func document(for event: ApprovalEvent, withToken: Bool) async throws -> EventDocument {
        let now = now()
        var signature: String? = nil
        if withToken, [.approved, .rejected].contains(event.status(at: now)) {
            signature = try await keys.sign(
                EventTokenClaims(event: event, issuer: issuer, now: now, lifetime: policy.eventTokenLifetime))
        }
        return EventDocument(event, now: now, signature: signature)
    }
}

extension WakeHub {
    static func eventKey(_ id: String) -> String { WakeKey.event(id) }
    static func inboxKey(issuer: String, user: String) -> String { WakeKey.inbox(issuer: issuer, user: user) }
}
