import ArgumentParser
import AsyncHTTPClient
import CountersignCore
import Foundation
import NIOCore
import NIOHTTP1

/// `countersign-bench console`: the operator's console's reads, one
/// endpoint at a time, against a broker on a filled data directory
/// (``ConsoleFill``), with the session's cookie.
struct ConsoleLoad: AsyncParsableCommand {
    static let name = "console"

    static let configuration = CommandConfiguration(
        commandName: "countersign-bench console",
        abstract: "Time the console's reads against a running broker, one endpoint at a time.",
        discussion: """
            For each --concurrency level and each endpoint, that many clients send the endpoint's GET \
            with the session cookie for --duration seconds, each as soon as its last one was answered. \
            One line per endpoint: requests/s, latency p50/p99, bytes per response, errors, and with \
            --broker-pid the broker's CPU per request (user and system time from /proc). users asks for \
            a random one of the --users the fill wrote, users-deep for that user's page before a random \
            time of the last --days; audit-deep for the audit log's page before a random line.             dashboard is the console's first view; user-list the list of users from a random one on,             user-prefix those whose id starts with a random three characters' prefix; events the newest             events of every app, events-user a random user's, events-address a random address's,             events-rejected the rejected ones through the API channel, events-deep the page before a             random time of the last --days; audit-filtered the audit log's lines of one action; \
            invitations the newest invitations, invitations-open those not enrolled yet, \
            invitations-prefix those of users whose id starts as a random hundred's do.
            """)

    static let endpoints = [
        "session", "users", "users-deep", "audit", "audit-deep", "watch", "webhooks", "apps", "health",
        "dashboard", "user-list", "user-prefix", "events", "events-user", "events-address", "events-rejected",
        "events-deep", "audit-filtered", "invitations", "invitations-open", "invitations-prefix",
    ]

    @Option(help: "The broker's URL.")
    var broker = "http://127.0.0.1:18081"

    @Option(help: "The console session's cookie secret (console-fill prints it).")
    var sessionSecret: String

    @Option(help: "The session cookie's name: __Host-countersign_console unless the broker is http on loopback.")
    var cookieName = "countersign_console"

    @Option(help: "How many users the fill wrote.")
    var users = 1_000

    @Option(help: "The days of history the fill wrote.")
    var days = 25

    @Option(help: "Clients at once; a comma-separated list runs every endpoint at each.")
    var concurrency = "1,8"

    @Option(help: "Seconds each endpoint runs at each level.")
    var duration: Double = 5

    @Option(help: "Endpoints, comma-separated, of: \(endpoints.joined(separator: ", ")).")
    var only: String = endpoints.joined(separator: ",")

    @Option(help: "The broker's process id, to report its CPU per request.")
    var brokerPid: Int32?

    @Flag(
        help: """
            Beside each phase, GET /healthz 20 times a second on a connection of its own: how long the \
            console's reads make the broker's other requests wait.
            """)
    var probe = false

