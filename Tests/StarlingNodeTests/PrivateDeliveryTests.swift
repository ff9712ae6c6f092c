import Testing
import StarlingCrypto
import StarlingMesh
@testable import StarlingNodeCore
import StarlingWire

/// Issue 55: private delivery's tables and the person's trust decisions are
/// values of their own, driven here alone (no node, no session): their caps,
/// their eviction order and their rules.
@Suite struct PrivateDeliveryTests {
    static func message(_ n: Int) -> NoisePayload { .privateMessage(PrivateMessage(messageID: "m\(n)", content: "hello \(n)")) }
    static let alice = PeerID(rawValue: 0xA1), bob = PeerID(rawValue: 0xB0)

    @Test func waitingIsBoundedPerPeerOldestFirst() {
        var d = PrivateDelivery(schedule: .init())
        for n in 0..<(PrivateDelivery.waitingPerPeer + 10) { do { let r = d.wait(Self.message(n), for: Self.alice, fresh: true); #expect(r) } }
        #expect(d.waitingCount == PrivateDelivery.waitingPerPeer)
        let kept = d.takeWaiting(for: Self.alice)
        #expect(kept.first == Self.message(10)) // the 10 oldest went
        #expect(kept.last == Self.message(PrivateDelivery.waitingPerPeer + 9))
        #expect(d.waitingCount == 0 && !d.hasWaiting(for: Self.alice))
    }

    @Test func waitingPeersAreCapped() {
        var d = PrivateDelivery(schedule: .init())
        for n in 0..<PrivateDelivery.waitingPeers { let r = d.wait(Self.message(0), for: PeerID(rawValue: UInt64(n + 1)), fresh: true); #expect(r) }
        // The 1,025th peer waits for nothing; a peer already waiting still queues (the control).
        do { let r = d.wait(Self.message(1), for: PeerID(rawValue: 0xFFFF_FFFF), fresh: true); #expect(!r) }
        do { let r = d.wait(Self.message(1), for: PeerID(rawValue: 1), fresh: true); #expect(r) }
        #expect(d.tableSizes["node.waitingPeers"] == PrivateDelivery.waitingPeers)
        #expect(d.waitingCount == PrivateDelivery.waitingPeers + 1)
    }

    @Test func aRetryWaitsOnceAFreshSendTwice() {
        var d = PrivateDelivery(schedule: .init())
        d.wait(Self.message(1), for: Self.bob, fresh: false)
        d.wait(Self.message(1), for: Self.bob, fresh: false)
        #expect(d.waitingCount == 1)
        d.wait(Self.message(1), for: Self.bob, fresh: true)
        #expect(d.waitingCount == 2)
    }

    @Test func onlyTheRecipientsReceiptCountsAndOnce() {
        var d = PrivateDelivery(schedule: .init())
        d.sent(Self.message(1), id: "m1", to: Self.bob, favorite: false, now: 0)
        #expect(d.payload("m1") == Self.message(1))
        do { let r = d.acknowledged("m1", by: Self.alice); #expect(!r) } // not the recipient
        #expect(d.payload("m1") != nil)
        do { let r = d.acknowledged("m1", by: Self.bob); #expect(r) }
        #expect(d.payload("m1") == nil && d.unacknowledgedCount == 0)
        do { let r = d.acknowledged("m1", by: Self.bob); #expect(!r) } // a duplicate
    }

    @Test func aPeerBackResendsWhatDidNotJustGo() {
        var d = PrivateDelivery(schedule: .init())
        d.sent(Self.message(1), id: "m1", to: Self.bob, favorite: false, now: 0)
        d.sent(Self.message(2), id: "m2", to: Self.bob, favorite: false, now: 0)
        let steps = d.peerReturned(Self.bob, flushed: [Self.message(1)], now: 10)
        let resent = steps.compactMap { if case let .resend(id, _, _) = $0 { id } else { nil } }
        #expect(resent == ["m2"]) // m1 just went with the session's waiting payloads
        // Without a flush, both go again (the control).
        var e = PrivateDelivery(schedule: .init())
        e.sent(Self.message(1), id: "m1", to: Self.bob, favorite: false, now: 0)
        e.sent(Self.message(2), id: "m2", to: Self.bob, favorite: false, now: 0)
        #expect(e.peerReturned(Self.bob, now: 10).count == 2)
    }

    @Test func handshakesStallAfterFiveSecondsAndProbesEveryThirty() {
        var d = PrivateDelivery(schedule: .init())
        d.handshakeBegan(with: Self.bob, now: 1_000)
        #expect(d.handshakesUnderWay)
        #expect(d.stalledHandshakes(now: 6_000).isEmpty)
        #expect(d.stalledHandshakes(now: 6_001).map(\.peer) == [Self.bob])
        d.handshakeEnded(with: Self.bob)
        #expect(!d.handshakesUnderWay)

        #expect(d.probeDue(Self.alice, now: 40_000))
        d.probed(Self.alice, now: 40_000)
        #expect(!d.probeDue(Self.alice, now: 69_999))
        #expect(d.probeDue(Self.alice, now: 70_000))
        #expect(d.probeDue(Self.alice, now: 39_000)) // a clock that went back
        d.peerGone(Self.alice)
        #expect(d.tableSizes["node.heldProbes"] == 0)
    }

    @Test func trustHoldsWhatAPersonReadsUntilDecided() throws {
        var t = Trust(known: false, favorites: [])
        do { let r = t.holds(Self.message(1), from: Self.alice, hops: 1, via: nil); #expect(r) }
        do { let r = t.holds(.delivered(messageID: "x"), from: Self.alice, hops: 1, via: nil); #expect(!r) } // a receipt is not held
        do { let r = t.holds(.unknown(type: NoisePayload.Kind.groupInvite, body: [1]), from: Self.bob, hops: 2, via: "yaok"); #expect(r) }
        for n in 0..<Trust.heldCapacity { _ = t.holds(Self.message(100 + n), from: Self.alice, hops: 1, via: nil) }
        #expect(t.heldCount == Trust.heldCapacity)
        let decided = t.decided()
        let held = try #require(decided)
        #expect(held.count == Trust.heldCapacity)
        #expect(held.first?.payload == Self.message(100)) // the oldest two went
        #expect(t.known && t.heldCount == 0)
        let again = t.decided()
        #expect(again == nil) // once
        do { let r = t.holds(Self.message(1), from: Self.alice, hops: 1, via: nil); #expect(!r) } // known: nothing waits
    }
}
