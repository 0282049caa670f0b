import ArgumentParser
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
    await DeviceBroker.main(arguments)
}

await runCommand()
