import ArgumentParser
import CountersignBroker
import CountersignCore
import CountersignStore
import Foundation

extension DeviceBroker {
    struct RADIUSCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "radius",
            abstract: "Manage the RADIUS clients (VPN servers, firewalls, Wi-Fi controllers) the broker answers.",
            discussion: """
                A client's logins are approved on the trusted devices of its API key's users. The broker \
                answers RADIUS when `serve` is given --radius-listen; every instance on the store knows the \
                clients within 10 s of a change. Each change is written to the audit log. See docs/radius.md.
                """,
            subcommands: [Add.self, Set.self, List.self, Remove.self, RotateSecret.self], defaultSubcommand: List.self)

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Register a RADIUS client; without --secret-file, a new shared secret is printed once.")

            @OptionGroup var store: StoreOptions

            @Argument(help: "Its name, shown to approvers: lower-case letters, digits, '.', '-', '_' (at most 64).")
            var name: String

            @Option(help: "The address or CIDR range its requests come from, e.g. 192.0.2.10 or 10.8.0.0/16.")
            var address: String

            @Option(name: .customLong("api-key"), help: "The API key whose users' trusted devices approve.")
            var apiKeyID: String

            @Option(help: "A file holding the shared secret (16-128 printable characters; a final newline is ignored).")
            var secretFile: String?

            @Option(
                help: ArgumentHelp(
                    "challenge (number matching, the default) or push (the request waits; for gear that shows no challenge)."
                ))
            var mode: String = RADIUSClient.Mode.challenge.rawValue

            @Flag(
                help: ArgumentHelp(
                    "Take Access-Requests without a Message-Authenticator.",
                    discussion:
                        "Only for gear too old to send one: such a client's answers can be forged by anyone on the path (BlastRADIUS, CVE-2024-3596)."
                ))
            var allowMissingMessageAuthenticator = false

            @OptionGroup var upstream: RADIUSUpstreamOptions

            @Flag(help: "Print the client as JSON.")
            var json = false

            func validate() throws {
                if let problem = RADIUSClient.problem(withName: name) { throw ValidationError(problem) }
                guard IPNetwork(address) != nil else {
                    throw ValidationError("--address \(address) is not an address or CIDR range")
                }
                guard RADIUSClient.Mode(rawValue: mode) != nil else {
                    throw ValidationError("--mode must be challenge or push")
                }
                try upstream.validate()
            }

            func run() async throws {
                let secret = try RADIUSCLI.secret(from: secretFile)
                let now = Date()
                let client = RADIUSClient(
                    name: name, network: IPNetwork(address)!.description, apiKeyID: apiKeyID, secret: secret,
                    mode: RADIUSClient.Mode(rawValue: mode)!,
                    requireMessageAuthenticator: !allowMissingMessageAuthenticator, upstream: try upstream.upstream(),
                    createdAt: now)
                try await RADIUSCLI.run(store) { store in
                    try await store.insertRADIUSClient(
                        client,
                        audit: AuditRecord(
                            at: now, actor: AuditRecord.host, action: .radiusClientAdded, target: client.name))
                }
                RADIUSCLI.show(client, secret: secretFile == nil ? secret : nil, json: json)
            }
        }

        struct Set: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Change a RADIUS client's address range, mode, upstream or Message-Authenticator rule.",
                discussion: "What is not given stays as it is. Every instance knows the change within 10 s.")

            @OptionGroup var store: StoreOptions

            @Argument(help: "The client's name.")
            var name: String

            @Option(help: "The address or CIDR range its requests come from.")
            var address: String?

            @Option(help: "challenge or push.")
            var mode: String?

            @OptionGroup var upstream: RADIUSUpstreamOptions

            @Flag(help: "Ask no upstream server: the login is approval only.")
            var noUpstream = false

            @Flag(help: "Require a Message-Authenticator on every Access-Request again (the default).")
            var requireMessageAuthenticator = false

            @Flag(help: "Take Access-Requests without a Message-Authenticator (see `radius add`).")
            var allowMissingMessageAuthenticator = false

            @Flag(help: "Print the client as JSON.")
            var json = false

            func validate() throws {
                if let address, IPNetwork(address) == nil {
                    throw ValidationError("--address \(address) is not an address or CIDR range")
                }
                if let mode, RADIUSClient.Mode(rawValue: mode) == nil {
                    throw ValidationError("--mode must be challenge or push")
                }
                try upstream.validate()
                if noUpstream, upstream.address != nil { throw ValidationError("give --upstream or --no-upstream") }
                if requireMessageAuthenticator, allowMissingMessageAuthenticator {
                    throw ValidationError(
                        "give --require-message-authenticator or --allow-missing-message-authenticator")
                }
            }

            func run() async throws {
                let now = Date()
                let newUpstream = try upstream.upstream()
                let client = try await RADIUSCLI.run(store) {
                    [name, address, mode, noUpstream, requireMessageAuthenticator, allowMissingMessageAuthenticator]
                    store in
                    guard var client = try await store.radiusClients().first(where: { $0.name == name }) else {
                        throw StoreError(.notFound, "no RADIUS client is named \(name)")
                    }
                    if let address { client.network = IPNetwork(address)!.description }
                    if let mode { client.mode = RADIUSClient.Mode(rawValue: mode)! }
                    if let newUpstream { client.upstream = newUpstream }
                    if noUpstream { client.upstream = nil }
                    if requireMessageAuthenticator { client.requireMessageAuthenticator = true }
                    if allowMissingMessageAuthenticator { client.requireMessageAuthenticator = false }
                    try await store.updateRADIUSClient(
                        client,
                        audit: AuditRecord(at: now, actor: AuditRecord.host, action: .radiusClientChanged, target: name)
                    )
                    return client
                }
                RADIUSCLI.show(client, secret: nil, json: json)
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List the RADIUS clients (never their secrets).",
                discussion:
                    "Columns: name, address range, API key, mode, whether a Message-Authenticator is required, and the upstream server (or passwordless)."
            )

            @OptionGroup var store: StoreOptions

            func run() async throws {
                let clients = try await RADIUSCLI.run(store) { try await $0.radiusClients() }
                if clients.isEmpty { print("No RADIUS clients: add one with `device-broker radius add`.") }
                for client in clients {
                    let authenticator =
                        client.requireMessageAuthenticator
                        ? "message-authenticator required" : "message-authenticator optional"
                    print(
                        "\(client.name)\t\(client.network)\t\(client.apiKeyID)\t\(client.mode.rawValue)\t\(authenticator)"
                    )
                }
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Remove a RADIUS client: its requests are dropped from then on.")

            @OptionGroup var store: StoreOptions

            @Argument(help: "The client's name.")
            var name: String

            func run() async throws {
                let now = Date()
                try await RADIUSCLI.run(store) { [name] store in
                    try await store.deleteRADIUSClient(
                        name: name,
                        audit: AuditRecord(at: now, actor: AuditRecord.host, action: .radiusClientRemoved, target: name)
                    )
                }
                print("\(name): removed")
            }
        }

        struct RotateSecret: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "rotate-secret",
                abstract: "Give a client a new shared secret (printed once, or read from --secret-file).",
                discussion:
                    "The old secret stops working as soon as the broker re-reads its clients (within 10 s): give the NAS the new one at the same time."
            )

            @OptionGroup var store: StoreOptions

            @Argument(help: "The client's name.")
            var name: String

            @Option(help: "A file holding the new shared secret.")
            var secretFile: String?

            @Flag(help: "Print the client as JSON.")
            var json = false

            func run() async throws {
                let secret = try RADIUSCLI.secret(from: secretFile)
                let now = Date()
                let client = try await RADIUSCLI.run(store) { [name] store in
                    guard var client = try await store.radiusClients().first(where: { $0.name == name }) else {
                        throw StoreError(.notFound, "no RADIUS client is named \(name)")
                    }
                    client.secret = secret
                    try await store.updateRADIUSClient(
                        client,
                        audit: AuditRecord(at: now, actor: AuditRecord.host, action: .radiusClientChanged, target: name)
                    )
                    return client
                }
                RADIUSCLI.show(client, secret: secretFile == nil ? secret : nil, json: json)
            }
        }
    }
}

