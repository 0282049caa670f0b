import CountersignClient
import CountersignCore
import Foundation
import Testing

/// `device-broker --config FILE`, as the package's unit runs it.
@Suite("end to end: the broker's settings file")
struct SettingsFileEndToEndTests {
    static func write(_ text: String) throws -> URL {
        let file = try temporaryDirectory("settings").appendingPathComponent("broker.conf")
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try text.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test("serve takes the file's options and the command line wins; migrate takes only the store's")
    func options() async throws {
        let elsewhere = try temporaryDirectory("settings").appendingPathComponent("data")
        let file = try Self.write(
            """
            # as the package installs it
            data-dir = \(elsewhere.path)
            port = 1
            log-format = json   # every line a JSON object
            allow-private-webhook-endpoints = true
            allow-private-push-endpoints = false
            """)
        // LiveBroker gives --port and --data-dir: they win over the file's.
        let broker = try await LiveBroker.start(arguments: ["--config", file.path, "--log-level", "info"])
        defer { broker.stop() }
        #expect(try await BrokerConnection(baseURL: broker.url).health())
        #expect(!FileManager.default.fileExists(atPath: elsewhere.path), "the command line's --data-dir won")
        let firstLine = broker.process.text.split(separator: "\n").first.map(String.init) ?? ""
        #expect(firstLine.hasPrefix("{") && firstLine.contains(#""message""#), "\(broker.process.text.prefix(400))")

        let migrate = try RunningProcess("device-broker", ["migrate", "--config", file.path])
        #expect(try await migrate.exitCode() == 0, "\(migrate.text)")
        #expect(FileManager.default.fileExists(atPath: elsewhere.appendingPathComponent("countersign.sqlite").path))
    }

    @Test("the package's broker.conf, with its commented examples switched on, starts a broker")
    func shipped() async throws {
        let shipped = try String(
            contentsOf: scriptsDirectory.deletingLastPathComponent().appendingPathComponent("deploy/broker.conf"),
            encoding: .utf8)
        // Those that need a server or files of their own stay off.
        let needsMore = ["database", "tls-certificate", "tls-key", "sender", "smtp-", "directory"]
        var switchedOn = 0
        let lines = shipped.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard line.hasPrefix("# "), let equals = line.firstIndex(of: "="),
                case let name = line.dropFirst(2)[..<equals].trimmingCharacters(in: .whitespaces),
                !name.isEmpty, name.allSatisfy({ $0.isLowercase || $0 == "-" }),
                !needsMore.contains(where: { name.hasPrefix($0) })
            else { return String(line) }
            switchedOn += 1
            return String(line.dropFirst(2))
        }
        #expect(switchedOn >= 8, "the examples were found: \(switchedOn)")
        let file = try Self.write(lines.joined(separator: "\n"))
        let broker = try await LiveBroker.start(arguments: ["--config", file.path])
        defer { broker.stop() }
        #expect(try await BrokerConnection(baseURL: broker.url).health())
    }

    @Test("an unknown name, a flag that is not true or false, or a missing file: refused, naming the line")
    func refused() async throws {
        let cases = [
            ("port = 8080\nbogus = 1", "broker.conf:2: bogus is not an option of device-broker serve"),
            ("allow-private-push-endpoints = yes", "broker.conf:1: allow-private-push-endpoints is a flag"),
            ("public-url =", "broker.conf:1: public-url has no value"),
            ("version = true", "broker.conf:1: version is not an option"),
            ("port 8080", "broker.conf:1: expected name = value"),
        ]
        for (text, message) in cases {
            let file = try Self.write(text)
            let run = try RunningProcess("device-broker", ["serve", "--config", file.path])
            #expect(try await run.exitCode() == 64, "\(text): \(run.text)")
            #expect(run.text.contains(message), "\(text): \(run.text)")
        }
        let missing = try RunningProcess("device-broker", ["migrate", "--config", "/nonexistent/broker.conf"])
        #expect(try await missing.exitCode() == 64)
        #expect(missing.text.contains("cannot read the settings file /nonexistent/broker.conf"), "\(missing.text)")
    }
}
