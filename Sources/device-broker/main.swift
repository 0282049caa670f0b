import ArgumentParser
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

/// In an async function the compiler picks AsyncParsableCommand's `main`;
/// at the top level it would pick ParsableCommand's synchronous one.
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
    await DeviceBroker.main(arguments)
}

await runCommand()
