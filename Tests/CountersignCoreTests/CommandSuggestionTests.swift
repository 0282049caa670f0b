import CountersignCore
import Testing

@Suite("a mistyped command word and the nearest command")
struct CommandSuggestionTests {
    /// A tool's commands: a name and its subcommands.
    struct Command {
        let name: String
        var children: [Command] = []
    }

    static let tool = Command(
        name: "tool",
        children: [
            Command(name: "serve"), Command(name: "migrate"),
            Command(name: "apikey", children: [Command(name: "create"), Command(name: "list")]),
            Command(name: "devices", children: [Command(name: "list"), Command(name: "remove")]),
        ])

    static func find(_ arguments: [String]) -> CommandSuggestion? {
        CommandSuggestion.find(in: arguments, root: tool, children: \.children, name: \.name)
    }

    @Test("at the top, and under a command group")
    func typos() {
        #expect(Self.find(["migarte"]) == CommandSuggestion(typed: "migarte", path: [], nearest: "migrate"))
        #expect(Self.find(["apikeys", "create"])?.nearest == "apikey")
        #expect(Self.find(["devices", "lsit"]) == CommandSuggestion(typed: "lsit", path: ["devices"], nearest: "list"))
        #expect(Self.find(["devices", "remvoe", "dev_1"])?.nearest == "remove")
        #expect(
            Self.find(["devices", "lsit"])?.message(tool: "tool")
                == "there is no command 'lsit' in 'tool devices'; did you mean 'list'? (tool devices --help lists them)"
        )
        #expect(
            Self.find(["migarte"])?.message(tool: "tool").hasPrefix("there is no command 'migarte'; did you") == true)
    }

    @Test("nothing to say for known commands, their arguments, options, help, or a word near nothing")
    func silent() {
        #expect(Self.find(["devices", "remove", "remvoe"]) == nil, "a leaf's own argument")
        #expect(Self.find(["serve", "--port", "8080"]) == nil)
        #expect(Self.find(["--config", "migarte"]) == nil, "a word after an option may be its value")
        #expect(Self.find(["help", "migarte"]) == nil)
        #expect(Self.find(["frobnicate-everything"]) == nil)
        #expect(Self.find([]) == nil)
    }
}
