import CountersignCore
import CountersignSenders
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The hosted verification page's HTML: server-rendered, no JavaScript,
/// readable on a phone.
enum HostedPage {
    /// The parameters the app opened the page with, carried through the forms.
    struct Request: Codable, Sendable {
        var apiKey: String
        var redirectURL: String
        var type: String
        var codeChallenge: String
        var state: String?
        /// OpenID Connect nonce, from /oauth/authorize.
        var nonce: String? = nil

        enum CodingKeys: String, CodingKey {
            case type, state, nonce
            case apiKey = "api_key"
            case redirectURL = "redirect_url"
            case codeChallenge = "code_challenge"
        }

        var hiddenFields: String {
            [("api_key", apiKey), ("redirect_url", redirectURL), ("type", type), ("code_challenge", codeChallenge)]
                .map { hidden($0.0, $0.1) }.joined() + (state.map { hidden("state", $0) } ?? "")
                + (nonce.map { hidden("nonce", $0) } ?? "")
        }
    }

    static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    static func hidden(_ name: String, _ value: String) -> String {
        #"<input type="hidden" name="\#(name)" value="\#(escape(value))">"#
    }

    /// The page asking for the email address or phone number; `value`
    /// prefills it (the app's `login_hint`, or what was typed before an error).
    static func identifierForm(
        _ request: Request, app: String, isEmail: Bool, value: String? = nil, error: String? = nil
    ) -> String {
        let label = isEmail ? "Email address" : "Phone number"
        let prefill = value.map { #" value="\#(escape(String($0.prefix(254))))""# } ?? ""
        let input =
            isEmail
            ? #"<input id="identifier" name="identifier" type="email" autocomplete="email" inputmode="email" required autofocus placeholder="you@example.com"\#(prefill)>"#
            : #"<input id="identifier" name="identifier" type="tel" autocomplete="tel" inputmode="tel" required autofocus placeholder="+1 555 010 0000"\#(prefill)>"#
        return layout(
            title: "Verify your \(isEmail ? "email" : "phone number")",
            body: """
                <p class="lead"><strong>\(escape(app))</strong> wants to confirm your \(isEmail ? "email address" : "phone number"). We'll send you a one-time code.</p>
                \(error.map { #"<p class="error" role="alert">\#(escape($0))</p>"# } ?? "")
                <form method="post" action="/app/code">
                  \(request.hiddenFields)
                  <label for="identifier">\(label)</label>
                  \(input)
                  <button type="submit">Send code</button>
                </form>
                \(cancelForm(request))
                """)
    }

    /// The page asking for the code that was sent.
    static func codeForm(
        challengeID: Int64, identifier: String, request: Request, lifetime: TimeInterval, error: String? = nil,
        notice: String? = nil
    ) -> String {
        layout(
            title: "Enter your code",
            body: """
                <p class="lead">We sent a 6-digit code to <strong>\(escape(identifier))</strong>. It is valid for \(CodeMessage.duration(lifetime)).</p>
                \(error.map { #"<p class="error" role="alert">\#(escape($0))</p>"# } ?? "")
                \(notice.map { #"<p class="notice">\#(escape($0))</p>"# } ?? "")
                <form method="post" action="/app/verify">
                  \(hidden("challenge_id", String(challengeID)))
                  <label for="code">Code</label>
                  <input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required autofocus placeholder="123456">
                  <button type="submit">Verify</button>
                </form>
                <form method="post" action="/app/resend" class="secondary">
                  \(hidden("challenge_id", String(challengeID)))
                  <button type="submit" class="link">Send a new code</button>
                </form>
                \(cancelForm(request))
                """)
    }

    /// A dead end: the message, and a way back to the app with an OAuth error.
    static func failure(_ message: String, returnURL: String?, title: String = "Verification failed") -> String {
        layout(
            title: title,
            body: """
                <p class="error" role="alert">\(escape(message))</p>
                \(returnURL.map { #"<p><a class="button" href="\#(escape($0))">Back to the app</a></p>"# } ?? "<p>You can close this page.</p>")
                """)
    }

    static func cancelForm(_ request: Request) -> String {
        """
        <form method="post" action="/app/cancel" class="secondary">
          \(request.hiddenFields)
          <button type="submit" class="link">Cancel</button>
        </form>
        """
    }

    static func layout(title: String, body: String, head: String = "") -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escape(title)) · Countersign</title>
        \(head)
        <style>
        :root { color-scheme: light dark; --accent: #2f5bea; --error: #b3261e; }
        * { box-sizing: border-box; }
        body { margin: 0; min-height: 100vh; display: flex; align-items: center; justify-content: center;
               font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
               background: linear-gradient(160deg, #eef2ff, #f8fafc); color: #1f2937; }
        main { width: min(420px, 100% - 32px); background: #fff; border-radius: 16px; padding: 32px 28px;
               box-shadow: 0 10px 30px rgba(15, 23, 42, .12); }
        .brand { font-weight: 600; letter-spacing: .02em; color: var(--accent); margin: 0 0 16px; }
        h1 { font-size: 1.5rem; margin: 0 0 8px; }
        .lead { color: #4b5563; margin: 0 0 20px; }
        label { display: block; font-weight: 600; margin: 0 0 6px; }
        input { width: 100%; font-size: 1.1rem; padding: 12px 14px; border: 1px solid #cbd5e1; border-radius: 10px; }
        input:focus { outline: 3px solid rgba(47, 91, 234, .25); border-color: var(--accent); }
        button, .button { display: block; width: 100%; margin-top: 16px; padding: 12px; border: 0; border-radius: 10px;
               background: var(--accent); color: #fff; font-size: 1rem; font-weight: 600; text-align: center;
               text-decoration: none; cursor: pointer; }
        .secondary button.link { background: none; color: #475569; font-weight: 500; margin-top: 8px; padding: 6px; }
        .error { background: #fdecea; color: var(--error); padding: 10px 12px; border-radius: 10px; }
        .notice { background: #ecfdf5; color: #065f46; padding: 10px 12px; border-radius: 10px; }
        @media (prefers-color-scheme: dark) {
          body { background: #0f172a; color: #e2e8f0; } main { background: #111827; box-shadow: none; }
          .lead { color: #94a3b8; } input { background: #0b1220; color: #e2e8f0; border-color: #334155; }
        }
        </style>
        </head>
        <body>
        <main>
        <p class="brand">Countersign</p>
        <h1>\(escape(title))</h1>
        \(body)
        </main>
        </body>
        </html>
        """
    }

    /// The pages' policy: no script, no frame, nothing from elsewhere.
    static let contentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"

    /// An HTML response with the headers a page holding codes needs.
    static func response(
        _ html: String, status: HTTPResponse.Status = .ok, policy: String = contentSecurityPolicy,
        headers extra: HTTPFields = [:]
    ) -> Response {
        var headers: HTTPFields = [
            .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
            .contentSecurityPolicy: policy,
            // same-origin: the page's own forms carry its Origin (under
            // no-referrer a form post says Origin: null), and no other
            // site hears the page's address.
            HTTPField.Name("X-Frame-Options")!: "DENY", HTTPField.Name("Referrer-Policy")!: "same-origin",
            .xContentTypeOptions: "nosniff",
        ]
        headers.append(contentsOf: extra)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// Runs a step of a hosted page: an error it throws is answered with a
    /// page a person can read, not the API's JSON. The store away (a
    /// database restarting) says to try again shortly, with `Retry-After`.
    static func answering(
        _ context: some RequestContext, _ step: () async throws -> Response
    ) async throws -> Response {
        do {
            return try await step()
        } catch {
            let refusal = ErrorMapper.apiError(for: error, context: context)
            let message =
                refusal.status.code >= 500
                ? "Signing in is unavailable for a moment. Please try again in a few seconds."
                : sentence(refusal.message)
            return response(
                failure(message, returnURL: nil, title: "Cannot go on"), status: refusal.status,
                headers: refusal.headers)
        }
    }

    /// A wait, in the words a page says it with.
    static func minutes(_ seconds: Int) -> String {
        seconds < 90 ? "\(seconds) seconds" : "\((seconds + 59) / 60) minutes"
    }

    /// An API message as a sentence for a page.
    static func sentence(_ message: String) -> String {
        guard let first = message.first else { return message }
        return first.uppercased() + message.dropFirst() + (message.hasSuffix(".") ? "" : ".")
    }

    /// The redirect URL with an OAuth error (RFC 6749 §4.1.2.1), the
    /// `state`, and the issuer (RFC 9207), which tells a client talking to
    /// several providers which one answered.
    static func errorRedirect(_ url: String, error: ErrorCode, description: String, state: String?, issuer: String)
        -> String
    {
        let items = [
            URLQueryItem(name: "error", value: error.rawValue),
            URLQueryItem(name: "error_description", value: description),
            URLQueryItem(name: "state", value: state), URLQueryItem(name: "iss", value: issuer),
        ].filter { $0.value != nil }
        return RedirectURL.appending(items, to: url) ?? url
    }

    /// A 303 to the app's redirect URL.
    static func redirect(to url: String, headers extra: HTTPFields = [:]) -> Response {
        var headers: HTTPFields = [
            .location: url, .cacheControl: "no-store", HTTPField.Name("Referrer-Policy")!: "no-referrer",
        ]
        headers.append(contentsOf: extra)
        return Response(status: .seeOther, headers: headers)
    }
}
