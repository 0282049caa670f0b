import CountersignCore
import Foundation
import Testing

/// A sign-in by approval's `sub`, as proto/signing.md §4 says and an
/// independent implementation (scripts/generate-vectors.py) computes it.
@Suite("OpenID subjects against proto/vectors/openid-subjects.json")
struct OpenIDSubjectVectorTests {
    struct File: Decodable {
        struct Test: Decodable, CustomStringConvertible {
            let tcId: Int
            let comment: String
            let apiKeyId: String
            let user: String
            let sub: String
            var description: String { "#\(tcId) \(comment)" }
        }
        let tests: [Test]
    }

    static let file = try! Vectors.load("openid-subjects.json", as: File.self)

    @Test("each sub recomputed", arguments: file.tests)
    func subject(_ test: File.Test) {
        #expect(OpenIDSubject.of(apiKeyID: test.apiKeyId, user: test.user) == test.sub, "\(test)")
    }

    @Test("every sub differs: no two apps or names share one")
    func distinct() {
        #expect(Set(Self.file.tests.map(\.sub)).count == Self.file.tests.count)
    }
}
