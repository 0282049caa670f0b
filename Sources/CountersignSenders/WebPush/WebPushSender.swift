public import AsyncHTTPClient
public import CountersignCore
public import Foundation
import NIOCore
import NIOHTTP1

/// Sends Web Push messages (RFC 8030) to browsers' push services and
/// UnifiedPush distributors alike: the payload encrypted to the
/// subscription (RFC 8291), signed for with VAPID (RFC 8292).
public struct WebPushSender: Sendable {
    /// How a push service answered.
    public enum Result: Sendable, Equatable {
        /// Taken for delivery (201).
        case accepted
        /// The subscription no longer exists (404, 410): remove it.
        case gone(String)
        /// Worth another try later (429, 5xx, no connection); the service's
        /// `Retry-After` in seconds, if it gave one.
        case retry(String, retryAfter: TimeInterval?)
        /// Refused for good (another 4xx: a bad request, a VAPID key the
        /// subscription was not made for, a payload too large).
        case refused(String)
    }

    let client: HTTPClient
    let contact: String
    let endpointGuard: EndpointGuard

    /// A sender whose VAPID `sub` is `contact`, a `mailto:` or `https:`
    /// URL where a push service's operator can reach the broker's.
    public init(contact: String, endpointGuard: EndpointGuard, client: HTTPClient = WebPushSender.client) {
        self.client = client
        self.contact = contact
        self.endpointGuard = endpointGuard
    }

    /// The process's HTTP client for pushes, like `HTTPClient.shared` never
    /// shut down, but set up for pushes: no redirects (a push service never
    /// sends one, and following it would leave the checked host), short
    /// timeouts.
    public static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(5), read: .seconds(10)))
        configuration.connectionPool.idleTimeout = .seconds(30)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    /// The longest one attempt takes, from resolving the host to the last
    /// byte of the answer: a push service that trickles its answer cannot
    /// hold a delivery slot longer.
    public static let attemptDeadline: Duration = .seconds(12)

    /// Sends `payload` to `subscription`, to be kept by the push service for
    /// at most `ttl` seconds (the time the event has left).
    public func send(
        _ payload: Data, to subscription: PushSubscription, signedWith key: VAPIDKey, ttl: Int, now: Date
    ) async -> Result {
        await withTaskGroup(of: Result?.self) { group in
            group.addTask { await attempt(payload, to: subscription, signedWith: key, ttl: ttl, now: now) }
            group.addTask {
                try? await Task.sleep(for: Self.attemptDeadline)
                return nil
            }
            // The first to finish wins; the other is cancelled (a cancelled
            // request is torn down by the HTTP client).
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .retry("the push service took longer than \(Self.attemptDeadline)", retryAfter: nil)
        }
    }

    private func attempt(
        _ payload: Data, to subscription: PushSubscription, signedWith key: VAPIDKey, ttl: Int, now: Date
    ) async -> Result {
        do {
            try await endpointGuard.check(subscription.endpoint)
        } catch let failure as EndpointGuard.Unresolved {
            return .retry(failure.description, retryAfter: nil)
        } catch {
            return .refused(String(describing: error))
        }
        let body: Data
        let authorization: String
        do {
            guard let audience = subscription.origin else { return .refused("the endpoint has no origin") }
            body = try WebPushEncryption.encrypt(payload, p256dh: subscription.p256dh, auth: subscription.auth)
            authorization = try await key.authorization(audience: audience, contact: contact, now: now)
        } catch {
            return .refused(String(describing: error))
        }
        var request = HTTPClientRequest(url: subscription.endpoint)
        request.method = .POST
        request.headers.add(name: "TTL", value: String(max(0, ttl)))
        request.headers.add(name: "Urgency", value: "high")
        request.headers.add(name: "Content-Encoding", value: "aes128gcm")
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.headers.add(name: "Authorization", value: authorization)
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await client.execute(request, timeout: .seconds(10))
            // A push service answers briefly; a few hundred bytes say why.
            let answer = (try? await response.body.collect(upTo: 512)).map { String(buffer: $0) } ?? ""
            return Self.result(
                status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"),
                answer: answer)
        } catch {
            return .retry("no answer from the push service: \(error)", retryAfter: nil)
        }
    }

    /// What a push service's status means.
    static func result(status: Int, retryAfter: String?, answer: String) -> Result {
        // Its words reach the log and the outbox: written out, never obeyed
        // (a line break or an escape sequence in them forges nothing).
        let said =
            "the push service answered \(status)"
            + (answer.isEmpty ? "" : ": \(DisplayText.escaped(String(answer.prefix(200))))")
        switch status {
        case 200..<300: return .accepted
        case 404, 410: return .gone(said)
        case 408, 425, 429, 500..<600: return .retry(said, retryAfter: retryAfter.flatMap(TimeInterval.init))
        default: return .refused(said)
        }
    }
}
