import Testing
import StarlingWire
@testable import StarlingMesh
@testable import StarlingSim

private func routeTable(_ t: Topology, order: [Int]? = nil) -> RouteTable {
    var routes = RouteTable()
    for i in order ?? Array(0..<t.nodeCount) {
        routes.learn(Simulator.peerID(i), neighbors: Set(t.neighbors[i].map(Simulator.peerID)), now: 0)
    }
    return routes
}

/// What node `node` of `t` knows around it: its links, and each neighbour's
/// neighbours (as converged announces give them).
private func neighborhood(_ t: Topology, of node: Int) -> Neighborhood {
    var h = Neighborhood(localPeer: Simulator.peerID(node))
    for j in t.neighbors[node] {
        h.add(LinkID(UInt32(j)), peer: Simulator.peerID(j))
        h.setNeighbors(of: Simulator.peerID(j), Set(t.neighbors[j].map(Simulator.peerID)))
    }
    return h
}

/// One broadcast from node 0 over `t` with the planned policy, the topology
/// learnt first, no loss: the simulator after it, and who got the payload whole.
private func plannedBroadcast(_ t: Topology, radio: Simulator.Radio = .init(), seed: UInt64, payload: [UInt8] = [1])
    -> (Simulator, Set<Int>) {
    var sim = Simulator(topology: t, radio: radio, policy: PlannedPolicy(), seed: seed)
    sim.learnTopology(listed: .max, shared: true)
    final class Box: @unchecked Sendable { var got = Set<Int>() }
    let box = Box()
    sim.onDeliver = { node, packet, _, _ in if packet.payload == payload { box.got.insert(node) } }
    sim.originate(Packet(type: .message, ttl: 7, timestamp: 0, senderID: Simulator.peerID(0), payload: payload, compress: false), at: 0)
    sim.run(until: 3_000)
    return (sim, box.got)
}

@Suite struct BroadcastPlanTests {
    static func graph(_ n: Int = 120, degree: Double = 9, seed: UInt64 = 7) -> Topology {
        var rng = SeededGenerator(seed: seed)
        return Topology.randomGeometric(nodes: n, radius: Topology.radius(nodes: n, meanDegree: degree), rng: &rng)
    }

    @Test func fingerprintDependsOnContentNotOrder() {
        let t = Self.graph()
        let a = routeTable(t)
        let b = routeTable(t, order: Array((0..<t.nodeCount).reversed()))
        #expect(a.fingerprint == b.fingerprint)
        var c = a
        let peer = Simulator.peerID(3), before = c.neighbors(of: peer)!
        c.learn(peer, neighbors: before.union([Simulator.peerID(99)]), now: 1)
        #expect(c.fingerprint != a.fingerprint)
        c.learn(peer, neighbors: before, now: 2) // back as it was
        #expect(c.fingerprint == a.fingerprint)
        c.forget(peer)
        #expect(c.fingerprint != a.fingerprint)
        c.learn(peer, neighbors: before, now: 3)
        #expect(c.fingerprint == a.fingerprint)
    }

    @Test func everyNodeComputesTheSamePlanAndItMeetsItsTarget() throws {
        let t = Self.graph()
        let component = t.largestComponent
        let source = component[component.count / 2]
        let a = BroadcastPlanCache(target: 0.005).plan(from: Simulator.peerID(source), routes: routeTable(t))
        let b = BroadcastPlanCache(target: 0.005).plan(from: Simulator.peerID(source), routes: routeTable(t, order: Array((0..<t.nodeCount).reversed())))
        let plan = try #require(a)
        #expect(plan == b)
        #expect(plan.relays.contains(Simulator.peerID(source)))
        #expect(plan.covered == component.count)
        // Connected, and the expected misses (loss^k for a node hearing k relays) are within the target.
        let relays = Set(component.filter { plan.relays.contains(Simulator.peerID($0)) })
        var reached: Set = [source], queue = [source]
        while let u = queue.popLast() {
            for v in t.neighbors[u] where relays.contains(v) && !reached.contains(v) { reached.insert(v); queue.append(v) }
        }
        #expect(reached == relays)
        // Planned relays are watched (their loss is repaired), so only the others count.
        var misses = 0.0
        for x in component where x != source {
            let k = t.neighbors[x].filter(relays.contains).count
            #expect(k >= 1, "node \(x) hears no planned relay")
            if !relays.contains(x) { misses += (0..<k).reduce(1.0) { p, _ in p * 0.05 } }
        }
        #expect(misses <= 0.005 * Double(component.count) + 1e-9)
        // Most nodes hear two relays or more: the plan is not a bare dominating set.
        let single = component.filter { x in !relays.contains(x) && t.neighbors[x].filter(relays.contains).count == 1 }
        #expect(Double(single.count) < 0.1 * Double(component.count))
        // Not much larger than the greedy connected dominating set; a lower target costs more relays.
        let cds = t.greedyConnectedDominatingSet(of: component).count
        #expect(Double(relays.count) < 1.5 * Double(cds))
        let stricter = try #require(BroadcastPlanCache(target: 0.001).plan(from: Simulator.peerID(source), routes: routeTable(t)))
        #expect(stricter.relays.count > plan.relays.count)
    }

