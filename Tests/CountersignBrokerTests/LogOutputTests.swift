import Foundation
import Logging
import Testing

@testable import CountersignBroker

@Suite("log output")
struct LogOutputTests {
    /// A log output into a file of its own, and what reached the file.
    final class Sink: Sendable {
        let path: String
        let output: LogOutput

        init() throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("log-\(UUID().uuidString)").path
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            guard descriptor >= 0 else { throw CocoaError(.fileWriteUnknown) }
            output = LogOutput(descriptor: descriptor)
        }

        var written: String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        var lines: [String] { written.split(separator: "\n").map(String.init) }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    @Test("text lines keep StreamLogHandler's layout, fields sorted, the event's own winning")
    func textLayout() throws {
        let sink = try Sink()
        var logger = Logger(label: "device-broker") { TextLogHandler(label: $0, output: sink.output) }
        logger[metadataKey: "hb.request.id"] = "abc"
        logger[metadataKey: "zone"] = "base"
        logger.info("request", metadata: ["http.status": "200", "zone": "event"], source: "CountersignBroker")
        sink.output.flush()
        let line = try #require(sink.lines.first)
        let pattern = #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} info device-broker: (.*)$/#
        let match = try #require(line.wholeMatch(of: pattern))
        #expect(match.1 == "hb.request.id=abc http.status=200 zone=event [CountersignBroker] request")
    }

    @Test("a line with no fields, and an error's message and type")
    func textWithoutFields() throws {
        let sink = try Sink()
        let logger = Logger(label: "x") { TextLogHandler(label: $0, output: sink.output) }
        struct Broken: Error {}
        logger.notice("started", source: "S")
        logger.warning("failed", error: Broken(), source: "S")
        sink.output.flush()
        #expect(sink.lines.first?.hasSuffix(" notice x: [S] started") == true)
        #expect(sink.lines.last?.contains(" warning x: error.message=Broken() error.type=") == true)
        #expect(sink.lines.last?.hasSuffix(".Broken [S] failed") == true)
    }

    @Test("an error line is written before the call returns; lines below wait for the writer, not for exit")
    func urgentLines() async throws {
        let sink = try Sink()
        let logger = Logger(label: "x") { TextLogHandler(label: $0, output: sink.output) }
        logger.info("first")
        logger.error("broken")
        // No flush: the error line took the one before it along.
        #expect(sink.lines.count == 2)
        #expect(sink.lines.last?.hasSuffix("broken") == true)
        logger.info("later")
        // The writer thread writes within milliseconds; a generous limit for a busy machine.
        let deadline = ContinuousClock.now + .seconds(30)
        while sink.lines.count < 3, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(sink.lines.count == 3)
    }

    @Test("lines from many threads, past the buffer's limit, all arrive whole and in each thread's order")
    func manyLines() async throws {
        let sink = try Sink()
        let logger = Logger(label: "x") { TextLogHandler(label: $0, output: sink.output) }
        let padding = String(repeating: "p", count: 200)
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    for number in 0..<5_000 {
                        logger.info("line", metadata: ["n": "\(number)", "pad": "\(padding)", "w": "\(writer)"])
                    }
                }
            }
        }
        sink.output.flush()
        let lines = sink.lines
        #expect(lines.count == 20_000)
        for writer in 0..<4 {
            let numbers = lines.filter { $0.contains(" w=\(writer) ") }.compactMap { line in
                line.firstMatch(of: #/ n=(\d+) /#).flatMap { Int($0.1) }
            }
            #expect(numbers == Array(0..<5_000), "writer \(writer)")
        }
    }

    @Test("JSON lines parse, keys sorted, UTC time with milliseconds, strings escaped")
    func json() throws {
        let sink = try Sink()
        var logger = Logger(label: "device-broker") { JSONLogHandler(label: $0, output: sink.output) }
        logger[metadataKey: "hb.request.id"] = "abc"
        let odd = "quote\" backslash\\ tab\t newline\n bell\u{7} é 日本 \u{2028}"
        logger.warning(
            "said \"hi\"",
            metadata: [
                "odd": .string(odd), "list": .array([.string("a"), .stringConvertible(1)]),
                "map": ["b": "2", "a": "1"], "message": "not the message",
            ])
        sink.output.flush()
        let line = try #require(sink.lines.first)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["message"] as? String == "said \"hi\"")
        #expect(object["level"] as? String == "warning")
        #expect(object["logger"] as? String == "device-broker")
        #expect(object["hb.request.id"] as? String == "abc")
        #expect(object["odd"] as? String == odd)
        #expect(object["map"] as? [String: String] == ["a": "1", "b": "2"])
        let time = try #require(object["time"] as? String)
        #expect(time.wholeMatch(of: #/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/#) != nil)
        let keys = line.matches(of: #/"([a-z.]+)":/#).map { String($0.1) }
        #expect(keys == ["hb.request.id", "level", "list", "logger", "map", "a", "b", "message", "odd", "time"])
        #expect(line.contains(#""list":["a","1"]"#))
    }
}
