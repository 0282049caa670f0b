import Hummingbird

/// An OAuth access token a request presents (RFC 6750): in the
/// `Authorization` header (`Bearer`, the scheme's name in any case, RFC
/// 9110 §11.1) or as `access_token` in a POST form (§2.2), never both. What
/// the token stands for is the caller's to check.
enum AccessTokenCredentials {
    static func read(_ request: Request, context: some RequestContext) async throws -> String {
        let header = request.headers[.authorization].flatMap {
            $0.lowercased().hasPrefix("bearer ") ? String($0.dropFirst(7)) : nil
        }
        let isForm =
            request.method == .post
            && request.headers[.contentType].flatMap(MediaType.init(from:))?.isType(.applicationUrlEncoded) == true
        let body = isForm ? FormQuery(try await request.formBody(context: context))["access_token"] : nil
        switch (header, body) {
        case (let token?, nil), (nil, let token?): return token
        case (.some, .some):
            throw APIError.oauth(.invalidRequest, "send the access token once, not in both the header and the body")
        case (nil, nil):
            var error = APIError.oauth(
                .invalidRequest, "send the access token as a Bearer token", status: .unauthorized)
            error.headers[.wwwAuthenticate] = #"Bearer realm="countersign""#
            throw error
        }
    }
}
