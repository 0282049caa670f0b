/// Whether approving events takes a user-verified passkey assertion of the
/// deciding device (proto/signing.md §10). The words are WebAuthn's, and
/// the API's: an API key has a policy for every event made under it, and
/// a request may ask for one event (`user_verification`).
public enum UserVerificationPolicy: String, Codable, Sendable, Equatable, CaseIterable {
    /// Only an approval with the deciding device's passkey, its owner
    /// verified, settles an event as approved.
    case required
    /// The device's key alone approves; the default.
    case discouraged
}

/// Which events require user verification, and what that does to a trusted
/// device's own request. Pure: the broker applies it where events are made.
public enum UserVerificationRule {
    /// What a trusted device's own request (an event it asks for itself)
    /// becomes.
    public enum OwnRequest: Sendable, Equatable {
        /// Approved at once by the device that asked: its proof was all
        /// the event needs.
        case approvedByItself
        /// Pending, like any other request: the device's key is not
        /// enough, so a device must approve it with its passkey (from the
        /// asking device's inbox or another's).
        case pending
    }

    /// Whether an event requires user verification, made under a key whose
    /// policy is `key` and asked for with `requested` (nil when the request
    /// says nothing). The key's `required` holds whatever the request says:
    /// a request may raise the key's policy, never lower it.
    public static func requires(key: UserVerificationPolicy, requested: UserVerificationPolicy?) -> Bool {
        key == .required || requested == .required
    }

    /// Whether a device's request that changes the account (new recovery
    /// codes, removing another device) takes its owner verified by its
    /// passkey, under a key whose policy is `key`. Under `required` it
    /// does: otherwise whoever holds the unlocked device could make
    /// recovery codes, enroll a device of their own with one, give that a
    /// passkey and approve what the policy protects, or remove the
    /// owner's devices.
    public static func accountChangeNeedsOwner(key: UserVerificationPolicy) -> Bool {
        key == .required
    }

    /// What a trusted device's own request becomes, by whether its event
    /// requires user verification (``requires(key:requested:)``).
    public static func ownRequest(requiresUserVerification: Bool) -> OwnRequest {
        requiresUserVerification ? .pending : .approvedByItself
    }
}
