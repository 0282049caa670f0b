import Foundation

/// A PostgreSQL cluster of one test's own (scripts/postgres-cluster.sh),
/// which the test may crash, stop, start again, make read-only, or give a
/// streaming standby to promote.
struct ThrowawayCluster: Sendable {
    /// The cluster's directory (its data, log and port).
    let directory: URL
    /// `postgres://countersign@127.0.0.1:PORT/postgres`.
    let url: String
    var port: Int { URLComponents(string: url)!.port! }

    /// A new cluster, in a directory of its own under /tmp (the server runs
    /// as the user postgres when the tests run as root, and must reach it).
    static func start() async throws -> ThrowawayCluster {
        let directory = try Self.newDirectory()
        return ThrowawayCluster(directory: directory, url: try await Self.script(["start", directory.path]))
    }

    /// A streaming standby of this cluster's server (pg_basebackup -R), on
    /// a port of its own.
    func standby() async throws -> ThrowawayCluster {
        let standby = try Self.newDirectory()
        return ThrowawayCluster(
            directory: standby, url: try await Self.script(["standby", directory.path, standby.path]))
    }

    /// Stops the server as a crash would: no checkpoint, connections cut.
    func crash() async throws { _ = try await Self.script(["crash", directory.path]) }
    /// Stops the server (its sessions are terminated).
    func halt() async throws { _ = try await Self.script(["halt", directory.path]) }
    /// Starts the server again on its port.
    func resume() async throws { _ = try await Self.script(["resume", directory.path]) }
    /// Promotes a standby to primary.
    func promote() async throws { _ = try await Self.script(["promote", directory.path]) }
    /// Makes the server refuse writes; open connections stay open.
    func makeReadOnly() async throws { _ = try await Self.script(["read-only", directory.path]) }

    /// Stops the server and removes the cluster.
    func remove() async {
        _ = try? await Self.script(["stop", directory.path])
        try? FileManager.default.removeItem(at: directory.deletingLastPathComponent())
    }

    private static func newDirectory() throws -> URL {
        let parent = URL(fileURLWithPath: "/tmp").appendingPathComponent("countersign-pg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return parent.appendingPathComponent("cluster")
    }

    /// Runs the cluster script; its last line of output.
    private static func script(_ arguments: [String]) async throws -> String {
        let run = try RunningProcess(
            "/bin/bash", [scriptsDirectory.appendingPathComponent("postgres-cluster.sh").path] + arguments)
        guard try await run.exitCode(timeout: .seconds(180)) == 0 else {
            throw ProcessFailure("postgres-cluster.sh \(arguments[0]) failed: \(run.text)")
        }
        return run.text.split(separator: "\n").last.map { String($0).trimmingCharacters(in: .whitespaces) } ?? ""
    }
}

/// scripts/tcp-forwarder.py: a network address in front of a server
/// (PostgreSQL, a mail server) that the test moves to another, or cuts.
struct TCPForwarder {
    let process: RunningProcess
    let port: Int
    private let control: URL

    /// A forwarder to `port` on loopback.
    static func start(to port: Int) async throws -> TCPForwarder {
        let control = try temporaryDirectory("forwarder").appendingPathComponent("control")
        try "forward \(port)\n".write(to: control, atomically: true, encoding: .utf8)
        let process = try RunningProcess(
            "/usr/bin/python3",
            [scriptsDirectory.appendingPathComponent("tcp-forwarder.py").path, "--control", control.path])
        let port = try await process.waitFor(#"listening (\d+)"#, timeout: .seconds(60))
        return TCPForwarder(process: process, port: Int(port)!, control: control)
    }

    /// New connections go to `port`; open ones stay where they are.
    func forward(to port: Int) throws { try set("forward \(port)") }
    /// Nothing is relayed and nothing closed, as across a cut network.
    func blackhole() throws { try set("blackhole") }
    /// New connections are closed at once, as by a server that is down.
    func refuse() throws { try set("refuse") }

    private func set(_ line: String) throws {
        try (line + "\n").write(to: control, atomically: true, encoding: .utf8)
    }

    func stop() { process.stop() }
}
