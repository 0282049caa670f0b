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
    /// A device's decision on an event, by the device its key id names.
    case decider(Decider)
    /// An OAuth client, by Basic or by the form it sent.
    case oauthClient(OAuthClient)
    /// An operator, by the console's session cookie.
    case consoleOperator(ConsoleOperator)
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

/// A request that names an existing API key, with or without its secret:
/// an app on a machine that is not trusted yet (a new device enrolling, an
/// app redeeming a verification), or its backend.
public struct AppRequestContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The API key the request named.
    public let apiKey: APIKey
    /// The caller's address, for the audit log.
    let clientAddress: String

    public init(context: BrokerRequestContext) throws {
        switch context.identity {
        case .app(let key), .backend(let key): self.apiKey = key
        case .device, .requester, .decider, .oauthClient, .consoleOperator, nil:
            throw APIError.unauthorized("send the app's API key id in API_KEY_ID")
        }
        self.coreContext = context.coreContext
        self.clientAddress = context.clientAddress
    }

    public var maxUploadSize: Int { 64 * 1024 }
}

/// A request to create an event: a trusted device (approved at once), the
/// app's backend, or a requester with the app's key id alone.
public struct EventCreatorContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let creator: Creator
    /// The caller's address, shown on the event and counted by the limits.
    let clientAddress: String

    public enum Creator: Sendable {
        case device(AuthenticatedDevice)
        indirect case backend(APIKey)
        indirect case requester(APIKey)

        /// Whether the caller holds the app's secret key.
        public var holdsSecret: Bool {
            if case .backend = self { true } else { false }
        }
    }

    public init(context: BrokerRequestContext) throws {
        switch context.identity {
        case .device(let caller):
            // A suspended device asks for nothing, its own approval least.
            guard caller.device.suspendedAt == nil else { throw APIError.refused(.suspendedDevice) }
            creator = .device(caller)
        case .backend(let key): creator = .backend(key)
        case .app(let key): creator = .requester(key)
        case .requester, .decider, .oauthClient, .consoleOperator, nil:
            throw APIError.unauthorized("send API_KEY_ID, or a Device-Proof from a trusted device")
        }
        self.coreContext = context.coreContext
        self.clientAddress = context.clientAddress
    }

    public var maxUploadSize: Int { 64 * 1024 }
}

/// A request about one event by whoever may hold it: its requester (by the
/// requester token) or its app's backend. Any other caller is let through
/// as ``Holder/nobody``, to be told, as for an unknown id, that there is no
/// such event.
public struct EventHolderContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let holder: Holder

    public enum Holder: Sendable {
        indirect case backend(APIKey)
        case requester(secret: String)
        case nobody
    }

    public init(context: BrokerRequestContext) throws {
        switch context.identity {
        case .backend(let key): holder = .backend(key)
        case .requester(let secret): holder = .requester(secret: secret)
        case .app, .device, .decider, .oauthClient, .consoleOperator: holder = .nobody
        case nil:
            throw APIError.unauthorized("send the requester token as a Bearer token, or the API key and secret")
        }
        self.coreContext = context.coreContext
    }

    public var maxUploadSize: Int { 64 * 1024 }
}

/// What a device's proof admits to: ``Acting`` for everything a device
/// does, ``Reading`` for what it reads of itself.
public protocol DeviceAccess: Sendable {
    /// Whether a device the directory suspended is let through.
    static var admitsSuspended: Bool { get }
}

/// A device acting for its user: approving its own request, removing a
/// device, registering a passkey, codes, push. A suspended device is
/// refused (403 `device_suspended`).
public enum Acting: DeviceAccess {
    public static var admitsSuspended: Bool { false }
}

/// A device reading what it may read of itself: its inbox (empty while
/// it is suspended), itself, its user's devices. A suspended device is
/// let through, so that it keeps polling and learns it is suspended.
public enum Reading: DeviceAccess {
    public static var admitsSuspended: Bool { true }
}

/// A request authenticated with a trusted device's proof.
public typealias DeviceRequestContext = DeviceContext<Acting>
/// A device's read of itself, suspended or not.
public typealias DeviceReaderContext = DeviceContext<Reading>

/// A request authenticated with a trusted device's proof, admitted as
/// `Access` says.
public struct DeviceContext<Access: DeviceAccess>: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The device and its key, the object the identity holds.
    private let caller: AuthenticatedDevice
    /// The caller's address, for the audit log.
    let clientAddress: String

    public init(context: BrokerRequestContext) throws {
        guard case .device(let caller) = context.identity else {
            throw APIError.unauthorized("this call needs a device proof (Device-Proof header)")
        }
        guard Access.admitsSuspended || caller.device.suspendedAt == nil else {
            throw APIError.refused(.suspendedDevice)
        }
        self.coreContext = context.coreContext
        self.caller = caller
        self.clientAddress = context.clientAddress
    }

    /// The authenticated, unrevoked device.
    public var device: TrustedDevice { caller.device }
    /// Its app's API key.
    public var apiKey: APIKey { caller.apiKey }
    /// The device, from this address, as the audit log names who changed
    /// a user's devices.
    var author: ChangeAuthor { ChangeAuthor(actor: device.id, ip: clientAddress) }

    public var maxUploadSize: Int { 64 * 1024 }
}
