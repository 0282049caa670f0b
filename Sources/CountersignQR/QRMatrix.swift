import CQREncode

/// A QR code's modules, made by Debian's libqrencode: what the agent draws
/// on a terminal and the console draws on its page.
public struct QRMatrix: Sendable, Equatable {
    /// Rows of modules, true for dark, with the quiet zone around them.
    public let modules: [[Bool]]

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Encodes `text` (8-bit, error correction level M).
    public init(_ text: String, quietZone: Int = 2) throws {
        guard let code = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M) else {
            throw Failure(description: "the text is too long for a QR code")
        }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        let data = UnsafeBufferPointer(start: code.pointee.data, count: width * width)
        let blank = [Bool](repeating: false, count: width + 2 * quietZone)
        var rows = [[Bool]](repeating: blank, count: quietZone)
        for y in 0..<width {
            // Bit 0 of each byte is the module's colour; the others say what it is part of.
            let row = (0..<width).map { data[y * width + $0] & 1 == 1 }
            rows.append([Bool](repeating: false, count: quietZone) + row + [Bool](repeating: false, count: quietZone))
        }
        rows += [[Bool]](repeating: blank, count: quietZone)
        modules = rows
    }

    /// The rows as strings of `1` (dark) and `0` (light).
    public var rows: [String] { modules.map { String($0.map { $0 ? "1" : "0" }) } }
}
