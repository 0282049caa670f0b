import AsyncHTTPClient
import CountersignClient
import CountersignCore
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// Users with one trusted device each, enrolled through the public API.
struct Enroller {
    let backend: CountersignBackend
    let approverSide: BrokerConnection
    let apiKey: String

    func enroll(count: Int, prefix: String) async throws -> [DeviceCredential] {
        try await withThrowingTaskGroup(of: DeviceCredential.self) { group in
            var enrolled: [DeviceCredential] = []
            for index in 0..<count {
                if index >= 16 { enrolled.append(try await group.next()!) }
                group.addTask {
                    let credential = DeviceCredential(
                        broker: approverSide.baseURL, apiKeyID: apiKey, clientUserID: "\(prefix)-\(index)",
                        privateKey: P256.Signing.PrivateKey(), name: "bench-device")
                    let token = try await backend.createEnrollmentToken(user: credential.clientUserID).token
                    _ = try await CountersignClient(connection: approverSide, apiKeyID: apiKey)
                        .enroll(credential, enrollmentToken: token)
                    return credential
                }
            }
            for try await credential in group { enrolled.append(credential) }
            return enrolled.sorted { $0.clientUserID < $1.clientUserID }
        }
    }
}

/// Extra inbox long-polls held open, re-issued as they return.
final class IdleWaiters: Sendable {
    let devices: [DeviceCredential]
    let client: CountersignClient
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(devices: [DeviceCredential], connection: BrokerConnection, apiKey: String) {
        self.devices = devices
        self.client = CountersignClient(connection: connection, apiKeyID: apiKey)
    }

