/// An authorization code from the hosted verification page, with what
/// proves it belongs to whoever presents it: the PKCE verifier, the
/// challenge id and the redirect URL the page was opened with.
public struct VerifiedCode: Codable, Sendable, Equatable {
    public let authorizationCode: String
    public let codeVerifier: String
    public let challengeID: Int64
    public let redirectURL: String

    enum CodingKeys: String, CodingKey {
        case authorizationCode = "authorization_code"
        case codeVerifier = "code_verifier"
        case challengeID = "challenge_id"
        case redirectURL = "redirect_url"
    }

    public init(authorizationCode: String, codeVerifier: String, challengeID: Int64, redirectURL: String) {
        self.authorizationCode = authorizationCode
        self.codeVerifier = codeVerifier
        self.challengeID = challengeID
        self.redirectURL = redirectURL
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        authorizationCode = try container.decode(String.self, forKey: .authorizationCode)
        codeVerifier = try container.decode(String.self, forKey: .codeVerifier)
        redirectURL = try container.decode(String.self, forKey: .redirectURL)
        // An integer in the original API; the redirect hands it over as text.
        if let number = try? container.decode(Int64.self, forKey: .challengeID) {
            challengeID = number
        } else if let text = try? container.decode(String.self, forKey: .challengeID), let number = Int64(text) {
            challengeID = number
        } else {
            throw DecodingError.dataCorruptedError(
                forKey: .challengeID, in: container, debugDescription: "challenge_id must be an integer")
        }
    }
}
