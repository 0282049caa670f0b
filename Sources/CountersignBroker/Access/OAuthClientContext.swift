import CountersignCore
import Hummingbird

/// The client of an OAuth request: an API key, authenticated with its
/// secret (`client_secret_basic` or `client_secret_post`) or named by
/// `client_id` alone, as a public client of the hosted page's flow is;
/// with the form it sent, read once.
public final class OAuthClient: Sendable {
    let key: APIKey
    /// Whether it proved it holds the secret.
    let authenticated: Bool
    /// The request's `application/x-www-form-urlencoded` body.
    let form: String

    init(key: APIKey, authenticated: Bool, form: String) {
        self.key = key
        self.authenticated = authenticated
        self.form = form
    }
}

/// A request to OAuth's token and backchannel endpoints, by the client
/// ``CallerAuthenticator`` found in it (`.oauthClient`). Their errors are
/// written in OAuth's form (``APIError/Form/oauth``).
struct OAuthClientContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    let client: OAuthClient
    /// The caller's address, shown on the events it opens.
    let clientAddress: String

    init(context: BrokerRequestContext) throws {
        guard case .oauthClient(let client) = context.identity else {
            throw APIError.oauth(.invalidClient, "client_id is missing or unknown")
        }
        self.client = client
        self.coreContext = context.coreContext
        self.clientAddress = context.clientAddress
    }

    /// The form the client sent, as `T`.
    func form<T: Decodable>(_: T.Type) throws -> T { try Request.decodeForm(T.self, from: client.form) }

    public var maxUploadSize: Int { 64 * 1024 }
}
