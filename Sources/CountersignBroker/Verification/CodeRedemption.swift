import CountersignCore
import CountersignStore
import Foundation

/// Spending an authorization code from the hosted page: the one check that
/// get_identity, the OAuth token endpoint and enrollment by verification share.
struct CodeRedemption {
    let environment: BrokerEnvironment

    /// Why a code buys nothing.
    enum Failure: Error, Equatable {
        /// No challenge of this app with that id.
        case unknownChallenge
        /// The redirect URL is not the one the page was opened with.
        case redirectMismatch
        /// The verifier does not hash to the challenge (S256).
        case badVerifier
        /// Unknown, expired or already used code (a reuse also revoked what
        /// the first use bought).
        case expiredOrUsed

        /// Why, in a sentence: what every endpoint that redeems codes says.
        var explanation: String {
            switch self {
            case .unknownChallenge: "no verification with this challenge_id for this app"
            case .redirectMismatch: "the redirect URL must be the one the page was opened with"
            case .badVerifier: "the code_verifier does not match the code_challenge (S256)"
            case .expiredOrUsed: "the authorization code is unknown, expired or already used"
            }
        }

        /// The `msg` of the original get_identity API (seed 001).
        var identityMessage: String {
            switch self {
            case .unknownChallenge: "Challenge not found"
            case .redirectMismatch: "Redirect URL mismatch"
            case .badVerifier: "Invalid code verifier"
            case .expiredOrUsed: "Challenge Expired"
            }
        }
    }

    /// The refresh-token family of everything a challenge's code buys.
    static func family(of challenge: VerificationChallenge) -> String {
        RefreshFamily.verification(challengeID: challenge.id).id
    }

    /// Checks and spends a code presented with its proofs.
    func redeem(_ code: VerifiedCode, apiKeyID: String) async throws -> VerificationChallenge {
        try await redeem(
            challengeID: code.challengeID, code: code.authorizationCode, verifier: code.codeVerifier,
            redirectURL: code.redirectURL, apiKeyID: apiKeyID)
    }

    /// Checks and spends the code; returns the verified challenge.
    func redeem(challengeID: Int64, code: String, verifier: String, redirectURL: String, apiKeyID: String)
        async throws -> VerificationChallenge
    {
        guard let challenge = try await environment.store.challenge(id: challengeID), challenge.apiKeyID == apiKeyID
        else {
            throw Failure.unknownChallenge
        }
        guard redirectURL == challenge.redirectURL else { throw Failure.redirectMismatch }
        guard PKCE.verify(verifier: verifier, challenge: challenge.codeChallenge) else { throw Failure.badVerifier }
        let now = environment.now()
        do {
            return try await environment.store.redeemAuthorizationCode(
                challengeID: challenge.id, digest: SecretToken.digest(code), now: now)
        } catch let error as StoreError where error.code == .conflict || error.code == .notFound {
            if error.code == .conflict, try await environment.store.challenge(id: challenge.id)?.redeemedAt != nil {
                // A code used twice may be stolen: what it bought is revoked (RFC 6749 §4.1.2).
                try await environment.store.revokeRefreshTokenFamily(Self.family(of: challenge), now: now)
            }
            throw Failure.expiredOrUsed
        }
    }
}