/// An upstream RADIUS server that checks the password first.
struct RADIUSUpstreamOptions: ParsableArguments {
    @Option(
        name: .customLong("upstream"),
        help: ArgumentHelp(
            "A RADIUS server (IP:PORT) that checks the password first; only a login it accepts is asked of the device.",
            discussion: "Without one the login is passwordless: approval on a trusted device alone."))
    var address: String?

    @Option(name: .customLong("upstream-secret-file"), help: "A file holding the secret shared with --upstream.")
    var secretFile: String?

    @Flag(
        name: .customLong("upstream-allow-missing-message-authenticator"),
        help: ArgumentHelp(
            "Take --upstream's answers without a Message-Authenticator.",
            discussion:
                "Only for a server without the BlastRADIUS fix (FreeRADIUS before 3.2.5, an unpatched NPS): someone on the path between the broker and it could then turn its Reject into an Accept."
        ))
    var allowMissingMessageAuthenticator = false

    func validate() throws {
        if let address {
            guard let parsed = RADIUSAddress(address), IPNetwork(parsed.host) != nil else {
                throw ValidationError("--upstream \(address) is not IP:PORT (e.g. 10.0.0.5:1812, [2001:db8::5]:1812)")
            }
            guard secretFile != nil else { throw ValidationError("--upstream needs --upstream-secret-file") }
        } else if secretFile != nil || allowMissingMessageAuthenticator {
            throw ValidationError(
                "--upstream-secret-file and --upstream-allow-missing-message-authenticator need --upstream")
        }
    }

