import Foundation

/// A group the directory lists people in, as the console offers it for
/// invitations: by its DN, or by the value of its first RDN (`staff` for
/// `cn=staff,ou=groups,dc=example,dc=org`).
public struct DirectoryGroup: Sendable, Equatable {
    public var dn: String
    public var name: String
    /// How many of the people kept are in it (suspended ones too).
    public var members: Int

    public init(dn: String, name: String, members: Int) {
        self.dn = dn
        self.name = name
        self.members = members
    }

    /// The groups of `people`, by name then DN.
    public static func all(in people: [DirectoryPerson]) -> [DirectoryGroup] {
        var members: [String: (dn: String, count: Int)] = [:]
        for person in people {
            for dn in Set(person.groups.map(DirectoryEntry.normalized)) {
                let original = person.groups.first { DirectoryEntry.normalized($0) == dn } ?? dn
                members[dn, default: (original, 0)].count += 1
            }
        }
        return members.values.map { DirectoryGroup(dn: $0.dn, name: name(of: $0.dn), members: $0.count) }
            .sorted { ($0.name.lowercased(), $0.dn) < ($1.name.lowercased(), $1.dn) }
    }

    /// The value of a DN's first RDN (`cn=staff,…` → `staff`).
    public static func name(of dn: String) -> String {
        let first = dn.split(separator: ",").first.map(String.init) ?? dn
        let value = first.split(separator: "=", maxSplits: 1).last.map(String.init) ?? first
        return value.trimmingCharacters(in: .whitespaces)
    }

    /// Whether `selection` names a group with DN `dn`: the DN itself (any
    /// case, spaces around separators ignored) or its name (any case).
    public static func selects(_ selection: String, dn: String) -> Bool {
        let wanted = selection.trimmingCharacters(in: .whitespaces)
        if wanted.contains("=") { return DirectoryEntry.normalized(wanted) == DirectoryEntry.normalized(dn) }
        return name(of: dn).lowercased() == wanted.lowercased()
    }
}

extension DirectoryGroup {
    /// The groups of `people` that `selection` names: more than one when a
    /// name is given that groups in two branches share (pick by DN then).
    public static func named(_ selection: String, in people: [DirectoryPerson]) -> [DirectoryGroup] {
        all(in: people).filter { selects(selection, dn: $0.dn) }
    }
}

extension DirectoryPerson {
    /// Whether one of their groups is the one `selection` names.
    public func isMember(of selection: String) -> Bool {
        groups.contains { DirectoryGroup.selects(selection, dn: $0) }
    }
}
