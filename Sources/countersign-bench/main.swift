import ArgumentParser
import NIOCore
import NIOPosix

// As in the broker: tasks run on NIO's event loops, next to the connections
// they use, so the load generator takes less of the cores it shares with the
// broker it measures.
_ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()

/// In an async function the compiler picks AsyncParsableCommand's `main`.
/// The console's commands are words of their own before their options: as
/// subcommands, ArgumentParser would ask them for the round trips' required
/// options too.
func runCommand() async {
    let arguments = Array(CommandLine.arguments.dropFirst())
    switch arguments.first {
    case ConsoleFill.name: await run(ConsoleFill.self, Array(arguments.dropFirst()))
    case ConsoleLoad.name: await run(ConsoleLoad.self, Array(arguments.dropFirst()))
    default: await CountersignBench.main()
    }
}

/// What `main()` does, with these arguments.
func run<Command: AsyncParsableCommand>(_ type: Command.Type, _ arguments: [String]) async {
    do {
        var command = try type.parseAsRoot(arguments)
        if var command = command as? any AsyncParsableCommand {
            try await command.run()
        } else {
            try command.run()
        }
    } catch {
        type.exit(withError: error)
    }
}

await runCommand()
