import ArgumentParser
import CountersignClient
import CountersignCore
import Dispatch
import Foundation

/// A pending request this machine made, withdrawn when the person gives
/// up: on Ctrl-C or SIGTERM while it waits, so that no trusted device can
/// still approve it and it does not stand in the way of the next one.
struct PendingRequest {
    let ticket: EventTicket
    let client: CountersignClient
    let console: Console

    /// Runs `body` (the wait for the outcome). SIGINT or SIGTERM, as
    /// `signals` caught them, stops it, withdraws the request and exits
    /// with 130 or 143, as a process killed by that signal would report.
    ///
    /// `signals` is made before the request is sent: its handlers are then
    /// in place before anything is shown that a person (or a test) would
    /// answer with Ctrl-C, and a signal that comes while the request is
    /// sent withdraws it as soon as it exists.
    func waitWithdrawing<T: Sendable>(on signals: SignalWatch, _ body: @escaping @Sendable () async throws -> T)
        async throws -> T
    {
        let delivered = signals.delivered
        let outcome = await withTaskGroup(of: WaitOutcome<T>?.self) { group in
            group.addTask { .finished(await Result { try await body() }) }
            group.addTask {
                var iterator = delivered.makeAsyncIterator()
                return await iterator.next().map(WaitOutcome.signalled)
            }
            defer { group.cancelAll() }
            while let next = await group.next() {
                if let next { return next }
            }
            return .signalled(SIGINT)
        }
        switch outcome {
        case .finished(let result):
            return try result.get()
        case .signalled(let signal):
            console.say("")
            await withdraw(because: signal == SIGINT ? "Interrupted" : "Stopped")
            throw ExitCode(128 + signal)
        }
    }

    /// Withdraws the request and says what became of it.
    func withdraw(because reason: String) async {
        do {
            try await client.withdraw(ticket)
            console.say("\(reason): the request is withdrawn; no trusted device can approve it now.")
        } catch let error as CountersignError where error.code == "already_decided" {
            console.say("\(reason), but a trusted device had already answered the request.")
        } catch let error as CountersignError where error.code == "expired" {
            console.say("\(reason); the request had expired.")
        } catch {
            console.say(
                "\(reason), but the request could not be withdrawn (\(error)); it expires at "
                    + "\(ticket.event.expiresAt.formatted(date: .omitted, time: .standard)).")
        }
    }
}

private enum WaitOutcome<T: Sendable>: Sendable {
    case finished(Result<T, any Error>)
    case signalled(Int32)
}

/// Signals delivered as values instead of ending the process.
struct SignalWatch {
    private let sources: [any DispatchSourceSignal]
    /// The signals as they come; finished once stopped.
    let delivered: AsyncStream<Int32>
    private let continuation: AsyncStream<Int32>.Continuation

    init(_ signals: [Int32]) {
        (delivered, continuation) = AsyncStream.makeStream(of: Int32.self)
        var sources: [any DispatchSourceSignal] = []
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [continuation] in continuation.yield(number) }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }

    /// Gives the signals their default action back.
    func stop() {
        for source in sources {
            source.cancel()
            signal(Int32(source.handle), SIG_DFL)
        }
        continuation.finish()
    }
}
