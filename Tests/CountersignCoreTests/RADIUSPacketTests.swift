import CountersignCore
import Crypto
import Foundation
import Testing

/// The RADIUS codec against packets pyrad made (Tests/Fixtures/radius,
/// scripts/generate-radius-vectors.py).
@Suite("RADIUS packets")
struct RADIUSPacketTests {
    struct Vectors: Decodable {
        struct Case: Decodable {
            let name: String
            let secret: String
            let request: String
            let user: String
            let password: String
            let messageAuthenticator: Bool
            let answers: [String: String]

            enum CodingKeys: String, CodingKey {
                case name, secret, request, user, password, answers
                case messageAuthenticator = "message_authenticator"
            }
        }
        let cases: [Case]
    }

    static let vectors: [Vectors.Case] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/radius/vectors.json")
        guard let data = try? Data(contentsOf: url), let vectors = try? JSONDecoder().decode(Vectors.self, from: data)
        else { return [] }
        return vectors.cases
    }()

    static func bytes(_ hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    @Test("the vectors are there")
    func vectorsRead() {
        #expect(Self.vectors.count == 4)
    }

    @Test("a request pyrad made reads as it meant: user, password, Message-Authenticator", arguments: vectors)
    func requests(_ vector: Vectors.Case) throws {
        let datagram = Self.bytes(vector.request)
        let request = try RADIUSPacket(decoding: datagram)
        let secret = RADIUSSecret(vector.secret)
        #expect(request.code == .accessRequest)
        #expect(request.text(.userName) == vector.user)
        #expect(request.text(.callingStationID) == "198.51.100.23")
        #expect(try secret.password(of: request) == Array(vector.password.utf8))
        #expect(request.encoded() == datagram, "written back as read")
        if vector.messageAuthenticator {
            try secret.verifyRequest(request, required: true)
            #expect(throws: RADIUSError.notAuthentic, "another secret") {
                try RADIUSSecret("not the secret").verifyRequest(request, required: true)
            }
            var tampered = request
            let name = try #require(
                tampered.attributes.firstIndex { $0.type == RADIUSAttribute.Kind.userName.rawValue })
            tampered.attributes[name] = RADIUSAttribute(.userName, Array("mallory".utf8))
            #expect(throws: RADIUSError.notAuthentic, "a changed attribute") {
                try secret.verifyRequest(tampered, required: true)
            }
        } else {
            #expect(throws: RADIUSError.missingMessageAuthenticator) {
                try secret.verifyRequest(request, required: true)
            }
            try secret.verifyRequest(request, required: false)
        }
    }

    @Test("the answers pyrad signed verify, and ours verify the same way", arguments: vectors)
    func answers(_ vector: Vectors.Case) throws {
        let request = try RADIUSPacket(decoding: Self.bytes(vector.request))
        let secret = RADIUSSecret(vector.secret)
        for (label, hex) in vector.answers {
            let answer = try secret.verifyAnswer(Self.bytes(hex), to: request)
            #expect(answer.identifier == request.identifier, "\(label)")
            #expect(throws: RADIUSError.notAuthentic, "\(label) under another secret") {
                try RADIUSSecret("other").verifyAnswer(Self.bytes(hex), to: request)
            }
        }
        let challenge = try RADIUSPacket(decoding: Self.bytes(vector.answers["challenge"]!))
        #expect(challenge.code == .accessChallenge)
        #expect(challenge.text(.replyMessage) == "Approve on your device: type 42")

        let ours = secret.answer(
            .accessChallenge, to: request,
            attributes: [RADIUSAttribute(.replyMessage, text: "type 42"), RADIUSAttribute(.state, [1, 2, 3])])
        let read = try secret.verifyAnswer(ours, to: request)
        #expect(read.attributes.first?.type == RADIUSAttribute.Kind.messageAuthenticator.rawValue, "first")
        #expect(read.first(.state) == [1, 2, 3])

        // An answer without a Message-Authenticator, signed right otherwise:
        // refused unless the server is known to send none.
        var bare = try RADIUSPacket(decoding: ours)
        bare.attributes.removeFirst()
        var unsigned = bare.encoded()
        unsigned.replaceSubrange(4..<20, with: request.authenticator)
        unsigned.replaceSubrange(4..<20, with: Array(Insecure.MD5.hash(data: unsigned + Array(vector.secret.utf8))))
        #expect(throws: RADIUSError.missingMessageAuthenticator) { try secret.verifyAnswer(unsigned, to: request) }
        #expect(try secret.verifyAnswer(unsigned, to: request, requiring: false).code == .accessChallenge)
        var forged = unsigned
        forged[forged.count - 1] ^= 1
        #expect(throws: RADIUSError.notAuthentic, "the Response Authenticator still holds") {
            try secret.verifyAnswer(forged, to: request, requiring: false)
        }
    }

    @Test("a request we send hides the password as pyrad reads it, and signs itself")
    func requestsSent() throws {
        let secret = RADIUSSecret("upstream secret")
        for password in ["", "short", String(repeating: "x", count: 16), String(repeating: "y", count: 40)] {
            let request = secret.request(
                identifier: 9, attributes: [RADIUSAttribute(.userName, text: "erin")], password: Array(password.utf8))
            let read = try RADIUSPacket(decoding: request.encoded())
            try secret.verifyRequest(read, required: true)
            #expect(try secret.password(of: read) == Array(password.utf8))
        }
    }

    @Test("broken framing is refused, padding past the Length ignored")
    func framing() throws {
        let request = try RADIUSPacket(decoding: Self.bytes(Self.vectors[0].request))
        let datagram = request.encoded()
        #expect(try RADIUSPacket(decoding: datagram + [0, 0, 0]) == request, "padding")
        for broken in [
            Array(datagram.prefix(19)), Array(datagram.dropLast()),
            [datagram[0], datagram[1], 0, 19] + datagram.dropFirst(4),
            [99] + datagram.dropFirst(),
        ] {
            #expect(throws: RADIUSError.self) { try RADIUSPacket(decoding: broken) }
        }
        var zeroLength = datagram
        zeroLength[21] = 0  // the first attribute's length
        #expect(throws: RADIUSError.self) { try RADIUSPacket(decoding: zeroLength) }
        var hidden = request
        hidden.attributes = hidden.attributes.map {
            $0.type == RADIUSAttribute.Kind.userPassword.rawValue ? RADIUSAttribute(.userPassword, [1, 2, 3]) : $0
        }
        #expect(throws: RADIUSError.malformedPassword) { try RADIUSSecret("x").password(of: hidden) }
    }
}

extension RADIUSPacketTests.Vectors.Case: CustomTestStringConvertible {
    var testDescription: String { name }
}
