import CountersignCore
import Foundation

/// The PAM helper's configuration file (`/etc/countersign/pam.conf`):
/// `name = value` lines, `#` comments. Its secret (or the file it names)
/// must be readable by its owner only.
struct PAMSettings: Equatable {
    enum FailMode: String { case secure, safe }
    enum Unenrolled: String { case deny, skip }
    enum Switch: String { case on, off }
    enum AfterRefusal: String { case end, retry }

    var broker: String
    var apiKeyID: String
    var apiSecret: String
    /// How a Unix user name becomes the app's user id: `%u` is the name.
    var userFormat = "%u"
    /// What happens when the broker cannot be reached: `secure` denies,
    /// `safe` lets the user in (and says so in the log).
    var failMode = FailMode.secure
    /// A user with no trusted device: denied, or left to the next module.
    var unenrolled = Unenrolled.deny
    /// Whether a login from a remote address counts against the requester
    /// limits of that address and of the user (and stops while the user's
    /// "this wasn't me" holds). Off for a host whose logins all come
    /// through one address (a bastion, a NAT) and would share its budget.
    var clientLimits = Switch.on
    /// After a refusal on the device or a "this wasn't me": `end` tells the
    /// program that asked (sshd) that no further try may follow in the same
    /// connection (PAM_MAXTRIES), `retry` leaves it to the program's own
    /// count of tries.
    var afterRefusal = AfterRefusal.end

    struct Problem: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// The app's user id for a Unix user.
    func userID(for unixUser: String) -> String { userFormat.replacingOccurrences(of: "%u", with: unixUser) }

    static func load(path: String) throws -> PAMSettings {
        let file: SettingsFile
        do {
            file = try SettingsFile(text: try readPrivate(path, what: "the configuration"), path: path)
        } catch let problem as SettingsFile.Problem {
            throw Problem(problem.description)
        }
        if let repeated = file.firstRepeated() {
            throw Problem("\(path):\(repeated.line): \(repeated.name) is set twice")
        }
        let known: Set = [
            "broker", "api_key_id", "api_secret_key", "api_secret_key_file", "user", "fail_mode", "unenrolled",
            "client_limits", "after_refusal",
        ]
        if let unknown = file.firstUnknown(among: known) {
            throw Problem("\(path):\(unknown.line): unknown setting \(unknown.name)")
        }
        let values = Dictionary(uniqueKeysWithValues: file.entries.map { ($0.name, $0.value) })
        func require(_ name: String) throws -> String {
            guard let value = values[name], !value.isEmpty else { throw Problem("\(path): \(name) is missing") }
            return value
        }
        let secret: String
        switch (values["api_secret_key"], values["api_secret_key_file"]) {
        case (let value?, nil): secret = value
        case (nil, let file?):
            secret = try readPrivate(file, what: "the secret key file").trimmingCharacters(in: .whitespacesAndNewlines)
        default: throw Problem("\(path): set one of api_secret_key and api_secret_key_file")
        }
        guard !secret.isEmpty else { throw Problem("\(path): the API secret key is empty") }
        var settings = PAMSettings(
            broker: try require("broker"), apiKeyID: try require("api_key_id"), apiSecret: secret)
        if let user = values["user"] {
            guard user.contains("%u") else { throw Problem("\(path): user must contain %u (the Unix user name)") }
            settings.userFormat = user
        }
        if let mode = values["fail_mode"] {
            guard let failMode = FailMode(rawValue: mode) else { throw Problem("\(path): fail_mode is secure or safe") }
            settings.failMode = failMode
        }
        if let unenrolled = values["unenrolled"] {
            guard let value = Unenrolled(rawValue: unenrolled) else {
                throw Problem("\(path): unenrolled is deny or skip")
            }
            settings.unenrolled = value
        }
        if let limits = values["client_limits"] {
            guard let value = Switch(rawValue: limits) else { throw Problem("\(path): client_limits is on or off") }
            settings.clientLimits = value
        }
        if let after = values["after_refusal"] {
            guard let value = AfterRefusal(rawValue: after) else {
                throw Problem("\(path): after_refusal is end or retry")
            }
            settings.afterRefusal = value
        }
        guard let url = URLComponents(string: settings.broker), ["http", "https"].contains(url.scheme ?? "") else {
            throw Problem("\(path): broker must be an http(s) URL")
        }
        return settings
    }

    /// A file that holds a secret: refused if its group or others may read
    /// or write it, if someone else than root (or the helper's user) owns
    /// it, or if it is not a regular file.
    static func readPrivate(_ path: String, what: String) throws -> String {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            throw Problem("cannot read \(what) \(path)")
        }
        guard attributes[.type] as? FileAttributeType == .typeRegular else {
            throw Problem("\(what) \(path) is not a regular file")
        }
        // Whoever may edit it decides where logins are approved.
        let owner = (attributes[.ownerAccountID] as? NSNumber)?.uint32Value
        guard owner == 0 || owner == geteuid() else {
            throw Problem("\(what) \(path) must belong to root")
        }
        let mode = (attributes[.posixPermissions] as? Int) ?? 0o777
        guard mode & 0o077 == 0 else {
            throw Problem(
                "\(what) \(path) holds a secret and others can read it (mode \(String(mode, radix: 8))); "
                    + "chmod 600 it")
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw Problem("cannot read \(what) \(path)")
        }
        return text
    }
}
