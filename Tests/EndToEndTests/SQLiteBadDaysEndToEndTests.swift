import AsyncHTTPClient
import CountersignClient
import CountersignCore
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import Testing

/// The SQLite store's ordinary bad days, on real file systems made here (a
/// small tmpfs, an ext4 image on a loop device), another real process
/// holding the file's lock, and files that are not the broker's, against
/// the real `device-broker`. Every wait is for a state, never a set time.
@Suite("end to end: the SQLite store's bad days", .serialized)
struct SQLiteBadDaysEndToEndTests {
    @Test("a full disk: writes 503, reads answered, writes back at once with space; the file checks ok")
    func fullDisk() async throws {
        let disk = try await MountedFileSystem.tmpfs(megabytes: 16)
        defer { disk.unmount() }
        let data = disk.directory.appendingPathComponent("data")
        let broker = try await LiveBroker.start(dataDirectory: data)
        defer { broker.stop() }
        let decided = try await approvedEvent(broker)

        // Fill the file system: SQLite reuses its WAL's space, so writes
        // fail only once they need a new block; count until one does.
        let filler = try disk.fill()
        var acknowledged = 0
        var refusal: StoreRefusal?
        while refusal == nil, acknowledged < 20_000 {
            refusal = try await write(broker)
            if refusal == nil { acknowledged += 1 }
        }
        let refused = try #require(refusal, "\(acknowledged) writes and none refused on a full disk")
        #expect(refused.status == 503 && refused.code == "store_unavailable", "\(refused)")
        #expect(try await write(broker) != nil, "still refused while the disk is full")
        #expect(try await broker.backend.event(id: decided).status == .approved, "reads are answered")
        #expect(broker.process.process.isRunning)

        try FileManager.default.removeItem(at: filler)
        #expect(try await write(broker) == nil, "the first write after space returns goes through")
        broker.stop()
        try await expectIntact(data, decided: decided, enrollmentTokensAtLeast: acknowledged + 1)
    }

