import Testing
import StarlingWire
@testable import StarlingMesh

@Suite struct LifecycleTests {
    @Test func announcesExpireAfterSixtySecondsAndLeaveIsImmediate() {
        var t = PeerTable<String>()
        let a = PeerID(rawValue: 1), b = PeerID(rawValue: 2)
        let firstA = t.announced(a, info: "alice", hops: 1, now: 0)
        let refreshA = t.announced(a, info: "alicia", hops: 1, now: 30_000)
        let firstB = t.announced(b, info: "bob", hops: 2, now: 10_000)
        #expect(firstA == nil && refreshA?.info == "alice" && firstB == nil) // a refresh replaces
        #expect(t[a]?.info == "alicia" && t[b]?.hops == 2)
        let expired = t.expire(now: 70_001)              // b: 10 s + 60 s; a: 30 s + 60 s
        #expect(expired == [b])
        let none = t.expire(now: 90_000)
        #expect(none.isEmpty)
        let leftA = t.left(a)
        #expect(leftA?.info == "alicia" && t.entries.isEmpty)
        let back = t.announced(a, info: "alice", hops: 1, now: 100_000)
        #expect(back == nil)                             // back again: new
    }

    @Test func linksWithoutAnnounceOrSilentAreDropped() {
        var w = LinkWatch<Int>()
        w.up(1, now: 0)
        w.up(2, now: 0)
        w.announced(2)
        let early = w.check(now: 15_000)
        #expect(early.isEmpty)
        let first = w.check(now: 15_001)
        #expect(first.count == 1 && first[0].0 == 1 && first[0].1 == .noAnnounce)
        w.heard(2, now: 40_000)
        let quiet = w.check(now: 100_000)
        #expect(quiet.isEmpty)
        let second = w.check(now: 100_001)
        #expect(second.count == 1 && second[0].0 == 2 && second[0].1 == .silent)
    }

    @Test func fiveErrorDisconnectsInFiveMinutesBlockForFifteen() {
        var w = LinkWatch<String>()
        for i in 0..<4 { w.errorDisconnect("phone", now: Millis(i) * 60_000) }
        #expect(!w.isBlocked("phone", now: 240_000))
        // The first error falls out of the window: still four within 5 minutes.
        w.errorDisconnect("phone", now: 330_000)
        #expect(!w.isBlocked("phone", now: 330_000))
        w.errorDisconnect("phone", now: 331_000)
        #expect(w.isBlocked("phone", now: 331_000))
        #expect(w.isBlocked("phone", now: 331_000 + 899_999))
        #expect(!w.isBlocked("phone", now: 331_000 + 900_000))
        #expect(!w.isBlocked("other", now: 331_000))
    }
}
