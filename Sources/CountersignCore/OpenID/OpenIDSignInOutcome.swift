public import Foundation

/// Where a sign-in by approval stands, from its login as it is: what the
/// page shows the person, and what the app is told (an OAuth error of
/// RFC 6749 §4.1.2.1 when it did not end in an approval).
public enum OpenIDSignInOutcome: Sendable, Equatable {
    /// Waiting for the trusted device.
    case waiting
    /// Approved: the app gets its code.
    case approved
    /// Ended without an approval: the sentence for the person, and the
    /// `error_description` for the app (the error is `access_denied`).
    case ended(message: String, description: String)

    public static func of(_ event: ApprovalEvent, now: Date) -> Self {
        switch (event.status(at: now), event.statusReason) {
        case (.pending, _): .waiting
        // A code may still settle a login for a while after its window
        // (``CodeLimits/lateCodeWindow``, for a terminal left waiting); a
        // sign-in was over by then, and the app may have heard so.
        case (.approved, _) where (event.decidedAt ?? now) >= event.expiresAt:
            .ended(
                message: "Nobody approved the sign-in in time.",
                description: "the sign-in was not approved in time")
        case (.approved, _): .approved
        case (_, .withdrawn?):
            .ended(message: "You cancelled this sign-in.", description: "the user cancelled the sign-in")
        case (_, .fraudReported?):
            .ended(
                message: "This sign-in was reported on your device as not yours, so it is refused.",
                description: "the user reported the sign-in as not theirs")
        case (_, .userProtected?):
            .ended(
                message: "Sign-in is paused for this user after a request was reported as not theirs.",
                description: "sign-in is paused for this user after a fraud report")
        case (_, .tooManyWrongMatches?):
            .ended(
                message: "The wrong number was chosen on the device too often, so this sign-in is refused.",
                description: "the wrong number was chosen too often")
        case (.rejected, _):
            .ended(message: "The sign-in was refused on your device.", description: "the user refused the sign-in")
        case (.expired, _):
            .ended(
                message: "Nobody approved the sign-in in time.",
                description: "the sign-in was not approved in time")
        }
    }
}

/// A short name for the browser a user agent string names (like "Firefox
/// on Linux"), for the approver to compare with the screen in front of
/// them; the address beside it says where.
public enum BrowserSummary {
    public static func of(userAgent: String) -> String {
        let agent = userAgent
        let browser: String? =
            if agent.contains("Firefox/") { "Firefox" } else if agent.contains("Edg/") {
                "Edge"
            } else if agent.contains("OPR/") {
                "Opera"
            } else if agent.contains("Chrome/") || agent.contains("Chromium/") {
                "Chrome"
            } else if agent.contains("Safari/") { "Safari" } else { nil }
        let system: String? =
            if agent.contains("Android") { "Android" } else if agent.contains("iPhone") {
                "iPhone"
            } else if agent.contains("iPad") { "iPad" } else if agent.contains("Windows") {
                "Windows"
            } else if agent.contains("CrOS") {
                "ChromeOS"
            } else if agent.contains("Mac OS X") || agent.contains("Macintosh") {
                "macOS"
            } else if agent.contains("Linux") { "Linux" } else { nil }
        switch (browser, system) {
        case (let browser?, let system?): return "\(browser) on \(system)"
        case (let browser?, nil): return browser
        case (nil, let system?): return "A browser on \(system)"
        case (nil, nil): return "A web browser"
        }
    }
}
