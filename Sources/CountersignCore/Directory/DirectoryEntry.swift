public import Foundation

/// A person as the directory lists them in one read: their entry's
/// attributes, decided into what the broker keeps.
public struct DirectoryEntry: Sendable, Equatable {
    public var dn: String
    /// The values of each attribute asked for, by name as the settings
    /// spell it (LDAP attribute names are compared without case).
    public var attributes: [String: [String]]

    public init(dn: String, attributes: [String: [String]]) {
        self.dn = dn
        self.attributes = attributes
    }

    /// The values of `name`, whatever its case in the entry.
    public func values(_ name: String) -> [String] {
        if let exact = attributes[name] { return exact }
        return attributes.first { $0.key.lowercased() == name.lowercased() }?.value ?? []
    }

    /// The person this entry says, by `settings`; nil unless it has
    /// exactly one user id (the entry is then skipped, and said so: which
    /// of several the server lists first is not defined).
    public func person(_ settings: DirectorySettings, now: Date) -> DirectoryPerson? {
        let ids = values(settings.userIDAttribute)
        guard ids.count == 1, let id = ids.first, !id.isEmpty else { return nil }
        let name = settings.nameAttributes.lazy.compactMap { values($0).first }.first { !$0.isEmpty }
        var groups = values(settings.groupsAttribute)
        if let base = settings.groupsBaseDN.map(DirectoryEntry.normalized) {
            groups = groups.filter { DirectoryEntry.normalized($0).hasSuffix("," + base) }
        }
        return DirectoryPerson(
            clientUserID: id, dn: dn, name: name, email: values(settings.emailAttribute).first,
            groups: groups.sorted(), state: isDisabled(settings.kind) ? .disabled : .active, changedAt: now)
    }

    /// Whether the entry says the person may not sign in, as each kind of
    /// directory marks it. A temporary lockout after wrong passwords is
    /// not a disabled account: anyone could suspend a person by guessing.
    public func isDisabled(_ kind: DirectorySettings.Kind) -> Bool {
        switch kind {
        case .openLDAP:
            // ppolicy's administrative lock: "locked until an administrator
            // unlocks". A real time is a lockout that ends by itself.
            values("pwdAccountLockedTime").contains("000001010000Z")
        case .activeDirectory:
            // ACCOUNTDISABLE (0x2) of userAccountControl.
            values("userAccountControl").contains { (Int($0) ?? 0) & 0x2 != 0 }
        case .freeIPA:
            values("nsAccountLock").contains { $0.lowercased() == "true" }
        }
    }

    /// A DN compared without case and spaces around its separators
    /// (Active Directory answers `CN=…,DC=…`).
    public static func normalized(_ dn: String) -> String {
        dn.split(separator: ",").map {
            $0.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                .joined(separator: "=")
        }.joined(separator: ",").lowercased()
    }
}

/// A person the broker knows from the directory: kept after they leave
/// it (nothing is deleted), their devices suspended while they are not
/// `active`.
public struct DirectoryPerson: Sendable, Equatable {
    public enum State: String, Sendable, CaseIterable, Codable {
        /// Listed, and enabled: their devices act.
        case active
        /// Listed, and disabled there: their devices are suspended.
        case disabled
        /// No longer listed: their devices are suspended.
        case gone
    }

    /// Whether no device may be added for a person: the directory lists
    /// them, and not as enabled. Someone it does not list may have
    /// devices (apps keep users of their own).
    public static func refusesDevices(_ person: DirectoryPerson?) -> Bool {
        person.map { $0.state != .active } ?? false
    }

    /// Their user id in every app.
    public var clientUserID: String
    public var dn: String
    public var name: String?
    public var email: String?
    /// The DNs of their groups, sorted.
    public var groups: [String]
    public var state: State
    /// When `state` last changed (or they were first read).
    public var changedAt: Date

    public init(
        clientUserID: String, dn: String, name: String?, email: String?, groups: [String], state: State,
        changedAt: Date
    ) {
        self.clientUserID = clientUserID
        self.dn = dn
        self.name = name
        self.email = email
        self.groups = groups
        self.state = state
        self.changedAt = changedAt
    }
}
