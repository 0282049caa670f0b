/// A device's TOTP secret, as the broker shows it once.
public struct TOTPSecretDocument: Codable, Sendable, Equatable {
    public var secret: TOTPSecret
    /// For an authenticator app (a QR code of it).
    public var otpauthURI: String
    public var digits: Int
    public var period: Int
    public var algorithm: String

    enum CodingKeys: String, CodingKey {
        case secret, digits, period, algorithm
        case otpauthURI = "otpauth_uri"
    }

    public init(secret: TOTPSecret, otpauthURI: String, digits: Int, period: Int, algorithm: String) {
        self.secret = secret
        self.otpauthURI = otpauthURI
        self.digits = digits
        self.period = period
        self.algorithm = algorithm
    }
}

/// A code a user typed into the app, for the backend to check; with
/// `record`, a code that lets someone in is also written down as an
/// approved event.
public struct CodeVerificationRequest: Codable, Sendable, Equatable {
    public var code: String
    public var record: CodeRecord?

    public init(code: String, record: CodeRecord? = nil) {
        self.code = code
        self.record = record
    }
}

/// The `LOGIN` a right code is recorded as: approved at once, method
/// `TOTP`, decided by the device the code came from, shown to no device.
/// For what was let in without a request (the requester limits or a fraud
/// report refused one), so that the events list and the webhooks still
/// show the login. Only a login: a code proves a device is at hand, not
/// that anyone read a transaction's details.
public struct CodeRecord: Codable, Sendable, Equatable {
    public var details: String?
    public var requesterName: String?
    /// The address of the client let in.
    public var ip: String?
    public var location: String?

    enum CodingKeys: String, CodingKey {
        case details, ip, location
        case requesterName = "requester_name"
    }

    public init(details: String? = nil, requesterName: String? = nil, ip: String? = nil, location: String? = nil) {
        self.details = details
        self.requesterName = requesterName
        self.ip = ip
        self.location = location
    }
}

/// A code the backend had checked: whose device it came from, and the
/// event it was recorded as when asked.
public struct CodeVerificationDocument: Codable, Sendable, Equatable {
    public var valid: Bool
    public var deviceID: String
    public var deviceName: String
    public var event: EventDocument?

    enum CodingKeys: String, CodingKey {
        case valid, event
        case deviceID = "device_id"
        case deviceName = "device_name"
    }

    public init(valid: Bool, deviceID: String, deviceName: String, event: EventDocument? = nil) {
        self.valid = valid
        self.deviceID = deviceID
        self.deviceName = deviceName
        self.event = event
    }
}

/// A user's recovery codes: the codes only when they are made.
public struct RecoveryCodesDocument: Codable, Sendable, Equatable {
    public var codes: [String]?
    /// Unused codes.
    public var remaining: Int

    public init(codes: [String]?, remaining: Int) {
        self.codes = codes
        self.remaining = remaining
    }
}