    func upstream() throws -> RADIUSClient.Upstream? {
        guard let address, let secretFile else { return nil }
        return RADIUSClient.Upstream(
            address: address, secret: try RADIUSCLI.secret(from: secretFile),
            requireMessageAuthenticator: !allowMissingMessageAuthenticator)
    }
}

enum RADIUSCLI {
    /// Runs `body` on the store, a refusal becoming a one-line error.
    @discardableResult
    static func run<T: Sendable>(_ store: StoreOptions, _ body: @Sendable (any CountersignStore) async throws -> T)
        async throws -> T
    {
        do {
            return try await store.withStore(body)
        } catch let error as StoreError where error.code == .notFound || error.code == .alreadyExists {
            throw ValidationError(error.message)
        }
    }

    /// The secret in `file` (its final line break taken off), or a new one.
    static func secret(from file: String?) throws -> String {
        guard let file else { return RADIUSClient.newSecret() }
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ValidationError("cannot read --secret-file \(file)")
        }
        var text = String(decoding: data, as: UTF8.self)
        while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
        if let problem = RADIUSClient.problem(withSecret: text) { throw ValidationError("--secret-file: \(problem)") }
        return text
    }

    static func show(_ client: RADIUSClient, secret: String?, json: Bool) {
        if json {
            var document: [String: Any] = [
                "name": client.name, "address": client.network, "api_key_id": client.apiKeyID,
                "mode": client.mode.rawValue, "require_message_authenticator": client.requireMessageAuthenticator,
            ]
            if let upstream = client.upstream { document["upstream"] = upstream.address }
            if let secret { document["secret"] = secret }
            try? printJSON(document)
            return
        }
        print("\(client.name)\t\(client.network)\t\(client.apiKeyID)\t\(client.mode.rawValue)")
        if let secret {
            print("Shared secret (shown once; give it to the NAS): \(secret)")
        }
    }
}
