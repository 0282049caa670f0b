import Foundation
import Logging
import NIOCore
import Synchronization

/// Counts the broker's open connections, in all and by client address,
/// and decides whether a new one is served.
final class ConnectionCounter: Sendable {
    /// What becomes of a new connection.
    enum Admission: Sendable, Equatable {
        /// Served.
        case admitted
        /// Answered with `status` and closed: too many connections in all,
        /// or from its address.
        case refused(Refusal)
        /// Closed at once: so many connections are being refused that
        /// answering one more would cost descriptors the broker may not have.
        case dropped
    }

    enum Refusal: String, Sendable, Equatable {
        case overloaded = "too_many_connections"
        case address = "too_many_connections_from_address"
    }

    private struct State {
        var open = 0
        var refusing = 0
        var byAddress: [AddressKey: Int] = [:]
        var refusedSinceNotice = 0
        var lastNotice: ContinuousClock.Instant?
    }

    let limits: ConnectionLimits
    private let trustedProxies: [IPNetwork]
    private let state = Mutex(State())
    private let logger: Logger

    init(limits: ConnectionLimits, trustedProxies: [IPNetwork], logger: Logger) {
        self.limits = limits
        self.trustedProxies = trustedProxies
        self.logger = logger
    }

    /// Connections open now (served or being refused).
    var open: Int { state.withLock { $0.open + $0.refusing } }

    /// Decides on a connection from `address` and counts it; call
    /// ``release(_:from:)`` with the same answer once it closes.
    func admit(from address: SocketAddress?) -> Admission {
        let key = AddressKey(address, exempt: isTrustedProxy(address))
        let (admission, notice) = state.withLock { state -> (Admission, String?) in
            let fromAddress = key.map { state.byAddress[$0, default: 0] } ?? 0
            let admission = Self.decide(
                open: state.open, fromAddress: fromAddress, refusing: state.refusing, limits: limits)
            switch admission {
            case .admitted:
                state.open += 1
                if let key { state.byAddress[key] = fromAddress + 1 }
                return (admission, nil)
            case .refused: state.refusing += 1
            case .dropped: break
            }
            state.refusedSinceNotice += 1
            let now = ContinuousClock.now
            guard state.lastNotice.map({ now - $0 >= .seconds(10) }) ?? true else { return (admission, nil) }
            defer {
                state.lastNotice = now
                state.refusedSinceNotice = 0
            }
            return (
                admission,
                "refusing connections: \(state.refusedSinceNotice) refused since the last notice; "
                    + "\(state.open) open (at most \(limits.maximum), \(limits.perAddress) per address)"
            )
        }
        if let notice { logger.warning("\(notice)") }
        return admission
    }

    /// A connection counted by ``admit(from:)`` has closed.
    func release(_ admission: Admission, from address: SocketAddress?) {
        let key = AddressKey(address, exempt: isTrustedProxy(address))
        state.withLock { state in
            switch admission {
            case .admitted:
                state.open -= 1
                guard let key, let count = state.byAddress[key] else { return }
                state.byAddress[key] = count > 1 ? count - 1 : nil
            case .refused: state.refusing -= 1
            case .dropped: break
            }
        }
    }

    /// The rule: serve while under both limits; past them, answer while
    /// refusal slots last, then close at once.
    static func decide(open: Int, fromAddress: Int, refusing: Int, limits: ConnectionLimits) -> Admission {
        let refusal: Refusal
        if open >= limits.maximum {
            refusal = .overloaded
        } else if fromAddress >= limits.perAddress {
            refusal = .address
        } else {
            return .admitted
        }
        return refusing < limits.refusalSlots ? .refused(refusal) : .dropped
    }

    private func isTrustedProxy(_ address: SocketAddress?) -> Bool {
        guard let ip = address?.ipAddress else { return false }
        return trustedProxies.contains { $0.contains(ip) }
    }
}

/// What connections are counted by: an IPv4 address, or an IPv6 address's
/// /64 (one subscriber's usual allocation: counting single IPv6 addresses
/// would let one client take 2⁶⁴ of them).
struct AddressKey: Hashable, Sendable {
    let high: UInt64
    let low: UInt64

    /// Nil for an address that is not counted (a trusted proxy, a Unix socket).
    init?(_ address: SocketAddress?, exempt: Bool) {
        guard !exempt, let address else { return nil }
        switch address {
        case .v4(let v4):
            high = 0
            low = UInt64(UInt32(bigEndian: v4.address.sin_addr.s_addr))
        case .v6(let v6):
            let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
                high = 0
                low = bytes[12...].reduce(0) { $0 << 8 | UInt64($1) }
            } else {
                high = bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
                low = 1
            }
        case .unixDomainSocket:
            return nil
        }
    }
}