    @Test("the file system turns read-only: writes 503, reads answered; after the repair the data is all there")
    func readOnlyFileSystem() async throws {
        let disk = try await MountedFileSystem.ext4Image(megabytes: 32)
        defer { disk.unmount() }
        let data = disk.directory.appendingPathComponent("data")
        let broker = try await LiveBroker.start(dataDirectory: data)
        defer { broker.stop() }
        let decided = try await approvedEvent(broker)
        #expect(try await write(broker) == nil)

        // What the kernel does on an error with errors=remount-ro, under
        // the files the broker holds open (a remount or chmod by hand is
        // refused, or does not reach open files).
        try await disk.failIntoReadOnly()
        let refused = try #require(try await write(broker), "a write on a read-only file system was acknowledged")
        #expect(refused.status == 503 && refused.code == "store_unavailable", "\(refused)")
        #expect(try await write(broker) != nil, "and the next one")
        #expect(try await broker.backend.event(id: decided).status == .approved, "reads are answered")
        #expect(broker.process.process.isRunning, "the broker keeps running")

        // Linux lets such a file system become writable only by mounting
        // it again, once its files are closed: stop, repair, start.
        broker.stop()
        try await disk.repairAndRemount()
        let restarted = try await broker.restart()
        defer { restarted.stop() }
        let afterRepair = try await write(restarted)
        #expect(
            afterRepair == nil,
            "writes resume on the writable file system: \(String(describing: afterRepair)), \(restarted.process.text)")
        #expect(try await restarted.backend.event(id: decided).status == .approved)
        restarted.stop()
        try await expectIntact(data, decided: decided, enrollmentTokensAtLeast: 2)
    }

    @Test("another process holds the write lock: writes 503 within seconds, reads answered, writes back after")
    func lockHeldByAnotherProcess() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let decided = try await approvedEvent(broker)
        let database = broker.dataDirectory.appendingPathComponent("countersign.sqlite").path
        let holder = try RunningProcess(
            "/usr/bin/env",
            [
                "python3", "-c",
                """
                import sqlite3, sys
                db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
                db.execute("BEGIN EXCLUSIVE")
                print("locked", flush=True)
                sys.stdin.readline()
                db.execute("COMMIT")
                print("released", flush=True)
                """,
                database,
            ], keepingInputOpen: true)
        _ = try await holder.waitFor("locked", timeout: .seconds(60))

        // Answered while the lock is still held: the store waits for it a
        // bounded time (SQLiteStore.lockWait), not until it is let go.
        let refused = try #require(try await write(broker), "a write went through a held lock")
        #expect(refused.status == 503 && refused.code == "store_unavailable", "\(refused)")
        #expect(try await broker.backend.event(id: decided).status == .approved, "reads are answered")

        holder.send("\n")
        _ = try await holder.waitFor("released", timeout: .seconds(60))
        #expect(try await holder.exitCode() == 0)
        #expect(try await write(broker) == nil, "writes go through once the lock is let go")
    }

    @Test("a file that is not this broker's database: serve exits at once with one line naming it and what to do")
    func foreignFiles() async throws {
        // Random bytes.
        let random = try temporaryDirectory("broker-data")
        let garbage = Data((0..<8192).map { _ in UInt8.random(in: 0...255) })
        try garbage.write(to: random.appendingPathComponent("countersign.sqlite"))
        let noise = try await refusedStart(random)
        #expect(noise.contains("is not an SQLite database"), "\(noise)")
        #expect(try Data(contentsOf: random.appendingPathComponent("countersign.sqlite")) == garbage, "untouched")

        // Another application's SQLite database: left as it was, not
        // switched to WAL nor given this broker's tables.
        let other = try temporaryDirectory("broker-data")
        let otherFile = other.appendingPathComponent("countersign.sqlite").path
        try await sqlite(
            otherFile, "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes VALUES (1, 'x');")
        let foreign = try await refusedStart(other)
        #expect(foreign.contains("another application's SQLite database"), "\(foreign)")
        #expect(
            try await sqlite(otherFile, "PRAGMA journal_mode; SELECT group_concat(name) FROM sqlite_master;")
                == "delete\nnotes\n")

        // A database a newer broker migrated.
        let newer = try temporaryDirectory("broker-data")
        let migrate = try RunningProcess("device-broker", ["migrate", "--data-dir", newer.path])
        #expect(try await migrate.exitCode(timeout: .seconds(120)) == 0, "\(migrate.text)")
        let newerFile = newer.appendingPathComponent("countersign.sqlite").path
        try await sqlite(newerFile, "INSERT INTO grdb_migrations VALUES ('v999-from-the-future');")
        let future = try await refusedStart(newer)
        #expect(future.contains("newer broker"), "\(future)")

        // A Countersign database damaged past its header.
        let damaged = try temporaryDirectory("broker-data")
        let make = try RunningProcess("device-broker", ["migrate", "--data-dir", damaged.path])
        #expect(try await make.exitCode(timeout: .seconds(120)) == 0, "\(make.text)")
        let damagedFile = damaged.appendingPathComponent("countersign.sqlite")
        var bytes = try Data(contentsOf: damagedFile)
        for index in 100..<min(bytes.count, 16384) { bytes[index] = UInt8.random(in: 0...255) }
        try bytes.write(to: damagedFile)
        let broken = try await refusedStart(damaged)
        #expect(broken.contains("countersign.sqlite"), "\(broken)")
    }

    // MARK: Helpers

    /// What the broker answered a write it refused.
    struct StoreRefusal: Equatable, CustomStringConvertible {
        let status: Int
        let code: String
        var description: String { "\(status) \(code)" }
    }

    /// One write (a new enrollment token, a row of its own each time): nil
    /// when acknowledged, else the JSON error it was refused with.
    func write(_ broker: LiveBroker) async throws -> StoreRefusal? {
        var request = HTTPClientRequest(url: broker.url + "/api/v1/users/alice/enrollment-tokens")
        request.method = .POST
        request.headers.add(name: "Authorization", value: broker.basicAuthorization)
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 16)
        if (200..<300).contains(Int(response.status.code)) { return nil }
        struct ErrorBody: Decodable { let error: String }
        let error = try JSONDecoder().decode(ErrorBody.self, from: Data(buffer: body))
        return StoreRefusal(status: Int(response.status.code), code: error.error)
    }

    /// An event of alice, approved by her device: an acknowledged decision.
    func approvedEvent(_ broker: LiveBroker) async throws -> String {
        let device = try await broker.enrollDevice()
        let ticket = try await broker.backend.requestApproval(user: "alice", numberMatching: false)
        let client = CountersignClient(for: device)
        let item = try #require(try await client.inbox(device, wait: 0).first { $0.event.ID == ticket.event.ID })
        _ = try await client.decide(item, verdict: .approve, match: nil, credential: device)
        #expect(try await broker.backend.event(id: ticket.event.ID).status == .approved)
        return ticket.event.ID
    }

    /// After the broker stopped: SQLite's own check passes, the decision
    /// is there, and so is every acknowledged write.
    func expectIntact(_ data: URL, decided: String, enrollmentTokensAtLeast count: Int) async throws {
        let file = data.appendingPathComponent("countersign.sqlite").path
        #expect(try await sqlite(file, "PRAGMA integrity_check;") == "ok\n")
        #expect(try await sqlite(file, "SELECT status FROM events WHERE id = '\(decided)';") == "approved\n")
        let tokens = try await sqlite(file, "SELECT count(*) FROM enrollment_tokens;")
        #expect((Int(tokens.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= count, "\(tokens)")
    }

    /// Runs `serve` on `data`, which must refuse to start: returns its one
    /// line of output, after checking it is one line, names the file, says
    /// what to do and is no crash.
    func refusedStart(_ data: URL) async throws -> String {
        let serve = try RunningProcess(
            "device-broker",
            ["serve", "--data-dir", data.path, "--port", String(try freePort()), "--log-level", "warning"])
        let status = try await serve.exitCode(timeout: .seconds(60))
        let lines = serve.text.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        #expect(status != 0 && status < 128, "exit \(status): a refusal, not a crash\n\(serve.text)")
        #expect(lines.count == 1, "one line:\n\(serve.text)")
        let line = String(lines.first ?? "")
        #expect(line.contains(data.appendingPathComponent("countersign.sqlite").path), "\(line)")
        #expect(line.contains("restore the file from a backup") && line.contains("--data-dir"), "\(line)")
        return line
    }

    /// Runs SQL with Python's sqlite3 module (another SQLite than the
    /// broker's) and returns what it printed, a row per line.
    @discardableResult
    func sqlite(_ file: String, _ sql: String) async throws -> String {
        let python = try RunningProcess(
            "/usr/bin/env",
            [
                "python3", "-c",
                """
                import sqlite3, sys
                db = sqlite3.connect(sys.argv[1], isolation_level=None)
                for statement in [s for s in sys.argv[2].split(';') if s.strip()]:
                    for row in db.execute(statement):
                        print('|'.join(str(value) for value in row))
                """,
                file, sql,
            ])
        guard try await python.exitCode(timeout: .seconds(60)) == 0 else {
            throw ProcessFailure("python3 sqlite3 failed: \(python.text)")
        }
        return python.text
    }
}

