import CountersignCore
import Foundation
import HTTPTypes
import Hummingbird

/// The hosted page of a sign-in by approval: server-rendered HTML in the
/// hosted verification page's layout. It works without JavaScript (the
/// waiting page refreshes itself); with it, a long-poll moves on the
/// moment the device answers.
enum SignInPage {
    /// The authorization request's parameters, carried through the user
    /// name form and checked again when it is sent.
    static let carried = [
        "client_id", "redirect_uri", "response_type", "response_mode", "scope", "state", "nonce", "code_challenge",
        "code_challenge_method", "acr_values", "max_age", "prompt",
    ]

    /// The waiting page's policy: its one script, and its polls.
    static let waitingPolicy =
        "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'"

    static let extraStyle = """
        <style>
        .number { font-size: 3rem; font-weight: 700; letter-spacing: .15em; text-align: center; margin: 8px 0 16px; }
        .hint { color: #64748b; font-size: .9rem; }
        details { margin-top: 20px; } summary { cursor: pointer; color: #475569; }
        </style>
        """

    /// Asks for the user name.
    static func userNameForm(
        app: String, parameters: [(String, String)], userName: String? = nil, error: String? = nil,
        back: String? = nil
    ) -> String {
        let prefill = userName.map { #" value="\#(HostedPage.escape($0))""# } ?? ""
        let focus = userName == nil ? " autofocus" : ""
        return HostedPage.layout(
            title: "Sign in to \(app)",
            body: """
                <p class="lead">Sign in to <strong>\(HostedPage.escape(app))</strong> by approving on a device you already trust. There is no password.</p>
                \(error.map { #"<p class="error" role="alert">\#(HostedPage.escape($0))</p>"# } ?? "")
                <form method="post" action="/oauth/sign-in">
                  \(parameters.map { HostedPage.hidden($0.0, $0.1) }.joined())
                  <label for="user">User name</label>
                  <input id="user" name="user" autocomplete="username" autocapitalize="none" spellcheck="false" maxlength="256" required\(focus)\(prefill)>
                  <button type="submit"\(userName == nil ? "" : " autofocus")>Continue</button>
                </form>
                \(back.map { #"<p><a class="button" href="\#(HostedPage.escape($0))">Back to \#(HostedPage.escape(app))</a></p>"# } ?? "")
                """)
    }

    /// The number to choose on the device, while the login waits.
    static func waiting(
        app: String, event: ApprovalEvent, now: Date, codes: Bool, error: String? = nil
    ) -> String {
        let seconds = max(0, Int(event.expiresAt.timeIntervalSince(now).rounded(.down)))
        let number =
            event.matchNumber.map {
                #"<p>Choose this number there:</p><p class="number" id="number">\#(HostedPage.escape($0))</p>"#
            } ?? ""
        let passkey =
            event.userVerification
            ? "<p>This sign-in must be approved with the device's screen lock (a passkey).</p>" : ""
        let codeForm =
            codes && !event.userVerification
            ? """
            <details\(error == nil ? "" : " open")>
              <summary>No device at hand? Use a code from your authenticator app</summary>
              <form method="post" action="/oauth/sign-in/code">
                \(HostedPage.hidden("id", event.id))
                <label for="code">6-digit code</label>
                <input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
                <button type="submit">Sign in with the code</button>
              </form>
            </details>
            """ : ""
        return HostedPage.layout(
            title: "Approve on your device",
            body: """
                <p class="lead">To sign in to <strong>\(HostedPage.escape(app))</strong> as <strong>\(HostedPage.escape(event.clientUserID))</strong>, open Countersign on a device you trust and approve the request.</p>
                \(error.map { #"<p class="error" role="alert">\#(HostedPage.escape($0))</p>"# } ?? "")
                \(number)
                \(passkey)
                <p class="hint" id="status" aria-live="polite">Waiting for your approval. This page goes on by itself; the request ends in \(seconds) seconds.</p>
                \(codeForm)
                <form method="post" action="/oauth/sign-in/cancel" class="secondary">
                  \(HostedPage.hidden("id", event.id))
                  <button type="submit" class="link">Cancel</button>
                </form>
                """,
            head: """
                \(extraStyle)
                <noscript><meta http-equiv="refresh" content="4"></noscript>
                <script src="/oauth/sign-in.js" defer></script>
                """)
    }

    /// The end of a sign-in that was not approved; the browser goes back
    /// to the app, which hears the error, by itself after a few seconds.
    static func ended(_ message: String, app: String, back: String) -> String {
        HostedPage.layout(
            title: "Not signed in",
            body: """
                <p class="error" role="alert">\(HostedPage.escape(message))</p>
                <p>Going back to \(HostedPage.escape(app)) in a few seconds.</p>
                <p><a class="button" href="\(HostedPage.escape(back))">Back to \(HostedPage.escape(app)) now</a></p>
                """,
            head: #"<meta http-equiv="refresh" content="5;url=\#(HostedPage.escape(back))">"#)
    }

    /// The waiting page's script: a long-poll of the sign-in's status,
    /// and a reload, which the server answers with the next step, once it
    /// is decided. Lost connections are tried again after a pause.
    static let script = """
        "use strict";
        (async () => {
          const status = document.getElementById("status");
          // A form sent (Cancel, a code) takes the page elsewhere: the poll
          // its change wakes must not take it back here.
          let leaving = false;
          document.addEventListener("submit", () => { leaving = true; });
          const id = new URLSearchParams(location.search).get("id") || "";
          const page = "/oauth/sign-in?id=" + encodeURIComponent(id);
          for (let failures = 0; ; ) {
            let response;
            try {
              response = await fetch("/oauth/sign-in/status?wait=25&id=" + encodeURIComponent(id), {
                cache: "no-store", credentials: "same-origin" });
            } catch {
              failures += 1;
              if (status) status.textContent = "Connection lost; trying again…";
              await new Promise((resolve) => setTimeout(resolve, Math.min(30, 2 * failures) * 1000));
              continue;
            }
            if (response.status >= 500) {
              failures += 1;
              await new Promise((resolve) => setTimeout(resolve, Math.min(30, 2 * failures) * 1000));
              continue;
            }
            failures = 0;
            const body = response.ok ? await response.json().catch(() => null) : null;
            if (leaving) return;
            if (!body || body.status !== "pending") {
              location.replace(page);
              return;
            }
          }
        })();
        """
}
