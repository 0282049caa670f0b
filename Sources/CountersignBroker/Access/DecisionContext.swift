import CountersignCore
import Hummingbird

/// A decision as its body brings it: a JWS by a device's key, and the
/// enrolled device its key id names. Not verified yet: the signature
/// covers the event, which the route reads; the device may have been
/// removed, which the decision rules answer with their reason.
public final class Decider: Sendable {
    let device: TrustedDevice
    /// The decision, parsed once.
    let decision: CompactJWS.Parsed
    /// The decision as sent, stored with the event.
    let text: String
    /// The device's passkey assertion for this decision, if it sent one.
    let assertion: PasskeyAssertion?

    init(device: TrustedDevice, decision: CompactJWS.Parsed, text: String, assertion: PasskeyAssertion?) {
        self.device = device
        self.decision = decision
        self.text = text
        self.assertion = assertion
    }

    /// The body of `POST /api/v1/events/{id}/decision`.
    struct Body: Decodable {
        let decision: String
        let assertion: PasskeyAssertion?
    }
}

/// A request that answers an event: it authenticates itself by the
/// decision it carries (``CallerAuthenticator``, `.decision`).
struct DecisionContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    let decider: Decider
    /// The caller's address, kept with the decision.
    let clientAddress: String

    init(context: BrokerRequestContext) throws {
        guard case .decider(let decider) = context.identity else {
            throw APIError.unauthorized("send the decision, signed by a trusted device")
        }
        self.coreContext = context.coreContext
        self.decider = decider
        self.clientAddress = context.clientAddress
    }

    var maxUploadSize: Int { 64 * 1024 }
}
