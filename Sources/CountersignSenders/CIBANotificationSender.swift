public import AsyncHTTPClient
import CountersignCore
public import Foundation
import NIOCore
import NIOHTTP1

/// Posts CIBA ping notifications (CIBA Core §10.2): `{"auth_req_id": …}`
/// to the client's notification endpoint with its
/// `client_notification_token` as a bearer token, one attempt at a time.
/// Answers mean what they mean for webhooks: a 2xx delivers, anything
/// else is tried again.
public struct CIBANotificationSender: Sendable {
    let client: HTTPClient
    let endpointGuard: EndpointGuard

    public init(endpointGuard: EndpointGuard, client: HTTPClient = WebPushSender.client) {
        self.client = client
        self.endpointGuard = endpointGuard
    }

    /// Sends `body` to `endpoint` with `token`, within the webhooks' deadline.
    public func send(body: Data, to endpoint: String, token: String) async -> StandardWebhookSender.Result {
        await withTaskGroup(of: StandardWebhookSender.Result?.self) { group in
            group.addTask { await attempt(body: body, to: endpoint, token: token) }
            group.addTask {
                try? await Task.sleep(for: StandardWebhookSender.attemptDeadline)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
                ?? .retry("the endpoint took longer than \(StandardWebhookSender.attemptDeadline)", retryAfter: nil)
        }
    }

    private func attempt(body: Data, to endpoint: String, token: String) async -> StandardWebhookSender.Result {
        do {
            try await endpointGuard.check(endpoint)
        } catch let failure as EndpointGuard.Unresolved {
            return .retry(failure.description, retryAfter: nil)
        } catch {
            return .refused(String(describing: error))
        }
        var request = HTTPClientRequest(url: endpoint)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "User-Agent", value: "countersign-ciba/\(CountersignVersion.current)")
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await client.execute(request, timeout: .seconds(15))
            let answer = (try? await response.body.collect(upTo: 512)).map { String(buffer: $0) } ?? ""
            return StandardWebhookSender.result(
                status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"),
                answer: answer)
        } catch {
            return .retry("no answer from the endpoint: \(error)", retryAfter: nil)
        }
    }
}
