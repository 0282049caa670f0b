import AsyncHTTPClient
import CountersignClient
import CountersignCore
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// A real `device-broker serve` process on a free loopback port, with an
/// API key made by the real `device-broker apikey create`.
struct LiveBroker {
    private(set) var process: RunningProcess!
    private(set) var url: String
    let dataDirectory: URL
    private(set) var apiKeyID: String
    private(set) var apiSecret: String

    /// Where the store is: `--database URL`, or the SQLite file in the data directory.
    var storeArguments: [String] { database.map { ["--database", $0] } ?? ["--data-dir", dataDirectory.path] }
    /// A postgres:// URL, or nil for SQLite.
    var database: String? = nil
    var totpKeyFile: String = ""
    /// The open-file limit the broker runs under (soft and hard), if not the test's.
    var openFileLimit: Int? = nil
    /// What `serve` was given besides the store and port; a restart gives it again.
    private(set) var serveArguments: [String] = []

    /// Starts a broker with a TOTP key made by `device-broker totp-key
    /// generate`, kept outside the data directory; on PostgreSQL with a
    /// `database` URL; in `dataDirectory` if given (a file system a test
    /// made), else in a new temporary one. Without `totp`, no TOTP key.
    static func start(
        arguments: [String] = [], database: String? = nil, openFileLimit: Int? = nil, dataDirectory: URL? = nil,
        totp: Bool = true
    ) async throws -> LiveBroker {
        let data = try dataDirectory ?? temporaryDirectory("broker-data")
        var totpKey = ""
        if totp {
            totpKey = try temporaryDirectory("broker-secrets").appendingPathComponent("totp.key").path
            let generate = try RunningProcess("device-broker", ["totp-key", "generate", totpKey])
            guard try await generate.exitCode(timeout: .seconds(120)) == 0 else {
                throw ProcessFailure("totp-key generate failed: \(generate.text)")
            }
        }
        var broker = LiveBroker(
            process: nil, url: "", dataDirectory: data, apiKeyID: "", apiSecret: "", database: database,
            totpKeyFile: totpKey, openFileLimit: openFileLimit)
        broker = try await broker.startInstance(arguments: arguments)
        // Created while the server runs: two processes share the store.
        let create = try RunningProcess(
            "device-broker", ["apikey", "create", "--name", "demo", "--json"] + broker.storeArguments)
        guard try await create.exitCode(timeout: .seconds(120)) == 0 else {
            throw ProcessFailure("apikey create failed: \(create.text)")
        }
        struct CreatedKey: Decodable {
            let api_key_id: String
            let api_secret_key: String
        }
        let key = try JSONDecoder().decode(CreatedKey.self, from: create.json)
        broker.apiKeyID = key.api_key_id
        broker.apiSecret = key.api_secret_key
        return broker
    }

    /// A broker on a store made elsewhere (a fixture), with its TOTP key and
    /// one of its API keys.
    static func start(
        onStore database: String?, dataDirectory: URL, totpKeyFile: String, apiKeyID: String, apiSecret: String,
        arguments: [String] = []
    ) async throws -> LiveBroker {
        try await LiveBroker(
            process: nil, url: "", dataDirectory: dataDirectory, apiKeyID: apiKeyID, apiSecret: apiSecret,
            database: database, totpKeyFile: totpKeyFile
        ).startInstance(arguments: arguments)
    }

    /// Another instance on the same store, TOTP key and API key, on its own port.
    func startInstance(arguments: [String] = []) async throws -> LiveBroker {
        var attempt = 0
        while true {
            attempt += 1
            let port = try freePort()
            var instance = self
            instance.url = "http://127.0.0.1:\(port)"
            instance.serveArguments = arguments
            do {
                instance.process = try await launch(port: port, arguments: arguments)
                return instance
            } catch let failure as ProcessFailure
                where attempt < 3 && failure.description.contains("already in use")
            {
                // Another test's process took the port between freePort() and the bind.
                continue
            }
        }
    }

    /// `device-broker serve` on this broker's store and TOTP key; `{port}`
    /// in an argument is the port it listens on.
    private func launch(port: Int, arguments: [String] = []) async throws -> RunningProcess {
        try await Self.serve(
            port: port,
            arguments: storeArguments + (totpKeyFile.isEmpty ? [] : ["--totp-key-file", totpKeyFile])
                + arguments.map { $0.replacingOccurrences(of: "{port}", with: String(port)) },
            openFileLimit: openFileLimit)
    }

