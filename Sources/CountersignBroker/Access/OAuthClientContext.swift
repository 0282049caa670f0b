import CountersignCore
import Hummingbird

/// The client of an OAuth request: an API key, authenticated with its
/// secret (`client_secret_basic` or `client_secret_post`) or named by
/// `client_id` alone, as a public client of the hosted page's flow is.
struct OAuthClient {
    let key: APIKey
    /// Whether it proved it holds the secret.
    let authenticated: Bool
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
        switch context.identity {
        case .backend(let key): client = OAuthClient(key: key, authenticated: true)
        case .app(let key): client = OAuthClient(key: key, authenticated: false)
        default: throw APIError.oauth("invalid_client", "client_id is missing or unknown")
        }
        self.coreContext = context.coreContext
        self.clientAddress = context.clientAddress
    }

    public var maxUploadSize: Int { 64 * 1024 }
}
