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

/// A code the backend had checked: whose device it came from.
public struct CodeVerificationDocument: Codable, Sendable, Equatable {
    public var valid: Bool
    public var deviceID: String
    public var deviceName: String

    enum CodingKeys: String, CodingKey {
        case valid
        case deviceID = "device_id"
        case deviceName = "device_name"
    }

    public init(valid: Bool, deviceID: String, deviceName: String) {
        self.valid = valid
        self.deviceID = deviceID
        self.deviceName = deviceName
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
