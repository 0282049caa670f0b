public import ArgumentParser
import CountersignCore
import CountersignPostgres
public import CountersignSQLite
import CountersignStore
import Crypto
import Foundation
import Logging
import Synchronization

/// `countersign-bench console-fill`: a broker's history, written into a
/// new SQLite data directory or an empty PostgreSQL database through the
/// store's own writes, for the console scenario (``ConsoleLoad``) and the
/// load generator to run against brokers started on it.
struct ConsoleFill: AsyncParsableCommand {
    static let name = "console-fill"

    static let configuration = CommandConfiguration(
        commandName: "countersign-bench console-fill",
        abstract: "Write a broker's history into a new SQLite data directory or an empty PostgreSQL database.",
        discussion: """
            Apps (API keys), users with one or two trusted devices each, events over the last --days (most \
            approved or rejected by a device, with their decision records and webhook messages; some expired \
            or withdrawn; a few reported as fraud, whose protections run for a day), the request counters of \
            requesters' events, audit lines, and an operator with a device, an approved console sign-in and \
            a session whose cookie secret is printed. Every row is written by the store's own methods, as \
            the broker writes it, with the times of the history. The broker must not run on the directory \
            while it is filled; on PostgreSQL (--database), the database is migrated first and must hold no \
            API key yet.
            """)

    @Option(help: "The broker's data directory; its countersign.sqlite must not exist yet.")
    var dataDir: String?

    @Option(help: "A PostgreSQL database to fill instead (postgres://…), migrated and without API keys.")
    var database: String?

    @Option(help: "Events in all.")
    var events = 100_000

    @Option(help: "Users; every tenth has an account at a second app.")
    var users = 1_000

    @Option(help: "Apps (API keys), besides the console's own.")
    var apps = 5

    @Option(help: "How many of the apps have a webhook endpoint (every event writes its messages).")
    var webhookApps = 2

    @Option(help: "Audit lines of operators' past work.")
    var auditLines = 10_000

    @Option(help: "People invited by email who have no device yet (every tenth sent again).")
    var invitations = 10_000

    @Option(help: "Days of history (under the broker's 30 days of retention).")
    var days = 25

    @Option(help: "The console session's cookie secret; a random one if not given.")
    var sessionSecret: String?

    @Option(help: "The operator who holds the session.")
    var operatorName = "bench"

    @Option(help: "The broker's public URL, which the devices' decisions name as their audience.")
    var brokerURL = "http://127.0.0.1:18081"

    @Option(help: "full: fsync every commit; relaxed: let the OS write (the broker opens it with its own setting).")
    var durability: SQLiteStore.Durability = .relaxed

    @Option(help: "Writes in flight at once (the store commits those that wait together).")
    var writers = 64

    @Option(help: "Seed of the history's shape (who, when, what); ids and keys are random.")
    var seed: UInt64 = 1

    func validate() throws {
        guard (dataDir == nil) != (database == nil) else { throw ValidationError("give --data-dir or --database") }
        guard events >= 100, users >= 1, apps >= 1, (0...apps).contains(webhookApps), auditLines >= 0, days >= 1,
            days < 30, writers >= 1
        else {
            throw ValidationError(
                "need --events ≥ 100, --users ≥ 1, --apps ≥ 1, 0 ≤ --webhook-apps ≤ --apps, 1 ≤ --days < 30")
        }
        guard Operator.isValid(name: operatorName) else { throw ValidationError("not a valid operator name") }
    }

    func run() async throws {
        let started = ContinuousClock.now
        let store: any CountersignStore
        var size: () async -> String
        if let database {
            let postgres = try PostgresStore(
                url: database, logger: Logger(label: "console-fill"), maximumConnections: max(2, min(writers, 64) + 1))
            try await postgres.migrate()
            guard try await postgres.apiKeys().isEmpty else {
                await postgres.close()
                throw ValidationError("the database holds API keys: fill an empty one")
            }
            store = postgres
            size = { "" }
        } else {
            let dataDir = dataDir ?? ""
            let path = (dataDir as NSString).appendingPathComponent("countersign.sqlite")
            guard !FileManager.default.fileExists(atPath: path) else {
                throw ValidationError("\(path) exists: fill a new data directory")
            }
            try FileManager.default.createDirectory(
                atPath: dataDir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            store = try SQLiteStore(path: path, durability: durability)
            size = {
                let bytes = ["", "-wal"].compactMap {
                    (try? FileManager.default.attributesOfItem(atPath: path + $0))?[.size] as? Int
                }.reduce(0, +)
                return String(format: ": %.1f MB", Double(bytes) / 1_048_576)
            }
        }
        var filler = HistoryFiller(options: self, store: store)
        try await filler.fill()
        let secret = try await filler.signIn(secret: sessionSecret ?? SecretToken.generate(bytes: 32))
        let total = ContinuousClock.now - started
        print(String(format: "filled %@ in %.1f s", dataDir ?? "the database", total.seconds) + (await size()))
        if let postgres = store as? PostgresStore { await postgres.close() }
        print("operator \(operatorName), session cookie secret \(secret), valid for a day from 127.0.0.1")
        print(
            "run: countersign-bench console --broker http://127.0.0.1:PORT --session-secret \(secret)"
                + " --users \(users)")
    }
}

extension SQLiteStore.Durability: ExpressibleByArgument {}
