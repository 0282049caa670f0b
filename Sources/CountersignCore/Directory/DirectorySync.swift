public import Foundation

/// What one read of the directory changes, decided before anything is
/// written: every person whose record or devices change.
public struct DirectoryPlan: Sendable, Equatable {
    /// The people to write (each through its own updater), as they are
    /// now: listed ones as read, kept ones no longer listed as `gone`.
    public var people: [DirectoryPerson]
    /// The people listed; the entries skipped for having no user id or
    /// several; the user ids two entries or more gave (those people are
    /// left as they were).
    public var listed: Int
    public var skipped: [String]
    public var clashing: [String]
    /// Who stops being `active` (or is first read not active, with a
    /// device that acts), and who is `active` again.
    public var suspending: [String]
    public var reinstating: [String]
}

/// The rules of a directory sync: pure, the same for every store.
public enum DirectorySync {
    public enum Refusal: Error, Equatable, CustomStringConvertible {
        /// The read listed nobody: a wrong base DN or filter, or a bind
        /// user that may read nothing, not a company that left.
        case nobodyListed
        /// More would be suspended than the settings allow in one run.
        case tooManySuspensions(Int, limit: Int)

        public var description: String {
            switch self {
            case .nobodyListed:
                "the directory listed nobody: nothing changed (check base-dn, filter and what the bind user may read)"
            case .tooManySuspensions(let count, let limit):
                "this read would suspend \(count) \(count == 1 ? "person" : "people"), more than max-suspensions "
                    + "(\(limit)): nothing changed; check the directory, then run "
                    + "`device-broker directory sync --directory FILE --force`"
            }
        }
    }

    /// The plan for `entries` read at `now`, the directory's people kept
    /// being `kept`, `acting` the user ids with a device that acts now.
    /// `force` goes past `settings.maxSuspensions`.
    public static func plan(
        kept: [DirectoryPerson], entries: [DirectoryEntry], acting: Set<String>, settings: DirectorySettings,
        now: Date, force: Bool = false
    ) throws(Refusal) -> DirectoryPlan {
        var read: [String: DirectoryPerson] = [:]
        var skipped: [String] = []
        var clashing: Set<String> = []
        for entry in entries {
            guard let person = entry.person(settings, now: now) else {
                skipped.append(entry.dn)
                continue
            }
            // Whoever else claims an id, nobody is decided by it: neither
            // entry is believed, and the person stays as they were.
            if read.removeValue(forKey: person.clientUserID) != nil || clashing.contains(person.clientUserID) {
                clashing.insert(person.clientUserID)
                continue
            }
            read[person.clientUserID] = person
        }
        guard !read.isEmpty else { throw .nobodyListed }
        let keptByID = Dictionary(kept.map { ($0.clientUserID, $0) }, uniquingKeysWith: { first, _ in first })
        var people: [DirectoryPerson] = []
        var suspending: [String] = []
        var reinstating: [String] = []
        for id in Set(read.keys).union(keptByID.keys).subtracting(clashing).sorted() {
            let before = keptByID[id]
            var after = read[id] ?? before!
            if read[id] == nil { after.state = .gone }
            after.changedAt = before.map { $0.state == after.state ? $0.changedAt : now } ?? now
            let wasActive = before.map { $0.state == .active } ?? acting.contains(id)
            if wasActive && after.state != .active { suspending.append(id) }
            if before != nil && !wasActive && after.state == .active { reinstating.append(id) }
            // Those not active are written on every read: a device enrolled
            // meanwhile is suspended too.
            if after != before || after.state != .active { people.append(after) }
        }
        if !force && suspending.count > settings.maxSuspensions {
            throw .tooManySuspensions(suspending.count, limit: settings.maxSuspensions)
        }
        return DirectoryPlan(
            people: people, listed: read.count, skipped: skipped, clashing: clashing.sorted(),
            suspending: suspending, reinstating: reinstating)
    }

    /// What the directory does to one person's devices: the updater's
    /// decider. Devices of a person who is not `active` are suspended,
    /// those of an `active` one reinstated; revoked ones are left alone.
    public static func change(_ state: DirectoryUserState, to person: DirectoryPerson, now: Date)
        -> DirectoryUserChange
    {
        let author = ChangeAuthor(actor: ChangeAuthor.directory, ip: "")
        let active = person.state == .active
        var person = person
        if let kept = state.person, kept.state == person.state { person.changedAt = kept.changedAt }
        let devices = state.devices.filter { $0.revokedAt == nil && ($0.suspendedAt != nil) == active }
        // A change of whether they may act is audited; a person first read
        // disabled only when they had devices here.
        let changed = state.person.map { ($0.state == .active) != active } ?? !active
        let audit =
            !changed || state.person == nil && devices.isEmpty
            ? nil
            : AuditRecord(
                at: now, actor: AuditRecord.directory, action: active ? .userReinstated : .userSuspended,
                target: person.clientUserID)
        return DirectoryUserChange(
            person: person, suspendedAt: active ? nil : now, devices: devices.map(\.id),
            changes: devices.map { DeviceChange(active ? .reinstated : .suspended, of: $0, by: author, at: now) },
            audit: audit)
    }
}

/// What a directory updater reads of one person, in its transaction.
public struct DirectoryUserState: Sendable, Equatable {
    /// Their record, nil before their first read.
    public var person: DirectoryPerson?
    /// Their devices in every app, revoked ones included.
    public var devices: [TrustedDevice]

    public init(person: DirectoryPerson?, devices: [TrustedDevice]) {
        self.person = person
        self.devices = devices
    }
}

/// What a directory updater writes: the person's record, `suspendedAt`
/// on `devices` (nil reinstates them), and the device log's lines (with
/// their `device.suspended` or `device.reinstated` webhooks).
public struct DirectoryUserChange: Sendable, Equatable {
    public var person: DirectoryPerson
    public var suspendedAt: Date?
    public var devices: [String]
    public var changes: [DeviceChange]
    /// The audit line of a person suspended or reinstated.
    public var audit: AuditRecord?
}
