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
}
