import ArgumentParser
import CountersignClient
import CountersignCore
import Foundation

/// Which broker, app and user a command is about, and where keys live.
struct AccountOptions: ParsableArguments {
    @Option(help: "The broker's URL (env COUNTERSIGN_BROKER).")
    var broker: String?

    @Option(name: .customLong("api-key"), help: "The app's API key id (env COUNTERSIGN_API_KEY).")
    var apiKey: String?

    @Option(help: "The app's user id (env COUNTERSIGN_USER).")
    var user: String?

    @Option(
        name: .customLong("config-dir"),
        help: "Where this machine's device keys live (env COUNTERSIGN_AGENT_DIR; default ~/.config/countersign).")
    var configDirectory: String?

    var credentials: CredentialStore {
        CredentialStore(
            directory: configDirectory.map { URL(fileURLWithPath: $0) } ?? CredentialStore.defaultDirectory())
    }

    var resolvedBroker: String? { broker ?? Self.environment("COUNTERSIGN_BROKER") }
    var resolvedAPIKey: String? { apiKey ?? Self.environment("COUNTERSIGN_API_KEY") }
    var resolvedUser: String? { user ?? Self.environment("COUNTERSIGN_USER") }

    /// Broker, API key and user, all required.
    func account() throws -> (broker: String, apiKey: String, user: String) {
        guard let broker = resolvedBroker else { throw ValidationError("give --broker URL") }
        guard let apiKey = resolvedAPIKey else { throw ValidationError("give --api-key ID") }
        guard let user = resolvedUser else { throw ValidationError("give --user ID") }
        return (broker, apiKey, user)
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
        switch found.count {
        case 1: return found[0]
        case 0: throw AgentFailure("this machine is not a trusted device for that account; run device-agent enroll")
        default:
            throw AgentFailure("this machine holds several accounts; choose one with --broker, --api-key and --user")
        }
    }

    private static func environment(_ name: String) -> String? {
        ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }
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
            fflush(nil)
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
