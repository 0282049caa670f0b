import ArgumentParser
import CountersignBroker
import CountersignCore
import Foundation
import NIOCore
import NIOPosix

// Swift concurrency runs on NIO's event loops instead of a thread pool of its
// own: a request's handler then runs on the thread that reads and writes its
// connection, without two thread switches per request. Nothing the broker
// runs as a task blocks for long (an SQLite read takes microseconds; fsyncs
// happen on the store's writer queue). It has to happen before the first
// task starts, so here and not in a command.
_ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()

/// Parses and runs the command as AsyncParsableCommand's `main` does, with
/// the failure's message written as below.
func runCommand() async {
    let arguments: [String]
    do {
        arguments = try SettingsArguments.expand(Array(CommandLine.arguments.dropFirst()))
    } catch {
        DeviceBroker.exit(withError: error)
    }
    if let suggestion = DeviceBroker.suggestion(for: arguments) {
        // Otherwise `serve`, the default command, says its usage.
        FileHandle.standardError.write(Data("Error: \(suggestion.message(tool: "device-broker"))\n".utf8))
        DeviceBroker.exit(withError: ExitCode.validationFailure)
    }
    do {
        var command = try await DeviceBroker.asyncParseAsRoot(arguments)
        if var asyncCommand = command as? any AsyncParsableCommand {
            try await asyncCommand.run()
        } else {
            try command.run()
        }
    } catch {
        // The log lines before the failure come before its message, and the
        // message in one write: ArgumentParser's `exit(withError:)` writes
        // it a byte at a time (`putc` to an unbuffered stderr), and a log
        // line written meanwhile by the log thread landed inside a word.
        LogOutput.standardOutput.flush()
        let code = DeviceBroker.exitCode(for: error)
        let message = DeviceBroker.fullMessage(for: error)
        if !message.isEmpty {
            let stream = code == .success ? FileHandle.standardOutput : FileHandle.standardError
            stream.write(Data((message + "\n").utf8))
        }
        DeviceBroker.exit(withError: code)
    }
}

await runCommand()