    /// A new process in place of this one (which has stopped): same store and port.
    private func relaunched() async throws -> LiveBroker {
        var restarted = self
        restarted.process = try await launch(port: Int(url.split(separator: ":").last!)!, arguments: serveArguments)
        return restarted
    }

    private static func serve(port: Int, arguments: [String], openFileLimit: Int?) async throws -> RunningProcess {
        let quiet = arguments.contains("--log-level") ? [] : ["--log-level", "warning"]
        let serve = ["serve", "--port", String(port)] + quiet + arguments
        // prlimit sets the limit and execs the broker: the same process.
        let process =
            try openFileLimit.map {
                try RunningProcess(
                    "/usr/bin/prlimit",
                    ["--nofile=\($0):\($0)", "--", Binaries.directory.appendingPathComponent("device-broker").path]
                        + serve)
            } ?? RunningProcess("device-broker", serve)
        try await waitUntilUp("http://127.0.0.1:\(port)", port: port, process: process)
        return process
    }

    /// Stops the broker with SIGTERM (held long-polls are answered at once)
    /// and, after `downtime`, starts a new one on the same store and port.
    func restart(after downtime: Duration = .zero) async throws -> LiveBroker {
        process.stop()
        try await Task.sleep(for: downtime)
        return try await relaunched()
    }

    /// Kills the broker with SIGKILL (no chance to flush anything) and
    /// starts a new one on the same data directory and port.
    func killAndRestart() async throws -> LiveBroker {
        kill(process.process.processIdentifier, SIGKILL)
        process.process.waitUntilExit()
        return try await relaunched()
    }