    /// Starts one poll per device, each re-issued as it returns;
    /// ``awaitHeld(count:metricsURL:http:)`` waits for the broker to hold them.
    func start() async throws {
        let (client, devices) = (client, devices)
        task.withLock {
            $0 = Task {
                await withTaskGroup(of: Void.self) { group in
                    for device in devices {
                        group.addTask {
                            // A first look, as an agent's (InboxWatcher), says the
                            // broker's hold; then holds around what agents ask for
                            // (that less 5 s), a fifth either way, as clients that
                            // started at different times would: the polls do not all
                            // return and re-poll at once. The broker cuts what is
                            // past its hold down to it.
                            var hold = 0
                            while !Task.isCancelled {
                                do {
                                    let wait =
                                        hold == 0 ? 0 : Int.random(in: max(1, hold * 4 / 5)...max(1, hold * 6 / 5))
                                    let snapshot = try await client.inbox(device, wait: wait, unchangedFrom: nil)
                                    hold = InboxWatcher.hold(askingOf: snapshot.hold)
                                } catch {
                                    // A refused or failed poll is tried again in a while, as
                                    // agents do, not at once: a loop of failures would burn
                                    // both processes' CPU and pass for the broker's cost.
                                    try? await Task.sleep(for: .seconds(1))
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Waits until the broker reports at least `count` long-polls held (its
    /// `countersign_long_polls_held` gauge), or a while when its metrics
    /// cannot be read (a proxy in front may refuse them).
    func awaitHeld(count: Int, metricsURL: String, http: HTTPClient) async throws {
        let deadline = ContinuousClock.now + .seconds(30 + count / 200)
        while ContinuousClock.now < deadline {
            guard let held = try? await Self.held(metricsURL: metricsURL, http: http) else {
                try await Task.sleep(for: .seconds(max(2, Double(count) / 2000)))
                return
            }
            if held >= count { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw BenchFailure("the broker did not hold \(count) long-polls in time")
    }

    private static func held(metricsURL: String, http: HTTPClient) async throws -> Int? {
        let response = try await http.execute(HTTPClientRequest(url: metricsURL), timeout: .seconds(10))
        guard response.status == .ok else { return nil }
        let text = String(buffer: try await response.body.collect(upTo: 4 << 20))
        let line = text.split(separator: "\n").first { $0.hasPrefix("countersign_long_polls_held ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) }
    }

    func stop() async {
        let running = task.withLock { $0 }
        running?.cancel()
    }
}

/// N pairs doing round trips for a while.
struct Scenario {
    let pairs: [DeviceCredential]
    let requesterSide: BrokerConnection
    let approverSide: BrokerConnection
    let apiKey: String
    let duration: Double
    /// Whether each pair's requester speaks from an address of its own.
    var spreadAddresses = false
    /// Logins through the broker's RADIUS listener instead of the REST API.
    var radius: (server: SocketAddress, secret: RADIUSSecret)? = nil

    struct Result {
        var roundTrips: [Double] = []
        var wakes: [Double] = []
        var errors = 0
        var elapsed = 0.0
    }

    func run() async throws -> Result {
        let approver = CountersignClient(connection: approverSide, apiKeyID: apiKey)
        let started = ContinuousClock.now
        let deadline = started + .milliseconds(Int64(duration * 1000))
        let results = await withTaskGroup(of: Result.self) { group in
            for (index, device) in pairs.enumerated() {
                var connection = requesterSide
                if spreadAddresses {
                    // 198.18.0.0/15 is set aside for benchmarks (RFC 2544).
                    connection.extraHeaders = [("X-Forwarded-For", "198.18.\(index / 256).\(index % 256)")]
                }
                let requester = CountersignClient(connection: connection, apiKeyID: apiKey)
                // The person's address as a NAS reports it, one per pair.
                let nas = radius.map {
                    RADIUSRequester(
                        server: $0.server, secret: $0.secret, callingStation: "198.18.\(index / 256).\(index % 256)")
                }
                group.addTask {
                    var result = Result()
                    while ContinuousClock.now < deadline {
                        do {
                            let (roundTrip, wake) =
                                if let nas {
                                    try await nas.roundTrip(device: device, approver: approver)
                                } else {
                                    try await Self.roundTrip(device: device, requester: requester, approver: approver)
                                }
                            result.roundTrips.append(roundTrip)
                            result.wakes.append(wake)
                        } catch {
                            result.errors += 1
                            if result.errors <= 3 {
                                FileHandle.standardError.write(Data("error: \(error)\n".utf8))
                            }
                        }
                    }
                    return result
                }
            }
            var total = Result()
            for await part in group {
                total.roundTrips += part.roundTrips
                total.wakes += part.wakes
                total.errors += part.errors
            }
            return total
        }
        var total = results
        let elapsed = ContinuousClock.now - started
        total.elapsed = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return total
    }

    /// One full round trip; its duration and the decision-to-wake time, in seconds.
    static func roundTrip(device: DeviceCredential, requester: CountersignClient, approver: CountersignClient)
        async throws -> (Double, Double)
    {
        let started = Date()
        let ticket = try await requester.requestLogin(user: device.clientUserID, requesterName: "bench")
        async let outcome = requester.poll(
            eventID: ticket.event.ID, requesterToken: ticket.requesterToken!, wait: 25)
        var item: InboxItem?
        while item == nil {
            item = try await approver.inbox(device, wait: 25).first { $0.event.ID == ticket.event.ID }
        }
        _ = try await approver.decide(item!, verdict: .approve, match: ticket.matchNumber, credential: device)
        let event = try await outcome
        let woken = Date()
        guard event.status == .approved, event.signature != nil else {
            throw BenchFailure("the requester woke with \(event.status), no token")
        }
        return (woken.timeIntervalSince(started), woken.timeIntervalSince(event.decidedAt ?? woken))
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Scenario.Result {
    func summary(name: String, concurrency: Int, idleWaiters: Int, peakRSS: Int?) -> String {
        func percentile(_ values: [Double], _ p: Double) -> String {
            guard !values.isEmpty else { return "n/a" }
            let sorted = values.sorted()
            let value = sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
            return String(format: "%.2f ms", value * 1000)
        }
        let rate = Double(roundTrips.count) / max(elapsed, 0.001)
        let rss = peakRSS.map { String(format: "%.1f MB", Double($0) / 1_048_576) } ?? "n/a"
        return "\(name) concurrency=\(concurrency)"
            + (idleWaiters > 0 ? " idle-waiters=\(idleWaiters)" : "")
            + String(format: ": %.1f round trips/s", rate)
            + " (\(roundTrips.count) in \(String(format: "%.1f", elapsed)) s),"
            + " round trip p50 \(percentile(roundTrips, 0.5)) p99 \(percentile(roundTrips, 0.99)),"
            + " decision→wake p50 \(percentile(wakes, 0.5)) p99 \(percentile(wakes, 0.99)),"
            + " errors \(errors), broker peak RSS \(rss)"
    }
}
