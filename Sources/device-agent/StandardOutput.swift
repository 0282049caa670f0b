// C's `stdout` is a mutable global that Glibc does not annotate for
// concurrency; it is only ever read here.
@preconcurrency import Glibc

/// Sends what `print` buffered to the terminal. Only `stdout` is flushed:
/// `fflush(nil)` would also wait for the lock of `stdin`, which
/// ``LineReader``'s thread holds while it waits for a line.
func flushOutput() {
    fflush(stdout)
}

/// Makes `stdout` line-buffered even into a pipe or file: every line the
/// agent prints is out at once, for a person reading a log as it grows or
/// a program waiting for a line.
func lineBufferStandardOutput() {
    setvbuf(stdout, nil, _IOLBF, 0)
}
