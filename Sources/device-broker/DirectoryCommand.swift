import ArgumentParser
import CountersignBroker
import CountersignCore
import CountersignStore
import Foundation

extension DeviceBroker {
    struct DirectoryCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "directory",
            abstract: "Read people from an LDAP directory (OpenLDAP, Active Directory, FreeIPA).",
            discussion: """
                The settings file (--directory) names the server, the bind user and which people to read. A \
                person disabled there, or gone from it, has every device suspended: decisions refused, inbox \
                empty, webhook device.suspended; enabled again, the devices act again. Nothing is deleted. \
                `serve --directory FILE` reads it on the file's schedule. See docs/directory.md.
                """,
            subcommands: [Sync.self, List.self], defaultSubcommand: List.self)

        struct Sync: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Read the directory now and apply it; --dry-run only says what would change.")

            @OptionGroup var store: StoreOptions

            @Option(help: "The directory settings file, e.g. /etc/countersign/directory.conf.")
            var directory: String

            @Flag(help: "Apply it even if it suspends more people than max-suspensions allows.")
            var force = false

            @Flag(help: "Read the directory and say what would change, writing nothing.")
            var dryRun = false

            @Flag(help: "Print the outcome as JSON.")
            var json = false

            func run() async throws {
                let settings: DirectorySettings
                do {
                    settings = try DirectorySettings.file(directory)
                } catch {
                    throw ValidationError(error.description)
                }
                // A refusal or a failed read says why, and nothing changed.
                let report = try await store.withStore { store in
                    try await DirectorySyncRun(settings: settings, store: store, now: { Date() }).run(
                        force: force, dryRun: dryRun)
                }
                if json {
                    let document: [String: Any] = [
                        "at": report.at.formatted(.iso8601), "listed": report.listed, "skipped": report.skipped,
                        "written": report.written, "clashing": report.clashing, "suspended": report.suspended,
                        "reinstated": report.reinstated,
                        "devices_suspended": report.devicesSuspended, "devices_reinstated": report.devicesReinstated,
                        "dry_run": dryRun,
                    ]
                    try printJSON(document)
                    return
                }
                let verb = dryRun ? "would be" : ""
                print(
                    "Listed \(report.listed) people"
                        + (report.skipped.isEmpty
                            ? "." : "; skipped \(report.skipped.count) entries without a user id."))
                for id in report.clashing {
                    print("left as it was\t\(id)\t(more than one entry has this user id)")
                }
                for id in report.suspended { print("suspended\(verb.isEmpty ? "" : " (\(verb))")\t\(id)") }
                for id in report.reinstated { print("reinstated\(verb.isEmpty ? "" : " (\(verb))")\t\(id)") }
                if !dryRun {
                    print("Devices suspended: \(report.devicesSuspended); reinstated: \(report.devicesReinstated).")
                }
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List the people read from the directory, with their state.")

            @OptionGroup var store: StoreOptions

            @Flag(help: "Print one JSON object per line.")
            var json = false

            func run() async throws {
                let people = try await store.withStore { try await $0.directoryPeople() }
                if people.isEmpty && !json {
                    print("Nobody read yet: run `device-broker directory sync --directory FILE`.")
                }
                for person in people {
                    if json {
                        let document: [String: Any] = [
                            "client_user_id": person.clientUserID, "dn": person.dn, "name": person.name ?? NSNull(),
                            "email": person.email ?? NSNull(), "groups": person.groups, "state": person.state.rawValue,
                            "changed_at": person.changedAt.formatted(.iso8601),
                        ]
                        try printJSON(document)
                    } else {
                        print(
                            "\(person.clientUserID)\t\(person.state.rawValue)\t\(person.name ?? "")\t\(person.email ?? "")"
                        )
                    }
                }
            }
        }
    }
}
