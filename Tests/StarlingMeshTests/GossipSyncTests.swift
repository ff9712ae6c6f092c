import Testing
import StarlingWire
@testable import StarlingMesh
@testable import StarlingSim

@Suite struct GossipSyncTests {
    func syncing(_ peer: UInt64) -> MeshRouter {
        var config = MeshRouter.Configuration()
        config.sync = GossipStore.Configuration()
        return MeshRouter(localPeer: PeerID(rawValue: peer), policy: FloodingPolicy(jitter: 0), seed: peer, configuration: config)
    }

    /// Two syncing routers, peers `x` and `y` (each one's link to the other
    /// numbered by the other's peer), the first of which sent `packets` first;
    /// linked at 1 s.
    func linked(_ x: UInt64, _ y: UInt64, after packets: [Packet]) -> (MeshRouter, MeshRouter) {
        var a = syncing(x), b = syncing(y)
        for p in packets { _ = a.originate(p, now: p.timestamp) }
        a.linkUp(LinkID(UInt32(y)), peer: PeerID(rawValue: y), now: 1_000)
        b.linkUp(LinkID(UInt32(x)), peer: PeerID(rawValue: x), now: 1_000)
        return (a, b)
    }

    @Test func aNewNeighbourGetsWhatItMissedAfterFiveSeconds() throws {
        // A heard (here: sent) a message before B was around.
        let m = Packet(type: .message, ttl: 7, timestamp: 10, senderID: PeerID(rawValue: 1), payload: Array("earlier".utf8))
        var (a, b) = linked(1, 2, after: [m])
        #expect(a.nextDeadline == 6_000)
        #expect(transmissions(a.tick(now: 5_999)).isEmpty)
        // B asks with an (empty) filter; A answers with the message, TTL 0 and isRSR.
        let request = transmissions(b.tick(now: 6_000))
        #expect(request.count == 1)
        let asked = try Packet(decoding: request[0].bytes)
        #expect(asked.type == .requestSync && asked.ttl == 0)
        let replies = transmissions(a.receive(request[0].bytes, on: LinkID(2), now: 6_010))
        #expect(replies.count == 1 && replies[0].links == [LinkID(2)])
        let reply = try Packet(decoding: replies[0].bytes)
        #expect(reply.isRSR && reply.ttl == 0 && reply.payload == m.payload)
        let got = deliveries(b.receive(replies[0].bytes, on: LinkID(1), now: 6_020))
        #expect(got.map(\.payload) == [m.payload])
        // B now has it: asking again gets nothing.
        let again = transmissions(b.tick(now: 60_000))
        let none = again.flatMap { transmissions(a.receive($0.bytes, on: LinkID(2), now: 60_010)) }
        #expect(none.isEmpty)
        #expect(a.statistics.syncRepliesSent == 1)
    }

    /// A filter too large for the link's frame goes in fragments (TTL 0, so
    /// never relayed), and the neighbour answers the request it reassembles.
    @Test func aLargeRequestGoesInFragmentsAndIsAnswered() throws {
        let missed = Packet(type: .message, ttl: 7, timestamp: 10, senderID: PeerID(rawValue: 1), payload: Array("missed".utf8))
        var a = syncing(1), b = syncing(2)
        _ = a.originate(missed, now: 10)
        for i in 0..<120 {
            _ = b.originate(Packet(type: .message, ttl: 7, timestamp: 20 + Millis(i), senderID: PeerID(rawValue: 2),
                                   payload: Array("b's \(i)".utf8)), now: 20 + Millis(i))
        }
        a.linkUp(LinkID(2), peer: PeerID(rawValue: 2), maxFrame: 185, now: 1_000)
        b.linkUp(LinkID(1), peer: PeerID(rawValue: 1), maxFrame: 185, now: 1_000)
        let request = transmissions(b.tick(now: 6_000))
        #expect(request.count > 1)
        for piece in request {
            let p = try Packet(decoding: piece.bytes)
            #expect(piece.bytes.count <= 185 && p.type == .fragment && p.ttl == 0)
        }
        let replies = request.flatMap { transmissions(a.receive($0.bytes, on: LinkID(2), now: 6_010)) }
        let answered = replies.compactMap { try? Packet(decoding: $0.bytes) }.filter { $0.type == .message }
        #expect(answered.map(\.payload) == [missed.payload])
        #expect(replies.allSatisfy { $0.links == [LinkID(2)] && $0.bytes.count <= 185 })
    }