    /// Until the broker answers on `port` and holds its socket: a broker
    /// of another test that got the same port answers too, and talking to
    /// it instead fails in confusing ways ("unknown API key id").
    private static func waitUntilUp(_ url: String, port: Int, process: RunningProcess) async throws {
        // Generous: a cold start on a busy machine can take many seconds.
        var patience = WaitBudget(.seconds(120))
        while patience.left() {
            if (try? await BrokerConnection(baseURL: url).health()) == true,
                listens(pid: process.process.processIdentifier, port: port)
            {
                return
            }
            guard process.process.isRunning else { throw ProcessFailure("broker exited:\n\(process.text)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        // What the last look saw, and the port as the kernel sees it
        // (a listening socket's rx_queue is its backlog of unaccepted
        // connections), with the descriptors the process holds.
        let health = await Result { try await BrokerConnection(baseURL: url).health() }
        let hexPort = ":" + String(format: "%04X", port)
        let table = ["/proc/net/tcp", "/proc/net/tcp6"].compactMap(procFile)
            .flatMap { $0.split(separator: "\n") }.filter {
                $0.split(separator: " ").dropFirst().first?.hasSuffix(hexPort) == true
            }
        let pid = process.process.processIdentifier
        let fds = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")
        }
        throw ProcessFailure(
            """
            broker did not come up:
            \(process.text)
            health: \(health), listens: \(listens(pid: pid, port: port))
            port \(port) (\(hexPort)) in the kernel's tables:
            \(table.joined(separator: "\n"))
            descriptors: \(fds.sorted().joined(separator: " "))
            \(await Self.whereStuck(pid))
            """)
    }

    /// What a process that does not come up is doing: its state, whether
    /// it listens at all, and its threads' stacks (gdb, where installed).
    static func whereStuck(_ pid: Int32) async -> String {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let state = status.split(separator: "\n").filter { $0.hasPrefix("State") || $0.hasPrefix("Threads") }
        let sockets = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count ?? 0
        var text = "pid \(pid): \(state.joined(separator: ", ")), \(sockets) descriptors"
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb"),
            let gdb = try? RunningProcess(
                "/usr/bin/gdb", ["-p", String(pid), "-batch", "-ex", "thread apply all bt 12"]),
            (try? await gdb.exitCode(timeout: .seconds(60))) != nil
        {
            text +=
                "\n"
                + gdb.text.split(separator: "\n").filter { $0.hasPrefix("#") || $0.hasPrefix("Thread") }
                .joined(separator: "\n")
        }
        return text
    }

    /// The API key as an `Authorization` header's value.
    var basicAuthorization: String { "Basic " + Data("\(apiKeyID):\(apiSecret)".utf8).base64EncodedString() }

    var backend: CountersignBackend { CountersignBackend(broker: url, apiKeyID: apiKeyID, apiSecretKey: apiSecret) }

    /// Runs `device-agent` with this broker's account options.
    func agent(
        _ arguments: [String], configDirectory: URL, user: String? = "alice", stdin: String? = nil,
        keepingInputOpen: Bool = false, environment: [String: String] = [:]
    ) throws -> RunningProcess {
        try RunningProcess(
            "device-agent",
            arguments + ["--broker", url, "--api-key", apiKeyID, "--config-dir", configDirectory.path]
                + (user.map { ["--user", $0] } ?? []),
            stdin: stdin, environment: environment, keepingInputOpen: keepingInputOpen)
    }

    /// A device key of `user`, enrolled through the SDK with a token the
    /// backend asked for.
    func enrollDevice(user: String = "alice", name: String = "laptop") async throws -> DeviceCredential {
        let device = DeviceCredential(
            broker: url, apiKeyID: apiKeyID, clientUserID: user, privateKey: P256.Signing.PrivateKey(), name: name)
        _ = try await CountersignClient(for: device).enroll(
            device, enrollmentToken: try await backend.createEnrollmentToken(user: user).token)
        return device
    }

    /// Enrolls a machine (a config directory) as a trusted device of `user`.
    func enrollMachine(user: String = "alice", name: String) async throws -> URL {
        // Not created here: the agent makes it, with mode 0700.
        let directory = try temporaryDirectory("machine-\(name)").appendingPathComponent("countersign")
        let token = try await backend.createEnrollmentToken(user: user).token
        let enroll = try agent(["enroll", "--token", token, "--name", name], configDirectory: directory, user: user)
        guard try await enroll.exitCode(timeout: .seconds(120)) == 0 else {
            throw ProcessFailure("enroll failed: \(enroll.text)")
        }
        return directory
    }

    func stop() { process.stop() }

    /// What `/metrics` shows now.
    func metricsText() async throws -> String {
        let response = try await HTTPClient.shared.get(url: url + "/metrics").get()
        return String(buffer: response.body ?? ByteBuffer())
    }

    /// How many held polls a notification woke, as its metrics say.
    func wakesCounted() async throws -> Int {
        let response = try await HTTPClient.shared.get(url: url + "/metrics").get()
        let text = String(buffer: response.body ?? ByteBuffer())
        return text.firstMatch(of: /countersign_decision_to_wake_seconds_count (\d+)/).flatMap { Int($0.1) } ?? 0
    }

    /// How many held inbox polls a change's notification answered: a
    /// test knows a poll was woken, not left to run out its hold.
    func inboxWakesCounted() async throws -> Int {
        let response = try await HTTPClient.shared.get(url: url + "/metrics").get()
        let text = String(buffer: response.body ?? ByteBuffer())
        return text.firstMatch(of: /countersign_inbox_change_to_wake_seconds_count (\d+)/).flatMap { Int($0.1) } ?? 0
    }

    /// Waits until the broker holds `count` long-polls, as its metrics say:
    /// a test that signals or decides next knows its polls are held, however
    /// busy the machine.
    func waitUntilHolding(_ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        let held = try Regex("countersign_long_polls_held \(count)(\\.0)?\n")
        while ContinuousClock.now < deadline {
            let response = try await HTTPClient.shared.get(url: url + "/metrics").get()
            if String(buffer: response.body ?? ByteBuffer()).contains(held) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw ProcessFailure("the broker did not hold \(count) long-polls within a minute")
    }

    /// Starts `login --json` on a machine that is not trusted and returns it
    /// with the event id and the number it shows.
    func startLogin(machine: URL, name: String = "machine-B") async throws -> (RunningProcess, String, String) {
        let login = try agent(["login", "--json", "--name", name], configDirectory: machine)
        let eventID = try await login.waitFor(#"Login request (ev_[A-Za-z0-9_-]+) sent"#)
        let number = try await login.waitFor(#"Match number: (\d+)\b"#)
        return (login, eventID, number)
    }
}

/// What the broker answered a form POST.
struct FormAnswer {
    let status: HTTPResponseStatus
    let location: String?
    let page: String
}

/// POSTs a form the way the hosted page's browser would (redirects not followed).
func postForm(_ url: String, form: URLComponents) async throws -> FormAnswer {
    var request = HTTPClientRequest(url: url)
    request.method = .POST
    request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
    // Never pooled: a kept connection to a broker a test stopped can be
    // handed out for the next broker that gets the same port, and fail.
    request.headers.add(name: "Connection", value: "close")
    request.body = .bytes(ByteBuffer(string: form.percentEncodedQuery!.replacingOccurrences(of: "+", with: "%2B")))
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
    return FormAnswer(
        status: response.status, location: response.headers.first(name: "Location"),
        page: String(buffer: try await response.body.collect(upTo: 1 << 20)))
}
