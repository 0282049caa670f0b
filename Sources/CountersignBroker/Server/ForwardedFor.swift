import Foundation
import Glibc
import HTTPTypes
import Hummingbird

/// An address range such as `10.0.0.0/8`, `192.0.2.7` or `fd00::/8`.
public struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    let bytes: [UInt8]
    let prefix: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let bytes = Self.parse(String(first)) else { return nil }
        let prefix = parts.count == 2 ? Int(parts[1]) : bytes.count * 8
        guard let prefix, (0...bytes.count * 8).contains(prefix) else { return nil }
        self.bytes = bytes
        self.prefix = prefix
    }

    /// Whether `address` (IPv4 or IPv6 text) is in this range.
    public func contains(_ address: String) -> Bool {
        guard let other = Self.parse(address), other.count == bytes.count else { return false }
        for bit in 0..<prefix {
            let mask = UInt8(0x80) >> UInt8(bit % 8)
            if bytes[bit / 8] & mask != other[bit / 8] & mask { return false }
        }
        return true
    }

    public var description: String { "\(Self.format(bytes))/\(prefix)" }

    /// The 4 or 16 bytes of an address; an IPv4-mapped IPv6 address reads as IPv4.
    static func parse(_ text: String) -> [UInt8]? {
        // Plain byte buffers, not in_addr: which C module that type comes
        // from depends on the order the compiler loads NIO's and Glibc's.
        var v4 = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, text, &v4) == 1 { return v4 }
        var bytes = [UInt8](repeating: 0, count: 16)
        guard inet_pton(AF_INET6, text, &bytes) == 1 else { return nil }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return Array(bytes[12...])
        }
        return bytes
    }

    private static func format(_ bytes: [UInt8]) -> String {
        bytes.count == 4
            ? bytes.map(String.init).joined(separator: ".")
            : stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
                .joined(separator: ":")
    }
}

/// Behind a reverse proxy the TCP peer is the proxy: take the client's
/// address from `X-Forwarded-For`, but only when the peer is one of the
/// configured proxies, and only the right-most address that is not one of
/// them (anything to its left was written by the client and proves
/// nothing, so it is not even read). Without trusted proxies the header is
/// ignored.
struct TrustedProxies: Sendable {
    let networks: [IPNetwork]

    /// The client a trusted proxy forwarded the request for; nil when the
    /// peer is not a trusted proxy, the header is absent, or a hop read
    /// from the right, up to and including the client's, is no address.
    /// Text the client wrote to the left of its own address does not
    /// count: a proxy that appends to the client's header (nginx's
    /// `$proxy_add_x_forwarded_for`) must not let a client be counted as
    /// the proxy by sending `X-Forwarded-For: junk`.
    func forwardedClient(peer: String?, headers: HTTPFields) -> String? {
        guard let peer, isTrusted(peer) else { return nil }
        let hops = headers[values: .xForwardedFor].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() {
            guard IPNetwork.parse(hop) != nil else { return nil }
            if !isTrusted(hop) { return hop }
        }
        // Every hop a trusted proxy: the first of them asked for itself.
        return hops.first
    }

    private func isTrusted(_ address: String) -> Bool { networks.contains { $0.contains(address) } }
}

extension HTTPField.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
}