    @Test func aRepairLearntFromSyncIsSpreadOnWhenRecent() throws {
        // B has links to A (which answers B's sync) and to C.
        for (age, spread) in [(Millis(60_000), true), (Millis(250_000), false)] {
            var b = syncing(2)
            b.linkUp(LinkID(1), peer: PeerID(rawValue: 1), now: 0)
            b.linkUp(LinkID(3), peer: PeerID(rawValue: 3), now: 0)
            let now: Millis = 300_000
            var reply = Packet(type: .message, ttl: 0, timestamp: now - age, senderID: PeerID(rawValue: 1),
                               payload: Array("missed".utf8))
            reply.isRSR = true
            let actions = b.receive(try reply.encoded(), on: LinkID(1), now: now)
            #expect(deliveries(actions).count == 1)
            let relayed = (transmissions(actions) + transmissions(b.tick(now: now + 1_000)))
                .filter { (try? Packet(decoding: $0.bytes))?.type == .message }   // not b's own sync requests
            if spread {
                #expect(relayed.map(\.links) == [[LinkID(3)]])
                let copy = try Packet(decoding: relayed[0].bytes)
                #expect(copy.ttl == 6 && copy.isRSR)         // full TTL, minus this hop
                #expect(b.statistics.repairsRelayed == 1)
            } else {
                #expect(relayed.isEmpty)                     // too old: others may have forgotten it
            }
        }
    }

    /// The apps answer at most 8 sync requests per peer in 30 s; so does a Starling router, per link.
    @Test func syncRequestsAreAnsweredEightTimesPerLinkInThirtySeconds() throws {
        let m = Packet(type: .message, ttl: 7, timestamp: 10, senderID: PeerID(rawValue: 1), payload: Array("earlier".utf8))
        var (a, _) = linked(1, 2, after: [m])
        var answered = 0
        for i in 0..<12 {
            // Each request is a new packet (its own timestamp), asking with an empty filter.
            let request = try Packet(type: .requestSync, ttl: 0, timestamp: 2_000 + UInt64(i), senderID: PeerID(rawValue: 2),
                                     payload: RequestSync(filter: GCSFilter(ids: [])).encoded(), compress: false).encoded()
            if !transmissions(a.receive(request, on: LinkID(2), now: 2_000 + UInt64(i) * 100)).isEmpty { answered += 1 }
        }
        #expect(answered == 8)
        #expect(a.statistics.syncRequestsRefused == 4)
        // Thirty seconds on, answered again.
        let later = try Packet(type: .requestSync, ttl: 0, timestamp: 40_000, senderID: PeerID(rawValue: 2),
                               payload: RequestSync(filter: GCSFilter(ids: [])).encoded(), compress: false).encoded()
        #expect(!transmissions(a.receive(later, on: LinkID(2), now: 40_000)).isEmpty)
    }

    /// A request's types and since: only those are sent back.
    @Test func anAnswerKeepsToTheTypesAndTimeAskedFor() throws {
        let old = Packet(type: .message, ttl: 7, timestamp: 10, senderID: PeerID(rawValue: 1), payload: Array("old".utf8))
        let new = Packet(type: .message, ttl: 7, timestamp: 900, senderID: PeerID(rawValue: 1), payload: Array("new".utf8))
        var (a, _) = linked(1, 2, after: [old, new])
        func ask(_ r: RequestSync, at t: UInt64) throws -> [String] {
            let request = try Packet(type: .requestSync, ttl: 0, timestamp: t, senderID: PeerID(rawValue: 2), payload: r.encoded(),
                                     compress: false).encoded()
            return try transmissions(a.receive(request, on: LinkID(2), now: t)).map { String(decoding: try Packet(decoding: $0.bytes).payload, as: UTF8.self) }
        }
        #expect(try ask(RequestSync(filter: GCSFilter(ids: []), since: 500), at: 2_000) == ["new"])
        #expect(try ask(RequestSync(filter: GCSFilter(ids: []), types: SyncTypes([.announce])), at: 2_001).isEmpty)
        #expect(try Set(ask(RequestSync(filter: GCSFilter(ids: [])), at: 2_002)) == ["old", "new"])
    }

    @Test func aNewPeersFirstAnnounceSchedulesASyncFiveSecondsLater() {
        var r = syncing(1)
        r.linkUp(LinkID(7), now: 0)                          // the peer is not known yet
        #expect(r.nextDeadline == 5_000)
        r.bind(LinkID(7), to: PeerID(rawValue: 7), now: 3_000) // its first announce
        #expect(r.nextDeadline == 8_000)
        #expect(transmissions(r.tick(now: 7_999)).isEmpty)
        let request = transmissions(r.tick(now: 8_000))
        #expect(request.map(\.links) == [[LinkID(7)]])
    }

