import StarlingMessenger
import StarlingMessengerCore
import Testing

@Suite struct HistoryCollectorTests {
    func key(_ sender: String, _ t: UInt64, _ text: String) -> HistoryKey { HistoryKey(sender: sender, timestamp: t, text: text) }

    /// A burst in the neighbour's order comes out oldest first, once quiet.
    @Test func aBurstComesOutOldestFirstOnceQuiet() {
        var h = HistoryCollector<String>(quiet: 600)
        h.add(key("b", 300, "third"), "third", now: 1_000)
        h.add(key("a", 100, "first"), "first", now: 1_100)
        h.add(key("c", 200, "second"), "second", now: 1_200)
        let r1 = h.take(now: 1_700)
        #expect(r1.isEmpty, "not quiet yet")
        let r2 = h.take(now: 1_800)
        #expect(r2 == ["first", "second", "third"])
        let r3 = h.take(now: 5_000)
        #expect(r3.isEmpty, "taken once")
        // Equal timestamps keep their arrival order.
        h.add(key("x", 7, "one"), "one", now: 6_000)
        h.add(key("y", 7, "two"), "two", now: 6_000)
        let r4 = h.take(now: 7_000)
        #expect(r4 == ["one", "two"])
    }

    /// The wall clock stepped back (NTP) past the last arrival: the burst comes
    /// out at once, not an hour later; a step forward only makes it quiet sooner.
    @Test func aClockStepBackDoesNotHoldTheBurst() {
        var h = HistoryCollector<String>(quiet: 600)
        h.add(key("a", 100, "first"), "first", now: 3_600_000)
        #expect(h.take(now: 3_600_100).isEmpty, "not quiet yet (control)")
        #expect(h.take(now: 1_000) == ["first"], "the clock went back an hour")
    }

    /// What was shown live, or as history before, is not shown again.
    @Test func whatWasShownIsNotShownAgain() {
        var h = HistoryCollector<String>(quiet: 0)
        h.shown(key("a", 1, "live"))
        let r5 = h.add(key("a", 1, "live"), "live", now: 10)
        #expect(!r5)
        let r6 = h.add(key("a", 2, "replayed"), "replayed", now: 10)
        #expect(r6)
        let r7 = h.add(key("a", 2, "replayed"), "again", now: 10)
        #expect(!r7, "a second neighbour's copy")
        let r8 = h.take(now: 10)
        #expect(r8 == ["replayed"])
        let r9 = h.add(key("a", 2, "replayed"), "replayed", now: 20)
        #expect(!r9)
        #expect(h.wasShown(key("a", 2, "replayed")))
        // Same sender and time, other text: another message.
        let r10 = h.add(key("a", 2, "other"), "other", now: 20)
        #expect(r10)
    }

    /// Bounded: a flood of history keeps the newest `capacity`, and the
    /// memory of shown keys forgets the oldest.
    @Test func aFloodIsBounded() {
        var h = HistoryCollector<UInt64>(capacity: 100, memory: 50, quiet: 0)
        for t in (0..<1_000 as Range<UInt64>).shuffled() { h.add(key("m", t, "\(t)"), t, now: 1) }
        #expect(h.waitingCount == 100)
        let r11 = h.take(now: 1)
        #expect(r11 == Array(900..<1_000))
        #expect(!h.wasShown(key("m", 949, "949")), "forgotten: the memory holds 50")
        #expect(h.wasShown(key("m", 950, "950")) && h.wasShown(key("m", 999, "999")))
        for t in 0..<10_000 as Range<UInt64> { h.shown(key("s", t, "")) }
        #expect(h.wasShown(key("s", 9_999, "")) && !h.wasShown(key("s", 9_949, "")))
    }
}
