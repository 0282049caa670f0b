import CountersignCore
import CountersignStore

extension BrokerEnvironment {
    /// Refuses to add a device (or the token that adds one) for a user the
    /// directory does not list as enabled (``DirectoryPerson/refusesDevices(_:)``).
    func requireEnabled(_ clientUserID: String) async throws {
        if DirectoryPerson.refusesDevices(try await store.directoryPerson(clientUserID: clientUserID)) {
            throw APIError.userSuspended
        }
    }
}
