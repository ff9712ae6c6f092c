import Testing
import StarlingWire
@testable import StarlingMesh

func neighborhood(links n: Int, local: PeerID = PeerID(rawValue: 0x1000)) -> Neighborhood {
    var h = Neighborhood(localPeer: local)
    for i in 0..<n { h.add(LinkID(UInt32(i)), peer: PeerID(rawValue: UInt64(i + 1))) }
    return h
}

/// The degree comes from the neighbourhood the policy is handed; it is named
/// here only to keep the two in step when reading a test.
func context(degree: Int, ttl: UInt8 = 7, from: PeerID? = PeerID(rawValue: 1)) -> RelayContext {
    RelayContext(ttl: ttl, type: .message, fromLink: LinkID(0), fromPeer: from, now: 0)
}

@Suite struct PolicyTests {
    @Test func degreeTable() {
        #expect(DegreeTablePolicy.probability(degree: 0) == 1.0)
        #expect(DegreeTablePolicy.probability(degree: 2) == 1.0)
        #expect(DegreeTablePolicy.probability(degree: 3) == 0.9)
        #expect(DegreeTablePolicy.probability(degree: 4) == 0.9)
        #expect(DegreeTablePolicy.probability(degree: 5) == 0.7)
        #expect(DegreeTablePolicy.probability(degree: 6) == 0.7)
        #expect(DegreeTablePolicy.probability(degree: 7) == 0.45)
        #expect(DegreeTablePolicy.probability(degree: 30) == 0.45)
        // Measured over many draws, with the jitter in 10 ..< 100 ms.
        var rng = SeededGenerator(seed: 3)
        var relayed = 0
        for _ in 0..<10_000 {
            var t = RelayTracking()
            if case let .relay(delay, ttl, _) = DegreeTablePolicy().firstHeard(context(degree: 8), neighborhood: neighborhood(links: 8), tracking: &t, rng: &rng) {
                relayed += 1
                #expect(delay >= 10 && delay < 100 && ttl == 6)
            }
        }
        #expect(abs(Double(relayed) / 10_000 - 0.45) < 0.02)
        var t = RelayTracking()
        #expect(DegreeTablePolicy().duplicateHeard(from: nil, neighborhood: neighborhood(links: 2), tracking: &t))
    }

    @Test func deployedBitchat() {
        var rng = SeededGenerator(seed: 1)
        var t = RelayTracking()
        let sparse = DeployedBitchatPolicy().firstHeard(context(degree: 3), neighborhood: neighborhood(links: 3), tracking: &t, rng: &rng)
        guard case let .relay(d1, ttl1, links1) = sparse else { Issue.record("bitchat always relays"); return }
        #expect(ttl1 == 6 && links1 == .allButIncoming && d1 < 40)
        let dense = DeployedBitchatPolicy().firstHeard(context(degree: 8), neighborhood: neighborhood(links: 8), tracking: &t, rng: &rng)
        guard case let .relay(d2, ttl2, links2) = dense else { Issue.record("bitchat always relays"); return }
        #expect(ttl2 == 5) // clamped at ≥ 6 links
        #expect(links2 == .randomSubset(count: 4))
        #expect(d2 < 90)
        #expect(!DeployedBitchatPolicy().duplicateHeard(from: nil, neighborhood: neighborhood(links: 8), tracking: &t))
    }

    @Test func counterSuppression() {
        var rng = SeededGenerator(seed: 1)
        var t = RelayTracking()
        let p = CounterPolicy(threshold: 3)
        #expect(p.firstHeard(context(degree: 4), neighborhood: neighborhood(links: 4), tracking: &t, rng: &rng) != .drop)
        #expect(!p.duplicateHeard(from: nil, neighborhood: neighborhood(links: 4), tracking: &t)) // heard 2
        #expect(p.duplicateHeard(from: nil, neighborhood: neighborhood(links: 4), tracking: &t))  // heard 3: cancel
        #expect(p.firstHeard(context(degree: 4, ttl: 1), neighborhood: neighborhood(links: 4), tracking: &t, rng: &rng) == .drop)
    }

