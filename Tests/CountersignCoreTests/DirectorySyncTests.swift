import CountersignCore
import Crypto
import Foundation
import Testing

@Suite("directory sync: settings, entries and the rules that suspend")
struct DirectorySyncTests {
    static let base = """
        kind = openldap
        uri = ldaps://ldap.example.org
        bind-dn = cn=countersign,ou=services,dc=example,dc=org
        bind-password-file = /etc/countersign/directory.password
        base-dn = ou=people,dc=example,dc=org
        """

    static func settings(_ extra: String = "", base: String = base) throws(SettingsFile.Problem) -> DirectorySettings {
        try DirectorySettings(try SettingsFile(text: base + "\n" + extra, path: "directory.conf"))
    }

    static func problem(_ extra: String, base: String = base) -> String? {
        do {
            _ = try settings(extra, base: base)
            return nil
        } catch {
            return error.description
        }
    }

    @Test("a kind presets the filter, the user id and the lock attributes; each setting is checked, with its line")
    func settingsFile() throws {
        let openLDAP = try Self.settings()
        #expect(openLDAP.filter == "(objectClass=inetOrgPerson)" && openLDAP.userIDAttribute == "uid")
        #expect(openLDAP.interval == 900 && openLDAP.pageSize == 500 && openLDAP.maxSuspensions == 25)
        #expect(openLDAP.attributes == ["uid", "displayName", "cn", "mail", "memberOf", "pwdAccountLockedTime"])
        let ad = try Self.settings(base: Self.base.replacingOccurrences(of: "openldap", with: "active-directory"))
        #expect(ad.filter == "(&(objectCategory=person)(objectClass=user))" && ad.userIDAttribute == "sAMAccountName")
        #expect(ad.attributes.last == "userAccountControl")
        let custom = try Self.settings("interval = 1h\nuser-id-attribute = mail\npage-size = 1000\nstart-tls = false")
        #expect(custom.interval == 3600 && custom.userIDAttribute == "mail" && custom.pageSize == 1000)

        #expect(
            Self.problem("", base: Self.base.replacingOccurrences(of: "openldap", with: "novell"))?.contains(
                "directory.conf:1: kind must be openldap, active-directory, freeipa") == true)
        #expect(
            Self.problem("", base: Self.base.replacingOccurrences(of: "ldaps://", with: "ldap://"))?.contains(
                "sends the bind password in the clear") == true)
        #expect(
            Self.problem("start-tls = true")?.contains("start-tls is for ldap:// URIs") == true,
            "StartTLS on ldaps:// is refused")
        #expect(
            Self.problem("start-tls = true", base: Self.base.replacingOccurrences(of: "ldaps://", with: "ldap://"))
                == nil)
        #expect(
            Self.problem("", base: Self.base.replacingOccurrences(of: "ldaps://", with: "http://"))?.contains(
                "uri must be ldaps://") == true)
        #expect(Self.problem("colour = blue") == "directory.conf:6: colour is not a directory setting")
        #expect(Self.problem("base-dn = o=other")?.contains("base-dn is set twice") == true)
        #expect(
            Self.problem("", base: Self.base.replacingOccurrences(of: "bind-dn", with: "# bind-dn"))
                == "directory.conf: bind-dn is required")
        #expect(Self.problem("filter = objectClass=person")?.contains("filter must be an LDAP filter") == true)
        #expect(Self.problem("interval = 10s")?.contains("interval is a time from 1m to 24h") == true)
        #expect(Self.problem("page-size = 0")?.contains("page-size is a whole number from 1 to 1000") == true)
        #expect(Self.problem("user-id-attribute = uid)(cn=*")?.contains("is not an attribute name") == true)
    }

    @Test("disabled as each kind marks it: a lockout after wrong passwords is not; the user id is required")
    func disabled() throws {
        func entry(_ attributes: [String: [String]]) -> DirectoryEntry {
            DirectoryEntry(
                dn: "uid=x,ou=people,dc=example,dc=org", attributes: ["uid": ["x"]].merging(attributes) { $1 })
        }
        #expect(entry(["pwdAccountLockedTime": ["000001010000Z"]]).isDisabled(.openLDAP))
        #expect(!entry(["pwdAccountLockedTime": ["20261128120000Z"]]).isDisabled(.openLDAP), "a lockout that ends")
        #expect(!entry([:]).isDisabled(.openLDAP))
        #expect(entry(["userAccountControl": ["514"]]).isDisabled(.activeDirectory))
        #expect(!entry(["userAccountControl": ["512"]]).isDisabled(.activeDirectory))
        #expect(!entry(["userAccountControl": ["528"]]).isDisabled(.activeDirectory), "LOCKOUT (0x10) is not disabled")
        #expect(entry(["nsAccountLock": ["TRUE"]]).isDisabled(.freeIPA))
        #expect(entry(["NSACCOUNTLOCK": ["true"]]).isDisabled(.freeIPA), "attribute names without case")
        #expect(!entry(["nsAccountLock": ["FALSE"]]).isDisabled(.freeIPA))

        var settings = try Self.settings("groups-base-dn = cn=groups, cn=accounts, dc=example,dc=org")
        settings.kind = .freeIPA
        let person = try #require(
            entry([
                "displayName": [""], "cn": ["X Person"], "mail": ["x@example.org"],
                "memberOf": [
                    "CN=admins,CN=Groups,CN=Accounts,DC=example,DC=org",
                    "cn=helpdesk,cn=roles,cn=accounts,dc=example,dc=org",
                ],
            ]).person(settings, now: Date(timeIntervalSince1970: 0)))
        #expect(person.name == "X Person", "the first name attribute that is not empty")
        #expect(person.groups == ["CN=admins,CN=Groups,CN=Accounts,DC=example,DC=org"], "groups below the base only")
        #expect(DirectoryEntry(dn: "cn=printer", attributes: [:]).person(settings, now: Date()) == nil)
    }

    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func entry(_ id: String, disabled: Bool = false) -> DirectoryEntry {
        DirectoryEntry(
            dn: "uid=\(id),ou=people,dc=example,dc=org",
            attributes: ["uid": [id], "cn": [id.capitalized]].merging(
                disabled ? ["pwdAccountLockedTime": ["000001010000Z"]] : [:]
            ) { $1 })
    }

    static func person(_ id: String, _ state: DirectoryPerson.State, at: Date = t0) -> DirectoryPerson {
        DirectoryPerson(
            clientUserID: id, dn: "uid=\(id),ou=people,dc=example,dc=org", name: id.capitalized, email: nil, groups: [],
            state: state, changedAt: at)
    }

    @Test("a plan writes what changed and everyone not active; refuses an empty read, a shared id, a mass suspension")
    func plan() throws {
        let settings = try Self.settings("max-suspensions = 1")
        let now = Self.t0 + 3600
        let kept = [
            Self.person("alice", .active), Self.person("bob", .active), Self.person("carol", .disabled),
            Self.person("dave", .active), Self.person("erin", .gone),
        ]
        let plan = try DirectorySync.plan(
            kept: kept,
            entries: [
                Self.entry("alice"), Self.entry("bob", disabled: true), Self.entry("carol"), Self.entry("erin"),
                Self.entry("frank", disabled: true), Self.entry("gina", disabled: true),
                DirectoryEntry(dn: "cn=printer", attributes: [:]),
                DirectoryEntry(dn: "cn=two", attributes: ["uid": ["x", "y"]]),
            ], acting: ["frank"], settings: settings, now: now, force: true)
        #expect(plan.listed == 6 && plan.skipped == ["cn=printer", "cn=two"])
        #expect(
            plan.suspending == ["bob", "dave", "frank"] && plan.reinstating == ["carol", "erin"],
            "frank is first read disabled, with a device that acts")
        #expect(
            plan.people.map(\.clientUserID) == ["bob", "carol", "dave", "erin", "frank", "gina"], "alice is unchanged")
        let dave = try #require(plan.people.first { $0.clientUserID == "dave" })
        #expect(dave.state == .gone && dave.changedAt == now && dave.name == "Dave", "kept as last read")

        // Someone not active is written on every read, changed or not.
        let again = try DirectorySync.plan(
            kept: plan.people + [Self.person("alice", .active)],
            entries: [Self.entry("alice"), Self.entry("bob", disabled: true), Self.entry("carol")], acting: [],
            settings: settings, now: now + 60)
        #expect(again.people.map(\.clientUserID) == ["bob", "dave", "erin", "frank", "gina"])
        #expect(again.suspending == ["erin"], "no longer listed")
        #expect(again.people.first?.changedAt == now, "the state's change is when it changed")

        #expect(throws: DirectorySync.Refusal.nobodyListed) {
            try DirectorySync.plan(kept: kept, entries: [], acting: [], settings: settings, now: now)
        }
        // An id two entries claim decides nothing: alice stays as she was.
        let clash = try DirectorySync.plan(
            kept: [Self.person("alice", .disabled)],
            entries: [
                Self.entry("alice"), DirectoryEntry(dn: "cn=a", attributes: ["uid": ["alice"]]),
                DirectoryEntry(dn: "cn=b", attributes: ["uid": ["alice"]]), Self.entry("bob"),
            ], acting: [], settings: settings, now: now)
        #expect(clash.clashing == ["alice"] && clash.people.map(\.clientUserID) == ["bob"] && clash.listed == 1)
        #expect(throws: DirectorySync.Refusal.tooManySuspensions(2, limit: 1)) {
            try DirectorySync.plan(
                kept: kept, entries: [Self.entry("alice"), Self.entry("bob", disabled: true)], acting: [],
                settings: settings, now: now)
        }
        #expect(throws: DirectorySync.Refusal.tooManySuspensions(2, limit: 1), "first reads count too") {
            try DirectorySync.plan(
                kept: [], entries: [Self.entry("alice", disabled: true), Self.entry("bob", disabled: true)],
                acting: ["alice", "bob"], settings: settings, now: now)
        }
    }

    @Test("a person's change suspends their acting devices or reinstates suspended ones; audited when it changes")
    func change() throws {
        func device(_ name: String, suspended: Bool = false, revoked: Bool = false) -> TrustedDevice {
            var device = TrustedDevice(
                publicKey: DevicePublicKey(P256.Signing.PrivateKey().publicKey), issuer: "ck_app", clientUserID: "bob",
                name: name,
                type: "cli", createdAt: Self.t0, revokedAt: revoked ? Self.t0 : nil)
            if suspended { device.suspendedAt = Self.t0 }
            return device
        }
        let devices = [device("laptop"), device("old", revoked: true), device("phone", suspended: true)]
        let now = Self.t0 + 60
        let suspend = DirectorySync.change(
            DirectoryUserState(person: Self.person("bob", .active), devices: devices),
            to: Self.person("bob", .disabled, at: now), now: now)
        #expect(suspend.suspendedAt == now && suspend.devices == [devices[0].id], "only the one that acts")
        #expect(suspend.changes.map(\.action) == [.suspended] && suspend.changes[0].author.actor == "directory")
        #expect(suspend.audit?.action == .userSuspended && suspend.audit?.target == "bob")

        let reinstate = DirectorySync.change(
            DirectoryUserState(person: Self.person("bob", .gone), devices: devices), to: Self.person("bob", .active),
            now: now)
        #expect(reinstate.suspendedAt == nil && reinstate.devices == [devices[2].id])
        #expect(reinstate.changes.map(\.action) == [.reinstated] && reinstate.audit?.action == .userReinstated)

        let stillGone = DirectorySync.change(
            DirectoryUserState(person: Self.person("bob", .disabled), devices: [device("new")]),
            to: Self.person("bob", .gone, at: now), now: now)
        #expect(stillGone.devices.count == 1 && stillGone.audit == nil, "a device enrolled meanwhile, no new line")
        #expect(stillGone.person.changedAt == now, "disabled to gone is a change of state")
        let firstRead = DirectorySync.change(
            DirectoryUserState(person: nil, devices: []), to: Self.person("bob", .disabled), now: now)
        #expect(firstRead.audit == nil && firstRead.devices.isEmpty, "first read disabled, with no device here")
    }
}
