import Foundation
import StarlingMesh
import StarlingWire

/// Broadcasts from random sources, one at a time, over one topology and one
/// policy; measures delivery, cost and latency.
public struct BroadcastExperiment: Sendable {
    public var broadcasts = 30
    /// Virtual time between broadcasts (each settles long before the next).
    public var spacing: Millis = 5_000
    public var ttl: UInt8 = 32
    public var payloadBytes = 64
    public var radio = Simulator.Radio()
    /// Probability that a node is offline during a broadcast (churn).
    public var churn: Double = 0
    public var seed: UInt64 = 1
    /// Movement: before each broadcast every node of a geometric topology takes a
    /// random step of up to this length (the square is 1 × 1), links are
    /// recomputed with the radius of `movementRadius`, and routers see the
    /// links change.
    public var movement: Double = 0
    public var movementRadius: Double?
    /// Whether routers learn the topology again after each move (converged
    /// announces), or plan over the one they knew at the start (stale).
    public var refreshTopology = true
    /// A mixed mesh: each of these shares of the nodes (chosen by the seed)
    /// relays with its `policy` instead, as phones running the deployed apps
    /// would, or nodes that never relay (``NoRelayPolicy``).
    public var others: [(share: Double, policy: any RelayPolicy)] = []
    public init() {}

    public struct Result: Sendable {
        public var policy: String
        public var nodes: Int
        public var meanDegree: Double
        public var cdsSize: Int
        /// Per broadcast: delivered ÷ reachable (online nodes in the source's component within TTL).
        public var deliveryRatios: [Double]
        public var transmissionsPerBroadcast: Double
        public var duplicatesPerNodePerBroadcast: Double
        /// New packets ÷ all packets received.
        public var usefulness: Double
        public var latencies: [Millis]
        public var transmissionsPerNode: [Int]
        public var receptionsPerNode: [Int]
        public var relaysScheduled: Int
        public var relaysCancelled: Int
        /// Broadcasts sent again by the node that had just sent them (repeats over bridges, a sole watcher's repair).
        public var retransmissions = 0
        /// Links that came up and went down through movement.
        public var linkChanges = 0
        public var wallSeconds: Double

