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
        // The control: a condition that never holds still ends, after its limit in polls: each
        // counts 20 ms to 100 ms, so 0.5 s is 5 to 25 polls (and the last ask). Counted, not timed:
        // CI held this process 3 s over seven polls once, which a wall-clock bound called a failure.
        let never = Polls()
        #expect(await waitUntil(seconds: 0.5) { never.count += 1; return false } == false)
        let most = Int((0.5 * TestTimeouts.scale / 0.02).rounded(.up)) + 1
        let least = Int((0.5 * TestTimeouts.scale / 0.1).rounded(.down))
        #expect((least...most).contains(never.count), "\(never.count) polls, not \(least) to \(most)")
    }
}
