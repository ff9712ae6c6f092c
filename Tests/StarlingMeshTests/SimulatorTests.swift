import StarlingTestSupport
import Testing
import StarlingWire
@testable import StarlingMesh
@testable import StarlingSim

@Suite struct SimulatorTests {
    @Test func floodingOverALineReachesEveryNodeWithinTTL() {
        var e = BroadcastExperiment()
        e.broadcasts = 5
        e.ttl = 64
        let r = e.run(on: .line(12), policy: FloodingPolicy())
        #expect(r.deliveryRatios.allSatisfy { $0 == 1 })
        // Every node transmits at most once per broadcast; an end that did not
        // originate has no link left to send on.
        #expect(r.transmissionsPerNode.allSatisfy { $0 <= 5 })
        #expect(r.transmissionsPerNode[1...10].allSatisfy { $0 == 5 })
        #expect(r.transmissionsPerBroadcast >= 10 && r.transmissionsPerBroadcast <= 11)
    }

    @Test func ttlLimitsTheReachOnALine() {
        var config = MeshRouter.Configuration()
        config.maxTTL = 3
        var sim = Simulator(topology: .line(10), radio: .init(), policy: FloodingPolicy(), seed: 1, configuration: config)
        final class Box: @unchecked Sendable { var reached: Set<Int> = [] }
        let box = Box()
        sim.onDeliver = { node, _, _, _ in box.reached.insert(node) }
        sim.originate(Packet(type: .message, ttl: 3, timestamp: 0, senderID: Simulator.peerID(0), payload: [1]), at: 0)
        sim.run(until: 10_000)
        // TTL 3: hops 1, 2 and 3 receive; hop 3 does not relay.
        #expect(box.reached == [1, 2, 3])
    }

    /// A mixed mesh runs each node's own policy: on a line, a node that never
    /// relays cuts it; with everyone flooding but some nodes capping the TTL
    /// (the deployed apps at six links or more), each node's own policy shows.
    @Test func mixedMeshesRunEachNodesPolicy() {
        var policies: [any RelayPolicy] = Array(repeating: FloodingPolicy(), count: 8)
        policies[4] = NoRelayPolicy()
        var sim = Simulator(topology: .line(8), radio: .init(), policies: policies, seed: 1)
        final class Box: @unchecked Sendable { var reached: Set<Int> = [] }
        let box = Box()
        sim.onDeliver = { node, _, _, _ in box.reached.insert(node) }
        sim.originate(Packet(type: .message, ttl: 7, timestamp: 0, senderID: Simulator.peerID(0), payload: [1]), at: 0)
        sim.run(until: 10_000)
        #expect(box.reached == [1, 2, 3, 4])
        #expect(sim.transmissions == [1, 1, 1, 1, 0, 0, 0, 0])

        // The experiment picks the share of other nodes by its seed: all of
        // them mute, nothing leaves the source's neighbours; none, all arrive.
        var e = BroadcastExperiment()
        e.broadcasts = 4
        e.others = [(1.0, NoRelayPolicy())]
        let dead = e.run(on: .line(8), policy: FloodingPolicy())
        #expect(dead.transmissionsPerBroadcast == 1)
        e.others = [(0.0, NoRelayPolicy())]
        #expect(e.run(on: .line(8), policy: FloodingPolicy()).deliveryRatios.allSatisfy { $0 == 1 })
        // Half of them silent: what they cut off is not counted as missed
        // (nobody could reach it), and fewer nodes transmit.
        e.others = [(0.5, NoRelayPolicy())]
        let cut = e.run(on: .line(8), policy: FloodingPolicy())
        #expect(cut.deliveryRatios.allSatisfy { $0 == 1 })
        #expect(cut.transmissionsPerBroadcast < 7)
    }

    @Test func sameSeedSameRunDifferentSeedDifferentRun() {
        var rng = SeededGenerator(seed: 5)
        let t = Topology.randomGeometric(nodes: 80, radius: Topology.radius(nodes: 80, meanDegree: 8), rng: &rng)
        var e = BroadcastExperiment()
        e.radio.loss = 0.1
        e.broadcasts = 10
        let a = e.run(on: t, policy: BackbonePolicy())
        let b = e.run(on: t, policy: BackbonePolicy())
        #expect(a.deliveryRatios == b.deliveryRatios)
        #expect(a.transmissionsPerNode == b.transmissionsPerNode)
        #expect(a.latencies == b.latencies)
        e.seed = 2
        let c = e.run(on: t, policy: BackbonePolicy())
        #expect(c.transmissionsPerNode != a.transmissionsPerNode)
    }

