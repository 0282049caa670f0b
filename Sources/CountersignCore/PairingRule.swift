/// What a pairing request (`ENROLL_NEW_TRUSTED_DEVICE`) must be: asked by
/// the new machine itself, naming the device to add, and always with its
/// pairing code, which the trusted device types. `new_device` belongs to
/// pairings only. Its proof of possession and the key's novelty are
/// checked after this, against the request and the store.
public enum PairingRule {
    /// Why a request to create an event is refused as a pairing.
    public enum Refusal: Sendable, Equatable {
        /// `new_device` on another kind of event.
        case newDeviceOutsidePairing
        /// A trusted device asked: it would be adding a device for itself.
        case askedByTrustedDevice
        /// No `new_device`.
        case newDeviceMissing
        /// `number_matching: false`: a pairing is never approved blind.
        case codeRequired
    }

    /// The refusal, or nil: for an event that is not a pairing without a
    /// `new_device` too, nil.
    public static func refusal(event name: String, byTrustedDevice: Bool, newDevice: Bool, numberMatching: Bool?)
        -> Refusal?
    {
        guard name == EventName.enrollNewTrustedDevice else { return newDevice ? .newDeviceOutsidePairing : nil }
        if byTrustedDevice { return .askedByTrustedDevice }
        guard newDevice else { return .newDeviceMissing }
        guard numberMatching != false else { return .codeRequired }
        return nil
    }
}
