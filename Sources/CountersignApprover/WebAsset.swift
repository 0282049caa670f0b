import Crypto
import Foundation

/// One file of a page the broker serves, with what its response needs.
public struct WebAsset: Sendable {
    public let bytes: [UInt8]
    public let contentType: String
    /// A strong validator for `If-None-Match`: the files change only with the binary.
    public let etag: String

    init(_ bytes: [UInt8], _ contentType: String) {
        self.bytes = bytes
        self.contentType = contentType
        etag = "\"" + SHA256.hash(data: bytes).prefix(12).map { String(format: "%02x", $0) }.joined() + "\""
    }
}
