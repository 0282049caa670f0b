import ArgumentParser
import CountersignClient
import CountersignCore
import Foundation

/// Which broker, app and user a command is about, and where keys live.
///
/// Flags come first, then environment variables, then what the config
/// directory holds: on a machine enrolled for one account, no flag is
/// needed.
struct AccountOptions: ParsableArguments {
    @Option(help: "The broker's URL, e.g. http://127.0.0.1:8080 (env COUNTERSIGN_BROKER).")
    var broker: String?

    @Option(name: .customLong("api-key"), help: "The app's API key id (env COUNTERSIGN_API_KEY).")
    var apiKey: String?

    @Option(help: "The app's user id (env COUNTERSIGN_USER).")
    var user: String?

    @Option(
        name: .customLong("config-dir"),
        help: "Where this machine's device keys live (env COUNTERSIGN_AGENT_DIR; default ~/.config/countersign).")
    var configDirectory: String?

    func validate() throws {
        if let broker = resolvedBroker { try Self.checkBrokerURL(broker) }
    }

    /// Refuses a broker URL the agent could not use, saying how to write it.
    static func checkBrokerURL(_ text: String) throws {
        guard let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty
        else {
            let example = text.contains("://") ? "http://127.0.0.1:8080" : "http://\(text)"
            throw ValidationError("the broker URL needs http:// or https:// and a host, e.g. \(example)")
        }
        guard url.query == nil, url.fragment == nil, url.user == nil else {
            throw ValidationError("the broker URL is its scheme, host and port only, e.g. \(scheme)://\(host)")
        }
    }

    var credentials: CredentialStore {
        CredentialStore(
            directory: configDirectory.map { URL(fileURLWithPath: $0) } ?? CredentialStore.defaultDirectory())
    }

    var resolvedBroker: String? { broker ?? Self.environment("COUNTERSIGN_BROKER") }
    var resolvedAPIKey: String? { apiKey ?? Self.environment("COUNTERSIGN_API_KEY") }
    var resolvedUser: String? { user ?? Self.environment("COUNTERSIGN_USER") }

    /// Broker, API key and user: as given, the rest from the one enrolled
    /// account they select, if there is one.
    func account() throws -> (broker: String, apiKey: String, user: String) {
        if let broker = resolvedBroker, let apiKey = resolvedAPIKey, let user = resolvedUser {
            return (broker, apiKey, user)
        }
        let stored = try credentials.matching(broker: resolvedBroker, apiKeyID: resolvedAPIKey, user: resolvedUser)
        guard !stored.isEmpty else {
            let missing = [
                resolvedBroker == nil ? "--broker URL" : nil, resolvedAPIKey == nil ? "--api-key ID" : nil,
                resolvedUser == nil ? "--user ID" : nil,
            ].compactMap { $0 }
            throw usageFailure(
                "give \(missing.joined(separator: ", ")): no enrolled account in \(credentials.directory.path) "
                    + "says which\(configDirectory == nil ? " (or give --config-dir)" : "")")
        }
        let account = try choose(among: stored)
        return (account.broker, account.apiKeyID, account.clientUserID)
    }

    /// The key of the one enrolled account the options select, opened with
    /// its PIN if it has one.
    func enrolledCredential() throws -> DeviceCredential {
        let account = try enrolledAccount()
        return try credentials.unlock(account, pin: Prompt.pin(for: account))
    }

    /// The one enrolled account the options select, its key not opened.
    func enrolledAccount() throws -> StoredAccount {
        let found = try credentials.matching(broker: resolvedBroker, apiKeyID: resolvedAPIKey, user: resolvedUser)
        guard !found.isEmpty else {
            let whose = resolvedUser.map { "of \($0) " } ?? ""
            throw AgentFailure(
                "this machine is not a trusted device \(whose)(no key for it in \(credentials.directory.path)); "
                    + "run device-agent enroll\(configDirectory == nil ? ", or give --config-dir" : "")")
        }
        return try choose(among: found)
    }

    /// One of several enrolled accounts: asked for on a terminal, else an
    /// error that names them.
    private func choose(among accounts: [StoredAccount]) throws -> StoredAccount {
        if accounts.count == 1 { return accounts[0] }
        let names = accounts.map { "\($0.clientUserID) (app \($0.apiKeyID) on \($0.broker))" }
        guard Console.isInteractive else {
            throw AgentFailure(
                "this machine is a trusted device of several accounts: \(names.joined(separator: ", ")); "
                    + "choose one with --user (and --api-key or --broker if a user id is in more than one)")
        }
        print("This machine is a trusted device of several accounts:")
        for (index, name) in names.enumerated() { print("  \(index + 1)) \(shown(name))") }
        while true {
            guard let reply = Prompt.line("Which one? [1-\(accounts.count)] ") else {
                throw AgentFailure("no account chosen; give --user")
            }
            if let number = Int(reply), accounts.indices.contains(number - 1) { return accounts[number - 1] }
            print("Type a number from 1 to \(accounts.count).")
        }
    }

    private static func environment(_ name: String) -> String? {
        ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }
}

/// A command line that cannot work, found while running: said in one line,
/// and exit code 64, as for the ones ArgumentParser finds (whose usage
/// line would name the wrong command here).
func usageFailure(_ message: String) -> ExitCode {
    FileHandle.standardError.write(Data("Error: \(message)\n".utf8))
    return .validationFailure
}

/// A failure the agent reports in one line and a non-zero exit.
struct AgentFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Lines for people: on standard output, or standard error when standard
/// output carries JSON.
struct Console {
    var toStandardError = false

    func say(_ line: String) {
        if toStandardError {
            FileHandle.standardError.write(Data((line + "\n").utf8))
        } else {
            print(line)
            flushOutput()
        }
    }

    static var isInteractive: Bool { isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 }
}

extension JSONEncoder {
    static var pretty: JSONEncoder {
        let encoder = WireCoding.encoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
