import CountersignCore
import CountersignSenders
import CountersignStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging

extension VerificationPageController {
    /// Hands a code to the sender; false (and a log line, without the code) if it failed.
    func deliver(
        _ code: String, to identifier: String, type: IdentifierType, app: String, context: BrokerRequestContext
    ) async -> Bool {
        do {
            try await environment.sender.send(
                CodeMessage(
                    code: code, to: identifier, type: type, app: app, lifetime: environment.verification.codeLifetime))
            return true
        } catch {
            context.logger.error("sending a verification code failed", metadata: ["error": "\(error)"])
            return false
        }
    }

    enum Validation {
        case valid(APIKey, IdentifierType)
        case failed(Response)
    }

    /// Checks the app's parameters in the order that decides whether a
    /// redirect may be trusted.
    func validate(_ parameters: HostedPage.Request, method: String?, responseType: String? = "code") async throws
        -> Validation
    {
        guard let key = try await environment.store.apiKey(id: parameters.apiKey) else {
            return .failed(
                HostedPage.response(
                    HostedPage.failure("Unknown app: the api_key is not registered here.", returnURL: nil),
                    status: .badRequest))
        }
        // An app that signs in by approval verifies nothing by code: its
        // relying party would take a verified address for an approval.
        guard !OpenIDAuthorization.signsIn(registered: try await environment.store.openIDClient(apiKeyID: key.id))
        else {
            return .failed(
                HostedPage.response(
                    HostedPage.failure(
                        "This app signs in by approval on a trusted device; it verifies no email address or phone number.",
                        returnURL: nil),
                    status: .badRequest))
        }
        guard
            RedirectURL.isAllowed(
                parameters.redirectURL, registered: try await environment.store.redirectURLs(apiKeyID: key.id))
        else {
            return .failed(
                HostedPage.response(
                    HostedPage.failure(
                        "The redirect_url is not registered for this app, so this page will not send you there.",
                        returnURL: nil),
                    status: .badRequest))
        }
        func refuse(_ description: String) -> Validation {
            .failed(
                HostedPage.redirect(
                    to: errorRedirect(
                        parameters.redirectURL, error: .invalidRequest, description: description,
                        state: parameters.state)))
        }
        guard responseType == "code" else {
            return .failed(
                HostedPage.redirect(
                    to: errorRedirect(
                        parameters.redirectURL, error: .unsupportedResponseType,
                        description: "only response_type=code is supported", state: parameters.state)))
        }
        guard let type = IdentifierType(rawValue: parameters.type) else { return refuse("type must be EMAIL or PHONE") }
        guard environment.sender.delivers(to: type) else {
            return refuse("this broker has no sender for \(type == .email ? "email addresses" : "phone numbers")")
        }
        guard method == nil || method == PKCE.method else { return refuse("code_challenge_method must be S256") }
        guard PKCE.isValidChallenge(parameters.codeChallenge) else {
            return refuse("code_challenge must be the base64url SHA-256 of a code_verifier (S256)")
        }
        guard (parameters.state?.utf8.count ?? 0) <= 512 else { return refuse("state may be at most 512 bytes") }
        guard (parameters.nonce?.utf8.count ?? 0) <= 256 else { return refuse("nonce may be at most 256 bytes") }
        return .valid(key, type)
    }

    func redirectIsRegistered(_ parameters: HostedPage.Request) async throws -> Bool {
        try await redirectIsRegistered(parameters.redirectURL, apiKeyID: parameters.apiKey)
    }

    func redirectIsRegistered(_ redirectURL: String, apiKeyID: String) async throws -> Bool {
        RedirectURL.isAllowed(redirectURL, registered: try await environment.store.redirectURLs(apiKeyID: apiKeyID))
    }

    /// The code form again, for the same challenge.
    func page(
        _ challenge: VerificationChallenge, error: String? = nil, notice: String? = nil,
        status: HTTPResponse.Status = .ok
    ) -> Response {
        HostedPage.response(
            HostedPage.codeForm(
                challengeID: challenge.id, identifier: challenge.identifier, request: Self.request(of: challenge),
                lifetime: environment.verification.codeLifetime, error: error, notice: notice),
            status: status)
    }

    /// The answer for a challenge that takes no more codes.
    func closed(_ challenge: VerificationChallenge, now: Date) -> Response {
        switch challenge.standing(maxAttempts: environment.verification.maxAttempts, now: now) {
        case .verified:
            return HostedPage.response(
                HostedPage.failure("This code was already used. Go back to the app.", returnURL: nil), status: .gone)
        case .closedAfterWrongCodes:
            return HostedPage.response(
                HostedPage.failure(
                    "Too many wrong codes. For your security this verification is closed.",
                    returnURL: errorRedirect(
                        challenge.redirectURL, error: .accessDenied, description: "too many wrong codes",
                        state: challenge.state)),
                status: .tooManyRequests)
        case .codeExpired, .open:
            return page(challenge, error: "This code has expired. Send a new code.", status: .gone)
        }
    }

    static func request(of challenge: VerificationChallenge) -> HostedPage.Request {
        HostedPage.Request(
            apiKey: challenge.apiKeyID, redirectURL: challenge.redirectURL, type: challenge.identifierType.rawValue,
            codeChallenge: challenge.codeChallenge, state: challenge.state, nonce: challenge.nonce)
    }

    func errorRedirect(_ url: String, error: ErrorCode, description: String, state: String?) -> String {
        HostedPage.errorRedirect(url, error: error, description: description, state: state, issuer: environment.issuer)
    }

}