    @Test func storeKeepsTheLatestAnnouncePerSenderAndExpires() {
        var store = GossipStore()
        func announce(_ t: UInt64) -> Packet {
            Packet(type: .announce, ttl: 7, timestamp: t, senderID: PeerID(rawValue: 9), payload: [UInt8(t & 0xFF)], compress: false)
        }
        store.keep(announce(1), id: PacketID(announce(1)), now: 0)
        store.keep(announce(2), id: PacketID(announce(2)), now: 1)
        store.keep(announce(1), id: PacketID(announce(1)), now: 2) // older: ignored
        #expect(store.count == 1)
        let msg = Packet(type: .message, ttl: 7, timestamp: 5, senderID: PeerID(rawValue: 9), payload: [1], compress: false)
        store.keep(msg, id: PacketID(msg), now: 5)
        let private_ = Packet(type: .noiseEncrypted, ttl: 7, timestamp: 5, senderID: PeerID(rawValue: 9), recipientID: PeerID(rawValue: 3), payload: [1])
        store.keep(private_, id: PacketID(private_), now: 5) // not public: not kept
        #expect(store.count == 2)
        store.expire(now: 61_002) // the announce (60 s) goes, the message (5 min) stays
        #expect(store.count == 1)
        store.senderLeft(PeerID(rawValue: 9))
        #expect(store.count == 1)
    }

    /// Broadcast fragments are kept when configured (capped, expiring), left
    /// out of the general filter, and sent back by stream: only those the
    /// asker's filter of that stream lacks, in index order.
    @Test func fragmentsAreKeptAndAnsweredByStream() throws {
        var config = GossipStore.Configuration()
        config.fragmentRetention = 900_000
        config.maxFragments = 4
        var store = GossipStore(configuration: config), asker = GossipStore(configuration: config)
        func fragment(_ stream: UInt64, _ index: UInt16, ttl: UInt8 = 7) -> Packet {
            let f = Fragment(fragmentID: stream, index: index, total: 3, originalType: .message, data: [UInt8](repeating: UInt8(index), count: 10))
            return Packet(type: .fragment, ttl: ttl, timestamp: 1_000, senderID: PeerID(rawValue: 9), payload: f.encoded(), compress: false)
        }
        for i: UInt16 in [2, 0, 1] { store.keep(fragment(0xAB, i), id: PacketID(fragment(0xAB, i)), now: 1_000 + UInt64(i)) }
        for i: UInt16 in [0, 1] { asker.keep(fragment(0xAB, i), id: PacketID(fragment(0xAB, i)), now: 1_000) }
        #expect(store.count == 3)
        #expect(store.filter().values().isEmpty) // not in the general filter
        let answer = store.missingFragments(of: [0xAB], from: asker.filter(streams: [0xAB]))
        #expect(answer.map { try? Fragment(decoding: $0.packet.payload).index } == [2])
        #expect(answer.allSatisfy { $0.packet.ttl == 0 && $0.packet.isRSR })
        #expect(store.missingFragments(of: [0xCD], from: asker.filter(streams: [0xCD])).isEmpty)
        #expect(store.missingFragments(of: [0xAB], from: GCSFilter(p: 7, m: 0, data: [])).map { try? Fragment(decoding: $0.packet.payload).index } == [0, 1, 2])
        // Capped at maxFragments (the oldest go), and gone after the retention.
        for i: UInt16 in 0..<3 { store.keep(fragment(0xCD, i), id: PacketID(fragment(0xCD, i)), now: 2_000) }
        #expect(store.count == 4)
        #expect(store.missingFragments(of: [0xAB], from: GCSFilter(p: 7, m: 0, data: [])).count == 1)
        store.expire(now: 2_000 + 900_001)
        #expect(store.count == 0)
        // Without a retention, none are kept.
        var plain = GossipStore()
        plain.keep(fragment(0xAB, 0), id: PacketID(fragment(0xAB, 0)), now: 0)
        #expect(plain.count == 0)
    }

