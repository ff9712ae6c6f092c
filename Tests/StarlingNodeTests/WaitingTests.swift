import Foundation
import StarlingTestSupport
import Testing

/// The tests' wait (`waitUntil`) gives what it waits for the time the process
/// ran: a stall of the whole process (synchronous work holding both of CI's
/// cooperative threads) does not use up its limit.
@Suite struct WaitingTests {
    final class Polls: @unchecked Sendable {
        var count = 0
    }

    @Test func aStallDoesNotUseUpTheWait() async {
        let polls = Polls()
        // The first poll is held 1.5 s (as a stalled process is); the condition holds at the 5th.
        let held = await waitUntil(seconds: 0.5) {
            polls.count += 1
            if polls.count == 1 { usleep(1_500_000) }
            return polls.count >= 5
        }
        #expect(held && polls.count == 5, "\(polls.count) polls")
        // The control: a condition that never holds still ends, after about its limit in polls.
        let never = Polls()
        let start = ContinuousClock.now
        #expect(await waitUntil(seconds: 0.5) { never.count += 1; return false } == false)
        #expect(ContinuousClock.now - start < .seconds(3) && never.count >= 5, "\(never.count) polls in \(ContinuousClock.now - start)")
    }
}
