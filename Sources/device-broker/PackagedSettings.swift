import ArgumentParser
import CountersignCore
import Foundation

/// The settings file the package installs for the service. The commands
/// that open the store take its store when they are given none.
enum PackagedSettings {
    static let path = "/etc/countersign/broker.conf"

    /// The store it names: a data directory, a database URL, or neither.
    struct Store {
        var dataDirectory: String?
        var databaseURL: String?
    }

    /// The store the packaged file names, or nil when there is no such
    /// file. A file that is there but cannot be read (it is root's and the
    /// service's only: it may hold the database's password) is refused
    /// with what to do, rather than passed over for a new store here.
    static func read(at path: String = path) throws -> Store? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ValidationError(
                "cannot read \(path), the packaged service's settings (mode 0640, root:countersign): run the "
                    + "command with sudo, or give the store with --data-dir or --database")
        }
        let file: SettingsFile
        do {
            file = try SettingsFile(text: text, path: path)
        } catch {
            throw ValidationError(error.description)
        }
        let values = Dictionary(file.entries.map { ($0.name, $0.value) }) { _, last in last }
        return Store(dataDirectory: values["data-dir"], databaseURL: values["database"])
    }
}
