import CountersignClient
import CountersignCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Synchronization
import Testing

/// The SDK's `awaitOutcome` against a real HTTP server that answers the
/// requester's polls as a gateway would while the broker behind it restarts.
@Suite("client: waiting out a broker that restarts")
struct ClientRetryTests {
    /// Serves `GET /api/v1/events/:id` with `statuses` first, then the
    /// approved event, and runs `body` with the SDK pointed at it. The
    /// event has an hour's window (a busy machine cannot outlast it before
    /// the retries end) and was created `age` seconds ago.
    func withGateway<T: Sendable>(
        answering statuses: [Int], createdSecondsAgo age: TimeInterval = 0,
        _ body: @escaping @Sendable (CountersignClient, EventTicket) async throws -> T
    ) async throws -> (T, polls: Int) {
        let now = Date() - age
        let pending = ApprovalEvent(
            id: ApprovalEvent.newID(), createdAt: now, updatedAt: now, issuer: "ck_app", clientUserID: "alice",
            name: EventName.login, ip: "127.0.0.1", location: "Unknown", method: .trustedDevice,
            storedStatus: .pending, expiresAt: now + 3600, details: nil, requesterName: "new-laptop",
            nonce: SecretToken.generate(bytes: 16), matchNumber: nil, wrongMatches: 0,
            requesterTokenDigest: SecretToken.digest("requester"), decidedBy: nil, decidedAt: nil, decision: nil)
        var approved = pending
        (approved.storedStatus, approved.decidedBy, approved.decidedAt) = (.approved, "dev_1", now + 1)
        let answered = try WireCoding.encoder().encode(EventDocument(approved, now: now + 1, signature: nil))
        let queue = Mutex((statuses: statuses, polls: 0))
        let router = Router()
        router.get("api/v1/events/:id") { _, _ -> Response in
            let status = queue.withLock { state in
                state.polls += 1
                return state.statuses.isEmpty ? nil : state.statuses.removeFirst()
            }
            guard let status else {
                return Response(
                    status: .ok, headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(bytes: answered)))
            }
            return Response(status: HTTPResponse.Status(code: status))
        }
        var logger = Logger(label: "gateway")
        logger.logLevel = .warning
        let app = Application(router: router, logger: logger)
        let result = try await app.test(.live) { client in
            let sdk = CountersignClient(broker: "http://127.0.0.1:\(client.port!)", apiKeyID: "ck_app")
            let ticket = EventTicket(
                event: EventDocument(pending, now: now, signature: nil), requesterToken: "requester", matchNumber: nil)
            return try await body(sdk, ticket)
        }
        return (result, queue.withLock { $0.polls })
    }

    @Test("502, 503 and 504 answers are retried until the decision arrives")
    func gatewayErrorsAreRetried() async throws {
        let (outcome, polls) = try await withGateway(answering: [502, 503, 504]) { sdk, ticket in
            try await sdk.awaitOutcome(of: ticket)
        }
        #expect(outcome.status == .approved)
        #expect(polls == 4, "three failed polls, then the answer")
    }

    @Test("past the event's window, a 503 ends the wait instead of being retried")
    func noRetryAfterTheWindow() async throws {
        let (error, polls) = try await withGateway(answering: [503], createdSecondsAgo: 3700) { sdk, ticket in
            await #expect(throws: CountersignError.self) { try await sdk.awaitOutcome(of: ticket) }
        }
        #expect(error?.status == 503)
        #expect(polls == 1)
    }

    @Test("any other error ends the wait at once")
    func otherErrorsAreNot() async throws {
        for status in [500, 401, 404] {
            let (error, polls) = try await withGateway(answering: [status]) { sdk, ticket in
                await #expect(throws: CountersignError.self) { try await sdk.awaitOutcome(of: ticket) }
            }
            #expect(error?.status == status)
            #expect(polls == 1, "\(status) is not retried")
        }
    }
}
