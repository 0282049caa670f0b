import Foundation

/// A throwaway OpenLDAP server (Debian's slapd, Tests/Fixtures/ldap): the
/// directory of alice, bob, carol (disabled by ppolicy's administrative
/// lock) and dave, alice and bob in cn=vpn-users, read by a bind user
/// over LDAPS or StartTLS.
struct SlapdProcess {
    let directory: URL

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/ldap")

    static func start() async throws -> SlapdProcess {
        let directory = try temporaryDirectory("slapd")
        let start = try RunningProcess(fixtures.appendingPathComponent("start-slapd.sh").path, [directory.path])
        guard try await start.exitCode(timeout: .seconds(120)) == 0 else {
            throw ProcessFailure("start-slapd.sh failed: \(start.text)")
        }
        return SlapdProcess(directory: directory)
    }

    func file(_ name: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    var ldapsURI: String { get throws { "ldaps://127.0.0.1:\(try file("ldaps-port"))" } }
    var ldapURI: String { get throws { "ldap://127.0.0.1:\(try file("ldap-port"))" } }

    /// A directory settings file for this server, read over LDAPS with
    /// the fixture's CA; `changes` replace settings of the same name or
    /// add others.
    func settings(_ changes: KeyValuePairs<String, String> = [:]) throws -> String {
        var lines: [(String, String)] = [
            ("kind", "openldap"), ("uri", try ldapsURI),
            ("ca-file", directory.appendingPathComponent("tls/ca.pem").path),
            ("bind-dn", "cn=countersign,ou=services,dc=example,dc=org"),
            ("bind-password-file", directory.appendingPathComponent("bind-password").path),
            ("base-dn", "ou=people,dc=example,dc=org"),
        ]
        for (name, value) in changes {
            if let index = lines.firstIndex(where: { $0.0 == name }) {
                lines[index].1 = value
            } else {
                lines.append((name, value))
            }
        }
        let path = directory.appendingPathComponent("directory-\(UUID().uuidString.prefix(8)).conf")
        try lines.map { "\($0.0) = \($0.1)" }.joined(separator: "\n").write(to: path, atomically: true, encoding: .utf8)
        return path.path
    }

    /// Changes the directory as its administrator (LDIF, as ldapmodify reads it).
    func modify(_ ldif: String) async throws {
        let change = try RunningProcess(
            Self.fixtures.appendingPathComponent("ldapmodify.sh").path, [directory.path], stdin: ldif)
        guard try await change.exitCode(timeout: .seconds(60)) == 0 else {
            throw ProcessFailure("ldapmodify failed: \(change.text)")
        }
    }

    /// Stops the server (the script runs on; the test need not wait).
    func stop() {
        guard
            let stopping = try? RunningProcess(
                Self.fixtures.appendingPathComponent("stop-slapd.sh").path, [directory.path])
        else { return }
        // Kept until it exits: a RunningProcess let go of terminates its
        // process, which ended the script before it had stopped slapd (one
        // slapd left running per directory test).
        Thread.detachNewThread { stopping.process.waitUntilExit() }
    }
}
