import ArgumentParser
import CountersignCore
import CountersignStore
import Foundation

extension DeviceBroker {
    struct OperatorCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "operator",
            abstract: "Name who may sign in to the operator's console, and remove them.",
            discussion: """
                An operator signs in to the console by approving on a trusted device of the console's own \
                app, whose user id is the operator's name; there are no passwords. Each change is written to \
                the audit log (device-broker audit export).
                """,
            subcommands: [Add.self, Enroll.self, Remove.self, List.self], defaultSubcommand: List.self)

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Make NAME an operator.")
            @OptionGroup var store: StoreOptions
            @Argument(help: "The operator's name: their user id at the console app (1-256 bytes, no slash).") var name:
                String
            @Option(help: "The broker's public URL, to print complete commands and links.") var publicURL: String?

            func validate() throws {
                guard Operator.isValid(name: name) else { throw ValidationError("not a valid operator name: \(name)") }
            }

            func run() async throws {
                let now = Date()
                let issued: (token: String, expiresAt: Date)
                do {
                    issued = try await store.withStore { [name] store in
                        try await store.addOperator(
                            Operator(name: name, addedAt: now),
                            audit: AuditRecord(at: now, actor: AuditRecord.host, action: .operatorAdded, target: name))
                        // A name added again starts with no device, whoever held it before.
                        _ = try await ConsoleEnrollment.revokeDevices(of: name, in: store, now: now)
                        return try await ConsoleEnrollment.issueToken(for: name, in: store, now: now)
                    }
                } catch let error as StoreError where error.code == .alreadyExists {
                    throw ValidationError(
                        "\(name) is an operator already (a token for another device: `operator enroll \(name)`)")
                }
                print("\(name) is an operator")
                print(
                    ConsoleEnrollment.instructions(
                        name: name, token: issued.token, expiresAt: issued.expiresAt, publicURL: publicURL))
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Make NAME no longer an operator.",
                discussion: """
                    Their console sessions end and their devices of the console's app are removed: a name added \
                    again, for the same person or another, starts with no device.
                    """)
            @OptionGroup var store: StoreOptions
            @Argument(help: "The operator's name.") var name: String

            func run() async throws {
                let now = Date()
                let removed: Int
                do {
                    removed = try await store.withStore { [name] store in
                        try await store.removeOperator(
                            named: name,
                            audit: AuditRecord(at: now, actor: AuditRecord.host, action: .operatorRemoved, target: name)
                        )
                        return try await ConsoleEnrollment.revokeDevices(of: name, in: store, now: now)
                    }
                } catch let error as StoreError where error.code == .notFound {
                    throw ValidationError("\(name) is no operator")
                }
                print("\(name) is no longer an operator; \(removed) of their devices removed")
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List the operators.")
            @OptionGroup var store: StoreOptions

            func run() async throws {
                let operators = try await store.withStore { try await $0.operators() }
                if operators.isEmpty { print("No operators: add one with `device-broker operator add NAME`.") }
                for added in operators {
                    print("\(added.name)\tadded \(added.addedAt.formatted(.iso8601))")
                }
            }
        }
    }

    struct AuditCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "audit",
            abstract: "Read the audit log of operators' sign-ins and actions.",
            subcommands: [Export.self])

        struct Export: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Print the audit log as JSON lines, oldest first, for a SIEM.",
                discussion: """
                    One object per line: id, at (RFC 3339), actor (an operator, or host), action, target, ip. \
                    With --after, only the lines after that id: keep the last id you read to ship only what is new.
                    """)
            @OptionGroup var store: StoreOptions
            @Option(help: "Print only the lines after this id.") var after: Int64?

            func run() async throws {
                let page = 1000
                var last = after
                while true {
                    let records = try await store.withStore { [last] in
                        try await $0.auditRecords(after: last, limit: page)
                    }
                    for record in records {
                        FileHandle.standardOutput.write(Data(record.wireJSON() + [UInt8(ascii: "\n")]))
                    }
                    guard records.count == page, let next = records.last?.id else { return }
                    last = next
                }
            }
        }
    }
}