    /// With a TTL, every node within it hears a planned relay that the TTL still lets relay.
    @Test func planPathsFitTheTTL() throws {
        let t = Self.graph(200, degree: 7, seed: 3)
        let component = t.largestComponent
        let source = component[0]
        let routes = routeTable(t)
        let distance = t.distances(from: source)
        for ttl in [4, 7] {
            let plan = try #require(BroadcastPlanCache().plan(from: Simulator.peerID(source), routes: routes, maxHops: ttl))
            let relays = Set(component.filter { plan.relays.contains(Simulator.peerID($0)) })
            // Hops along the plan from the source.
            var depth: [Int: Int] = [source: 0]
            var frontier = [source]
            while !frontier.isEmpty {
                var next: [Int] = []
                for u in frontier {
                    for v in t.neighbors[u] where relays.contains(v) && depth[v] == nil { depth[v] = depth[u]! + 1; next.append(v) }
                }
                frontier = next
            }
            for x in component where x != source && (distance[x] ?? .max) <= ttl {
                #expect(t.neighbors[x].contains { relays.contains($0) && (depth[$0] ?? .max) < ttl },
                        "node \(x) at \(distance[x]!) hops hears no planned relay within TTL \(ttl)")
            }
        }
    }

    @Test func unknownSourceHasNoPlan() {
        let t = Self.graph(30, degree: 6)
        #expect(BroadcastPlanCache().plan(from: PeerID(rawValue: 0xDEAD), routes: routeTable(t)) == nil)
    }

    /// Watchers are next to their relay, off the plan, and get the packet
    /// without it: through planned relays that do not pass through it.
    @Test func watchersGetThePacketWithoutTheirRelay() throws {
        let t = Self.graph(200, degree: 8, seed: 5)
        let component = t.largestComponent
        let source = component[0]
        let plan = try #require(BroadcastPlanCache().plan(from: Simulator.peerID(source), routes: routeTable(t)))
        let relays = Set(component.filter { plan.relays.contains(Simulator.peerID($0)) })
        let index = Dictionary(uniqueKeysWithValues: (0..<t.nodeCount).map { (Simulator.peerID($0), $0) })
        var watched = 0
        for (relay, watchers) in plan.watchers {
            let r = try #require(index[relay])
            #expect(relays.contains(r) && r != source)
            #expect((1...2).contains(watchers.count))
            // The planned relays the source reaches without r.
            var reached: Set = [source], queue = [source]
            while let u = queue.popLast() {
                for v in t.neighbors[u] where v != r && relays.contains(v) && !reached.contains(v) { reached.insert(v); queue.append(v) }
            }
            for w in watchers.map({ index[$0]! }) {
                #expect(t.neighbors[r].contains(w) && !relays.contains(w))
                #expect(t.neighbors[w].contains { $0 != r && reached.contains($0) }, "watcher \(w) of \(r) depends on it")
            }
            watched += 1
        }
        // Most relays are watched; the others have a second way in or a repeat.
        #expect(Double(watched) > 0.8 * Double(relays.count - 1))
    }

    /// A planned relay relays at once; a node off the plan relays only when a
    /// neighbour is likely to lack the packet, and stands down when the copies
    /// it hears say otherwise.
    @Test func plannedRelaysAndRepairs() throws {
        // A line 0 – 1 – 2 – 3: from 0, the plan is 0, 1, 2 (3 is a leaf: its
        // relay would help nobody). Nobody can watch 1 or 2, each with a single
        // way in: 0 and 1 send twice (0 also as a source with one neighbour).
        let t = Topology.line(4)
        let routes = routeTable(t)
        let cache = BroadcastPlanCache()
        let plan = try #require(cache.plan(from: Simulator.peerID(0), routes: routes))
        #expect(plan.relays == Set([0, 1, 2].map(Simulator.peerID)))
        #expect(plan.watchers.isEmpty)
        #expect(plan.repeats == [Simulator.peerID(0): [Simulator.peerID(1)], Simulator.peerID(1): [Simulator.peerID(2)]])
        #expect(plan.sends == [Simulator.peerID(0): 2, Simulator.peerID(1): 2])
        // Hops by the shortest path, and what each relay's loss would cost: 1 carries 2 and 3, 2 carries 3.
        #expect((0..<4).map { plan.hops[Simulator.peerID($0)] } == [0, 1, 2, 3])
        #expect(plan.dependents[Simulator.peerID(1)] == 2 && plan.dependents[Simulator.peerID(2)] == 1)
        #expect(plan.dependents[Simulator.peerID(3)] == nil)
        let policy = PlannedPolicy(plans: cache)
        func ctx(from: Int) -> RelayContext {
            RelayContext(ttl: 7, type: .message, fromLink: LinkID(UInt32(from)), fromPeer: Simulator.peerID(from), now: 0,
                         source: Simulator.peerID(0), routes: routes)
        }
        var rng = SeededGenerator(seed: 1)
        var tracking = RelayTracking()
        // Node 1 is planned: relays within the jitter, and a copy heard does not cancel it.
        guard case let .relay(delay, ttl, _) = policy.firstHeard(ctx(from: 0), neighborhood: neighborhood(t, of: 1), tracking: &tracking, rng: &rng) else {
            Issue.record("a planned relay relays"); return
        }
        #expect(delay < policy.plannedJitter && ttl == 6)
        #expect(!policy.duplicateHeard(from: Simulator.peerID(2), neighborhood: neighborhood(t, of: 1), tracking: &tracking))
        // Node 3 is not planned and has no neighbour but 2, which sent it the packet: nothing to repair.
        tracking = RelayTracking()
        #expect(policy.firstHeard(ctx(from: 2), neighborhood: neighborhood(t, of: 3), tracking: &tracking, rng: &rng) == .drop)

        // The estimate itself, with a plan given: 0 – 1 – 3 and 0 – 2 – 3, node 2
        // off the plan {0, 1, 3}. Having heard only 0, planned node 3 next to it
        // has said nothing: it may lack the packet, so node 2 would repair…
        let d = Topology(neighbors: [[1, 2], [0, 3], [0, 3], [1, 2]])
        let h = neighborhood(d, of: 2)
        tracking = RelayTracking()
        tracking.plan = BroadcastPlan(source: Simulator.peerID(0), relays: Set([0, 1, 3].map(Simulator.peerID)), covered: 4)
        tracking.heardFrom = [Simulator.peerID(0)]
        #expect(policy.neighborAtRisk(h, tracking))
        // …until it hears 3 relay.
        #expect(policy.duplicateHeard(from: Simulator.peerID(3), neighborhood: h, tracking: &tracking))
        #expect(!policy.neighborAtRisk(h, tracking))
    }

    /// The repeats go out through the router: on the line, 0 and 1 send twice,
    /// 2 once, 3 not at all; each repeat is counted.
    @Test func bridgesAreSentTwice() {
        let t = Topology.line(4)
        let (sim, got) = plannedBroadcast(t, seed: 3)
        #expect(got == [1, 2, 3])
        #expect(sim.transmissions == [2, 2, 1, 0])
        #expect(sim.routers.map(\.statistics.retransmissions) == [1, 1, 0, 0])

        // A packet that goes in fragments is not sent again by its source
        // (new fragments would be new packets to every relay); the pieces
        // themselves are packets that fit, and cross the bridge twice each.
        var radio = Simulator.Radio()
        radio.maxFrame = 128
        let (small, whole) = plannedBroadcast(t, radio: radio, seed: 3, payload: [UInt8](repeating: 7, count: 400))
        #expect(whole == [1, 2, 3])
        let pieces = small.routers[0].statistics.fragmentsSent
        #expect(pieces > 1)
        #expect(small.routers.map(\.statistics.retransmissions) == [0, pieces, 0, 0])
    }

    /// Nodes depend on the relays of the plan's own tree: every node of the
    /// component hangs under the source, each once, even where the plan's
    /// paths are longer than the shortest (a tree by hops from the source
    /// would give some nodes a parent the packet never comes from).
    @Test func dependentsFollowThePlansTree() throws {
        for seed: UInt64 in [3, 7, 11] {
            let t = Self.graph(300, degree: 7, seed: seed)
            let component = t.largestComponent
            let routes = routeTable(t)
            for source in component.prefix(8) {
                let plan = try #require(BroadcastPlanCache().plan(from: Simulator.peerID(source), routes: routes, maxHops: 64))
                #expect(plan.dependents[Simulator.peerID(source)] == component.count - 1)
                // A relay carries at least the relays below it and itself.
                for (relay, below) in plan.dependents where relay != Simulator.peerID(source) {
                    #expect(below < component.count - 1)
                }
            }
        }
    }

    /// Copies go out again where a loss would go unnoticed and cost much:
    /// 0 – 1 – 2 – 4 – {25 leaves}, and 3 next to 0 and 2. Node 4 feeds 25
    /// nodes and nobody can watch it: 2 sends three times (two copies would
    /// still lose 0.0025 × 26 nodes). Node 2 has a watcher, 3, but 3's only
    /// way in is the source: 2 and 3 both missing their copies loses 27
    /// nodes 0.25% of the time, so 1 sends twice. Node 1 is a bridge that
    /// carries 28, and the source's one carrier: 0 sends three times. A relay
    /// cannot hear the next one (it never sends back where the packet came
    /// from), so every copy goes out.
    @Test func unnoticedLossesAreSentAgain() throws {
        var neighbors: [[Int]] = [[1, 3], [0, 2], [1, 3, 4], [0, 2], [2] + Array(5..<30)]
        neighbors += (5..<30).map { _ in [4] }
        let t = Topology(neighbors: neighbors)
        let plan = try #require(BroadcastPlanCache().plan(from: Simulator.peerID(0), routes: routeTable(t), maxHops: 64))
        #expect(plan.relays == Set([0, 1, 2, 4].map(Simulator.peerID)))
        #expect(plan.watchers == [Simulator.peerID(2): [Simulator.peerID(3)]])
        #expect(plan.sends == [Simulator.peerID(0): 3, Simulator.peerID(1): 2, Simulator.peerID(2): 3])
        #expect(plan.repeats[Simulator.peerID(2)] == [Simulator.peerID(4)])
        let (sim, got) = plannedBroadcast(t, seed: 5)
        #expect(got == Set(1..<30))
        #expect(Array(sim.transmissions.prefix(5)) == [3, 2, 3, 0, 1])
        #expect(sim.transmissions.dropFirst(5).allSatisfy { $0 == 0 })
        #expect(sim.routers.prefix(5).map(\.statistics.retransmissions) == [2, 1, 2, 0, 0])
        // Where nothing rides on it, nothing is sent again.
        let plain = try #require(BroadcastPlanCache(repeatWorth: .infinity).plan(from: Simulator.peerID(0), routes: routeTable(t), maxHops: 64))
        #expect(plain.sends.isEmpty)
    }

    /// A source with two neighbours: its one transmission lost at both, the
    /// broadcast goes nowhere, though each child can also get it from the
    /// other and its watchers look well fed (every way in starts at the
    /// source). The source sends again. (Node 41 of the bench's sparse
    /// 300-node graph: a broadcast of it once reached nobody.)
    @Test func aSourceWithFewNeighboursSendsAgain() throws {
        let t = Self.graph(300, degree: 8, seed: 300 * 31 + 8)
        #expect(t.neighbors[41] == [132, 283] && t.neighbors[132].contains(283))
        let cache = BroadcastPlanCache()
        let plan = try #require(cache.plan(from: Simulator.peerID(41), routes: routeTable(t), maxHops: 64))
        #expect(plan.relays.isSuperset(of: [Simulator.peerID(132), Simulator.peerID(283)]))
        // 0.05² × 299 nodes = 0.75 of a node lost per broadcast, far above the
        // 0.05 a copy must save; with a copy, 0.05⁴ × 299 = 0.002.
        #expect(plan.sends[Simulator.peerID(41)] == 2)
        #expect(Set(plan.repeats[Simulator.peerID(41)] ?? []) == [Simulator.peerID(132), Simulator.peerID(283)])
        var sim = Simulator(topology: t, radio: .init(), policy: PlannedPolicy(plans: cache), seed: 4)
        sim.learnTopology(listed: .max, shared: true)
        sim.originate(Packet(type: .message, ttl: 64, timestamp: 0, senderID: Simulator.peerID(41), payload: [3], compress: false), at: 41)
        sim.run(until: 3_000)
        #expect(sim.transmissions[41] == 2 && sim.routers[41].statistics.retransmissions == 1)
    }

    /// A watcher that has not heard its relay repairs after `repairDelay` (the
    /// second watcher later still); hearing the relay stands it down.
    @Test func watcherRepairsASilentRelay() throws {
        let t = Self.graph(120, degree: 9, seed: 7)
        let component = t.largestComponent
        let source = component[0]
        let routes = routeTable(t)
        let cache = BroadcastPlanCache()
        let plan = try #require(cache.plan(from: Simulator.peerID(source), routes: routes, maxHops: 64))
        let index = Dictionary(uniqueKeysWithValues: (0..<t.nodeCount).map { (Simulator.peerID($0), $0) })
        let (relay, watchers) = try #require(plan.watchers.sorted { $0.key < $1.key }.first)
        let w = index[watchers[0]]!
        let h = neighborhood(t, of: w)
        // Its first copy comes from a planned neighbour other than the relay.
        let from = try #require(t.neighbors[w].first { plan.relays.contains(Simulator.peerID($0)) && Simulator.peerID($0) != relay })
        let policy = PlannedPolicy(plans: cache)
        var rng = SeededGenerator(seed: 4)
        var tracking = RelayTracking()
        var context = RelayContext(ttl: 60, type: .message, fromLink: LinkID(UInt32(from)), fromPeer: Simulator.peerID(from),
                                   now: 0, source: Simulator.peerID(source), routes: routes)
        context.originTTL = 64
        guard case let .relay(delay, _, _) = policy.firstHeard(context, neighborhood: h, tracking: &tracking, rng: &rng) else {
            Issue.record("a watcher whose relay is silent repairs"); return
        }
        let rank = h.neighborPeers.compactMap { plan.watchers[$0]?.firstIndex(of: Simulator.peerID(w)) }.min()!
        let earliest = policy.repairDelay + Millis(rank) * policy.watchStagger
        #expect(delay >= earliest && delay < earliest + policy.watchJitter)
        #expect(policy.neighborAtRisk(h, tracking))
        // The relay speaks (and every other neighbour is covered twice over): the repair is off.
        for peer in h.neighborPeers where peer != relay { tracking.heardFrom.insert(peer) }
        #expect(policy.duplicateHeard(from: relay, neighborhood: h, tracking: &tracking))
    }

    /// In a small mesh the plan meets its target early, and its next relay
    /// would save little: copies are bought down to that. Seed 001's 20-node
    /// mesh hangs six nodes on a line of bridges, 18 – 9 – 7 – 14: from 18,
    /// losing one bridge loses 16 nodes, still 0.25% of the time after two
    /// copies, so each of 18, 9 and 7 sends three (two with copies worth
    /// 0.05 of a node, as in a large mesh).
    @Test func smallMeshesBuyCopiesDownToThePlansNextRelay() throws {
        var rng = SeededGenerator(seed: 20)
        let t = Topology.randomGeometric(nodes: 20, radius: Topology.radius(nodes: 20, meanDegree: 4), rng: &rng)
        #expect(t.neighbors[18] == [9] && t.neighbors[9] == [7, 18] && t.neighbors[7] == [9, 14])
        let routes = routeTable(t)
        let plan = try #require(BroadcastPlanCache().plan(from: Simulator.peerID(18), routes: routes, maxHops: 7))
        for bridge in [18, 9, 7] { #expect(plan.sends[Simulator.peerID(bridge)] == 3) }
        // An infinite `repeatWorth` still means no copies at all.
        let none = try #require(BroadcastPlanCache(repeatWorth: .infinity).plan(from: Simulator.peerID(18), routes: routes, maxHops: 7))
        #expect(none.sends.isEmpty)
    }

    /// A watcher's follow-up. Its relay missed the watcher's repair and then
    /// the second watcher's: the first watcher, which heard the second one
    /// repair and the relay still say nothing, sends once more. Hearing the
    /// relay, or no second repair, ends the watch without a word.
    @Test func watcherFollowsUpWhenTheRelayMissedBothRepairs() throws {
        let t = Self.graph(300, degree: 8, seed: 5)
        let routes = routeTable(t)
        let cache = BroadcastPlanCache()
        let policy = PlannedPolicy(plans: cache)
        let index = Dictionary(uniqueKeysWithValues: (0..<t.nodeCount).map { (Simulator.peerID($0), $0) })
        let source = t.largestComponent[0]
        let plan = try #require(cache.plan(from: Simulator.peerID(source), routes: routes, maxHops: 64))
        // A relay that many depend on, whose two watchers hear each other; the
        // first gets its copy from another planned relay.
        let found = plan.watchers.sorted { $0.key < $1.key }.first { relay, watchers in
            watchers.count == 2 && (plan.dependents[relay] ?? 0) >= 12 && t.neighbors[index[watchers[0]]!].contains(index[watchers[1]]!)
        }
        let (relay, watchers) = try #require(found)
        let (w1, w2) = (index[watchers[0]]!, watchers[1])
        let from = try #require(t.neighbors[w1].first { plan.relays.contains(Simulator.peerID($0)) && Simulator.peerID($0) != relay })
        var context = RelayContext(ttl: 60, type: .message, fromLink: LinkID(UInt32(from)), fromPeer: Simulator.peerID(from),
                                   now: 0, source: Simulator.peerID(source), routes: routes)
        context.originTTL = 64
        let h = neighborhood(t, of: w1)
        func repaired() -> RelayTracking {
            var rng = SeededGenerator(seed: 9)
            var tracking = RelayTracking()
            guard case .relay = policy.firstHeard(context, neighborhood: h, tracking: &tracking, rng: &rng) else {
                Issue.record("the watcher of a silent relay repairs")
                return tracking
            }
            // The repair goes out: the watcher listens for the second watcher and the relay.
            #expect(policy.transmitted(context, neighborhood: h, tracking: &tracking, rng: &rng) == policy.followUpDelay)
            #expect(tracking.followUps[relay] == [w2])
            return tracking
        }
        // The second watcher repairs, the relay stays silent: one follow-up, then no more.
        var tracking = repaired()
        #expect(!policy.duplicateHeard(from: w2, neighborhood: h, tracking: &tracking))
        #expect(policy.retransmit(neighborhood: h, tracking: &tracking))
        var rng = SeededGenerator(seed: 10)
        #expect(policy.transmitted(context, neighborhood: h, tracking: &tracking, rng: &rng) == nil)
        // The relay speaks after the second repair: the watch ends.
        tracking = repaired()
        #expect(!policy.duplicateHeard(from: w2, neighborhood: h, tracking: &tracking))
        #expect(policy.duplicateHeard(from: relay, neighborhood: h, tracking: &tracking))
        // Nobody else repaired (the relay answered the first repair, away from us): silence.
        tracking = repaired()
        #expect(!policy.retransmit(neighborhood: h, tracking: &tracking))
        // A relay few depend on gets no follow-up (it would cost more than it
        // saves): a first watcher of such a relay only, once its repair is out,
        // does not listen on.
        let small = plan.watchers.sorted { $0.key < $1.key }.first { relay, watchers in
            let w = index[watchers[0]]!
            return watchers.count == 2 && (plan.dependents[relay] ?? 0) < 5
                && t.neighbors[w].filter { plan.watchers[Simulator.peerID($0)]?.contains(watchers[0]) ?? false }.count == 1
        }
        let (quiet, quietWatchers) = try #require(small)
        let w = index[quietWatchers[0]]!
        let way = try #require(t.neighbors[w].first { plan.relays.contains(Simulator.peerID($0)) && Simulator.peerID($0) != quiet })
        context.fromLink = LinkID(UInt32(way))
        context.fromPeer = Simulator.peerID(way)
        var quietTracking = RelayTracking()
        guard case .relay = policy.firstHeard(context, neighborhood: neighborhood(t, of: w), tracking: &quietTracking, rng: &rng) else {
            Issue.record("the watcher of a silent relay repairs"); return
        }
        #expect(policy.transmitted(context, neighborhood: neighborhood(t, of: w), tracking: &quietTracking, rng: &rng) == nil)
    }

    /// A relay that can get the packet from one planned relay only vouches for
    /// it: a watcher that missed its relay's copy but hears such a child of it
    /// knows the relay spoke, and its repair is off.
    @Test func aSoleChildVouchesForItsRelay() throws {
        // 0 – 1 – 2 – 3 – {4, 5}, 2 – 7, and 6 next to 1, 2 and 3: the plan
        // is 0, 1, 2, 3; 6 watches 2 (it has the packet from 1); 3 can get it
        // from 2 only.
        let t = Topology(neighbors: [[1], [0, 2, 6], [1, 3, 6, 7], [2, 4, 5, 6], [3], [3], [1, 2, 3], [2]])
        let routes = routeTable(t)
        let cache = BroadcastPlanCache()
        let plan = try #require(cache.plan(from: Simulator.peerID(0), routes: routes, maxHops: 64))
        #expect(plan.relays == Set([0, 1, 2, 3].map(Simulator.peerID)))
        #expect(plan.watchers[Simulator.peerID(2)] == [Simulator.peerID(6)])
        #expect(plan.soleUpstream[Simulator.peerID(3)] == Simulator.peerID(2))
        let policy = PlannedPolicy(plans: cache)
        let h = neighborhood(t, of: 6)
        var context = RelayContext(ttl: 60, type: .message, fromLink: LinkID(1), fromPeer: Simulator.peerID(1),
                                   now: 0, source: Simulator.peerID(0), routes: routes)
        context.originTTL = 64
        var rng = SeededGenerator(seed: 2)
        var tracking = RelayTracking()
        guard case .relay = policy.firstHeard(context, neighborhood: h, tracking: &tracking, rng: &rng) else {
            Issue.record("the watcher of a silent relay repairs"); return
        }
        #expect(policy.neighborAtRisk(h, tracking))
        // 6 missed 2's copy but hears 3, which could only have it from 2.
        #expect(policy.duplicateHeard(from: Simulator.peerID(3), neighborhood: h, tracking: &tracking))
        #expect(tracking.heardFrom.contains(Simulator.peerID(2)))
    }

    /// Where the TTL binds, a planned relay whose first copy came the long way
    /// round waits for the copy along the shortest path, and relays that one:
    /// its TTL is what the rest of the plan needs.
    @Test func aLongWayCopyWaitsForTheShortestPathsTTL() throws {
        // 0 – 1 – 2 – 3 – 4, and a detour 0 – 5 – 6 – 2. Node 2 is planned,
        // two hops from 0; node 4 is two hops further.
        let t = Topology(neighbors: [[1, 5], [0, 2], [1, 3, 6], [2, 4], [3], [0, 6], [5, 2]])
        let routes = routeTable(t)
        let packet = Packet(type: .message, ttl: 4, timestamp: 0, senderID: Simulator.peerID(0), payload: [9], compress: false)
        func node2(maxTTL: UInt8) -> MeshRouter {
            var config = MeshRouter.Configuration()
            config.maxTTL = maxTTL
            var r = MeshRouter(localPeer: Simulator.peerID(2), policy: PlannedPolicy(), seed: 5, configuration: config)
            r.adoptRoutes(routes)
            for j in t.neighbors[2] { _ = r.linkUp(LinkID(UInt32(j)), peer: Simulator.peerID(j)) }
            return r
        }
        func sentTTLs(_ actions: [MeshRouter.Action]) throws -> [UInt8] {
            try transmissions(actions).map { try Packet(decoding: $0.bytes).ttl }
        }
        func copy(ttl: UInt8) throws -> [UInt8] {
            var p = packet
            p.ttl = ttl
            return try p.encoded()
        }
        // Runs the router's deadlines up to `time`: the TTLs it sent.
        func run(_ r: inout MeshRouter, until time: Millis) throws -> [UInt8] {
            var sent: [UInt8] = []
            for _ in 0..<10 {
                guard let due = r.nextDeadline, due <= time else { break }
                sent += try sentTTLs(r.tick(now: due))
            }
            return sent
        }
        // With TTL 4 the copy along 0 – 1 – 2 arrives with 3 and leaves with 2,
        // just enough for node 4; the detour's arrives with 2. The shorter
        // path's copy comes 20 ms later: it is the one relayed.
        let policy = PlannedPolicy()
        var r = node2(maxTTL: 4)
        #expect(try sentTTLs(r.receive(try copy(ttl: 2), on: LinkID(6), now: 0)).isEmpty)
        #expect(try #require(r.nextDeadline) >= policy.lateCopyWait)
        #expect(try run(&r, until: 20).isEmpty)
        #expect(try sentTTLs(r.receive(try copy(ttl: 3), on: LinkID(1), now: 20)).isEmpty)
        let out = try run(&r, until: 1_000)
        // (2 sends twice: nobody can watch 3, a bridge to 4.)
        #expect(!out.isEmpty && out.allSatisfy { $0 == 2 }, "sent \(out)")

        // The shortest path's copy first: relayed within the jitter.
        r = node2(maxTTL: 4)
        #expect(try sentTTLs(r.receive(try copy(ttl: 3), on: LinkID(1), now: 0)).isEmpty)
        #expect(try #require(r.nextDeadline) <= policy.plannedJitter)

        // Where the TTL does not bind (7 hops for a graph 4 deep), the detour's
        // copy goes at once too.
        r = node2(maxTTL: 7)
        #expect(try sentTTLs(r.receive(try copy(ttl: 5), on: LinkID(6), now: 0)).isEmpty)
        #expect(try #require(r.nextDeadline) <= policy.plannedJitter)
    }

    /// A topology that moved on (a link the plan counts on is down): the node
    /// relays as the backbone would, whatever the plan says.
    @Test func outdatedTopologyFallsBackToTheBackbone() {
        // The announces say 0 – 1 – 2 – 3 and 1 – 3; the live links are the line.
        let line = Topology.line(4)
        var routes = routeTable(line)
        routes.learn(Simulator.peerID(1), neighbors: Set([0, 2, 3].map(Simulator.peerID)), now: 0)
        let h = neighborhood(line, of: 1)
        let policy = PlannedPolicy()
        #expect(policy.outdated(routes, around: Simulator.peerID(1), h))
        #expect(!policy.outdated(routeTable(line), around: Simulator.peerID(1), h))
        let context = RelayContext(ttl: 7, type: .message, fromLink: LinkID(0), fromPeer: Simulator.peerID(0), now: 0,
                                   source: Simulator.peerID(0), routes: routes)
        var a = RelayTracking(), b = RelayTracking()
        var r1 = SeededGenerator(seed: 8), r2 = SeededGenerator(seed: 8)
        #expect(policy.firstHeard(context, neighborhood: h, tracking: &a, rng: &r1)
                == BackbonePolicy().firstHeard(context, neighborhood: h, tracking: &b, rng: &r2))
        #expect(a.plan == nil)
    }

    /// Without a topology (nobody announced) the planned policy falls back to the backbone and still delivers.
    @Test func withoutATopologyPlannedFallsBackToTheBackbone() {
        let t = Self.graph(150, degree: 10, seed: 11)
        var config = MeshRouter.Configuration()
        config.maxTTL = 64
        var sim = Simulator(topology: t, radio: .init(), policy: PlannedPolicy(), seed: 2, configuration: config)
        var got = Set<Int>()
        sim.onDeliver = { node, _, _, _ in got.insert(node) }
        let source = t.largestComponent[0]
        sim.originate(Packet(type: .message, ttl: 64, timestamp: 0, senderID: Simulator.peerID(source), payload: [1, 2, 3], compress: false), at: source)
        sim.run(until: 5_000)
        #expect(got.count == t.largestComponent.count - 1)
    }
}

@Suite struct SelfPruningTests {
    /// Announces list at most ten neighbours, so one end may name an edge the
    /// other does not. Whether a node forwards must not depend on which
    /// neighbour a search starts from (the simulator must be deterministic, and
    /// Swift's set order changes from run to run): here b does not name a, a
    /// names b; together they cover everything, apart they do not.
    @Test func oneSidedEdgesCountBothWays() {
        let me = PeerID(rawValue: 100), a = PeerID(rawValue: 20), b = PeerID(rawValue: 10), x = PeerID(rawValue: 30)
        let lists: [PeerID: Set<PeerID>] = [
            a: [b, me, PeerID(rawValue: 41), PeerID(rawValue: 42)],
            b: [me, x, PeerID(rawValue: 43), PeerID(rawValue: 44)],
            x: [b, me],
        ]
        for order in [[a, b, x], [x, b, a], [b, x, a]] {
            var h = Neighborhood(localPeer: me)
            for (i, p) in order.enumerated() { h.add(LinkID(UInt32(i)), peer: p) }
            for p in order { h.setNeighbors(of: p, lists[p]!) }
            #expect(!h.isForwarder, "a and b, linked by a's announce, cover every neighbour")
        }
    }
}
