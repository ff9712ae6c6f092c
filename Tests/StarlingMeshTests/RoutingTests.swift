import StarlingTestSupport
import Testing
import StarlingWire
@testable import StarlingMesh
@testable import StarlingSim

private func peer(_ i: Int) -> PeerID { Simulator.peerID(i) }

private func directed(from s: Int, to d: Int, at time: Millis = 0, ttl: UInt8 = 7, text: String = "psst") -> Packet {
    Packet(type: .noiseEncrypted, ttl: ttl, timestamp: time, senderID: peer(s), recipientID: peer(d),
           payload: Array(text.utf8), compress: false)
}

/// Who got which directed packets, for the simulator's callbacks.
private final class Inbox: @unchecked Sendable {
    var got: [Int: [Packet]] = [:]
}

/// A ring of `n` nodes: two ways round.
private func ring(_ n: Int) -> Topology {
    Topology(neighbors: (0..<n).map { [($0 + n - 1) % n, ($0 + 1) % n] })
}

@Suite struct RouteTableTests {
    let a = PeerID(rawValue: 1), b = PeerID(rawValue: 2), c = PeerID(rawValue: 3), d = PeerID(rawValue: 4)

    @Test func shortestPathOverAnnouncedNeighbours() {
        var t = RouteTable()
        t.learn(b, neighbors: [a, c], now: 0)
        t.learn(c, neighbors: [b, d], now: 0)
        t.learn(d, neighbors: [c], now: 0)
        #expect(t.route(from: a, to: d, direct: [b], now: 1) == [b, c])
        #expect(t.route(from: a, to: b, direct: [b], now: 1) == [])           // a neighbour: no intermediate hop
        #expect(t.route(from: a, to: PeerID(rawValue: 9), direct: [b], now: 1) == nil)
        #expect(t.route(from: a, to: d, direct: [b], now: 1, maxHops: 2) == nil) // three hops needed
    }

    @Test func anEdgeNamedByOneEndCountsButConfirmedEdgesWin() {
        var t = RouteTable()
        // Two ways from a to d, both three hops: via b–c (only c names d) and via x–y (confirmed both ways).
        let x = PeerID(rawValue: 10), y = PeerID(rawValue: 11)
        t.learn(b, neighbors: [a, c], now: 0)
        t.learn(c, neighbors: [b, d], now: 0)
        t.learn(x, neighbors: [a, y], now: 0)
        t.learn(y, neighbors: [x, d], now: 0)
        t.learn(d, neighbors: [y], now: 0)                     // d does not name c
        #expect(t.route(from: a, to: d, direct: [b, x], now: 1) == [x, y])
        t.forget(y)                                            // y is gone: only the one-sided way remains
        #expect(t.route(from: a, to: d, direct: [b, x], now: 1) == [b, c])
    }

    @Test func listsExpireAfterTheirLifetime() {
        var t = RouteTable()
        t.learn(b, neighbors: [a, c], now: 0)
        #expect(t.knows(b, now: 60_000))
        #expect(t.route(from: a, to: c, direct: [b], now: 60_000) == [b])
        #expect(!t.knows(b, now: 60_001))
        #expect(t.route(from: a, to: c, direct: [b], now: 60_001) == nil)
        t.expire(now: 60_001)
        #expect(t.count == 0)
    }

    @Test func boundedInPeers() {
        var t = RouteTable()
        t.capacity = 100
        for i in 0..<1_000 { t.learn(PeerID(rawValue: UInt64(i)), neighbors: [PeerID(rawValue: UInt64(i + 1))], now: Millis(i)) }
        #expect(t.count == 100)
        #expect(t.knows(PeerID(rawValue: 999), now: 1_000))
        #expect(!t.knows(PeerID(rawValue: 0), now: 1_000))
    }
}

@Suite struct SourceRouteTests {
    @Test func aKnownRouteIsUsedOneTransmissionPerHop() throws {
        var sim = Simulator(topology: .line(6), radio: .init(), policy: FloodingPolicy(jitter: 0), seed: 1)
        sim.learnTopology()
        let inbox = Inbox()
        sim.onDeliver = { node, p, _, _ in inbox.got[node, default: []].append(p) }
        sim.originate(directed(from: 0, to: 5), at: 0)
        sim.run(until: 1_000)
        let got = try #require(inbox.got[5]?.first)
        #expect(got.route == [peer(1), peer(2), peer(3), peer(4)])
        #expect(got.version == 2)
        #expect(sim.transmissions.reduce(0, +) == 5)        // one per hop, no flood
        #expect(sim.routers[0].statistics.routed == 1)
        #expect(sim.routers[1...4].allSatisfy { $0.statistics.unicastForwards == 1 })
        #expect(inbox.got.keys.sorted() == [5])             // nobody else was handed it
    }