    var levels: [Int] { concurrency.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
    var chosen: [String] { only.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }

    func validate() throws {
        guard !levels.isEmpty, levels.allSatisfy({ $0 >= 1 }) else {
            throw ValidationError("--concurrency is a comma-separated list of positive numbers")
        }
        guard duration > 0, users >= 1, days >= 1 else {
            throw ValidationError("--duration, --users and --days must be positive")
        }
        for name in chosen where !Self.endpoints.contains(name) {
            throw ValidationError("no endpoint \(name); choose from \(Self.endpoints.joined(separator: ", "))")
        }
    }

    func run() async throws {
        let http = CountersignBench.client(connections: levels.max()! + 4)
        let console = ConsoleClient(
            http: http, base: broker + "/console/api/", cookie: "\(cookieName)=\(sessionSecret)")
        let probeHTTP = probe ? CountersignBench.client(connections: 1) : nil
        do {
            try await measure(console, probeHTTP: probeHTTP)
        } catch {
            try await http.shutdown()
            try await probeHTTP?.shutdown()
            throw error
        }
        try await http.shutdown()
        try await probeHTTP?.shutdown()
    }

    private func measure(_ console: ConsoleClient, probeHTTP: HTTPClient?) async throws {
        let session = try await console.json("session")
        print("signed in as \(session["operator"] as? String ?? "?")")
        // The newest audit line: deep pages start below a random one.
        let firstPage = try await console.json("audit")
        let newest = ((firstPage["records"] as? [[String: Any]])?.first?["id"] as? Int) ?? 1
        print("audit log: newest line \(newest)")
        let (users, days) = (users, days)
        @Sendable func path(_ endpoint: String) -> String {
            switch endpoint {
            case "users": "users/" + BenchUsers.id(Int.random(in: 0..<users))
            case "users-deep":
                "users/" + BenchUsers.id(Int.random(in: 0..<users)) + "?before="
                    + (Date() - Double.random(in: 0..<Double(days) * 86400)).formatted(.iso8601)
            case "audit-deep": "audit?before=\(Int.random(in: 1...max(1, newest)))"
            case "user-list": "users?after=" + BenchUsers.id(Int.random(in: 0..<users))
            case "user-prefix": "users?prefix=" + String(BenchUsers.id(Int.random(in: 0..<users)).dropLast(2))
            case "events-user": "events?user=" + BenchUsers.id(Int.random(in: 0..<users))
            case "events-address": "events?address=" + HistoryFiller.address(Int.random(in: 0..<512))
            case "events-rejected": "events?status=rejected&channel=api"
            case "events-deep":
                "events?to=" + (Date() - Double.random(in: 0..<Double(days) * 86400)).formatted(.iso8601)
            case "audit-filtered": "audit?action=device.removed"
            case "invitations-open": "invitations?state=open"
            case "invitations-prefix":
                "invitations?prefix=" + String(format: "bench-invitee-%03d", Int.random(in: 0..<100))
            default: endpoint
            }
        }
        // Once through every endpoint and every user, so that the first
        // level does not pay for pages the broker reads for the first time.
        let warmUp = ContinuousClock.now
        for endpoint in chosen where !endpoint.hasPrefix("users") { _ = try await console.get(path(endpoint)) }
        if chosen.contains(where: { $0.hasPrefix("users") }) {
            try await forEach(Array(0..<users), width: 8) { index in
                _ = try await console.get("users/" + BenchUsers.id(index))
            }
        }
        print(String(format: "warm-up: %.1f s", (ContinuousClock.now - warmUp).seconds))
        let verification = brokerPid == nil ? nil : ProcessCPU.oneVerification()
        if let verification { print(String(format: "one P-256 verification here: %.1f µs", verification * 1e6)) }
        for level in levels {
            for endpoint in chosen {
                let cpuBefore = brokerPid.flatMap(ProcessCPU.seconds(pid:))
                let ownBefore = ProcessCPU.seconds(pid: getpid())
                let until = ContinuousClock.now + .milliseconds(Int64(duration * 1000))
                async let probed = Self.probe(probeHTTP, url: broker + "/healthz", until: until)
                let result = try await Self.drive(console, level: level, duration: duration) { path(endpoint) }
                var line = result.summary(name: endpoint, concurrency: level)
                let beside = await probed
                let count = Double(max(1, result.latencies.count))
                if let cpuBefore, let cpuAfter = brokerPid.flatMap(ProcessCPU.seconds(pid:)), let verification {
                    let perRequest = (cpuAfter - cpuBefore) / count
                    line += String(
                        format: ", broker CPU %.3f ms per request (%.1f P-256 verifications)", perRequest * 1000,
                        perRequest / verification)
                }
                if let ownBefore, let ownAfter = ProcessCPU.seconds(pid: getpid()) {
                    line += String(
                        format: ", load generator CPU %.3f ms per request", (ownAfter - ownBefore) / count * 1000)
                }
                if probeHTTP != nil {
                    let sorted = beside.sorted()
                    line +=
                        sorted.isEmpty
                        ? ", /healthz beside it: no answer"
                        : String(
                            format: ", /healthz beside it p50 %.2f ms p99 %.2f ms max %.2f ms",
                            sorted[sorted.count / 2] * 1000,
                            sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)] * 1000,
                            sorted.last! * 1000)
                }
                print(line)
                fflush(nil)
            }
        }
    }

    /// GET `url` every 50 ms (or as soon as the last answer came, if later)
    /// until `until`: the answers' latencies, in seconds.
    static func probe(_ http: HTTPClient?, url: String, until: ContinuousClock.Instant) async -> [Double] {
        guard let http else { return [] }
        var latencies: [Double] = []
        var next = ContinuousClock.now
        while next < until {
            try? await Task.sleep(until: next, clock: .continuous)
            let sent = ContinuousClock.now
            if let response = try? await http.execute(HTTPClientRequest(url: url), timeout: .seconds(30)),
                (try? await response.body.collect(upTo: 1 << 20)) != nil, response.status == .ok
            {
                latencies.append((ContinuousClock.now - sent).seconds)
            }
            next = max(next + .milliseconds(50), ContinuousClock.now)
        }
        return latencies
    }

    struct Result {
        var latencies: [Double] = []
        var bytes = 0
        var errors = 0
        var elapsed = 0.0

        func summary(name: String, concurrency: Int) -> String {
            func percentile(_ p: Double) -> String {
                guard !latencies.isEmpty else { return "n/a" }
                let sorted = latencies.sorted()
                let value = sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
                return String(format: "%.2f ms", value * 1000)
            }
            return "console \(name) concurrency=\(concurrency)"
                + String(format: ": %.1f requests/s", Double(latencies.count) / max(elapsed, 0.001))
                + " (\(latencies.count) in \(String(format: "%.1f", elapsed)) s),"
                + " p50 \(percentile(0.5)) p99 \(percentile(0.99)),"
                + String(format: " %.1f KB per response", Double(bytes) / Double(max(1, latencies.count)) / 1024)
                + ", errors \(errors)"
        }
    }

    /// `level` clients sending `path()`'s request back to back until `duration` is over.
    static func drive(
        _ console: ConsoleClient, level: Int, duration: Double, path: @escaping @Sendable () -> String
    ) async throws -> Result {
        let started = ContinuousClock.now
        let deadline = started + .milliseconds(Int64(duration * 1000))
        var total = await withTaskGroup(of: Result.self) { group in
            for _ in 0..<level {
                group.addTask {
                    var result = Result()
                    while ContinuousClock.now < deadline {
                        let sent = ContinuousClock.now
                        do {
                            result.bytes += try await console.get(path())
                            result.latencies.append((ContinuousClock.now - sent).seconds)
                        } catch {
                            result.errors += 1
                            if result.errors <= 3 { FileHandle.standardError.write(Data("error: \(error)\n".utf8)) }
                        }
                    }
                    return result
                }
            }
            var total = Result()
            for await part in group {
                total.latencies += part.latencies
                total.bytes += part.bytes
                total.errors += part.errors
            }
            return total
        }
        total.elapsed = (ContinuousClock.now - started).seconds
        return total
    }
}

/// GETs of the console's API with the session cookie.
struct ConsoleClient: Sendable {
    let http: HTTPClient
    let base: String
    let cookie: String

    /// The response's size in bytes; throws unless it is a 200.
    func get(_ path: String) async throws -> Int {
        try await body(path).readableBytes
    }

    func json(_ path: String) async throws -> [String: Any] {
        let body = try await body(path)
        guard let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any] else {
            throw BenchFailure("GET \(path): not a JSON object")
        }
        return object
    }

    private func body(_ path: String) async throws -> ByteBuffer {
        var request = HTTPClientRequest(url: base + path)
        request.headers.add(name: "Cookie", value: cookie)
        let response = try await http.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 64 << 20)
        guard response.status == .ok else {
            throw BenchFailure("GET \(path): \(response.status.code) \(String(buffer: body).prefix(200))")
        }
        return body
    }
}
