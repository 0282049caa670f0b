import CountersignCore
import Foundation
import Testing

@Suite("secret tokens")
struct SecretTokenTests {
    @Test("a token carries the bytes asked for, base64url without padding")
    func length() throws {
        for bytes in [1, 16, 31, 32, 33, 64] {
            let token = SecretToken.generate(bytes: bytes)
            #expect(!token.contains("=") && !token.contains("+") && !token.contains("/"))
            #expect(try #require(Base64URL.decode(token)).count == bytes)
        }
        #expect(SecretToken.generate().count == 43)
    }

    @Test("tokens are distinct and every bit of them varies")
    func random() throws {
        let tokens = (0..<2000).map { _ in SecretToken.generate(bytes: 16) }
        #expect(Set(tokens).count == tokens.count)
        // Over 2,000 draws each of the 128 bits is both set and clear: a
        // constant, repeated or short-filled buffer would leave some fixed.
        var everSet = [UInt8](repeating: 0, count: 16)
        var everClear = [UInt8](repeating: 0, count: 16)
        for token in tokens {
            for (index, byte) in try #require(Base64URL.decode(token)).enumerated() {
                everSet[index] |= byte
                everClear[index] |= ~byte
            }
        }
        #expect(everSet.allSatisfy { $0 == 0xFF })
        #expect(everClear.allSatisfy { $0 == 0xFF })
    }
}
