public import Foundation

/// Where the broker reads its people from: an LDAP directory (OpenLDAP,
/// Active Directory, FreeIPA), read with a bind user over LDAPS or
/// StartTLS. Written as a settings file (`name = value`, see
/// docs/directory.md); each kind presets the attributes and the rule that
/// says a person is disabled.
public struct DirectorySettings: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case openLDAP = "openldap"
        case activeDirectory = "active-directory"
        case freeIPA = "freeipa"
    }

    public var kind: Kind
    /// One or more `ldaps://` or `ldap://` URIs, tried in order.
    public var uris: [String]
    /// StartTLS on `ldap://` URIs; required for them (no plain binds).
    public var startTLS: Bool
    /// The CA certificates (PEM) the server's certificate is checked
    /// against; nil: the system's.
    public var caFile: String?
    public var bindDN: String
    /// The file holding the bind user's password (a final newline is
    /// ignored), so that it is in no command line and no settings file.
    public var bindPasswordFile: String
    /// Where the people are, searched with `filter` below it.
    public var baseDN: String
    public var filter: String
    /// The attribute that is the user id in every app (`uid`,
    /// `sAMAccountName`).
    public var userIDAttribute: String
    /// The attributes that name a person, the first one present wins.
    public var nameAttributes: [String]
    public var emailAttribute: String
    /// The attribute that lists a person's groups (DNs).
    public var groupsAttribute: String
    /// Only groups below this DN are kept (FreeIPA's `memberOf` also
    /// lists roles and rules); nil keeps every group.
    public var groupsBaseDN: String?
    /// How often `serve` reads the directory.
    public var interval: TimeInterval
    /// Entries per page (the paged results control).
    public var pageSize: Int
    /// How long to wait for the server: to connect, and for each answer.
    public var timeout: TimeInterval
    /// The most people one scheduled read may newly suspend; more stops
    /// the run with nothing changed (a wrong filter or an ACL that hides
    /// people must not suspend a company). `directory sync --force`
    /// goes past it.
    public var maxSuspensions: Int

    /// The names a settings file may hold.
    public static let names: Set<String> = [
        "kind", "uri", "start-tls", "ca-file", "bind-dn", "bind-password-file", "base-dn", "filter",
        "user-id-attribute", "name-attributes", "email-attribute", "groups-attribute", "groups-base-dn",
        "interval", "page-size", "timeout", "max-suspensions",
    ]

    /// The settings of `file`: a `Problem` naming the line for anything
    /// missing, unknown or unreadable.
    public init(_ file: SettingsFile) throws(SettingsFile.Problem) {
        if let unknown = file.firstUnknown(among: Self.names) {
            throw SettingsFile.Problem("\(file.path):\(unknown.line): \(unknown.name) is not a directory setting")
        }
        if let repeated = file.firstRepeated() {
            throw SettingsFile.Problem("\(file.path):\(repeated.line): \(repeated.name) is set twice")
        }
        func problem(_ name: String, _ text: String) -> SettingsFile.Problem {
            let line = file.entries.last { $0.name == name }?.line
            return SettingsFile.Problem("\(file.path)\(line.map { ":\($0)" } ?? ""): \(text)")
        }
        func required(_ name: String) throws(SettingsFile.Problem) -> String {
            guard let value = file[name], !value.isEmpty else { throw problem(name, "\(name) is required") }
            return value
        }
        guard let kind = Kind(rawValue: try required("kind")) else {
            throw problem("kind", "kind must be " + Kind.allCases.map(\.rawValue).joined(separator: ", "))
        }
        self.kind = kind
        uris = try required("uri").split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        let plain = uris.filter { $0.lowercased().hasPrefix("ldap://") }
        guard uris.allSatisfy({ $0.lowercased().hasPrefix("ldaps://") || $0.lowercased().hasPrefix("ldap://") })
        else { throw problem("uri", "uri must be ldaps:// or ldap:// (with start-tls = true)") }
        switch file["start-tls"] ?? "false" {
        case "true": startTLS = true
        case "false": startTLS = false
        default: throw problem("start-tls", "start-tls is true or false")
        }
        guard plain.isEmpty || startTLS else {
            throw problem("uri", "\(plain[0]) sends the bind password in the clear: use ldaps:// or start-tls = true")
        }
        guard !(startTLS && plain.count != uris.count) else {
            throw problem("start-tls", "start-tls is for ldap:// URIs; ldaps:// is TLS already")
        }
        caFile = file["ca-file"].flatMap { $0.isEmpty ? nil : $0 }
        bindDN = try required("bind-dn")
        bindPasswordFile = try required("bind-password-file")
        baseDN = try required("base-dn")
        let preset = Self.preset(kind)
        filter = file["filter"] ?? preset.filter
        guard filter.hasPrefix("("), filter.hasSuffix(")") else {
            throw problem("filter", "filter must be an LDAP filter in parentheses, e.g. \(preset.filter)")
        }
        userIDAttribute = file["user-id-attribute"] ?? preset.userID
        nameAttributes =
            file["name-attributes"].map { $0.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init) }
            ?? ["displayName", "cn"]
        emailAttribute = file["email-attribute"] ?? "mail"
        groupsAttribute = file["groups-attribute"] ?? "memberOf"
        groupsBaseDN = file["groups-base-dn"].flatMap { $0.isEmpty ? nil : $0 }
        for (name, value) in [
            ("user-id-attribute", userIDAttribute), ("email-attribute", emailAttribute),
            ("groups-attribute", groupsAttribute),
        ] + nameAttributes.map({ ("name-attributes", $0) }) where !Self.isAttributeName(value) {
            throw problem(name, "\(value) is not an attribute name")
        }
        func number(_ name: String, _ fallback: Int, _ range: ClosedRange<Int>) throws(SettingsFile.Problem) -> Int {
            guard let text = file[name] else { return fallback }
            guard let value = Int(text), range.contains(value) else {
                throw problem(name, "\(name) is a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return value
        }
        guard let interval = SettingsFile.seconds(file["interval"] ?? "15m"), interval >= 60, interval <= 86_400 else {
            throw problem("interval", "interval is a time from 1m to 24h, e.g. 15m")
        }
        self.interval = interval
        guard let timeout = SettingsFile.seconds(file["timeout"] ?? "10s"), timeout >= 1, timeout <= 300 else {
            throw problem("timeout", "timeout is a time from 1s to 5m, e.g. 10s")
        }
        self.timeout = timeout
        pageSize = try number("page-size", 500, 1...1000)
        maxSuspensions = try number("max-suspensions", 25, 0...1_000_000)
    }

    /// The files the settings name that a read needs, by setting.
    public var files: [(setting: String, path: String)] {
        [("bind-password-file", bindPasswordFile)] + (caFile.map { [("ca-file", $0)] } ?? [])
    }

    /// The settings in the file at `path`.
    public static func file(_ path: String) throws(SettingsFile.Problem) -> DirectorySettings {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SettingsFile.Problem("cannot read the directory settings \(path)")
        }
        return try DirectorySettings(try SettingsFile(text: String(decoding: data, as: UTF8.self), path: path))
    }

    /// The attributes a search asks for: operational ones (`memberOf`,
    /// the lock markers) come back only when named.
    public var attributes: [String] {
        var names = [userIDAttribute] + nameAttributes + [emailAttribute, groupsAttribute]
        names += Self.preset(kind).disabledAttributes
        var seen = Set<String>()
        return names.filter { seen.insert($0.lowercased()).inserted }
    }

    static func isAttributeName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64
            && text.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-"
                    || $0 == "."
            }
    }

    struct Preset {
        let filter: String
        let userID: String
        let disabledAttributes: [String]
    }

    static func preset(_ kind: Kind) -> Preset {
        switch kind {
        case .openLDAP:
            Preset(filter: "(objectClass=inetOrgPerson)", userID: "uid", disabledAttributes: ["pwdAccountLockedTime"])
        case .activeDirectory:
            Preset(
                filter: "(&(objectCategory=person)(objectClass=user))", userID: "sAMAccountName",
                disabledAttributes: ["userAccountControl"])
        case .freeIPA:
            Preset(filter: "(objectClass=person)", userID: "uid", disabledAttributes: ["nsAccountLock"])
        }
    }
}
