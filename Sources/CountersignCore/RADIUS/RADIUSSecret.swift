import Crypto
import Foundation

/// The secret a RADIUS server shares with one client (NAS), and the
/// proofs made with it: the hidden User-Password (RFC 2865 §5.2), the
/// Response Authenticator (§3) and the Message-Authenticator (RFC 3579
/// §3.2, HMAC-MD5). MD5 is what the protocol fixes, not a choice.
public struct RADIUSSecret: Sendable {
    let bytes: [UInt8]

    public init(_ secret: [UInt8]) { bytes = secret }
    public init(_ secret: String) { bytes = Array(secret.utf8) }

    // MARK: Requests received

    /// Checks a request's Message-Authenticator: `missingMessageAuthenticator`
    /// without one when `required`, `notAuthentic` when it does not match.
    /// A request that carries one is always checked.
    public func verifyRequest(_ request: RADIUSPacket, required: Bool) throws(RADIUSError) {
        let found = request.attributes.filter { $0.type == RADIUSAttribute.Kind.messageAuthenticator.rawValue }
        guard let authenticator = found.first else {
            if required { throw .missingMessageAuthenticator }
            return
        }
        guard found.count == 1, authenticator.value.count == 16,
            Self.constantTimeEquals(
                messageAuthenticator(of: request, header: request.authenticator), authenticator.value)
        else { throw .notAuthentic }
    }

    /// Checks an Accounting-Request's Request Authenticator: MD5 of the
    /// packet with sixteen zero octets in its place, then the secret
    /// (RFC 2866 §3). `notAuthentic` when it does not match.
    public func verifyAccountingRequest(_ request: RADIUSPacket) throws(RADIUSError) {
        var zeroed = request
        zeroed.authenticator = [UInt8](repeating: 0, count: 16)
        guard Self.constantTimeEquals(md5(zeroed.encoded() + bytes), request.authenticator) else {
            throw .notAuthentic
        }
        // A Message-Authenticator it carries must hold too.
        try verifyRequest(request, required: false)
    }

    /// The password a request's User-Password hides (RFC 2865 §5.2), its
    /// padding taken off; nil without one.
    public func password(of request: RADIUSPacket) throws(RADIUSError) -> [UInt8]? {
        guard let hidden = request.first(.userPassword) else { return nil }
        guard !hidden.isEmpty, hidden.count <= 128, hidden.count % 16 == 0 else { throw .malformedPassword }
        var plain: [UInt8] = []
        plain.reserveCapacity(hidden.count)
        var previous = request.authenticator
        for start in stride(from: 0, to: hidden.count, by: 16) {
            let block = Array(hidden[start..<(start + 16)])
            let pad = md5(bytes + previous)
            plain += zip(block, pad).map { $0 ^ $1 }
            previous = block
        }
        while plain.last == 0 { plain.removeLast() }
        return plain
    }

    // MARK: Answers sent

    /// The answer to `request`, ready to send: the Message-Authenticator
    /// first (as BlastRADIUS's fix asks, so that no attribute a forger
    /// controls comes before it), then `attributes`, then the request's
    /// Proxy-State attributes in order (RFC 2865 §5.33), signed with the
    /// Response Authenticator. An Accounting-Response has no
    /// Message-Authenticator (RFC 2866 defines none).
    public func answer(_ code: RADIUSPacket.Code, to request: RADIUSPacket, attributes: [RADIUSAttribute])
        -> [UInt8]
    {
        let proxyStates = request.attributes.filter { $0.type == RADIUSAttribute.Kind.proxyState.rawValue }
        let signed = code != .accountingResponse
        var packet = RADIUSPacket(
            code: code, identifier: request.identifier, authenticator: request.authenticator,
            attributes: (signed ? [RADIUSAttribute(.messageAuthenticator, [UInt8](repeating: 0, count: 16))] : [])
                + attributes + proxyStates)
        if signed { packet.attributes[0].value = messageAuthenticator(of: packet, header: request.authenticator) }
        var bytes = packet.encoded()
        let responseAuthenticator = md5(bytes + self.bytes)
        bytes.replaceSubrange(4..<20, with: responseAuthenticator)
        return bytes
    }