    /// A message that is a false positive of a neighbour's filter is not sent
    /// back to it; the neighbour's next request spreads M, so it is not one
    /// again and the message goes (before, it never would: the same set
    /// gives the same filter).
    @Test func aFalsePositiveIsNotRepeatedByTheNextRequest() throws {
        var b = syncing(2)
        for i in 0..<3 {
            _ = b.originate(Packet(type: .message, ttl: 7, timestamp: UInt64(i), senderID: PeerID(rawValue: 2),
                                   payload: Array("mine \(i)".utf8)), now: UInt64(i))
        }
        b.linkUp(LinkID(1), peer: PeerID(rawValue: 1), now: 1_000)
        let first = transmissions(b.tick(now: 6_000))
        let second = transmissions(b.tick(now: try #require(b.nextDeadline)))
        #expect(first.count == 1 && second.count == 1)
        let filters = try [first[0], second[0]].map { try RequestSync(decoding: Packet(decoding: $0.bytes).payload).filter }
        #expect(filters[0].m != filters[1].m)
        // A message of A's that B's first filter wrongly holds, and its second does not.
        let values = filters.map { $0.values() }
        var found: Packet?
        for k in 0..<400_000 {
            let m = Packet(type: .message, ttl: 7, timestamp: 10, senderID: PeerID(rawValue: 1), payload: Array("theirs \(k)".utf8))
            let id = PacketID(m)
            if GCSFilter.contains(sortedValues: values[0], id, m: filters[0].m),
               !GCSFilter.contains(sortedValues: values[1], id, m: filters[1].m) { found = m; break }
        }
        let m = try #require(found)
        var a = syncing(1)
        _ = a.originate(m, now: 10)
        a.linkUp(LinkID(2), peer: PeerID(rawValue: 2), now: 1_000)
        #expect(transmissions(a.receive(first[0].bytes, on: LinkID(2), now: 6_010)).isEmpty)
        let replies = transmissions(a.receive(second[0].bytes, on: LinkID(2), now: 40_010))
        #expect(try replies.map { try Packet(decoding: $0.bytes).payload } == [m.payload])
    }

    /// A reply that was lost shows in the next request, which still lacks it:
    /// it then goes twice. A long answer (an asker whose filter cannot hold
    /// all it has) is never doubled.
    @Test func aLostReplyGoesTwiceWhenAskedForAgain() throws {
        let m = Packet(type: .message, ttl: 7, timestamp: 10, senderID: PeerID(rawValue: 1), payload: Array("once".utf8))
        var (a, b) = linked(1, 2, after: [m])
        let first = transmissions(b.tick(now: 6_000))
        #expect(transmissions(a.receive(first[0].bytes, on: LinkID(2), now: 6_010)).count == 1)
        // B never got it (lost on the air) and asks again.
        let second = transmissions(b.tick(now: try #require(b.nextDeadline)))
        let again = transmissions(a.receive(second[0].bytes, on: LinkID(2), now: 40_010))
        #expect(try again.map { try Packet(decoding: $0.bytes).payload } == [m.payload, m.payload])
        #expect(a.statistics.syncRepliesSent == 3)
        // B has it now: its next request gets nothing, and nothing is doubled later.
        _ = b.receive(again[0].bytes, on: LinkID(1), now: 40_020)
        let third = transmissions(b.tick(now: try #require(b.nextDeadline)))
        #expect(transmissions(a.receive(third[0].bytes, on: LinkID(2), now: 80_010)).isEmpty)

        // Twenty messages B lacks, asked for twice: the long answer goes once each time.
        let many = (0..<20).map { i in
            Packet(type: .message, ttl: 7, timestamp: UInt64(i), senderID: PeerID(rawValue: 3), payload: Array("many \(i)".utf8))
        }
        var (c, d) = linked(3, 4, after: many)
        let ask = transmissions(d.tick(now: 6_000))
        #expect(transmissions(c.receive(ask[0].bytes, on: LinkID(4), now: 6_010)).count == 20)
        let askAgain = transmissions(d.tick(now: try #require(d.nextDeadline)))
        #expect(transmissions(c.receive(askAgain[0].bytes, on: LinkID(4), now: 40_010)).count == 20)
    }

    @Test func aHealedPartitionConverges() {
        // Two clusters of 40; the bridge is down while a message spreads in the first.
        var rng = SeededGenerator(seed: 4)
        let joined = Topology.clusters(2, size: 40, meanDegree: 8, bridges: 3, rng: &rng)
        var split = joined
        split.neighbors = joined.neighbors.enumerated().map { i, n in n.filter { ($0 < 40) == (i < 40) } }
        var config = MeshRouter.Configuration()
        config.sync = GossipStore.Configuration()
        var sim = Simulator(topology: split, radio: .init(), policy: BackbonePolicy(), seed: 9, configuration: config)
        final class Seen: @unchecked Sendable { var nodes: Set<Int> = [] }
        let seen = Seen()
        let m = Packet(type: .message, ttl: 7, timestamp: 0, senderID: Simulator.peerID(0), payload: Array("before the bridge".utf8))
        sim.onDeliver = { node, p, _, _ in if p.payload == m.payload { seen.nodes.insert(node) } }
        sim.originate(m, at: 0)
        sim.run(until: 2_000)
        let first = split.distances(from: 0).enumerated().filter { $0.element != nil && $0.offset != 0 }.count
        #expect(seen.nodes.count == first)          // its own component only
        #expect(seen.nodes.allSatisfy { $0 < 40 })
        _ = sim.rewire(to: joined)                  // the bridge comes up
        sim.run(until: 2_000 + 2 * 30_000)          // two sync intervals
        let all = joined.distances(from: 0).enumerated().filter { $0.element != nil && $0.offset != 0 }.count
        #expect(seen.nodes.count == all)
    }
}
