import Logging
import NIOCore
import Testing

@testable import CountersignBroker

@Suite("connection limits")
struct ConnectionLimitsTests {
    @Test("a connection is served under both limits, answered past one, and closed once refusals use their slots")
    func decide() {
        let limits = ConnectionLimits(maximum: 100, perAddress: 10)
        #expect(ConnectionCounter.decide(open: 99, fromAddress: 9, refusing: 0, limits: limits) == .admitted)
        #expect(
            ConnectionCounter.decide(open: 100, fromAddress: 0, refusing: 0, limits: limits) == .refused(.overloaded))
        #expect(ConnectionCounter.decide(open: 50, fromAddress: 10, refusing: 7, limits: limits) == .refused(.address))
        #expect(ConnectionCounter.decide(open: 50, fromAddress: 10, refusing: 8, limits: limits) == .dropped)
    }

    @Test("the maximum is lowered to what the open-file limit bears, refusals and reserved descriptors beside it")
    func fitted() {
        for descriptors in [256, 1024, 4096, 65536, 1_048_576] {
            let reserved = ConnectionLimits.reservedDescriptors(databaseConnections: 20)
            let limits = ConnectionLimits(maximum: 10_000_000).fitted(toOpenFiles: descriptors, reserved: reserved)
            #expect(limits.maximum + limits.refusalSlots + reserved <= descriptors, "\(descriptors): \(limits)")
            #expect(limits.maximum + limits.refusalSlots + reserved > descriptors - 4, "none wasted: \(limits)")
            #expect(limits.perAddress <= limits.maximum)
        }
        #expect(ConnectionLimits(maximum: 500).fitted(toOpenFiles: 65536, reserved: 148).maximum == 500)
    }

    @Test("connections are counted per IPv4 address and per IPv6 /64; trusted proxies are not counted by address")
    func countedByAddress() throws {
        let counter = ConnectionCounter(
            limits: ConnectionLimits(maximum: 100, perAddress: 2), trustedProxies: [IPNetwork("10.0.0.0/8")!],
            logger: Logger(label: "test"))
        let first = try SocketAddress(ipAddress: "2001:db8:1:2::1", port: 1)
        let sameSlash64 = try SocketAddress(ipAddress: "2001:db8:1:2:ffff::9", port: 2)
        let otherSlash64 = try SocketAddress(ipAddress: "2001:db8:1:3::1", port: 3)
        #expect(counter.admit(from: first) == .admitted)
        #expect(counter.admit(from: sameSlash64) == .admitted)
        #expect(counter.admit(from: first) == .refused(.address))
        #expect(counter.admit(from: otherSlash64) == .admitted)
        let mapped = try SocketAddress(ipAddress: "::ffff:192.0.2.1", port: 4)
        let v4 = try SocketAddress(ipAddress: "192.0.2.1", port: 5)
        #expect(counter.admit(from: mapped) == .admitted)
        #expect(counter.admit(from: v4) == .admitted)
        #expect(counter.admit(from: v4) == .refused(.address), "an IPv4-mapped address is the IPv4 address")
        let proxy = try SocketAddress(ipAddress: "10.1.2.3", port: 6)
        for _ in 0..<10 { #expect(counter.admit(from: proxy) == .admitted) }
        // Released, the address has room again.
        counter.release(.admitted, from: first)
        #expect(counter.admit(from: sameSlash64) == .admitted)
        // 15 served, and the 2 refused until their answers are sent.
        #expect(counter.open == 17)
    }
}