    // MARK: Requests sent (to an upstream server)

    /// An Access-Request to send: a random Request Authenticator, `password`
    /// hidden in User-Password when given, and a Message-Authenticator.
    public func request(identifier: UInt8, attributes: [RADIUSAttribute], password: [UInt8]?) -> RADIUSPacket {
        var generator = SystemRandomNumberGenerator()
        let authenticator = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        var all = [RADIUSAttribute(.messageAuthenticator, [UInt8](repeating: 0, count: 16))] + attributes
        if let password { all.append(RADIUSAttribute(.userPassword, hide(password, authenticator: authenticator))) }
        var packet = RADIUSPacket(
            code: .accessRequest, identifier: identifier, authenticator: authenticator, attributes: all)
        packet.attributes[0].value = messageAuthenticator(of: packet, header: authenticator)
        return packet
    }

    /// Checks an answer to `request` from the server that shares this
    /// secret: its identifier, its Response Authenticator, and its
    /// Message-Authenticator, which must be there unless `requiring` is
    /// false (a server without the BlastRADIUS fix sends none); one that is
    /// there is always checked.
    public func verifyAnswer(_ answer: [UInt8], to request: RADIUSPacket, requiring: Bool = true) throws(RADIUSError)
        -> RADIUSPacket
    {
        let packet = try RADIUSPacket(decoding: answer)
        let length = Int(answer[2]) << 8 | Int(answer[3])
        var signed = Array(answer[0..<length])
        signed.replaceSubrange(4..<20, with: request.authenticator)
        guard packet.identifier == request.identifier,
            Self.constantTimeEquals(md5(signed + bytes), packet.authenticator)
        else { throw .notAuthentic }
        let found = packet.attributes.filter { $0.type == RADIUSAttribute.Kind.messageAuthenticator.rawValue }
        guard let authenticator = found.first else {
            if requiring { throw .missingMessageAuthenticator }
            return packet
        }
        guard found.count == 1,
            Self.constantTimeEquals(
                messageAuthenticator(of: packet, header: request.authenticator), authenticator.value)
        else { throw .notAuthentic }
        return packet
    }

    /// `password` hidden as User-Password under `authenticator` (RFC 2865 §5.2).
    func hide(_ password: [UInt8], authenticator: [UInt8]) -> [UInt8] {
        var padded = Array(password.prefix(128))
        let blocks = max(1, (padded.count + 15) / 16)
        padded += [UInt8](repeating: 0, count: blocks * 16 - padded.count)
        var hidden: [UInt8] = []
        var previous = authenticator
        for start in stride(from: 0, to: padded.count, by: 16) {
            let pad = md5(bytes + previous)
            let block = zip(padded[start..<(start + 16)], pad).map { $0 ^ $1 }
            hidden += block
            previous = block
        }
        return hidden
    }

    // MARK: The proofs

    /// HMAC-MD5 of `packet` with its Message-Authenticator zeroed and
    /// `header` as its authenticator: the request's own for a request, the
    /// Request Authenticator it answers for an answer (RFC 3579 §3.2).
    func messageAuthenticator(of packet: RADIUSPacket, header: [UInt8]) -> [UInt8] {
        var zeroed = packet
        zeroed.authenticator = header
        for index in zeroed.attributes.indices
        where zeroed.attributes[index].type == RADIUSAttribute.Kind.messageAuthenticator.rawValue {
            zeroed.attributes[index].value = [UInt8](repeating: 0, count: 16)
        }
        let code = HMAC<Insecure.MD5>.authenticationCode(for: zeroed.encoded(), using: SymmetricKey(data: bytes))
        return Array(code)
    }

    private func md5(_ data: [UInt8]) -> [UInt8] { Array(Insecure.MD5.hash(data: data)) }

    private static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        SecretToken.constantTimeEquals(Data(a), Data(b))
    }
}