    @Test func aBrokenRouteFallsBackToFlooding() throws {
        // A ring of 8 with a chord 1–5: 0 → 3 goes 0-1-2-3. The link 1–2 breaks
        // after the route is learnt; 1 floods, and it goes round by 5 and 4.
        var withChord = ring(8)
        withChord.neighbors[1].append(5)
        withChord.neighbors[5].append(1)
        var sim = Simulator(topology: withChord, radio: .init(), policy: FloodingPolicy(jitter: 0), seed: 1)
        sim.learnTopology()
        var broken = withChord
        broken.neighbors[1] = [0, 5]
        broken.neighbors[2] = [3]
        _ = sim.rewire(to: broken, refreshTwoHop: false)  // announces have not told anyone yet
        let inbox = Inbox()
        sim.onDeliver = { node, p, _, _ in inbox.got[node, default: []].append(p) }
        sim.originate(directed(from: 0, to: 3), at: 0)
        sim.run(until: 2_000)
        #expect(sim.routers[0].statistics.routed == 1)
        #expect(sim.routers[1].statistics.routeFallbacks == 1)
        let got = try #require(inbox.got[3]?.first)
        #expect(got.route == [peer(1), peer(2)])           // the route it was given, not the way it went
        #expect(sim.transmissions[5] == 1)                 // relayed by the flood
    }

    @Test func anOriginatorCanFloodInsteadAndARecipientNeighbourGetsItAlone() throws {
        var r = router(links: 3)
        r.setNeighbors(of: PeerID(rawValue: 1), [PeerID(rawValue: 50)], now: 0)
        let far = PeerID(rawValue: 50)
        // Routed: only link 0 (to peer 1, which neighbours peer 50).
        let routed = transmissions(r.originate(message(from: me, recipient: far, type: .noiseEncrypted), now: 0))
        #expect(routed.map(\.links) == [[LinkID(0)]])
        #expect(try Packet(decoding: routed[0].bytes).route == [PeerID(rawValue: 1)])
        // Flooded on request: every link, no route.
        let flooded = transmissions(r.originate(message(from: me, text: "again", recipient: far, type: .noiseEncrypted),
                                                now: 1, routing: .flood))
        #expect(flooded.map(\.links) == [[LinkID(0), LinkID(1), LinkID(2)]])
        #expect(try Packet(decoding: flooded[0].bytes).route == nil)
        // To a neighbour: its link only, no route needed.
        let direct = transmissions(r.originate(message(from: me, recipient: PeerID(rawValue: 3), type: .noiseEncrypted), now: 2))
        #expect(direct.map(\.links) == [[LinkID(2)]])
        // Signed packets are never given a route (it would break the signature).
        var signed = message(from: me, recipient: far, type: .noiseEncrypted)
        signed.signature = Signature(bytes: [UInt8](repeating: 1, count: 64))
        let s = transmissions(r.originate(signed, now: 3))
        #expect(s.map(\.links) == [[LinkID(0), LinkID(1), LinkID(2)]])
    }

    @Test func aPeerThatFloodedToUsIsAnsweredByFlood() throws {
        var r = router(links: 2)
        let far = PeerID(rawValue: 50)
        r.setNeighbors(of: PeerID(rawValue: 1), [far], now: 0)
        // A directed packet from `far` for us arrives flooded (two hops, no route).
        let incoming = try message(from: far, ttl: 6, recipient: me, type: .noiseEncrypted).encoded()
        #expect(deliveries(r.receive(incoming, on: LinkID(1), now: 100)).count == 1)
        let answer = transmissions(r.originate(message(from: me, text: "ack", at: 200, recipient: far, type: .noiseEncrypted), now: 200))
        #expect(answer.map(\.links) == [[LinkID(0), LinkID(1)]])
        // Later the route is used again.
        let later = transmissions(r.originate(message(from: me, text: "later", at: 40_000, recipient: far, type: .noiseEncrypted), now: 40_000))
        #expect(later.map(\.links) == [[LinkID(0)]])
    }

