import Foundation
import Testing

@testable import CountersignSenders

/// Which resolved addresses a push may go to.
@Suite("push endpoints: only public addresses")
struct EndpointGuardTests {
    static func bytes(_ text: String) -> [UInt8] {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        precondition(inet_pton(AF_INET6, text, &v6) == 1, text)
        return withUnsafeBytes(of: &v6) { Array($0) }
    }

    @Test(
        "refused: loopback, private, shared, link-local, reserved and documentation ranges, and IPv4 inside IPv6",
        arguments: [
            "0.0.0.0", "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.254", "192.168.1.1",
            "100.64.0.1", "169.254.169.254", "192.0.0.8", "192.0.2.1", "198.18.0.1", "198.51.100.7", "203.0.113.9",
            "224.0.0.1", "255.255.255.255", "::", "::1", "::127.0.0.1", "::7f00:1", "::ffff:127.0.0.1",
            "::ffff:10.0.0.1", "::ffff:0:127.0.0.1", "64:ff9b::127.0.0.1", "64:ff9b:1::8.8.8.8",
            "2002:7f00:1::", "2002:c0a8:101::1", "2001::1", "2001:db8::1", "100::1", "fc00::1", "fd12:3456::1",
            "fe80::1", "fec0::1", "ff02::1",
        ])
    func refused(_ address: String) {
        #expect(!NetworkAddress.isPublic(Self.bytes(address)), "\(address)")
    }

    @Test(
        "taken: public IPv4 and IPv6, also carried in IPv6",
        arguments: [
            "8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "2a00:1450:4001::200e",
            "::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1",
        ])
    func taken(_ address: String) {
        #expect(NetworkAddress.isPublic(Self.bytes(address)), "\(address)")
    }
}
