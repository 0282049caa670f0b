public import CountersignSenders
import Foundation

/// How the broker reaches devices by Web Push: its VAPID keys, the check
/// on endpoints, and the sender.
public struct PushSettings: Sendable {
    public let keys: VAPIDKeyring
    public let endpointGuard: EndpointGuard
    public let sender: WebPushSender

    public init(keys: VAPIDKeyring, endpointGuard: EndpointGuard, sender: WebPushSender) {
        self.keys = keys
        self.endpointGuard = endpointGuard
        self.sender = sender
    }
}