    @Test func directedRelaysGoStraightToARecipientNeighbour() throws {
        var r = router(links: 4)
        let bytes = try message(from: alice, ttl: 5, recipient: PeerID(rawValue: 3), type: .noiseEncrypted).encoded()
        let sent = transmissions(r.receive(bytes, on: LinkID(0), now: 0))
        #expect(sent.map(\.links) == [[LinkID(2)]])
        #expect(try Packet(decoding: sent[0].bytes).ttl == 4)
        #expect(r.statistics.unicastForwards == 1)
    }
}

@Suite struct StoreAndForwardTests {
    @Test func aRelayHoldsForAFavouriteAndHandsOverWhenItReturns() throws {
        // 0 – 1, and 2 away; 1 holds for its favourite 2.
        let joined = Topology.line(3)
        var apart = joined
        apart.neighbors = [[1], [0], []]
        var sim = Simulator(topology: apart, radio: .init(), policy: FloodingPolicy(jitter: 0), seed: 1)
        sim.setFavorites([peer(2)], at: 1)
        let inbox = Inbox()
        sim.onDeliver = { node, p, _, _ in inbox.got[node, default: []].append(p) }
        sim.originate(directed(from: 0, to: 2, text: "while you were out"), at: 0)
        sim.run(until: 60_000)
        #expect(inbox.got[2] == nil)
        #expect(sim.routers[1].favoriteHold.count(for: peer(2)) == 1)
        _ = sim.rewire(to: joined)                           // 2 comes back next to 1
        sim.run(until: 61_000)
        let got = try #require(inbox.got[2])
        #expect(got.map(\.payload) == [Array("while you were out".utf8)])
        #expect(sim.routers[1].statistics.handedOver == 1)
        #expect(sim.routers[1].favoriteHold.count == 0)
    }

    @Test func onlyFavouritesThatAreAwayAreHeld() throws {
        var r = router(links: 2)
        let fav = PeerID(rawValue: 77), other = PeerID(rawValue: 78)
        r.favorites = [fav, PeerID(rawValue: 2)]
        _ = r.receive(try message(from: alice, ttl: 5, recipient: other, type: .noiseEncrypted).encoded(), on: LinkID(0), now: 0)
        _ = r.receive(try message(from: alice, ttl: 5, text: "to 2", recipient: PeerID(rawValue: 2), type: .noiseEncrypted).encoded(),
                      on: LinkID(0), now: 0)                 // a neighbour: not held
        r.setNeighbors(of: PeerID(rawValue: 99), [fav], now: 0)
        _ = r.receive(try message(from: alice, ttl: 5, text: "x", recipient: fav, type: .noiseEncrypted).encoded(), on: LinkID(0), now: 0)
        #expect(r.favoriteHold.count == 1)                        // fav is away (no announce of its own)
        r.setNeighbors(of: fav, [PeerID(rawValue: 99)], now: 1)
        _ = r.receive(try message(from: alice, ttl: 5, text: "y", recipient: fav, type: .noiseEncrypted).encoded(), on: LinkID(0), now: 2)
        #expect(r.favoriteHold.count == 1)                        // announced itself: reachable, not held
    }

    @Test func theMailboxIsBounded() {
        var limits = FavoriteHold.Limits()
        limits.perRecipient = 3
        limits.total = 5
        limits.lifetime = 1_000
        var box = FavoriteHold(limits: limits)
        let p = PeerID(rawValue: 1), q = PeerID(rawValue: 2)
        for i in 0..<4 { box.hold([UInt8(i)], key: UInt64(i), for: p, now: Millis(i)) }
        #expect(box.count(for: p) == 3)                      // the oldest went
        let again = box.hold([3], key: 3, for: p, now: 5)
        #expect(!again)                                      // already held
        for i in 10..<13 { box.hold([UInt8(i)], key: UInt64(i), for: q, now: Millis(i)) }
        #expect(box.count == 5)
        #expect(box.release(for: p, now: 20) == [[2], [3]])
        box.expire(now: 2_000)
        #expect(box.count == 0)
    }

