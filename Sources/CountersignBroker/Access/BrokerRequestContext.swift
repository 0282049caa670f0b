public import CountersignCore
public import Hummingbird
import NIOCore

/// Who is calling, as the authentication middleware established it.
///
/// Its records are boxed, so that the context that carries it (copied into
/// the async frames a request passes) holds a word or two instead of them.
public enum CallerIdentity: Sendable {
    /// An app backend: API key id and its secret.
    indirect case backend(APIKey)
    /// A client that named an existing API key id but holds no secret:
    /// a requester on a machine that is not trusted yet.
    indirect case app(APIKey)
    /// A trusted device, by a valid proof.
    case device(AuthenticatedDevice)
    /// A requester presenting the secret it got when it created an event.
    case requester(secret: String)
}

/// A trusted device and its app's key, as a valid proof established them:
/// one object, shared by the request's contexts rather than copied.
public final class AuthenticatedDevice: Sendable {
    /// The enrolled, unrevoked device.
    public let device: TrustedDevice
    /// Its app's API key.
    public let apiKey: APIKey

    init(_ device: TrustedDevice, _ apiKey: APIKey) {
        self.device = device
        self.apiKey = apiKey
    }
}

/// The context of every broker request.
public struct BrokerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The peer's address, or nil in tests without a socket.
    public let remoteAddress: String?
    /// Set by ``CallerAuthenticator``.
    public var identity: CallerIdentity?
    /// The client behind a trusted proxy (``TrustedProxies``).
    var forwardedAddress: String?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress?.ipAddress
        self.identity = nil
    }

    /// Bodies are small JSON documents.
    public var maxUploadSize: Int { 64 * 1024 }

    /// The caller's address as shown on events and counted by limits.
    var clientAddress: String { forwardedAddress ?? remoteAddress ?? "unknown" }
}

/// A request authenticated with an API key id and its secret. Its
/// existence is the proof: it cannot be made without a backend identity.
public struct BackendRequestContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The authenticated API key.
    public let apiKey: APIKey
    /// The caller's address, for the audit log.
    let clientAddress: String

    public init(context: BrokerRequestContext) throws {
        guard case .backend(let key) = context.identity else {
            throw APIError.unauthorized("this call needs an API key id and its secret key")
        }
        self.coreContext = context.coreContext
        self.apiKey = key
        self.clientAddress = context.clientAddress
    }

    public var maxUploadSize: Int { 64 * 1024 }
}

/// A request authenticated with a trusted device's proof.
public struct DeviceRequestContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The device and its key, the object the identity holds.
    private let caller: AuthenticatedDevice
    /// The caller's address, for the audit log.
    let clientAddress: String

    public init(context: BrokerRequestContext) throws {
        guard case .device(let caller) = context.identity else {
            throw APIError.unauthorized("this call needs a device proof (Device-Proof header)")
        }
        self.coreContext = context.coreContext
        self.caller = caller
        self.clientAddress = context.clientAddress
    }

    /// The authenticated, unrevoked device.
    public var device: TrustedDevice { caller.device }
    /// Its app's API key.
    public var apiKey: APIKey { caller.apiKey }

    public var maxUploadSize: Int { 64 * 1024 }
}
