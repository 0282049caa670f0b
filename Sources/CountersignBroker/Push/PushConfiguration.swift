import CountersignSenders
public import CountersignStore
public import Foundation
public import Logging

/// What `device-broker serve` is told about Web Push.
public struct PushConfiguration: Sendable {
    /// The VAPID `sub`: a `mailto:` or `https:` URL where a push service's
    /// operator can reach this broker's. Nil uses the broker's public URL.
    public var contact: String?
    /// Lets devices register push endpoints on loopback, private and
    /// link-local addresses, and over plain http: for a push service on the
    /// operator's own network, and for tests.
    public var allowPrivateEndpoints = false

    public init(contact: String? = nil, allowPrivateEndpoints: Bool = false) {
        self.contact = contact
        self.allowPrivateEndpoints = allowPrivateEndpoints
    }

    /// The settings the broker runs with: its VAPID keys (the first one made
    /// now if the store has none) and a sender.
    public func settings(
        store: any CountersignStore, issuer: String, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> PushSettings {
        if let contact, !(contact.hasPrefix("mailto:") || contact.hasPrefix("https://")) {
            throw BrokerSetupError("--push-contact must be a mailto: or https: URL, not \(contact)")
        }
        if contact == nil, !issuer.hasPrefix("https://") {
            logger.notice(
                "Web Push names \(issuer) as the VAPID contact; push services want a mailto: or https: URL: give --push-contact"
            )
        }
        let endpointGuard = EndpointGuard(allowPrivateAddresses: allowPrivateEndpoints)
        return PushSettings(
            keys: try await VAPIDKeyring.load(from: store, logger: logger, now: now),
            endpointGuard: endpointGuard,
            sender: WebPushSender(contact: contact ?? issuer, endpointGuard: endpointGuard))
    }
}