    /// The total bound taking a recipient's only parcel keeps the count true.
    @Test func theMailboxCountsTrueWhenTheTotalBoundTakesTheSameRecipients() {
        var limits = FavoriteHold.Limits()
        limits.total = 1
        var box = FavoriteHold(limits: limits)
        let p = PeerID(rawValue: 1)
        box.hold([1], key: 1, for: p, now: 0)
        box.hold([2], key: 2, for: p, now: 1)
        #expect(box.count == 1)
        #expect(box.release(for: p, now: 2) == [[2]])
    }

    /// An announce that arrives after its link went down hands nothing over:
    /// the parcels wait for a link that is up.
    @Test func aBindOnALinkThatIsGoneHandsNothingOver() throws {
        var r = router(links: 1)
        let fav = PeerID(rawValue: 77)
        r.favorites = [fav]
        r.setNeighbors(of: PeerID(rawValue: 99), [fav], now: 0)
        _ = r.receive(try message(from: alice, ttl: 5, recipient: fav, type: .noiseEncrypted).encoded(), on: LinkID(0), now: 0)
        #expect(r.bind(LinkID(5), to: fav, now: 1).isEmpty)
        #expect(r.favoriteHold.count(for: fav) == 1)
        #expect(transmissions(r.linkUp(LinkID(5), peer: fav, now: 2)).map(\.links) == [[LinkID(5)]])
        #expect(r.favoriteHold.count(for: fav) == 0)
    }

    /// What a relay held for a favourite is handed over in frames the link
    /// carries: fragmented, as any packet the router sends.
    @Test func aHandOverIsFragmentedForASmallLink() throws {
        var r = router(links: 1)
        let fav = PeerID(rawValue: 77)
        r.favorites = [fav]
        r.setNeighbors(of: PeerID(rawValue: 99), [fav], now: 0)
        let held = Packet(type: .noiseEncrypted, ttl: 5, timestamp: 1_000, senderID: alice, recipientID: fav,
                          payload: Array(repeating: 0xEE, count: 600), compress: false)
        let bytes = try held.encoded()
        _ = r.receive(bytes, on: LinkID(0), now: 0)
        #expect(r.favoriteHold.count(for: fav) == 1)
        let sent = transmissions(r.linkUp(LinkID(5), peer: fav, maxFrame: 185, now: 10))
        #expect(sent.count > 1)
        #expect(sent.allSatisfy { $0.bytes.count <= 185 && $0.links == [LinkID(5)] })
        // The favourite puts the pieces back together.
        var f = MeshRouter(localPeer: fav, policy: FloodingPolicy(jitter: 0), seed: 1)
        f.linkUp(LinkID(0), peer: me, maxFrame: 185)
        let got = sent.flatMap { deliveries(f.receive($0.bytes, on: LinkID(0), now: 20)) }
        #expect(got.map(\.payload) == [held.payload])
        #expect(r.statistics.handedOver == 1)
    }
}

@Suite struct DeliveryTrackerTests {
    @Test func retriesBackOffAndGiveUpAtTheBudget() {
        var t = DeliveryTracker<Int>()
        let p = PeerID(rawValue: 5)
        t.sent(1, to: p, now: 0)
        var resends: [Millis] = [], failedAt: Millis?
        var now: Millis = 0
        while now <= 400_000, failedAt == nil {
            for step in t.due(now: now) {
                switch step {
                case .resend: resends.append(now)
                case .failed: failedAt = now
                case .held: Issue.record("not a favourite")
                }
            }
            now += 100
        }
        // 2 s, then ×2, at most 60 s apart.
        #expect(resends == [2_000, 6_000, 14_000, 30_000, 62_000, 122_000, 182_000, 242_000])
        // The try due at 302 s is past the 300 s budget: failed, and said so.
        #expect(failedAt == 302_000)
        #expect(t.isEmpty)
        #expect(t.acknowledged(1) == nil)                    // a late receipt changes nothing
    }

    @Test func aDuplicateReceiptCountsOnce() {
        var t = DeliveryTracker<String>()
        t.sent("m", to: PeerID(rawValue: 5), now: 0)
        #expect(t.acknowledged("m") == PeerID(rawValue: 5))
        #expect(t.acknowledged("m") == nil)
        #expect(t.due(now: 10_000).isEmpty)
    }

