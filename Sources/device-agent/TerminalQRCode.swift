import CQREncode
import Foundation

/// A QR code drawn with block characters, two rows of modules per line of
/// text, for a phone's camera to read off the terminal.
struct TerminalQRCode {
    /// Rows of modules, true for dark, with the quiet zone around them.
    let modules: [[Bool]]

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Encodes `text` (8-bit, error correction level M) with libqrencode.
    init(_ text: String, quietZone: Int = 2) throws {
        guard let code = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M) else {
            throw Failure(description: "the URL is too long for a QR code")
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

    /// The code as lines of text. With `colored`, dark modules are black on
    /// white whatever the terminal's colours (a light-on-dark code is not
    /// read by every camera); without, dark is drawn and light is blank,
    /// for a light background.
    func lines(colored: Bool) -> [String] {
        stride(from: 0, to: modules.count, by: 2).map { y in
            let top = modules[y]
            let bottom = y + 1 < modules.count ? modules[y + 1] : [Bool](repeating: false, count: top.count)
            let blocks = String(
                zip(top, bottom).map { upper, lower -> Character in
                    switch (upper, lower) {
                    case (true, true): "█"
                    case (true, false): "▀"
                    case (false, true): "▄"
                    case (false, false): " "
                    }
                })
            return colored ? "\u{1B}[30;107m" + blocks + "\u{1B}[0m" : blocks
        }
    }
}
