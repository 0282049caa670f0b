import ArgumentParser
import CountersignCore
import Foundation

/// `--config FILE`: the broker's settings in a file, as the package installs
/// it (`/etc/countersign/broker.conf`). A line is `name = value` for
/// `serve`'s option `--name`, or `name = true` for a flag; `false` leaves a
/// flag off. An option given on the command line wins over the file's lines
/// of the same name. The other commands that open the store (`migrate`,
/// `apikey`, …) take its `data-dir` and `database` from the same file.
enum SettingsArguments {
    /// `arguments` (without the program's name) with the settings of the
    /// file `--config` names added, or as they are without `--config`.
    static func expand(_ arguments: [String]) throws -> [String] {
        guard let path = configPath(in: arguments) else { return arguments }
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ValidationError("cannot read the settings file \(path)")
        }
        let file: SettingsFile
        do {
            file = try SettingsFile(text: text, path: path)
        } catch {
            throw ValidationError(error.description)
        }
        let serves = arguments.first.map { $0 == "serve" || $0.hasPrefix("-") } ?? true
        let given = Set(arguments.compactMap(longName(of:)))
        var added: [String] = []
        for entry in file.entries {
            let at = "\(path):\(entry.line)"
            guard let kind = known[entry.name] else {
                throw ValidationError("\(at): \(entry.name) is not an option of device-broker serve")
            }
            guard serves || StoreOptions.names.contains(entry.name), !given.contains(entry.name) else { continue }
            switch kind {
            case .flag:
                switch entry.value {
                case "true": added.append("--\(entry.name)")
                case "false": continue
                default: throw ValidationError("\(at): \(entry.name) is a flag: true or false")
                }
            case .option:
                guard !entry.value.isEmpty else { throw ValidationError("\(at): \(entry.name) has no value") }
                added += ["--\(entry.name)", entry.value]
            }
        }
        // Before a `--`, after which nothing is an option.
        let end = arguments.firstIndex(of: "--") ?? arguments.endIndex
        return Array(arguments[..<end]) + added + Array(arguments[end...])
    }

    /// The file `--config FILE` or `--config=FILE` names.
    static func configPath(in arguments: [String]) -> String? {
        for (index, argument) in arguments.enumerated() {
            if argument == "--" { return nil }
            if argument == "--config" { return index + 1 < arguments.count ? arguments[index + 1] : nil }
            if argument.hasPrefix("--config=") { return String(argument.dropFirst("--config=".count)) }
        }
        return nil
    }

    private static func longName(of argument: String) -> String? {
        guard argument.hasPrefix("--"), argument.count > 2 else { return nil }
        return String(argument.dropFirst(2).prefix { $0 != "=" })
    }

    enum Kind: Equatable { case option, flag }

    /// `serve`'s long options and flags, as swift-argument-parser describes
    /// them (the JSON its `--experimental-dump-help` prints), so that the
    /// file takes exactly what the command line takes.
    static let known: [String: Kind] = {
        struct Help: Decodable {
            struct Command: Decodable { var arguments: [Argument]? }
            struct Argument: Decodable {
                struct Name: Decodable { var kind: String, name: String }
                var kind: String
                var names: [Name]?
            }
            var command: Command
        }
        guard let help = try? JSONDecoder().decode(Help.self, from: Data(DeviceBroker.Serve._dumpHelp().utf8)) else {
            return [:]
        }
        var known: [String: Kind] = [:]
        for argument in help.command.arguments ?? [] {
            for name in argument.names ?? [] where name.kind == "long" {
                known[name.name] = argument.kind == "flag" ? .flag : .option
            }
        }
        // Not settings: they stop the command, or name the file itself.
        for name in ["help", "version", "config"] { known[name] = nil }
        return known
    }()
}
