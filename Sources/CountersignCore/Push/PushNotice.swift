public import Foundation

/// What a push tells a device about a pending event: enough to open the
/// request, nothing of it. Push services and the browser's notification
/// centre see at most this (the payload is encrypted to the device, but the
/// notification is shown on a lock screen): no details, address, place,
/// requester or number, which a person reads only in the approver.
public struct PushNotice: Sendable, Equatable, WireJSONWritable {
    /// Always `event.pending`.
    public var type = "event.pending"
    public var eventID: String
    /// The app's name, as the operator registered it.
    public var app: String
    /// A short title chosen by the broker from the event's kind, never
    /// text the requester wrote.
    public var title: String
    public var expiresAt: Date

    public init(for event: ApprovalEvent, app: String) {
        eventID = event.id
        self.app = app
        title =
            switch event.name {
            case EventName.login: "Sign-in request"
            case EventName.enrollNewTrustedDevice: "New device wants to be trusted"
            case EventName.transaction: "Confirm a transaction"
            default: "Approval request"
            }
        expiresAt = event.expiresAt
    }

    public func write(to object: inout WireJSON.Object) {
        object.field("app", app)
        object.field("event_id", eventID)
        object.field("expires_at", expiresAt)
        object.field("title", title)
        object.field("type", type)
    }
}
