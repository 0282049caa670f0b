import CountersignCore
import Crypto
import Foundation
import HTTPTypes

extension HTTPField.Name {
    /// The console's CSRF token, which every state-changing request carries.
    static let csrfToken = Self("X-CSRF-Token")!
    static let setCookie = Self("Set-Cookie")!
    static let cookie = Self("Cookie")!
    static let secFetchSite = Self("Sec-Fetch-Site")!
}

/// The console's two cookies: the session (after sign-in) and the sign-in
/// attempt (the pending login's requester token, while it waits). Both
/// `HttpOnly`, so that no script of the page reads them, `SameSite=Strict`,
/// so that no other site's page sends them, and `Secure` unless the broker
/// is a developer's on loopback.
struct ConsoleCookies: Sendable {
    static let session = "countersign_console"
    static let attempt = "countersign_console_sign_in"

    /// Whether the cookies say `Secure`: on every broker but one whose
    /// public URL is plain http on loopback, where a browser would not
    /// send them back.
    let secure: Bool

    init(issuer: String) {
        let url = URLComponents(string: issuer)
        let loopback = url?.host.map(WebhookEndpoint.isLoopback) ?? false
        secure = !(url?.scheme == "http" && loopback)
    }

    /// `Set-Cookie` for a value that lives `maxAge` seconds; 0 deletes it.
    func setting(_ name: String, _ value: String, maxAge: Int, path: String) -> String {
        var parts = ["\(name)=\(value)", "Path=\(path)", "Max-Age=\(maxAge)", "HttpOnly", "SameSite=Strict"]
        if secure { parts.append("Secure") }
        return parts.joined(separator: "; ")
    }

    /// The value of cookie `name` in a request's `Cookie` fields, if any.
    static func value(_ name: String, in headers: HTTPFields) -> String? {
        for field in headers[values: .cookie] {
            for pair in field.split(separator: ";") {
                let trimmed = pair.trimmingCharacters(in: .whitespaces)
                guard let equals = trimmed.firstIndex(of: "=") else { continue }
                if trimmed[..<equals] == name {
                    let value = String(trimmed[trimmed.index(after: equals)...])
                    return value.isEmpty ? nil : value
                }
            }
        }
        return nil
    }

    /// The CSRF token of a session: derived from the cookie's secret, so
    /// that only a page that was told it (by its own origin, which only the
    /// cookie's holder can read) can send it, and nothing is stored for it.
    static func csrfToken(forSessionSecret secret: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("countersign console csrf".utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return Base64URL.encode(Data(mac))
    }
}