        public var meanDelivery: Double { deliveryRatios.isEmpty ? 0 : deliveryRatios.reduce(0, +) / Double(deliveryRatios.count) }
        public var minDelivery: Double { deliveryRatios.min() ?? 0 }
        public var transmissionsPerCDS: Double { cdsSize == 0 ? 0 : transmissionsPerBroadcast / Double(cdsSize) }
        public func latencyPercentile(_ p: Double) -> Millis {
            guard !latencies.isEmpty else { return 0 }
            let sorted = latencies.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p + 0.5))]
        }
    }

    /// `progress` is told the share of the broadcasts done (0…1) as the run goes.
    public func run(on topology: Topology, policy: any RelayPolicy, cdsSize: Int? = nil,
                    progress: ((Double) -> Void)? = nil) -> Result {
        let clock = ContinuousClock()
        let start = clock.now
        var config = MeshRouter.Configuration()
        config.maxTTL = ttl
        var pick = SeededGenerator(seed: seed ^ 0x0DDB_A11)
        let policies: [any RelayPolicy] = (0..<topology.nodeCount).map { _ in
            guard !others.isEmpty else { return policy }
            var u = pick.unit()
            for other in others {
                if u < other.share { return other.policy }
                u -= other.share
            }
            return policy
        }
        // Nodes that never relay are reached, but reach no one further.
        let silent = Set(policies.indices.filter { policies[$0] is NoRelayPolicy })
        var sim = Simulator(topology: topology, radio: radio, policies: policies, seed: seed, configuration: config)
        // Converged announces (complete neighbour lists), heard again every 30 s
        // (the route table forgets lists after 60 s): the topology planned
        // policies plan over.
        var learnt: Millis = 0
        if policy.usesTopology { sim.learnTopology(listed: .max, shared: true) }
        let component = topology.largestComponent
        let cds = cdsSize ?? topology.greedyConnectedDominatingSet(of: component).count
        var rng = SeededGenerator(seed: seed ^ 0xB40A_DCA5)
        final class Log: @unchecked Sendable {
            var firstDelivery: [UInt64: [Int: Millis]] = [:]
        }
        let log = Log()
        sim.onDeliver = { node, packet, _, at in
            let key = PacketID(packet).high
            if log.firstDelivery[key]?[node] == nil { log.firstDelivery[key, default: [:]][node] = at }
        }
        var ratios: [Double] = [], latencies: [Millis] = []
        var current = topology
        var linkChanges = 0
        var points = topology.positions
        for b in 0..<broadcasts {
            if movement > 0, var p = points, let radius = movementRadius {
                for i in p.indices {
                    let angle = rng.unit() * 2 * Double.pi, step = rng.unit() * movement
                    p[i].x = min(1, max(0, p[i].x + step * cos(angle)))
                    p[i].y = min(1, max(0, p[i].y + step * sin(angle)))
                }
                points = p
                let next = Topology.geometric(p, radius: radius)
                let (up, down) = sim.rewire(to: next)
                if policy.usesTopology, refreshTopology { sim.learnTopology(listed: .max, shared: true); learnt = sim.now }
                linkChanges += up + down
                current = next
            }
            if policy.usesTopology, sim.now >= learnt + 30_000 {
                sim.learnTopology(listed: .max, described: refreshTopology ? nil : topology, shared: true)
                learnt = sim.now
            }
            sim.offline = churn > 0 ? Set((0..<topology.nodeCount).filter { _ in rng.unit() < churn }) : []
            let live = movement > 0 ? current.largestComponent : component
            let source = live[Int(rng.next() % UInt64(live.count))]
            sim.offline.remove(source)
            let t0 = sim.now
            var payload = [UInt8](repeating: 0, count: payloadBytes)
            for i in 0..<min(8, payloadBytes) { payload[i] = UInt8(truncatingIfNeeded: UInt64(b) >> (8 * UInt64(i))) }
            for i in 8..<payloadBytes { payload[i] = UInt8(truncatingIfNeeded: rng.next()) }
            let packet = Packet(type: .message, ttl: ttl, timestamp: t0, senderID: Simulator.peerID(source),
                                payload: payload, compress: false)
            sim.originate(packet, at: source)
            sim.run(until: t0 + spacing)
            // Reachable: online, in the source's component through online nodes
            // that relay (the last hop may be one that does not), within TTL hops.
            var alive = current
            if !sim.offline.isEmpty || !silent.isEmpty {
                alive.neighbors = alive.neighbors.enumerated().map { i, n in
                    sim.offline.contains(i) || (silent.contains(i) && i != source) ? [] : n.filter { !sim.offline.contains($0) }
                }
            }
            let distance = alive.distances(from: source)
            let reachable = (0..<topology.nodeCount).filter { $0 != source && (distance[$0].map { $0 <= Int(ttl) } ?? false) }
            let got = log.firstDelivery[PacketID(packet).high] ?? [:]
            let delivered = reachable.filter { got[$0] != nil }.count
            ratios.append(reachable.isEmpty ? 1 : Double(delivered) / Double(reachable.count))
            latencies += got.filter { $0.key != source }.map { $0.value - t0 }.sorted()
            progress?(Double(b + 1) / Double(broadcasts))
        }
        let stats = sim.routers.map(\.statistics)
        let received = stats.reduce(0) { $0 + $1.received }
        let duplicates = stats.reduce(0) { $0 + $1.duplicatesBlocked }
        let tx = sim.transmissions.reduce(0, +)
        let elapsed = clock.now - start
        return Result(
            policy: policy.name, nodes: topology.nodeCount, meanDegree: topology.meanDegree, cdsSize: cds,
            deliveryRatios: ratios,
            transmissionsPerBroadcast: Double(tx) / Double(max(1, broadcasts)),
            duplicatesPerNodePerBroadcast: Double(duplicates) / Double(topology.nodeCount * max(1, broadcasts)),
            usefulness: received + duplicates == 0 ? 0 : Double(received) / Double(received + duplicates),
            latencies: latencies, transmissionsPerNode: sim.transmissions, receptionsPerNode: sim.receptions,
            relaysScheduled: stats.reduce(0) { $0 + $1.relaysScheduled },
            relaysCancelled: stats.reduce(0) { $0 + $1.relaysCancelled },
            retransmissions: stats.reduce(0) { $0 + $1.retransmissions },
            linkChanges: linkChanges,
            wallSeconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}
