import Logging
import Testing

@testable import CountersignBroker

@Suite("access log")
struct AccessLogTests {
    @Test("durations in milliseconds with two decimals, truncated")
    func milliseconds() {
        #expect(AccessLog.milliseconds(.zero) == "0.00")
        #expect(AccessLog.milliseconds(.microseconds(9)) == "0.00")
        #expect(AccessLog.milliseconds(.microseconds(10)) == "0.01")
        #expect(AccessLog.milliseconds(.microseconds(1_239)) == "1.23")
        #expect(AccessLog.milliseconds(.microseconds(99_999)) == "99.99")
        #expect(AccessLog.milliseconds(.seconds(25) + .microseconds(50_100)) == "25050.10")
    }

    @Test("a request is an error line only when the broker itself failed; expected 5xx answers are notices")
    func levels() {
        #expect(AccessLog.level(status: 200) == .info)
        #expect(AccessLog.level(status: 429) == .info)
        #expect(AccessLog.level(status: 500) == .error)
        #expect(AccessLog.level(status: 501) == .notice, "totp_unavailable: a feature this broker runs without")
        #expect(AccessLog.level(status: 503) == .notice, "shutting down, or a store outage logged where it happens")
    }
}
