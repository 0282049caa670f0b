/// What a requester may ask for with the app's key id alone: the id ships
/// inside apps, so anyone can present it. It may ask a user's devices for a
/// log-in or to add a device, and nothing that puts its own words or claims
/// in front of the approver; the app's backend, with the secret, may.
public enum RequesterPolicy {
    /// Why a requester's event is refused.
    public enum Refusal: Sendable, Equatable {
        /// Only `LOGIN` and pairing events.
        case eventNeedsSecret
        /// Details, an address, a location, a say on number matching, or the
        /// backend's `limit_as_requester`.
        case fieldsNeedSecret
    }

    /// The refusal for an event named `name` that sets the fields said, or
    /// nil if a requester may create it.
    public static func refusal(
        event name: String, setsDetails: Bool, setsIP: Bool, setsLocation: Bool, setsNumberMatching: Bool,
        setsLimitAsRequester: Bool = false
    ) -> Refusal? {
        guard name == EventName.login || name == EventName.enrollNewTrustedDevice else { return .eventNeedsSecret }
        guard !(setsDetails || setsIP || setsLocation || setsNumberMatching || setsLimitAsRequester) else {
            return .fieldsNeedSecret
        }
        return nil
    }

    /// Whether a caller is told that the user has no trusted device to ask
    /// (`no_trusted_device`). Only one holding the app's secret is: one with
    /// the key id alone gets the answer any user gets, and the request then
    /// expires unasked, so the key id, which ships inside apps, does not
    /// tell which user ids have devices.
    public static func tellsNoDevice(_ devices: [TrustedDevice], callerHoldsSecret: Bool) -> Bool {
        callerHoldsSecret && !devices.contains(where: \.canAct)
    }
}
