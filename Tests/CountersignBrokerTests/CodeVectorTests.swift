import CountersignCore
import CountersignOTP
import Crypto
import Foundation
import Testing

@testable import CountersignBroker

/// proto/vectors/codes.json: TOTP codes, recovery-code digests and sealed
/// TOTP secrets, made by scripts/generate-vectors.py.
struct CodeVectorFile: Decodable {
    struct Test: Decodable, CustomStringConvertible, Sendable {
        let tcId: Int
        let comment: String
        let kind: String
        let result: String
        let step: Int64?
        let code: String?
        let typed: String?
        let digest: String?
        let deviceId: String?
        let sealed: String?
        var description: String { "#\(tcId) \(kind): \(comment)" }
    }
    let totpSecret: String
    let vaultKey: String
    let tests: [Test]

    static let shared = try! JSONDecoder().decode(Self.self, from: Data(contentsOf: vectorFile("codes.json")))
}

@Suite("proto/vectors: TOTP codes, recovery codes, sealed secrets")
struct CodeVectorTests {
    @Test(arguments: CodeVectorFile.shared.tests)
    func vector(_ test: CodeVectorFile.Test) throws {
        let file = CodeVectorFile.shared
        let valid: Bool
        switch test.kind {
        case "totp":
            let secret = try #require(TOTPSecret(file.totpSecret))
            valid = secret.code(at: try #require(test.step)) == test.code
        case "recovery":
            let digest = RecoveryCode.digest(try #require(test.typed)).map { Base64URL.encode(Array($0)) }
            valid = digest != nil && digest == test.digest
            if test.result == "invalid" { #expect(digest == nil, "not a code at all") }
        case "sealed":
            let key = SymmetricKey(data: try #require(Base64URL.decode(file.vaultKey)))
            let text = try #require(test.sealed)
            let sealed = try #require(Base64URL.decode(text))
            let opened = try? TOTPVault(key: key).unseal(sealed, deviceID: try #require(test.deviceId))
            valid = opened?.value == file.totpSecret
        default:
            Issue.record("unknown kind \(test.kind)")
            return
        }
        #expect(valid == (test.result == "valid"))
    }
}
