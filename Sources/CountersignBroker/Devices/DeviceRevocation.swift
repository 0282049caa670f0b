import CountersignCore
import CountersignStore

extension BrokerEnvironment {
    /// Revokes a device of `user`, records who did it, and ends its
    /// long-polls at once.
    func revoke(_ deviceID: String, issuer: String, user: String, author: ChangeAuthor) async throws
        -> TrustedDevice
    {
        let device = try await store.revokeDevice(
            id: deviceID, issuer: issuer, clientUserID: user, author: author, now: now())
        hub.notify(WakeHub.inboxKey(issuer: device.issuer, user: device.clientUserID))
        return device
    }
}
