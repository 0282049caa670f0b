/// A command word that names no command, and the one it was likely meant
/// to be: `device-broker migarte`, `device-agent devices lsit`. Without
/// this, a command line parser names the first thing it cannot place (an
/// option, or the default command's usage), not the typo.
public struct CommandSuggestion: Sendable, Equatable {
    /// The word as typed.
    public let typed: String
    /// The command words before it (empty: the tool's own).
    public let path: [String]
    /// The nearest command name.
    public let nearest: String

    public init(typed: String, path: [String], nearest: String) {
        self.typed = typed
        self.path = path
        self.nearest = nearest
    }

    /// The first command word of `arguments` that names no subcommand
    /// where one was expected, with the nearest name, if it is within two
    /// edits (or a third of its length). The tool's commands are a tree
    /// from `root`: `children` of a command are its subcommands (none: the
    /// words after it are its own arguments), each called by `name`.
    /// Options end the search: a word after one may be its value.
    public static func find<Command>(
        in arguments: [String], root: Command, children: (Command) -> [Command], name: (Command) -> String
    ) -> CommandSuggestion? {
        var path: [String] = []
        var command = root
        for word in arguments {
            guard !word.hasPrefix("-"), word != "help" else { return nil }
            let subcommands = children(command)
            guard !subcommands.isEmpty else { return nil }
            if let next = subcommands.first(where: { name($0) == word }) {
                path.append(word)
                command = next
                continue
            }
            return nearest(to: word, among: subcommands.map(name) + ["help"]).map {
                CommandSuggestion(typed: word, path: path, nearest: $0)
            }
        }
        return nil
    }

    /// The name nearest `typed` by edit distance, if within two edits (or
    /// a third of its length).
    public static func nearest(to typed: String, among names: [String]) -> String? {
        let scored = names.map { ($0, editDistance(Array(typed.lowercased()), Array($0))) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(2, typed.count / 3) else { return nil }
        return best.0
    }

    /// Levenshtein distance, with a swap of two neighbours as one edit.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        var rows = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { rows[i][0] = i }
        for j in 0...b.count { rows[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
                }
            }
        }
        return rows[a.count][b.count]
    }

    /// What to tell the person, for a tool named `tool`.
    public func message(tool: String) -> String {
        let command = ([tool] + path).joined(separator: " ")
        let place = path.isEmpty ? "" : " in '\(command)'"
        return "there is no command '\(DisplayText.escaped(typed))'\(place); did you mean '\(nearest)'? "
            + "(\(command) --help lists them)"
    }
}
