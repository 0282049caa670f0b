public import AsyncHTTPClient
public import CountersignCore
public import Foundation
import NIOCore
import NIOHTTP1

/// Posts webhook messages to app backends' endpoints, signed as Standard
/// Webhooks says (``StandardWebhook``), one attempt at a time.
public struct StandardWebhookSender: Sendable {
    /// How an endpoint answered.
    public enum Result: Sendable, Equatable {
        /// A 2xx.
        case delivered
        /// Anything else, or no answer: tried again later, with the
        /// endpoint's `Retry-After` in seconds if it gave one.
        case retry(String, retryAfter: TimeInterval?)
        /// Never sendable to this endpoint as it is (a private address the
        /// operator did not allow).
        case refused(String)
    }

    let client: HTTPClient
    let endpointGuard: EndpointGuard

    public init(endpointGuard: EndpointGuard, client: HTTPClient = WebPushSender.client) {
        self.client = client
        self.endpointGuard = endpointGuard
    }

    /// The longest one attempt takes, from resolving the host to the last
    /// byte of the answer (the specification asks receivers to answer
    /// within 15 seconds).
    public static let attemptDeadline: Duration = .seconds(15)

    /// Sends message `id` with `body` to `endpoint`, signed at `now`.
    public func send(id: String, body: Data, to endpoint: WebhookEndpoint, now: Date) async -> Result {
        await withTaskGroup(of: Result?.self) { group in
            group.addTask { await attempt(id: id, body: body, to: endpoint, now: now) }
            group.addTask {
                try? await Task.sleep(for: Self.attemptDeadline)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .retry("the endpoint took longer than \(Self.attemptDeadline)", retryAfter: nil)
        }
    }

    private func attempt(id: String, body: Data, to endpoint: WebhookEndpoint, now: Date) async -> Result {
        do {
            try await endpointGuard.check(endpoint.url)
        } catch let failure as EndpointGuard.Unresolved {
            return .retry(failure.description, retryAfter: nil)
        } catch {
            return .refused(String(describing: error))
        }
        var request = HTTPClientRequest(url: endpoint.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "countersign-webhooks/\(CountersignVersion.current)")
        let timestamp = Int(now.timeIntervalSince1970)
        for (name, value) in StandardWebhook.headers(
            id: id, timestamp: timestamp, body: body, secrets: endpoint.secrets(at: now))
        {
            request.headers.add(name: name, value: value)
        }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await client.execute(request, timeout: .seconds(15))
            let answer = (try? await response.body.collect(upTo: 512)).map { String(buffer: $0) } ?? ""
            return Self.result(
                status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"),
                answer: answer)
        } catch {
            return .retry("no answer from the endpoint: \(error)", retryAfter: nil)
        }
    }

    /// What an endpoint's status means: only a 2xx delivers; every other
    /// answer is tried again, as receivers may fail for a while.
    static func result(status: Int, retryAfter: String?, answer: String) -> Result {
        // The receiver's words reach the log and the outbox: written out,
        // never obeyed.
        let said =
            "the endpoint answered \(status)"
            + (answer.isEmpty ? "" : ": \(DisplayText.escaped(String(answer.prefix(200))))")
        switch status {
        case 200..<300: return .delivered
        default: return .retry(said, retryAfter: retryAfter.flatMap(TimeInterval.init))
        }
    }
}
