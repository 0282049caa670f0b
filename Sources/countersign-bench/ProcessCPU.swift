import Crypto
import Foundation

/// What the broker's processes spend: CPU time from /proc, and the unit it
/// is told in, one P-256 signature verification on this machine.
enum ProcessCPU {
    /// User plus system CPU time the process has used, in seconds
    /// (`utime` and `stime` of /proc/PID/stat, in clock ticks).
    static func seconds(pid: Int32) -> Double? {
        guard let handle = FileHandle(forReadingAtPath: "/proc/\(pid)/stat"),
            let data = try? handle.readToEnd(), let stat = String(data: data, encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // After the command's closing parenthesis: state is field 3, utime 14, stime 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The CPU seconds all of `pids` have used.
    static func seconds(pids: [Int32]) -> Double? {
        let each = pids.compactMap(seconds(pid:))
        return each.count == pids.count && !pids.isEmpty ? each.reduce(0, +) : nil
    }

    /// Seconds one P-256 ECDSA verification (swift-crypto, BoringSSL) takes
    /// here, now: the fastest of five batches of 400, so that a busy moment
    /// does not inflate it.
    static func oneVerification() -> Double {
        let key = P256.Signing.PrivateKey()
        let message = Data("countersign-bench".utf8)
        guard let signature = try? key.signature(for: message) else { return .nan }
        var fastest = Double.infinity
        for _ in 0..<5 {
            let started = ContinuousClock.now
            var valid = 0
            for _ in 0..<400 where key.publicKey.isValidSignature(signature, for: message) { valid += 1 }
            let elapsed = ContinuousClock.now - started
            precondition(valid == 400)
            fastest = min(
                fastest,
                (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18) / 400)
        }
        return fastest
    }
}