    /// A star-and-line neighbourhood: we (0x1000) link peers 1, 2, 3; peer 1
    /// links 2; peer 3 links only us and peer 9.
    func sampleNeighborhood() -> Neighborhood {
        var h = neighborhood(links: 3)
        h.setNeighbors(of: PeerID(rawValue: 1), [PeerID(rawValue: 0x1000), PeerID(rawValue: 2)])
        h.setNeighbors(of: PeerID(rawValue: 2), [PeerID(rawValue: 0x1000), PeerID(rawValue: 1)])
        h.setNeighbors(of: PeerID(rawValue: 3), [PeerID(rawValue: 0x1000), PeerID(rawValue: 9)])
        return h
    }

    @Test func coverageRelaysOnlyForUncoveredNeighbours() {
        var rng = SeededGenerator(seed: 1)
        let h = sampleNeighborhood()
        let p = CoveragePolicy(redundancy: 1)
        // From peer 1: peer 2 heard it too; peer 3 did not → relay, pending on peer 3.
        var t = RelayTracking()
        #expect(p.firstHeard(context(degree: 3, from: PeerID(rawValue: 1)), neighborhood: h, tracking: &t, rng: &rng) != .drop)
        #expect(Set(t.need.keys) == [PeerID(rawValue: 3)])
        // Peer 3 transmits it: everyone covered → cancel.
        #expect(p.duplicateHeard(from: PeerID(rawValue: 3), neighborhood: h, tracking: &t))
    }

    @Test func backboneForwardersAndBackstops() {
        // In a line a – b – c, b is a forwarder (its neighbours are not connected
        // through higher-priority nodes); an end is not.
        var b = Neighborhood(localPeer: PeerID(rawValue: 2))
        b.add(LinkID(0), peer: PeerID(rawValue: 1))
        b.add(LinkID(1), peer: PeerID(rawValue: 3))
        b.setNeighbors(of: PeerID(rawValue: 1), [PeerID(rawValue: 2)])
        b.setNeighbors(of: PeerID(rawValue: 3), [PeerID(rawValue: 2)])
        #expect(b.isForwarder)
        var a = Neighborhood(localPeer: PeerID(rawValue: 1))
        a.add(LinkID(0), peer: PeerID(rawValue: 2))
        a.setNeighbors(of: PeerID(rawValue: 2), [PeerID(rawValue: 1), PeerID(rawValue: 3)])
        #expect(!a.isForwarder)
        // A triangle: only the highest-priority node forwards.
        func triangle(_ me: UInt64) -> Neighborhood {
            var h = Neighborhood(localPeer: PeerID(rawValue: me))
            let others = [UInt64(1), 2, 3].filter { $0 != me }
            for (i, o) in others.enumerated() {
                h.add(LinkID(UInt32(i)), peer: PeerID(rawValue: o))
                h.setNeighbors(of: PeerID(rawValue: o), Set([UInt64(1), 2, 3].filter { $0 != o }.map { PeerID(rawValue: $0) }))
            }
            return h
        }
        #expect([1, 2, 3].map { triangle($0).isForwarder } == [false, false, true])

        // A non-forwarder whose neighbours the first transmission already reached declines.
        var rng = SeededGenerator(seed: 1)
        var t = RelayTracking()
        let ctx = context(degree: 1, from: PeerID(rawValue: 2))
        #expect(BackbonePolicy().firstHeard(ctx, neighborhood: a, tracking: &t, rng: &rng) == .drop)
        // Unknown neighbourhoods make everyone a forwarder (flooding, not silence).
        #expect(neighborhood(links: 3).isForwarder)
    }
}

@Suite struct DeduplicatorTests {
    @Test func boundedInTimeAndMemory() {
        var d = Deduplicator(retention: 1_000, capacity: 100, bucketCount: 10)
        let first = d.insert(1, now: 0)
        let again = d.insert(1, now: 500)
        let atRetention = d.insert(1, now: 1_000)
        let expired = d.insert(1, now: 1_200)
        #expect(first && !again && !atRetention && expired)
        for i in 10..<1_000 { _ = d.insert(UInt64(i), now: 1_300 + Millis(i)) }
        #expect(d.count <= 100)
        #expect(d.evictedEarly > 0)
        #expect(d.contains(999))
        // A burst inside one time span is bounded too.
        var burst = Deduplicator(retention: 300_000, capacity: 1_000)
        for i in 0..<50_000 { _ = burst.insert(UInt64(i) &* 0x9E37_79B9_7F4A_7C15, now: 5) }
        #expect(burst.count <= 1_000)
        #expect(burst.contains(UInt64(49_999) &* 0x9E37_79B9_7F4A_7C15))
    }
}
