import CountersignQR
import Foundation

/// A QR code drawn with block characters, two rows of modules per line of
/// text, for a phone's camera to read off the terminal.
struct TerminalQRCode {
    /// Rows of modules, true for dark, with the quiet zone around them.
    let modules: [[Bool]]

    /// Encodes `text` (8-bit, error correction level M) with libqrencode.
    init(_ text: String, quietZone: Int = 2) throws {
        modules = try QRMatrix(text, quietZone: quietZone).modules
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
