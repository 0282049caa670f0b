import CountersignClient
import CountersignCore

extension InboxWatcher.Change {
    /// The requests waiting now, for a change of the inbox; for the broker
    /// lost or back, nil, after saying so on standard output.
    func requestsSayingOutages() -> [InboxItem]? {
        switch self {
        case .pending(let items):
            return items
        case .lost(let error):
            print("Lost the broker: \(error); reconnecting…")
        case .reconnected:
            print("Reconnected to the broker.")
        }
        flushOutput()
        return nil
    }
}
