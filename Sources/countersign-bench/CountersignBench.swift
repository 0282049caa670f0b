import ArgumentParser
import AsyncHTTPClient
import CountersignClient
import CountersignCore
import Crypto
import Foundation
import NIOCore

/// `countersign-bench`: drives a running broker through the public API with
/// N requesters and N approvers and prints one summary line per scenario.
struct CountersignBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "countersign-bench",
        abstract: "Load-test a running broker with full approval round trips.",
        discussion: """
            One round trip: a requester creates a pending LOGIN, its user's trusted device (held on \
            its inbox long-poll) signs an approval with the number, and the requester, held on its \
            own long-poll, wakes with the event token. Each of N pairs is one user with one device, \
            enrolled through the public API before the run.

            With two --broker URLs, requesters talk to the first and approvers to the second (two \
            instances on one PostgreSQL: every wake-up crosses instances). --idle-waiters holds that \
            many extra inbox long-polls open during the run. --broker-pid (once per broker process) \
            reads the brokers' CPU time and the first one's peak RSS (VmHWM) from /proc: each summary \
            gives the brokers' CPU per round trip, in ms and in P-256 verifications, one of which is \
            timed here before the run.

            `countersign-bench console-fill` and `countersign-bench console` (each with its own --help) \
            measure the operator's console on a broker with a long history.
            """)

    @Option(name: .customLong("broker"), help: "The broker's URL; give two to split requesters and approvers.")
    var brokers: [String]

    @Option(help: "The app's API key id.")
    var apiKey: String

    @Option(help: "Its secret key (to ask for enrollment tokens).")
    var apiSecret: String

    @Flag(
        help: """
            Each pair's requester speaks from an address of its own (X-Forwarded-For, from 198.18.0.0/15), \
            as clients behind a load balancer do: for a broker started with --trusted-proxy 127.0.0.1.
            """)
    var spreadAddresses = false

    @Option(help: "Pairs of requester and approver; a comma-separated list runs one scenario each.")
    var concurrency: String = "1,16,64"

    @Option(help: "Seconds each scenario runs.")
    var duration: Double = 10

    @Option(help: "Extra inbox long-polls held open during every scenario.")
    var idleWaiters: Int = 0

    @Option(help: "A broker's process id, to report its CPU per round trip and peak RSS; once per broker.")
    var brokerPid: [Int32] = []

    @Option(
        help: ArgumentHelp(
            "Log in through the broker's RADIUS listener at IP:PORT instead of the REST API.",
            discussion:
                "A RADIUS client for 127.0.0.1 in challenge mode must be registered for the API key (device-broker radius add … --secret-file)."
        ))
    var radius: String?

    @Option(help: "The file holding that RADIUS client's shared secret.")
    var radiusSecretFile: String?

    func validate() throws {
        guard (1...2).contains(brokers.count) else { throw ValidationError("give one or two --broker URLs") }
        guard !levels.isEmpty, levels.allSatisfy({ $0 >= 1 }) else {
            throw ValidationError("--concurrency is a comma-separated list of positive numbers")
        }
        guard duration > 0 else { throw ValidationError("--duration must be positive") }
        if let radius {
            guard let address = RADIUSAddress(radius),
                (try? SocketAddress(ipAddress: address.host, port: address.port)) != nil
            else { throw ValidationError("--radius is IP:PORT") }
            guard radiusSecretFile != nil else { throw ValidationError("--radius needs --radius-secret-file") }
        }
    }

    var levels: [Int] { concurrency.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }

    func run() async throws {
        // Each held poll is a connection, so a descriptor, of this process.
        let openFiles = OpenFileLimit.raise()
        let needed = idleWaiters + 2 * levels.max()! + 256
        guard idleWaiters == 0 || openFiles >= needed else {
            throw ValidationError(
                "--idle-waiters \(idleWaiters) needs about \(needed) open files, and this process may open "
                    + "\(openFiles): raise its limit (ulimit -n)")
        }
        let http = Self.client(connections: 2 * levels.max()! + 16)
        // The idle polls stand for other devices, each on its own
        // connection: a pool of their own, so that their connections never
        // carry the round trips' other requests, nor those theirs.
        let idleHTTP = idleWaiters > 0 ? Self.client(connections: idleWaiters + 16) : nil
        let requesterSide = BrokerConnection(baseURL: brokers[0], client: http)
        let approverSide = BrokerConnection(baseURL: brokers.last!, client: http)
        let backend = CountersignBackend(connection: requesterSide, apiKeyID: apiKey, apiSecretKey: apiSecret)
        let run = SecretToken.generate(bytes: 6)

        let pairs = try await Enroller(backend: backend, approverSide: approverSide, apiKey: apiKey)
            .enroll(count: levels.max()! + idleWaiters, prefix: "bench-\(run)")
        // Each idle poll is a device of its own: the broker holds a few
        // polls per device at most.
        let idle = idleHTTP.map {
            IdleWaiters(
                devices: Array(pairs.suffix(idleWaiters)),
                connection: BrokerConnection(baseURL: brokers.last!, client: $0), apiKey: apiKey)
        }
        if let idle {
            let before = brokerPid.first.flatMap { Self.rss(pid: $0, field: "VmRSS") }
            try await idle.start()
            try await idle.awaitHeld(count: idleWaiters, metricsURL: brokers.last! + "/metrics", http: http)
            var line = "holding \(idleWaiters) idle long-polls"
            if let before, let held = brokerPid.first.flatMap({ Self.rss(pid: $0, field: "VmRSS") }) {
                line += String(
                    format: ": broker RSS %.1f MB (%.1f MB before), %.1f KB per held long-poll",
                    Double(held) / 1_048_576, Double(before) / 1_048_576,
                    Double(held - before) / Double(idleWaiters) / 1024)
            }
            print(line)
        }
        let nas = try radius.flatMap(RADIUSAddress.init).map { address in
            let text = try String(contentsOfFile: radiusSecretFile!, encoding: .utf8)
            return (
                server: try SocketAddress(ipAddress: address.host, port: address.port),
                secret: RADIUSSecret(text.trimmingCharacters(in: .whitespacesAndNewlines))
            )
        }
        let verification = brokerPid.isEmpty ? nil : ProcessCPU.oneVerification()
        if let verification {
            print(String(format: "one P-256 verification here: %.1f µs", verification * 1e6))
        }
        for level in levels {
            let cpuBefore = ProcessCPU.seconds(pids: brokerPid)
            let ownBefore = ProcessCPU.seconds(pid: getpid())
            let result = try await Scenario(
                pairs: Array(pairs.prefix(level)), requesterSide: requesterSide, approverSide: approverSide,
                apiKey: apiKey, duration: duration, spreadAddresses: spreadAddresses, radius: nas
            ).run()
            var line = result.summary(
                name: nas != nil
                    ? "radius" : brokers.count == 2 ? "two-instance" : idleWaiters > 0 ? "idle-waiters" : "throughput",
                concurrency: level, idleWaiters: idleWaiters,
                peakRSS: brokerPid.first.flatMap { Self.rss(pid: $0, field: "VmHWM") })
            if let cpuBefore, let cpuAfter = ProcessCPU.seconds(pids: brokerPid), let verification,
                !result.roundTrips.isEmpty
            {
                let perRoundTrip = (cpuAfter - cpuBefore) / Double(result.roundTrips.count)
                line += String(
                    format: ", broker CPU %.3f ms per round trip (%.1f P-256 verifications)",
                    perRoundTrip * 1000, perRoundTrip / verification)
            }
            // On a machine it shares with the broker, its own CPU bounds
            // what the broker can be shown to do.
            if let ownBefore, let ownAfter = ProcessCPU.seconds(pid: getpid()), !result.roundTrips.isEmpty {
                line += String(
                    format: ", load generator CPU %.3f ms per round trip",
                    (ownAfter - ownBefore) / Double(result.roundTrips.count) * 1000)
            }
            print(line)
            fflush(nil)
        }
        await idle?.stop()
        try await http.shutdown()
        try await idleHTTP?.shutdown()
    }

    static func client(connections: Int) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
        configuration.timeout.connect = .seconds(30)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    /// A memory figure of a process from /proc (`VmRSS` now, `VmHWM` its peak), in bytes.
    static func rss(pid: Int32, field: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
            let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        return kilobytes * 1024
    }
}
