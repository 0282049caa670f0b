import CountersignCore
import Foundation
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Keeps the broker's outgoing requests off its own network: a push
/// endpoint is a URL a device chose, a webhook endpoint one an app backend
/// chose, and without this the broker could be made to POST to addresses
/// only it can reach (cloud metadata, an admin port on loopback). An
/// endpoint's host must resolve only to public addresses, unless the
/// operator allows private ones (a push service or an app on the LAN).
///
/// Checked when an endpoint is registered and again before each send;
/// the HTTP client resolves the name once more to connect, so a name whose
/// answers change in between is not caught (documented in the threat model).
public struct EndpointGuard: Sendable {
    public let allowPrivateAddresses: Bool
    /// What the endpoints are, as a sentence names them: "push endpoint".
    public let what: String
    /// The `serve` flag that allows private addresses.
    public let flag: String

    public init(
        allowPrivateAddresses: Bool, what: String = "push endpoint", flag: String = "--allow-private-push-endpoints"
    ) {
        self.allowPrivateAddresses = allowPrivateAddresses
        self.what = what
        self.flag = flag
    }

    /// The host could not be resolved now (no answer, a resolver error):
    /// worth trying again, unlike an address that is not public.
    public struct Unresolved: Error, CustomStringConvertible {
        public let description: String
    }

    /// Throws a sentence for the device's user unless the endpoint may be
    /// used: ``Unresolved`` if its host does not resolve now.
    public func check(_ endpoint: String) async throws {
        guard !allowPrivateAddresses else { return }
        guard let host = URLComponents(string: endpoint)?.host, !host.isEmpty else {
            throw SenderFailure("the \(what) has no host")
        }
        let name = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let addresses = try await Self.resolve(name)
        guard !addresses.isEmpty else {
            throw Unresolved(description: "the \(what)'s host \(host) does not resolve")
        }
        if let inner = addresses.first(where: { !NetworkAddress.isPublic($0) }) {
            throw SenderFailure(
                "the \(what)'s host \(host) is a private address (\(NetworkAddress.text(inner))); "
                    + "the broker's operator can allow them with `device-broker serve \(flag)`")
        }
    }

    /// The host's addresses as raw bytes (4 or 16), from the system resolver
    /// on NIO's thread pool.
    static func resolve(_ host: String) async throws -> [[UInt8]] {
        try await NIOThreadPool.singleton.runIfActive {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var result: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else { return [] }
            defer { freeaddrinfo(first) }
            var addresses: [[UInt8]] = []
            var next: UnsafeMutablePointer<addrinfo>? = first
            while let info = next {
                if let address = info.pointee.ai_addr {
                    switch Int32(address.pointee.sa_family) {
                    case AF_INET:
                        address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                            var raw = $0.pointee.sin_addr
                            addresses.append(withUnsafeBytes(of: &raw) { Array($0) })
                        }
                    case AF_INET6:
                        address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                            var raw = $0.pointee.sin6_addr
                            addresses.append(withUnsafeBytes(of: &raw) { Array($0) })
                        }
                    default: break
                    }
                }
                next = info.pointee.ai_next
            }
            return addresses
        }
    }
}

/// Which addresses are on the public internet.
enum NetworkAddress {
    /// False for loopback, private, shared, link-local, multicast, reserved
    /// and documentation ranges, in IPv4 and IPv6; an IPv6 address that
    /// carries an IPv4 one (mapped, compatible, SIIT, NAT64, 6to4) is judged
    /// by the IPv4 address, and transition ranges whose IPv4 address cannot
    /// be read off (Teredo, local-use NAT64) are refused.
    static func isPublic(_ bytes: [UInt8]) -> Bool {
        if bytes.count == 4 { return isPublicV4(bytes) }
        guard bytes.count == 16 else { return false }
        func starts(_ prefix: [UInt8]) -> Bool { bytes.starts(with: prefix) }
        let embedded = Array(bytes[12...])
        // ::/96 (IPv4-compatible; :: and ::1 fall in 0.0.0.0/8), ::ffff:0:0/96
        // (mapped), ::ffff:0:0:0/96 (SIIT), 64:ff9b::/96 (NAT64).
        if starts([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]) || starts([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF])
            || starts([0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0])
            || starts([0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0])
        {
            return isPublicV4(embedded)
        }
        // 6to4 (2002::/16) carries its IPv4 address in bytes 2 to 5.
        if starts([0x20, 0x02]) { return isPublicV4(Array(bytes[2..<6])) }
        if starts([0, 0x64, 0xFF, 0x9B, 0, 0x01]) { return false }  // 64:ff9b:1::/48, local-use NAT64
        if starts([0x20, 0x01, 0, 0]) { return false }  // 2001::/32, Teredo
        if starts([0x20, 0x01, 0x0D, 0xB8]) { return false }  // 2001:db8::/32, documentation
        if starts([0x01, 0, 0, 0, 0, 0, 0, 0]) { return false }  // 100::/64, discard-only
        if bytes[0] & 0xFE == 0xFC { return false }  // fc00::/7, unique local
        if bytes[0] == 0xFE && bytes[1] & 0xC0 != 0 { return false }  // fe80::/10 link-local, fec0::/10 site-local
        if bytes[0] == 0xFF { return false }  // multicast
        return true
    }

    private static func isPublicV4(_ b: [UInt8]) -> Bool {
        switch (b[0], b[1]) {
        case (0, _), (10, _), (127, _): false
        case (100, 64...127): false  // carrier-grade NAT
        case (169, 254): false  // link-local, cloud metadata
        case (172, 16...31): false
        case (192, 168): false
        case (192, 0) where b[2] == 0 || b[2] == 2: false  // IETF protocol assignments, documentation
        case (198, 18...19): false  // benchmarking
        case (198, 51) where b[2] == 100, (203, 0) where b[2] == 113: false  // documentation
        case (224...255, _): false  // multicast, reserved, broadcast
        default: true
        }
    }

    static func text(_ bytes: [UInt8]) -> String {
        bytes.count == 4
            ? bytes.map(String.init).joined(separator: ".")
            : stride(from: 0, to: bytes.count, by: 2).map {
                String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
            }
            .joined(separator: ":")
    }
}
