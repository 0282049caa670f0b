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
        let (listener, port) = try silentListener()
        defer { close(listener) }
        let check = try RunningProcess(
            "device-broker", ["healthcheck", "--url", "http://127.0.0.1:\(port)", "--timeout", "500ms"])
        #expect(try await check.exitCode(timeout: .seconds(60)) == 1, "\(check.text)")
        #expect(check.text.contains("no answer within 0.5 s"), "\(check.text)")
    }

    @Test("a URL that is not a broker's base URL is refused before anything is asked")
    func badURL() async throws {
        let check = try RunningProcess("device-broker", ["healthcheck", "--url", "127.0.0.1:8080"])
        #expect(try await check.exitCode(timeout: .seconds(60)) == 64, "\(check.text)")
        #expect(check.text.contains("--url must be a broker's base URL"), "\(check.text)")
    }

    /// A loopback socket that listens and never accepts: the kernel
    /// completes the connection, and the request waits in its queue.
    private func silentListener() throws -> (Int32, Int) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 8) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard listening else {
            close(listener)
            throw ProcessFailure("cannot listen on a loopback port")
        }
        return (listener, Int(UInt16(bigEndian: address.sin_port)))
    }
}
