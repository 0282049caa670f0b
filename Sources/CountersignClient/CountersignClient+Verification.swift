public import CountersignCore
import Foundation
import NIOHTTP1

/// A started verification: the page to open and the secrets to finish it.
public struct PendingVerification: Sendable {
    /// The hosted page, for the user's browser.
    public let pageURL: String
    public let codeVerifier: String
    public let state: String
    public let redirectURL: String

    /// Turns the redirect's query into a code, after checking `state`.
    public func complete(with query: [String: String]) throws -> VerifiedCode {
        if let error = query["error"] {
            throw CountersignError(
                status: 0, code: error, message: "the verification was refused: \(query["error_description"] ?? error)")
        }
        guard let state = query["state"], SecretToken.constantTimeEquals(Data(state.utf8), Data(self.state.utf8))
        else {
            throw CountersignError(
                status: 0, code: "state_mismatch", message: "the redirect did not answer this request (state differs)")
        }
        guard let code = query["code"], let challenge = query["challenge_id"].flatMap(Int64.init) else {
            throw CountersignError(status: 0, code: "bad_redirect", message: "the redirect carried no code")
        }
        return VerifiedCode(
            authorizationCode: code, codeVerifier: codeVerifier, challengeID: challenge, redirectURL: redirectURL)
    }
}

extension CountersignClient {
    /// Starts verifying an email address or phone number on the hosted
    /// page, to come back to `redirectURL` (PKCE S256, a random state).
    public func startVerification(type: IdentifierType, redirectURL: String) -> PendingVerification {
        let verifier = PKCE.newVerifier()
        let state = SecretToken.generate(bytes: 16)
        var components = URLComponents(string: connection.url("/app"))!
        components.queryItems = [
            URLQueryItem(name: "api_key", value: apiKeyID), URLQueryItem(name: "redirect_url", value: redirectURL),
            URLQueryItem(name: "type", value: type.rawValue),
            URLQueryItem(name: "code_challenge", value: PKCE.challenge(for: verifier)),
            URLQueryItem(name: "state", value: state),
        ]
        return PendingVerification(
            pageURL: components.string!, codeVerifier: verifier, state: state, redirectURL: redirectURL)
    }

    struct VerifiedEnrollRequest: Encodable {
        let clientUserID: String
        let verification: VerifiedCode
        let publicKey: DevicePublicKey
        let name: String
        let type: String
        enum CodingKeys: String, CodingKey {
            case verification, name, type
            case clientUserID = "client_user_id"
            case publicKey = "public_key"
        }
    }

    /// Enrolls `credential`'s key as the first trusted device of the user
    /// whose email address or phone number `code` verified.
    public func enroll(_ credential: DeviceCredential, verification code: VerifiedCode, type: String = "cli")
        async throws -> DeviceDocument
    {
        let path = "/api/v1/enrollments"
        let proof = try await DeviceProof.make(
            key: credential.privateKey, method: "POST", url: connection.url(path), now: Date())
        return try await connection.send(
            .POST, path, headers: [("API_KEY_ID", apiKeyID), ("Device-Proof", proof)],
            body: VerifiedEnrollRequest(
                clientUserID: credential.clientUserID, verification: code, publicKey: credential.publicKey,
                name: credential.name, type: type),
            as: DeviceDocument.self)
    }
}
