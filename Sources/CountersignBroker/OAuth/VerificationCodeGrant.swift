import CountersignCore
import CountersignStore
import Foundation

/// What a code of the hosted email/phone verification page buys at the
/// token endpoint (RFC 6749 §4.1.3, RFC 7636 §4.6): the verified
/// identity's tokens, for the app whose page it was; public clients too,
/// as seed 000 defines them.
struct VerificationCodeGrant {
    let environment: BrokerEnvironment

    func redeem(code: String, challengeID: Int64, verifier: String, redirectURI: String, client: OAuthClient)
        async throws -> (OAuthTokens, scope: String)
    {
        let key = client.key
        let redeemed: VerificationChallenge
        do {
            redeemed = try await CodeRedemption(environment: environment).redeem(
                challengeID: challengeID, code: code, verifier: verifier, redirectURL: redirectURI, apiKeyID: key.id)
        } catch let failure as CodeRedemption.Failure {
            throw APIError.oauth(.invalidGrant, failure.explanation)
        }
        let now = environment.now()
        let identity = try await environment.store.verifiedIdentity(
            apiKeyID: key.id, type: redeemed.identifierType, identifier: redeemed.identifier, now: now)
        let tokens = try await OAuthTokenIssuer(environment: environment)
            .issue(
                for: identity, family: CodeRedemption.family(of: redeemed), authTime: redeemed.verifiedAt ?? now,
                nonce: redeemed.nonce)
        return (tokens, "openid")
    }
}
