public import CountersignCore
public import CountersignStore
public import Foundation
import Logging
import ServiceLifecycle

/// One read of the directory and what it changed.
public struct DirectorySyncReport: Sendable, Equatable {
    public var at: Date
    /// The people listed; the entries skipped for having no user id or
    /// several; the user ids more than one entry gave (left as they were).
    public var listed: Int
    public var skipped: [String]
    public var clashing: [String]
    /// The people whose record was written.
    public var written: Int
    /// Who stopped being `active`, who is again, and their devices.
    public var suspended: [String]
    public var reinstated: [String]
    public var devicesSuspended: Int
    public var devicesReinstated: Int
}

/// Reads the directory the settings name and applies it: each person
/// through the store's directory updater, decided by ``DirectorySync``.
/// Nothing is written when the read fails or the plan is refused.
public struct DirectorySyncRun: Sendable {
    public let settings: DirectorySettings
    public let store: any CountersignStore
    public let now: @Sendable () -> Date

    public init(settings: DirectorySettings, store: any CountersignStore, now: @escaping @Sendable () -> Date) {
        self.settings = settings
        self.store = store
        self.now = now
    }

    /// The bind password: the file's text, its final line break taken off.
    func password() throws -> String {
        guard let data = FileManager.default.contents(atPath: settings.bindPasswordFile) else {
            throw LDAPDirectory.Failure(
                step: "", code: -1,
                detail:
                    "cannot read bind-password-file \(settings.bindPasswordFile) (missing, or not readable by this user)"
            )
        }
        var text = String(decoding: data, as: UTF8.self)
        while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
        return text
    }

    /// Reads and applies the directory; `force` goes past
    /// `max-suspensions`, `dryRun` writes nothing and says what would
    /// change.
    public func run(force: Bool = false, dryRun: Bool = false) async throws -> DirectorySyncReport {
        let entries = try await LDAPDirectory(settings: settings, password: try password()).entries()
        let at = now()
        let plan = try DirectorySync.plan(
            kept: try await store.directoryPeople(), entries: entries, acting: try await actingUsers(),
            settings: settings, now: at, force: force)
        var report = DirectorySyncReport(
            at: at, listed: plan.listed, skipped: plan.skipped, clashing: plan.clashing,
            written: dryRun ? 0 : plan.people.count, suspended: plan.suspending, reinstated: plan.reinstating,
            devicesSuspended: 0, devicesReinstated: 0)
        guard !dryRun else { return report }
        // As written: who was suspended or reinstated is what each person's
        // updater audited (a person first read disabled, with devices here,
        // too).
        (report.suspended, report.reinstated) = ([], [])
        for (index, person) in plan.people.enumerated() {
            let change: DirectoryUserChange
            do {
                change = try await store.updateDirectoryPerson(clientUserID: person.clientUserID) { state in
                    DirectorySync.change(state, to: person, now: at)
                }
            } catch {
                throw PartlyApplied(written: index, of: plan.people.count, error: error)
            }
            if change.suspendedAt == nil {
                report.devicesReinstated += change.devices.count
            } else {
                report.devicesSuspended += change.devices.count
            }
            switch change.audit?.action {
            case .userSuspended: report.suspended.append(person.clientUserID)
            case .userReinstated: report.reinstated.append(person.clientUserID)
            default: break
            }
        }
        return report
    }

    /// The user ids with a device that can act (not removed; none is
    /// suspended before the directory first lists its person).
    func actingUsers() async throws -> Set<String> {
        var ids: Set<String> = []
        var after: String? = nil
        while true {
            let page = try await store.users(prefix: "", after: after, limit: 1000)
            ids.formUnion(page.filter { $0.activeDevices > 0 }.map(\.clientUserID))
            guard page.count == 1000, let last = page.last?.clientUserID else { return ids }
            after = last
        }
    }

    /// A write that failed after others were made: those stand (each
    /// person is written alone), and the next read writes the rest.
    public struct PartlyApplied: Error, CustomStringConvertible {
        public let written: Int
        public let of: Int
        public let error: any Error

        public var description: String {
            "directory sync stopped after writing \(written) of \(of) people (the next read writes the rest): \(error)"
        }
    }
}

/// Reads the directory when `serve` starts and then every `interval`,
/// until shutdown. A failed read changes nothing and is tried again at
/// the next turn.
struct DirectorySyncService: Service {
    let sync: DirectorySyncRun
    let metrics: BrokerMetrics
    let logger: Logger

    func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            do {
                let report = try await sync.run()
                var metadata: Logger.Metadata = [
                    "listed": "\(report.listed)", "written": "\(report.written)",
                    "suspended": "\(report.suspended.count)", "reinstated": "\(report.reinstated.count)",
                ]
                if !report.skipped.isEmpty { metadata["skipped"] = "\(report.skipped.count)" }
                if !report.clashing.isEmpty { metadata["clashing"] = "\(report.clashing.joined(separator: ","))" }
                logger.info("directory read", metadata: metadata)
                metrics.directoryApplied(at: report.at)
            } catch let partly as DirectorySyncRun.PartlyApplied {
                metrics.directoryFailed()
                logger.error("directory sync stopped part way", metadata: ["error": "\(partly)"])
            } catch {
                metrics.directoryFailed()
                logger.error("directory sync failed: nothing changed", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(sync.settings.interval)) }
        }
    }
}
