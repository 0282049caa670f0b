/// A RADIUS packet (RFC 2865 §3): code, identifier, the 16-octet
/// authenticator and the attributes, in order. Parsing checks only the
/// framing; what the attributes mean, and whether the packet is
/// authentic, is ``RADIUSSecret``'s to check.
public struct RADIUSPacket: Sendable, Equatable {
    public var code: Code
    public var identifier: UInt8
    /// The Request Authenticator of a request, the Response Authenticator
    /// of an answer.
    public var authenticator: [UInt8]
    public var attributes: [RADIUSAttribute]

    /// The codes the broker reads or writes (RFC 2865 §3, RFC 5997).
    public enum Code: UInt8, Sendable {
        case accessRequest = 1
        case accessAccept = 2
        case accessReject = 3
        case accountingRequest = 4
        case accountingResponse = 5
        case accessChallenge = 11
        case statusServer = 12
    }

    /// The smallest packet: the header alone.
    public static let headerLength = 20
    /// The largest packet RFC 2865 §3 allows.
    public static let maximumLength = 4096

    public init(code: Code, identifier: UInt8, authenticator: [UInt8], attributes: [RADIUSAttribute] = []) {
        self.code = code
        self.identifier = identifier
        self.authenticator = authenticator
        self.attributes = attributes
    }

    /// Reads a packet as it came in a datagram. Octets past its Length
    /// field are padding and ignored; a packet shorter than its Length, an
    /// attribute that runs past it, one shorter than its own header, or an
    /// unknown code is refused (RFC 2865 §3: silently discarded).
    public init(decoding datagram: [UInt8]) throws(RADIUSError) {
        guard datagram.count >= Self.headerLength else { throw .malformed("shorter than a RADIUS header") }
        let length = Int(datagram[2]) << 8 | Int(datagram[3])
        guard length >= Self.headerLength, length <= Self.maximumLength else {
            throw .malformed("a Length of \(length) is outside 20 to 4096")
        }
        guard datagram.count >= length else { throw .malformed("shorter than its Length of \(length)") }
        guard let code = Code(rawValue: datagram[0]) else { throw .malformed("code \(datagram[0]) is not served") }
        var attributes: [RADIUSAttribute] = []
        var offset = Self.headerLength
        while offset < length {
            guard offset + 2 <= length else { throw .malformed("an attribute's header runs past the packet") }
            let attributeLength = Int(datagram[offset + 1])
            guard attributeLength >= 2, offset + attributeLength <= length else {
                throw .malformed("attribute \(datagram[offset]) has a length of \(attributeLength)")
            }
            attributes.append(
                RADIUSAttribute(
                    type: datagram[offset], value: Array(datagram[(offset + 2)..<(offset + attributeLength)])))
            offset += attributeLength
        }
        self.init(
            code: code, identifier: datagram[1], authenticator: Array(datagram[4..<20]), attributes: attributes)
    }

    /// The packet as sent: its Length computed from what it holds.
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = [code.rawValue, identifier, 0, 0]
        bytes.reserveCapacity(Self.headerLength + attributes.reduce(0) { $0 + 2 + $1.value.count })
        bytes += authenticator
        for attribute in attributes {
            bytes += [attribute.type, UInt8(2 + attribute.value.count)]
            bytes += attribute.value
        }
        bytes[2] = UInt8(bytes.count >> 8)
        bytes[3] = UInt8(bytes.count & 0xff)
        return bytes
    }

    /// The value of the first attribute of `type`, or nil.
    public func first(_ type: RADIUSAttribute.Kind) -> [UInt8]? {
        attributes.first { $0.type == type.rawValue }?.value
    }

    /// The first attribute of `type` as UTF-8 text, or nil (absent, or not text).
    public func text(_ type: RADIUSAttribute.Kind) -> String? {
        first(type).flatMap { String(validating: $0, as: UTF8.self) }
    }
}

/// One attribute: its type and value (at most 253 octets).
public struct RADIUSAttribute: Sendable, Equatable {
    public var type: UInt8
    public var value: [UInt8]

    /// The longest value an attribute holds.
    public static let maximumValueLength = 253

    /// An attribute of `type`; a value longer than an attribute holds is
    /// cut to ``maximumValueLength`` octets.
    public init(type: UInt8, value: [UInt8]) {
        self.type = type
        self.value = Array(value.prefix(Self.maximumValueLength))
    }

    public init(_ kind: Kind, _ value: [UInt8]) { self.init(type: kind.rawValue, value: value) }

    /// An integer attribute: four octets, most significant first (RFC 2865 §5).
    public init(_ kind: Kind, integer: UInt32) {
        self.init(kind, withUnsafeBytes(of: integer.bigEndian, Array.init))
    }

    /// A text attribute, cut to what an attribute holds on a character boundary.
    public init(_ kind: Kind, text: String) {
        var value: [UInt8] = []
        for character in text {
            let bytes = Array(String(character).utf8)
            guard value.count + bytes.count <= Self.maximumValueLength else { break }
            value += bytes
        }
        self.init(type: kind.rawValue, value: value)
    }

    /// The attributes the broker reads or writes (RFC 2865 §5, RFC 3579 §3.2).
    public enum Kind: UInt8, Sendable {
        case userName = 1
        case userPassword = 2
        case chapPassword = 3
        case nasIPAddress = 4
        case nasPort = 5
        case replyMessage = 18
        case state = 24
        case sessionTimeout = 27
        case calledStationID = 30
        case callingStationID = 31
        case nasIdentifier = 32
        case proxyState = 33
        case eapMessage = 79
        case messageAuthenticator = 80
        case nasIPv6Address = 95
    }
}

/// Why a datagram was not taken as a RADIUS packet, or a packet not as
/// authentic: a listener drops it (RFC 2865 §3), and logs why.
public enum RADIUSError: Error, Sendable, Equatable {
    /// Its framing is broken.
    case malformed(String)
    /// No Message-Authenticator where one is required (RFC 3579 §3.2; the
    /// BlastRADIUS fix, CVE-2024-3596).
    case missingMessageAuthenticator
    /// A Message-Authenticator or Response Authenticator that does not
    /// match: another secret, or a forged packet.
    case notAuthentic
    /// A User-Password that is not a whole number of 16-octet blocks of at
    /// most 128 octets.
    case malformedPassword
}