/// A small real file system mounted for one test, unmounted after it.
struct MountedFileSystem {
    let directory: URL
    /// The ext4 image behind it, if any.
    let image: URL?

    /// A tmpfs of `megabytes` (needs root, as the suite runs in CI).
    static func tmpfs(megabytes: Int) async throws -> MountedFileSystem {
        let directory = try temporaryDirectory("small-disk")
        try await run(
            "/usr/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0700", "countersign-test", directory.path])
        return MountedFileSystem(directory: directory, image: nil)
    }

    /// An ext4 image of `megabytes` on a loop device, mounted with
    /// errors=remount-ro (no journal, so that a repair is one e2fsck).
    static func ext4Image(megabytes: Int) async throws -> MountedFileSystem {
        let directory = try temporaryDirectory("ext4-disk")
        let image = try temporaryDirectory("ext4-image").appendingPathComponent("disk.img")
        try await run("/usr/bin/truncate", ["-s", "\(megabytes)M", image.path])
        try await run("/usr/sbin/mkfs.ext4", ["-q", "-O", "^has_journal", image.path])
        try await run("/usr/bin/mount", ["-o", "loop,errors=remount-ro", image.path, directory.path])
        return MountedFileSystem(directory: directory, image: image)
    }

    /// Fills the file system with one file, until it is refused space.
    func fill() throws -> URL {
        let url = directory.appendingPathComponent("filler")
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        let chunk = Data(count: 64 * 1024)
        while (try? handle.write(contentsOf: chunk)) != nil {}
        // The last partial block: smaller writes until nothing fits.
        while (try? handle.write(contentsOf: Data(count: 512))) != nil {}
        return url
    }

    /// The loop device's ext4 error, as the kernel raises on a failing
    /// disk: with errors=remount-ro, the file system turns read-only
    /// under every open file.
    func failIntoReadOnly() async throws {
        let source = try await Self.run("/usr/bin/findmnt", ["-n", "-o", "SOURCE", directory.path])
        let device = URL(fileURLWithPath: source.trimmingCharacters(in: .whitespacesAndNewlines)).lastPathComponent
        try Data("countersign test: a failing disk\n".utf8).write(
            to: URL(fileURLWithPath: "/sys/fs/ext4/\(device)/trigger_fs_error"))
        let options = try await Self.run("/usr/bin/findmnt", ["-n", "-o", "OPTIONS", directory.path])
        // Older kernels show it as "ro"; newer ones keep "rw" and add "emergency_ro".
        let flags = options.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
        guard flags.first == "ro" || flags.contains("emergency_ro") else {
            throw ProcessFailure("the file system did not turn read-only: \(options)")
        }
    }

    /// Unmounts, repairs with e2fsck and mounts again, writable.
    func repairAndRemount() async throws {
        let image = try #require(image)
        try await Self.run("/usr/bin/umount", [directory.path])
        // 1: errors were corrected, which is what is expected here.
        let fsck = try RunningProcess("/usr/sbin/e2fsck", ["-f", "-p", image.path])
        let status = try await fsck.exitCode(timeout: .seconds(120))
        guard status == 0 || status == 1 else { throw ProcessFailure("e2fsck: \(status)\n\(fsck.text)") }
        try await Self.run("/usr/bin/mount", ["-o", "loop,errors=remount-ro", image.path, directory.path])
    }

    /// Unmounts (lazily: a process of a failed test may still hold a file).
    func unmount() {
        guard
            let umount = try? ChildProcess(
                "/usr/bin/umount", ["-l", directory.path], environment: [:], input: 0, output: 2)
        else { return }
        umount.waitUntilExit()
    }

    @discardableResult
    static func run(_ executable: String, _ arguments: [String]) async throws -> String {
        let process = try RunningProcess(executable, arguments)
        guard try await process.exitCode(timeout: .seconds(120)) == 0 else {
            throw ProcessFailure("\(executable) \(arguments.joined(separator: " ")) failed:\n\(process.text)")
        }
        return process.text
    }

    @discardableResult
    private func run(_ executable: String, _ arguments: [String]) async throws -> String {
        try await Self.run(executable, arguments)
    }
}
