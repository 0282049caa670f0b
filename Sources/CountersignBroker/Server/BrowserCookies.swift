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

/// The cookies of the broker's own pages: the console's session (after
/// sign-in) and sign-in attempt (the pending login's requester token, while
/// it waits), and the attempt of a sign-in to an OpenID Connect app. All
/// `HttpOnly`, so that no script of a page reads them, `SameSite=Strict`,
/// so that no other site's page sends them, and `Secure` with the
/// `__Host-` prefix (which no other host, a sibling subdomain included,
/// can set or shadow) unless the broker is a developer's on loopback.
struct BrowserCookies: Sendable {
    enum Kind: Sendable {
        case session
        case attempt
        /// One per sign-in, named with its event's id: two sign-ins in two
        /// tabs of one browser keep apart.
        case openIDSignIn(eventID: String)
    }

    /// Whether the cookies say `Secure`: on every broker but one whose
    /// public URL is plain http on loopback, where a browser would not
    /// send them back.
    let secure: Bool

    init(issuer: String) {
        let url = URLComponents(string: issuer)
        let loopback = url?.host.map(WebhookEndpoint.isLoopback) ?? false
        secure = !(url?.scheme == "http" && loopback)
    }

    func name(_ kind: Kind) -> String {
        let base =
            switch kind {
            case .session: "countersign_console"
            case .attempt: "countersign_console_sign_in"
            case .openIDSignIn(let eventID): "countersign_sign_in_" + eventID
            }
        return secure ? "__Host-" + base : base
    }

    /// `__Host-` cookies take `Path=/` only; on loopback they keep to
    /// their pages' paths.
    func path(_ kind: Kind) -> String {
        guard !secure else { return "/" }
        return switch kind {
        case .session: "/console/"
        case .attempt: "/console/api/"
        case .openIDSignIn: "/oauth/"
        }
    }

    /// `Set-Cookie` for a value that lives `maxAge` seconds; 0 deletes it.
    func setting(_ kind: Kind, _ value: String, maxAge: Int) -> String {
        var parts = [
            "\(name(kind))=\(value)", "Path=\(path(kind))", "Max-Age=\(maxAge)", "HttpOnly", "SameSite=Strict",
        ]
        if secure { parts.append("Secure") }
        return parts.joined(separator: "; ")
    }

    /// The cookie's value in a request's `Cookie` fields, if any.
    func value(_ kind: Kind, in headers: HTTPFields) -> String? {
        let name = name(kind)
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

    /// The console's CSRF token of a session: derived from the cookie's secret, so
    /// that only a page that was told it (by its own origin, which only the
    /// cookie's holder can read) can send it, and nothing is stored for it.
    static func csrfToken(forSessionSecret secret: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("countersign console csrf".utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return Base64URL.encode(Data(mac))
    }
}
