import Foundation
import Synchronization

/// A child process started with `posix_spawn`, in a process group of its
/// own, with only its standard input, output and error inherited.
///
/// Foundation's `Process` is not used: on Linux it lists /proc/self/fd to
/// close the other descriptors in the child, copying each entry's name as a
/// 256-byte array whatever the entry's length; with some 1,370 descriptors
/// open in the test process (every in-process server and its clients count)
/// the last entry sits at the end of the directory buffer and the copy runs
/// off it: the whole suite crashed with SIGSEGV in `Process.run()` this way.
/// Here the child closes everything above 2 with
/// `posix_spawn_file_actions_addclosefrom_np`, which lists nothing.
final class ChildProcess: Sendable {
    let processIdentifier: Int32
    private let status = Mutex<Int32?>(nil)
    private let exited = DispatchSemaphore(value: 0)

    /// Starts `executable` with standard input from `input` and standard
    /// output and error into `output` (descriptors of the caller's, which it
    /// closes afterwards as it sees fit).
    init(_ executable: String, _ arguments: [String], environment: [String: String], input: Int32, output: Int32)
        throws
    {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input, 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, output, 2)
        guard let addCloseFrom = Self.addCloseFrom, addCloseFrom(&actions, 3) == 0 else {
            throw ProcessFailure("this C library has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later)")
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A group of its own, as Foundation's Process gives it: a signal to
        // the test's group (a terminal's Ctrl-C) does not reach it.
        // And with every signal unblocked and at its default action: the
        // child inherits the spawning thread's mask, and the threads of
        // Swift's concurrency pool (libdispatch's workers) block nearly all
        // signals. Python helpers started from them ignored SIGTERM, and
        // each `stop()` waited its 5 s for SIGKILL on a thread of the pool
        // (the pool has one per core): two at once held every task of the
        // test process for seconds, and a load loop saw no round trip for
        // 120 s. Foundation's Process clears both in the same way.
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0)=\($1)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw ProcessFailure("cannot start \(executable): \(String(cString: strerror(result)))")
        }
        let child = pid
        processIdentifier = child
        // One thread per child waits for it: nothing else in the test
        // process reaps children.
        Thread.detachNewThread { [self] in
            var raw: Int32 = 0
            var result: pid_t = -1
            repeat { result = waitpid(child, &raw, 0) } while result == -1 && errno == EINTR
            // Exit status, or the signal that ended it (as Foundation
            // reports); a child that cannot be waited for counts as failed.
            let code = result != child ? -1 : (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : raw & 0x7f
            status.withLock { $0 = code }
            exited.signal()
        }
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later),
    /// which Swift's Glibc module does not declare.
    private static let addCloseFrom:
        (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? =
            dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
                unsafeBitCast(
                    $0, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
            }

    var isRunning: Bool { status.withLock { $0 == nil } }

    /// The exit status, or the number of the signal that ended it.
    var terminationStatus: Int32 {
        guard let code = status.withLock({ $0 }) else { preconditionFailure("still running") }
        return code
    }

    /// SIGTERM, unless it was reaped already (its pid may be another's now).
    func terminate() {
        if isRunning { kill(processIdentifier, SIGTERM) }
    }

    func waitUntilExit() {
        guard isRunning else { return }
        exited.wait()
        exited.signal()
    }
}