    /// A file's ID is its hash: sent twice, it waits for two receipts, and
    /// keeps being retried until the second comes.
    @Test func theSameIDSentTwiceWaitsForTwoReceipts() {
        var t = DeliveryTracker<String>()
        let p = PeerID(rawValue: 5)
        t.sent("f", to: p, now: 0)
        t.sent("f", to: p, now: 10)
        #expect(t.copies("f") == 2)
        #expect(t.acknowledged("f") == p)
        #expect(t.isTracking("f") && t.copies("f") == 1)
        #expect(t.due(now: 2_010) == [.resend("f", to: p, attempt: 2)])
        #expect(t.acknowledged("f") == p)
        #expect(!t.isTracking("f"))
        #expect(t.acknowledged("f") == nil)
    }

    @Test func favouritesAreHeldAndSentAgainWhenTheyReturn() {
        var schedule = DeliveryTracker<Int>.Schedule()
        schedule.heldPerPeer = 2
        var t = DeliveryTracker<Int>(schedule: schedule)
        let fav = PeerID(rawValue: 7)
        for id in 0..<3 { t.sent(id, to: fav, now: Millis(id), favorite: true) }
        var steps: [DeliveryTracker<Int>.Step] = []
        for now in stride(from: Millis(0), through: 310_000, by: 1_000) { steps += t.due(now: now) }
        #expect(steps.contains(.held(0, for: fav)) && steps.contains(.held(1, for: fav)) && steps.contains(.held(2, for: fav)))
        #expect(steps.contains(.failed(0, to: fav)))         // over the limit of two held: the oldest fails
        #expect(t.isHeld(1) && t.isHeld(2))
        #expect(t.due(now: 3_600_000).isEmpty)               // held: no retries while away
        let back = t.peerReturned(fav, now: 3_600_000)
        #expect(back.count == 2)
        #expect(!t.isHeld(1))
        #expect(t.acknowledged(1) == fav)
        // A fresh budget from the return.
        var later: [DeliveryTracker<Int>.Step] = []
        for now in stride(from: Millis(3_600_000), through: 3_600_000 + 290_000, by: 1_000) { later += t.due(now: now) }
        #expect(!later.contains { if case .held = $0 { return true } else { return false } })
    }

    @Test func heldMessagesFailAfterTheirLifetime() {
        var schedule = DeliveryTracker<Int>.Schedule()
        schedule.holdLifetime = 10_000
        var t = DeliveryTracker<Int>(schedule: schedule)
        t.sent(1, to: PeerID(rawValue: 7), now: 0, favorite: true)
        var steps: [DeliveryTracker<Int>.Step] = []
        for now in stride(from: Millis(0), through: 400_000, by: 1_000) { steps += t.due(now: now) }
        #expect(steps.last == .failed(1, to: PeerID(rawValue: 7)))
        #expect(t.isEmpty)
    }
}

@Suite struct DirectedTrafficTests {
    @Test(.computesHeavily) func privateTrafficUnderLossAndChurnIsDeliveredAndNeverFalselyAcknowledged() {
        var rng = SeededGenerator(seed: 12)
        let t = Topology.randomGeometric(nodes: 40, radius: Topology.radius(nodes: 40, meanDegree: 8), rng: &rng)
        var e = DirectedExperiment()
        e.messages = 120
        e.radio.loss = 0.10
        e.churn = 0.10
        e.seed = 3
        let r = e.reliability(on: t, policy: BackbonePolicy())
        #expect(r.sent == 120)
        #expect(r.delivered + r.failed == r.sent)
        #expect(r.falselyDelivered == 0)
        #expect(r.delivered >= 119)
        #expect(r.attemptsPerMessage > 1)                    // loss made retries necessary
    }

    @Test func routedCostsTheShortestPath() {
        var rng = SeededGenerator(seed: 13)
        let t = Topology.randomGeometric(nodes: 60, radius: Topology.radius(nodes: 60, meanDegree: 8), rng: &rng)
        var e = DirectedExperiment()
        e.messages = 20
        let r = e.routeCost(on: t, policy: BackbonePolicy())
        #expect(r.delivered == 20)
        #expect(r.routedRatio <= 1.2)
        #expect(r.floodedTransmissions > 2 * r.routedTransmissions)
    }
}
