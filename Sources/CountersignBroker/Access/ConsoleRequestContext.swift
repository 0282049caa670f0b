public import CountersignCore
public import Hummingbird

/// An operator signed in to the console, as the session cookie showed:
/// one object, shared by the request's contexts.
public final class ConsoleOperator: Sendable {
    public let session: ConsoleSession
    /// The cookie's secret, which the session's CSRF token and sign-out need.
    let secret: String

    init(session: ConsoleSession, secret: String) {
        self.session = session
        self.secret = secret
    }

    public var name: String { session.operatorName }
}

/// A console request by a signed-in operator: a valid session cookie from
/// the address it was made at and, unless the request only reads, the
/// session's CSRF token (``CallerAuthenticator``).
public struct ConsoleRequestContext: ChildRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let signedIn: ConsoleOperator
    /// The operator's address, for the audit log.
    let clientAddress: String

    public init(context: BrokerRequestContext) throws {
        guard case .consoleOperator(let signedIn) = context.identity else {
            throw APIError.notSignedIn(ConsoleSessionRule.Verdict.unknown.refusal ?? "")
        }
        self.coreContext = context.coreContext
        self.signedIn = signedIn
        self.clientAddress = context.clientAddress
    }

    /// Room for an invitation of 1,000 people with their addresses (about
    /// 100 bytes each); only a signed-in operator's body is read.
    public var maxUploadSize: Int { 256 * 1024 }
}
