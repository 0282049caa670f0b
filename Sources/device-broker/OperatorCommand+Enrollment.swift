import ArgumentParser
import CountersignCore
import CountersignStore
import Foundation

/// An operator's first device: the console's app is made if it is not
/// there yet, and a one-time enrollment token is issued for the operator.
enum ConsoleEnrollment {
    /// The console's app, made the first time: an API key whose secret
    /// nobody is told (the console is the broker itself; devices enroll and
    /// requesters ask with its id alone).
    static func ensureApp(in store: any CountersignStore, now: Date) async throws {
        if try await store.apiKey(id: ConsoleApp.apiKeyID) != nil { return }
        let key = APIKey(
            id: ConsoleApp.apiKeyID, name: ConsoleApp.name,
            secretDigest: SecretToken.digest(SecretToken.generate(bytes: 32)), createdAt: now)
        do {
            try await store.insertAPIKey(key)
            try await store.recordAPIKeyChange(
                APIKeyChange(apiKeyID: key.id, action: .created, via: "cli", at: now))
        } catch let error as StoreError where error.code == .alreadyExists {
            // Another command made it first.
        }
    }

    /// A one-time token that enrolls a device of `name` at the console app,
    /// with the audit line that says it was issued.
    static func issueToken(for name: String, in store: any CountersignStore, now: Date) async throws -> (
        token: String, expiresAt: Date
    ) {
        try await ensureApp(in: store, now: now)
        let token = "et_" + SecretToken.generate(bytes: 32)
        let expiresAt = now + ApprovalPolicy().enrollmentTokenLifetime
        try await store.insertEnrollmentToken(
            EnrollmentToken(
                digest: SecretToken.digest(token), issuer: ConsoleApp.apiKeyID, clientUserID: name, createdAt: now,
                expiresAt: expiresAt))
        try await store.appendAudit(
            AuditRecord(at: now, actor: AuditRecord.host, action: .enrollmentIssued, target: name))
        return (token, expiresAt)
    }

    /// Removes every trusted device of `name` at the console's app; returns
    /// how many.
    static func revokeDevices(of name: String, in store: any CountersignStore, now: Date) async throws -> Int {
        var removed = 0
        for device in try await store.devices(issuer: ConsoleApp.apiKeyID, clientUserID: name)
        where device.revokedAt == nil {
            _ = try await store.revokeDevice(
                id: device.id, issuer: ConsoleApp.apiKeyID, clientUserID: name,
                author: ChangeAuthor(actor: ChangeAuthor.host, ip: ""), now: now)
            removed += 1
        }
        return removed
    }

    /// How to use the token, on a machine with the agent or in a browser.
    static func instructions(name: String, token: String, expiresAt: Date, publicURL: String?) -> String {
        let broker = publicURL ?? "BROKER_URL"
        var base = broker
        while base.hasSuffix("/") { base.removeLast() }
        let link = WebApproverLink.enrollment(broker: base, apiKeyID: ConsoleApp.apiKeyID, user: name, token: token)
        return """
            Enroll \(name)'s trusted device for the console before \(expiresAt.formatted(.iso8601)), once:
              device-agent enroll --broker \(broker) --api-key \(ConsoleApp.apiKeyID) --user \(name) --token \(token)
            or open in the browser that is to approve:
              \(link)
            Then sign in at \(base)/console/ by approving on that device.
            """
    }
}

extension DeviceBroker.OperatorCommand {
    struct Enroll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Issue a one-time token that enrolls a trusted device of operator NAME.",
            discussion: """
                For an operator's further devices, or one that replaces a lost device. Devices of the console's \
                app are added and removed as any app's are; `operator add` issues the first token.
                """)
        @OptionGroup var store: StoreOptions
        @Argument(help: "The operator's name.") var name: String
        @Option(help: "The broker's public URL, to print complete commands and links.") var publicURL: String?

        func run() async throws {
            let now = Date()
            let issued = try await store.withStore { [name] store in
                guard try await store.operators().contains(where: { $0.name == name }) else {
                    throw ValidationError("\(name) is no operator: add them with `device-broker operator add \(name)`")
                }
                return try await ConsoleEnrollment.issueToken(for: name, in: store, now: now)
            }
            print(
                ConsoleEnrollment.instructions(
                    name: name, token: issued.token, expiresAt: issued.expiresAt, publicURL: publicURL))
        }
    }
}
