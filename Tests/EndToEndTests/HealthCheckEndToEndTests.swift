import Foundation
import Testing

/// `device-broker healthcheck`, the container image's HEALTHCHECK: exit 0
/// only when a broker answers its /healthz with 200, else 1 and one line
/// saying why.
@Suite("end to end: device-broker healthcheck")
struct HealthCheckEndToEndTests {
    @Test("a running broker is healthy: exit 0, with the release it runs")
    func healthy() async throws {
        let broker = try await LiveBroker.start(totp: false)
        defer { broker.stop() }
        let check = try RunningProcess("device-broker", ["healthcheck", "--url", broker.url])
        #expect(try await check.exitCode(timeout: .seconds(60)) == 0, "\(check.text)")
        #expect(check.text.contains("healthy: \(broker.url)/healthz answered 200 (release "), "\(check.text)")

        // Not /healthz's 200: anything else is unhealthy, with the status.
        let elsewhere = try RunningProcess("device-broker", ["healthcheck", "--url", broker.url + "/nothing/"])
        #expect(try await elsewhere.exitCode(timeout: .seconds(60)) == 1, "\(elsewhere.text)")
        #expect(elsewhere.text.contains("unhealthy: \(broker.url)/nothing/healthz answered 404"), "\(elsewhere.text)")
    }

    @Test("no broker on the port: exit 1 at once, saying the connection was refused")
    func nobodyListening() async throws {
        let url = "http://127.0.0.1:\(try freePort())"
        // Retried until its own --timeout, it would still be running when
        // the test stops waiting; refused at once, it has long exited.
        let check = try RunningProcess("device-broker", ["healthcheck", "--url", url, "--timeout", "60s"])
        #expect(try await check.exitCode(timeout: .seconds(45)) == 1, "\(check.text)")
        #expect(check.text.contains("unhealthy: \(url)/healthz: connection refused"), "\(check.text)")
    }

    @Test("a port that takes the connection but never answers: exit 1 after --timeout")
    func noAnswer() async throws {
        let listener = try ListeningSocket()
        let port = listener.port
        let check = try RunningProcess(
            "device-broker", ["healthcheck", "--url", "http://127.0.0.1:\(port)", "--timeout", "500ms"])
        #expect(try await check.exitCode(timeout: .seconds(60)) == 1, "\(check.text)")
        #expect(check.text.contains("no answer within 0.5 s"), "\(check.text)")
        withExtendedLifetime(listener) {}
    }

    @Test("a URL that is not a broker's base URL is refused before anything is asked")
    func badURL() async throws {
        let check = try RunningProcess("device-broker", ["healthcheck", "--url", "127.0.0.1:8080"])
        #expect(try await check.exitCode(timeout: .seconds(60)) == 64, "\(check.text)")
        #expect(check.text.contains("--url must be a broker's base URL"), "\(check.text)")
    }
}
