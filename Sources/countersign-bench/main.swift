import ArgumentParser
import NIOCore
import NIOPosix

// As in the broker: tasks run on NIO's event loops, next to the connections
// they use, so the load generator takes less of the cores it shares with the
// broker it measures.
_ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()

/// In an async function the compiler picks AsyncParsableCommand's `main`.
func runCommand() async {
    await CountersignBench.main()
}

await runCommand()