    @Test func greedyCDSIsConnectedAndDominating() {
        var rng = SeededGenerator(seed: 9)
        let t = Topology.randomGeometric(nodes: 200, radius: Topology.radius(nodes: 200, meanDegree: 8), rng: &rng)
        let component = t.largestComponent
        let cds = t.greedyConnectedDominatingSet(of: component)
        for v in component { #expect(cds.contains(v) || t.neighbors[v].contains { cds.contains($0) }) }
        let sub = Topology(neighbors: t.neighbors.enumerated().map { i, n in cds.contains(i) ? n.filter { cds.contains($0) } : [] })
        let reach = sub.distances(from: cds.first!)
        #expect(cds.allSatisfy { reach[$0] != nil })
        #expect(cds.count < component.count / 2)
    }

    @Test func topologiesAndDegreeLimit() {
        #expect(Topology.grid(width: 4, height: 3).edgeCount == 17)
        var rng = SeededGenerator(seed: 2)
        let dense = Topology.randomGeometric(nodes: 300, radius: Topology.radius(nodes: 300, meanDegree: 16), rng: &rng)
        #expect(abs(dense.meanDegree - 16) < 2)
        let limited = dense.limitingDegree(to: 7)
        #expect(limited.maxDegree <= 7)
        let clusters = Topology.clusters(3, size: 30, meanDegree: 8, bridges: 2, rng: &rng)
        #expect(clusters.nodeCount == 90)
    }

    @Test(.computesHeavily) func defaultPolicyBeatsCounterAndFloodingOnAModerateGraph() {
        var rng = SeededGenerator(seed: 11)
        let t = Topology.randomGeometric(nodes: 150, radius: Topology.radius(nodes: 150, meanDegree: 10), rng: &rng)
        var e = BroadcastExperiment()
        e.radio.loss = 0.05
        e.broadcasts = 20
        e.ttl = 64
        let flood = e.run(on: t, policy: FloodingPolicy())
        let backbone = e.run(on: t, policy: BackbonePolicy())
        #expect(backbone.meanDelivery >= 0.99)
        #expect(backbone.transmissionsPerBroadcast < 0.6 * flood.transmissionsPerBroadcast)
        // Planned broadcasts (over the announced topology) deliver as well, for fewer still.
        let planned = e.run(on: t, policy: PlannedPolicy())
        #expect(planned.meanDelivery >= 0.99)
        #expect(planned.transmissionsPerBroadcast < backbone.transmissionsPerBroadcast)
    }

    @Test(.computesHeavily) func movementRewiresLinksAndTheMeshKeepsDelivering() {
        var rng = SeededGenerator(seed: 8)
        let radius = Topology.radius(nodes: 120, meanDegree: 10)
        let t = Topology.randomGeometric(nodes: 120, radius: radius, rng: &rng)
        var e = BroadcastExperiment()
        e.broadcasts = 15
        e.ttl = 64
        e.radio.loss = 0.02
        e.movement = 0.05
        e.movementRadius = radius
        let flood = e.run(on: t, policy: FloodingPolicy())
        let backbone = e.run(on: t, policy: BackbonePolicy())
        #expect(flood.linkChanges > 100)
        #expect(flood.meanDelivery > 0.98)
        #expect(backbone.meanDelivery > 0.98)
        #expect(backbone.transmissionsPerBroadcast < flood.transmissionsPerBroadcast)
        // Planned broadcasts over announces that follow the movement; and over
        // announces learnt once, where the nodes whose links disagree with them
        // relay as the backbone (stale plans alone died out).
        let planned = e.run(on: t, policy: PlannedPolicy())
        #expect(planned.meanDelivery > 0.98)
        #expect(planned.transmissionsPerBroadcast < backbone.transmissionsPerBroadcast)
        e.refreshTopology = false
        let stale = e.run(on: t, policy: PlannedPolicy())
        #expect(stale.meanDelivery > 0.98 && stale.minDelivery > 0.9)
    }

    @Test func rewireUpdatesLinksAndTwoHopKnowledge() {
        var sim = Simulator(topology: .line(4), radio: .init(), policy: BackbonePolicy(), seed: 1)
        // 0–1–2–3 becomes a ring 0–1–2–3–0.
        let ring = Topology(neighbors: [[1, 3], [0, 2], [1, 3], [2, 0]])
        let (up, down) = sim.rewire(to: ring)
        #expect(up == 1 && down == 0)
        #expect(sim.routers[0].neighborhood.degree == 2)
        #expect(sim.routers[1].neighborhood.neighbors(of: Simulator.peerID(0)) == [Simulator.peerID(1), Simulator.peerID(3)])
        let (_, down2) = sim.rewire(to: .line(4))
        #expect(down2 == 1)
        #expect(sim.routers[0].neighborhood.neighbors(of: Simulator.peerID(3)) == nil)
    }

    @Test func churnTakesNodesOffline() {
        var e = BroadcastExperiment()
        e.broadcasts = 10
        e.churn = 0.2
        e.ttl = 64
        var rng = SeededGenerator(seed: 3)
        let t = Topology.randomGeometric(nodes: 60, radius: Topology.radius(nodes: 60, meanDegree: 10), rng: &rng)
        let r = e.run(on: t, policy: FloodingPolicy())
        // Offline nodes neither count as reachable nor transmit; the rest still get it.
        #expect(r.meanDelivery > 0.95)
        #expect(r.transmissionsPerBroadcast < 60)
    }

    /// The plot's labels: policies that measure alike put their dots on top of
    /// each other; their labels must still be readable, none over another or
    /// over another dot.
    @Test func plotLabelsDoNotOverlap() {
        let dots: [(x: Double, y: Double, text: String)] = [
            (270, 60, "planned"), (298, 57, "coverage"), (300, 90, "counter-3"), (228, 84, "backbone"),
            (272, 62, "flooding"), (271, 61, "degree-table"), (130, 277, "bitchat"),
        ]
        let area = (x: 70.0, y: 20.0, w: 470.0, h: 330.0)
        let placed = SVGPlot.placeLabels(dots, within: area)
        #expect(placed.count == dots.count)
        func overlaps(_ a: SVGPlot.Box, _ b: SVGPlot.Box) -> Bool { a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h }
        for i in placed.indices {
            #expect(placed[i].box.w >= 7 * Double(dots[i].text.count), "\(dots[i].text) fits its box")
            for j in placed.indices where j != i {
                #expect(!overlaps(placed[i].box, placed[j].box), "\(dots[i].text) and \(dots[j].text)")
                #expect(!overlaps(placed[i].box, (dots[j].x - 6, dots[j].y - 6, 12, 12)), "\(dots[i].text) over the dot of \(dots[j].text)")
            }
        }
        // A lone dot keeps its label right beside it, without a leader line.
        let lone = SVGPlot.placeLabels([(200, 200, "planned")], within: area)
        #expect(!lone[0].leader && lone[0].box.x == 209)
    }

    /// A radio whose loss grows with link length: short links lose what
    /// `loss` says, links at the edge of range what `edge` says.
    @Test func lossGrowsWithLinkLength() {
        var radio = Simulator.Radio()
        radio.loss = 0
        radio.lossAtRange = (edge: 1, range: 0.1)
        #expect(radio.loss(atLength: 0) == 0 && radio.loss(atLength: 0.05) == 0.25 && radio.loss(atLength: 0.2) == 1)
        // Two pairs: 0 – 1 a thousandth apart, 2 – 3 a whole range apart.
        let t = Topology(neighbors: [[1], [0], [3], [2]], positions: [(0, 0), (0.001, 0), (0.5, 0.5), (0.6, 0.5)])
        var e = BroadcastExperiment()
        e.broadcasts = 40
        e.radio = radio
        let r = e.run(on: t, policy: FloodingPolicy())
        // Sources are drawn from the largest component (0 – 1, the first found
        // of two equal ones): every broadcast crosses the short link.
        #expect(r.meanDelivery == 1)
        var sim = Simulator(topology: t, radio: radio, policy: FloodingPolicy(), seed: 3)
        final class Got: @unchecked Sendable { var nodes = Set<Int>() }
        let got = Got()
        sim.onDeliver = { node, _, _, _ in got.nodes.insert(node) }
        for (k, source) in [0, 2].enumerated() {
            sim.originate(Packet(type: .message, ttl: 7, timestamp: 0, senderID: Simulator.peerID(source), payload: [UInt8(k)], compress: false), at: source)
        }
        sim.run(until: 1_000)
        #expect(got.nodes == [1], "the long link loses everything")
        // Without a length-dependent loss the radio's own loss holds on every link.
        radio.lossAtRange = nil
        #expect(Simulator.linkLoss(t, radio).isEmpty && radio.loss(atLength: 0.2) == 0)
    }
}
