public import CountersignCore
import Foundation
import HummingbirdOTP

extension TOTPSecret {
    /// The 6-digit code of time step `step` (RFC 6238, through HummingbirdOTP).
    public func code(at step: Int64) -> String {
        let value = TOTP(secret: value, length: TOTPParameters.digits, timeStep: TOTPParameters.period)
            .compute(date: TOTPParameters.start(of: step))
        let digits = String(value)
        return String(repeating: "0", count: max(0, TOTPParameters.digits - digits.count)) + digits
    }

    /// The `otpauth://` URI that adds this secret to an authenticator app.
    public func authenticatorURI(app: String, user: String) -> String {
        TOTP(secret: value, length: TOTPParameters.digits, timeStep: TOTPParameters.period)
            .createAuthenticatorURL(label: "\(app):\(user)", issuer: app)
    }
}
