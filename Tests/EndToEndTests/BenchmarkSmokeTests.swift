import Foundation
import Testing

/// The load generator keeps working: a short run against a real broker.
/// Its figures are not judged here (docs/benchmarks.md has them).
@Suite("end to end: countersign-bench smoke run", .serialized)
struct BenchmarkSmokeTests {
    @Test("two scenarios of one second each print a summary line with round trips/s and no errors")
    func smoke() async throws {
        // One address plays every client, as docs/benchmarks.md runs it.
        let broker = try await LiveBroker.start(arguments: [
            "--max-requests-per-address", "100000000", "--max-requests-per-user", "100000000",
        ])
        defer { broker.stop() }
        let bench = try RunningProcess(
            "countersign-bench",
            [
                "--broker", broker.url, "--api-key", broker.apiKeyID, "--api-secret", broker.apiSecret,
                "--concurrency", "1,4", "--duration", "1", "--idle-waiters", "20",
                "--broker-pid", String(broker.process.process.processIdentifier),
            ])
        #expect(try await bench.exitCode(timeout: .seconds(60)) == 0, "\(bench.text)")
        let lines = bench.text.split(separator: "\n").filter { $0.contains("round trips/s") }
        #expect(lines.count == 2, "\(bench.text)")
        for line in lines {
            #expect(line.contains("errors 0") && line.contains("decision→wake p50") && line.contains("MB"), "\(line)")
        }
        #expect(lines.first?.hasPrefix("idle-waiters concurrency=1 idle-waiters=20") == true, "\(bench.text)")
    }
}
