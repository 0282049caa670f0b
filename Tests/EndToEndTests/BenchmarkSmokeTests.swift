import Foundation
import Testing

/// The load generator keeps working: a short run against a real broker.
/// Its figures are not judged here (docs/benchmarks.md has them).
@Suite("end to end: countersign-bench smoke run", .serialized)
struct BenchmarkSmokeTests {
    @Test(
        "two scenarios of one second each, requesters spread over addresses, print a summary line with round trips/s and no errors"
    )
    func smoke() async throws {
        // Each requester from an address of its own, as docs/benchmarks.md
        // runs it; one pending request per address at most, so that four
        // requesters on one address would be refused (and show as errors).
        let broker = try await LiveBroker.start(arguments: [
            "--max-requests-per-address", "100000000", "--max-requests-per-user", "100000000",
            "--max-pending-per-address", "1", "--trusted-proxy", "127.0.0.1",
        ])
        defer { broker.stop() }
        let bench = try RunningProcess(
            "countersign-bench",
            [
                "--broker", broker.url, "--api-key", broker.apiKeyID, "--api-secret", broker.apiSecret,
                "--concurrency", "1,4", "--duration", "1", "--idle-waiters", "20", "--spread-addresses",
                "--broker-pid", String(broker.process.process.processIdentifier),
            ])
        #expect(try await bench.exitCode(timeout: .seconds(60)) == 0, "\(bench.text)")
        let lines = bench.text.split(separator: "\n").filter { $0.contains("round trips/s") }
        #expect(lines.count == 2, "\(bench.text)")
        for line in lines {
            #expect(line.contains("errors 0") && line.contains("decision→wake p50") && line.contains("MB"), "\(line)")
            #expect(line.contains("ms per round trip (") && line.contains("P-256 verifications)"), "\(line)")
            #expect(line.contains(", load generator CPU ") && line.hasSuffix(" ms per round trip"), "\(line)")
        }
        #expect(lines.first?.hasPrefix("idle-waiters concurrency=1 idle-waiters=20") == true, "\(bench.text)")
        #expect(bench.text.contains("one P-256 verification here: "), "\(bench.text)")
    }

    @Test("more idle polls than the process may open files is refused at once, naming the limit")
    func idleWaitersPastTheOpenFileLimit() async throws {
        let bench = try RunningProcess(
            "countersign-bench",
            [
                "--broker", "http://127.0.0.1:9", "--api-key", "ck_none", "--api-secret", "none",
                "--idle-waiters", "100000000",
            ])
        #expect(try await bench.exitCode(timeout: .seconds(60)) != 0, "\(bench.text)")
        #expect(bench.text.contains("--idle-waiters 100000000 needs about"), "\(bench.text)")
        #expect(bench.text.contains("ulimit -n"), "\(bench.text)")
    }

    @Test("RADIUS logins: a challenge, the approval with its number, the Accept; a summary line with no errors")
    func radius() async throws {
        let port = try freeUDPPort()
        let broker = try await LiveBroker.start(arguments: [
            "--max-requests-per-address", "100000000", "--max-requests-per-user", "100000000",
            "--radius-listen", "127.0.0.1:\(port)",
        ])
        defer { broker.stop() }
        let secretFile = try temporaryDirectory("bench-radius").appendingPathComponent("secret")
        try Data("bench-secret-0123456789\n".utf8).write(to: secretFile)
        let add = try RunningProcess(
            "device-broker",
            [
                "radius", "add", "bench", "--address", "127.0.0.1", "--api-key", broker.apiKeyID, "--secret-file",
                secretFile.path,
            ] + broker.storeArguments)
        #expect(try await add.exitCode() == 0, "\(add.text)")
        let bench = try RunningProcess(
            "countersign-bench",
            [
                "--broker", broker.url, "--api-key", broker.apiKeyID, "--api-secret", broker.apiSecret,
                "--concurrency", "1,4", "--duration", "1", "--radius", "127.0.0.1:\(port)",
                "--radius-secret-file", secretFile.path,
                "--broker-pid", String(broker.process.process.processIdentifier),
            ])
        #expect(try await bench.exitCode(timeout: .seconds(120)) == 0, "\(bench.text)")
        let lines = bench.text.split(separator: "\n").filter { $0.contains("round trips/s") }
        #expect(lines.count == 2 && lines.allSatisfy { $0.hasPrefix("radius concurrency=") }, "\(bench.text)")
        for line in lines {
            #expect(line.contains("errors 0") && line.contains("ms per round trip ("), "\(line)")
        }
    }
}
