import ArgumentParser
import CountersignClient
import CountersignCore
import Foundation

extension DeviceAgent {
    struct Devices: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the user's trusted devices, add a phone, or remove one.",
            subcommands: [List.self, AddPhone.self, Remove.self], defaultSubcommand: List.self)

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List the user's devices: name, id, added, last seen; this one is marked with *.")

            @OptionGroup var account: AccountOptions

            @Flag(help: "Print the broker's JSON instead of a table.")
            var json = false

            @Flag(help: "Include removed devices.")
            var all = false

            func run() async throws {
                let credential = try account.enrolledCredential()
                let client = CountersignClient(for: credential, userAgent: DeviceAgent.userAgent)
                let list = try await client.devices(credential)
                if json {
                    print(String(decoding: try JSONEncoder.pretty.encode(list), as: UTF8.self))
                    return
                }
                let listed = list.devices.filter { all || $0.revokedAt == nil }
                print("Devices of \(credential.clientUserID) at \(credential.broker):")
                for device in listed {
                    let mark = device.id == list.thisDevice ? "*" : " "
                    let seen = device.lastSeenAt.map(Self.format) ?? "never"
                    let state = device.revokedAt.map { "  removed \(Self.format($0))" } ?? ""
                    print("\(mark) \(shown(device.name))")
                    print("    id \(shown(device.id))  fingerprint \(shown(device.fingerprint))")
                    print("    added \(Self.format(device.createdAt)), last seen \(seen)\(state)")
                    if device.push == true { print("    gets requests by push") }
                }
                if listed.isEmpty { print("  (none)") }
            }

            static func format(_ date: Date) -> String { date.formatted(date: .abbreviated, time: .shortened) }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Remove a trusted device of the user at once (this one too, if you name it).",
                discussion: """
                    Name the device by its name, when no other device of the user has it, or by its id \
                    (both as `device-agent devices` lists them). On a terminal you are asked to confirm; \
                    elsewhere give --yes. The request is signed by this machine's key, which must be a \
                    trusted device of the same user. The removed device can no longer approve anything, \
                    including requests already waiting. Names or ids that start with '-' go after \
                    `--`: `devices remove -- ID`.
                    """)

            @OptionGroup var account: AccountOptions

            @Argument(help: "The name or id of the device to remove (see `device-agent devices`).")
            var device: String

            @Flag(help: "Remove without asking.")
            var yes = false

            func run() async throws {
                let credential = try account.enrolledCredential()
                let client = CountersignClient(for: credential, userAgent: DeviceAgent.userAgent)
                let list = try await client.devices(credential)
                let target = try Self.find(device, in: list.devices.filter { $0.revokedAt == nil })
                let isThisMachine = target.id == credential.deviceID
                if !yes {
                    guard Console.isInteractive else {
                        throw usageFailure("removing a device asks for confirmation on a terminal; give --yes")
                    }
                    print("\(shown(target.name)), fingerprint \(shown(target.fingerprint))")
                    if isThisMachine {
                        print("That is this machine: it will no longer be a trusted device, and its key is deleted.")
                    }
                    guard
                        Prompt.confirm(
                            "Remove \(shown(target.name)) from \(shown(credential.clientUserID))'s trusted devices?")
                    else {
                        print("Nothing was removed.")
                        return
                    }
                }
                let removed = try await client.removeDevice(target.id, credential: credential)
                print("Removed \(shown(removed.name)): it can no longer approve anything.")
                if isThisMachine {
                    try account.credentials.remove(credential)
                    print("That was this machine: it is no longer a trusted device, and its key is deleted.")
                }
            }

            /// The device a person means: its id, else the one device with
            /// that name.
            static func find(_ given: String, in devices: [DeviceDocument]) throws -> DeviceDocument {
                if let byID = devices.first(where: { $0.id == given }) { return byID }
                let named = devices.filter { $0.name == given }
                switch named.count {
                case 1: return named[0]
                case 0:
                    throw AgentFailure(
                        "no trusted device is named or has the id \(shown(given)); `device-agent devices` lists them")
                default:
                    let ids = named.map { shown($0.id) }.joined(separator: ", ")
                    throw AgentFailure("\(named.count) devices are named \(shown(given)); give the id of one: \(ids)")
                }
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check whether this machine is a trusted device (asks the broker).",
            discussion:
                "Exit codes: 0 trusted; 6 not enrolled here, or removed; 7 suspended (the directory does not list the user as enabled); 1 error."
        )

        @OptionGroup var account: AccountOptions

        func run() async throws {
            let credential: DeviceCredential
            do {
                credential = try account.enrolledCredential()
            } catch let failure as AgentFailure {
                FileHandle.standardError.write(Data("Error: \(failure.description)\n".utf8))
                throw ExitCode(6)
            }
            let client = CountersignClient(for: credential, userAgent: DeviceAgent.userAgent)
            do {
                let device = try await client.whoAmI(credential)
                print("This machine is a trusted device of \(shown(device.clientUserID)) at \(credential.broker).")
                print("  name \(shown(device.name)), id \(shown(device.id))")
                print("  fingerprint \(shown(device.fingerprint))")
                if let since = device.suspendedAt {
                    FileHandle.standardError.write(Data((Approve.suspension(device, since: since) + "\n").utf8))
                    throw ExitCode(7)
                }
            } catch let error as CountersignError where error.status == 401 || error.status == 403 {
                FileHandle.standardError.write(
                    Data("This machine is no longer trusted: \(shown(error.message))\n".utf8))
                throw ExitCode(6)
            }
        }
    }
}
