import Testing
@testable import ChatClient

@Suite("Reconnect backoff")
struct ReconnectBackoffTests {
    @Test func doublesFromTheBaseUpToTheMaximumWithJitterInTheUpperHalf() {
        let backoff = ReconnectBackoff(base: .milliseconds(100), maximum: .seconds(2))
        #expect(backoff.delay(attempt: 1, unit: 1) == .milliseconds(100))
        #expect(backoff.delay(attempt: 1, unit: 0) == .milliseconds(50))
        #expect(backoff.delay(attempt: 3, unit: 1) == .milliseconds(400))
        #expect(backoff.delay(attempt: 10, unit: 1) == .seconds(2))
        #expect(backoff.delay(attempt: 1_000, unit: 0.5) == .milliseconds(1_500))
    }
}
