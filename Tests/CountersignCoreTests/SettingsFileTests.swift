import CountersignCore
import Testing

@Suite("settings files: name = value lines")
struct SettingsFileTests {
    @Test("values are trimmed; a # at a line's start or after a space is a comment, inside a value it is not")
    func comments() throws {
        let file = try SettingsFile(
            text: """
                # the broker
                  port = 8080   # inline
                database = postgres://u:pa#ss@db/countersign

                public-url=https://login.example.com\r
                empty =
                trusted-proxy = 10.0.0.1
                trusted-proxy = 10.0.0.2
                """, path: "/etc/countersign/broker.conf")
        #expect(
            file.entries.map { [$0.name, $0.value, String($0.line)] } == [
                ["port", "8080", "2"], ["database", "postgres://u:pa#ss@db/countersign", "3"],
                ["public-url", "https://login.example.com", "5"], ["empty", "", "6"],
                ["trusted-proxy", "10.0.0.1", "7"], ["trusted-proxy", "10.0.0.2", "8"],
            ])
        #expect(file["trusted-proxy"] == "10.0.0.2")
        #expect(file["absent"] == nil)
        #expect(file.firstRepeated()?.line == 8)
        #expect(file.firstUnknown(among: ["port", "database", "public-url", "empty"])?.name == "trusted-proxy")
    }

    @Test("a line without a name and an equals sign is refused with its file and line")
    func refused() {
        for (text, line) in [("port 8080", 1), ("# ok\n= value", 2), ("a b = c", 1), ("\n\nflag", 3)] {
            #expect(throws: SettingsFile.Problem("f.conf:\(line): expected name = value"), "\(text.debugDescription)") {
                try SettingsFile(text: text, path: "f.conf")
            }
        }
    }
}
