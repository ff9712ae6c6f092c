import StarlingMesh
import StarlingWire

/// A mesh split in two halves (no link crosses the middle of the square) while
/// public messages are sent on both sides; then the halves join again and
/// gossip sync repairs the difference. Measures how long until every node
/// holds every message, and the sync traffic that took.
public struct PartitionExperiment: Sendable {
    public var messagesPerSide = 20
    /// The messages are sent over this span before the halves join.
    public var window: Millis = 60_000
    public var ttl: UInt8 = 7
    public var radio = Simulator.Radio()
    public var sync = GossipStore.Configuration()
    /// Give up after this many sync intervals.
    public var maxIntervals = 6
    public var seed: UInt64 = 1
    public init() {}

    public struct Result: Sendable {
        public var nodes: Int
        public var messages: Int
        /// Nodes holding every message of their own half just before the halves joined.
        public var completeBeforeHeal: Int
        /// Virtual ms from the join until every node of the component held every message (nil: not within `maxIntervals`).
        public var convergence: Millis?
        public var interval: Millis
        /// Sync requests and replies (bytes) per node per sync interval while the halves were apart.
        public var splitSyncBytesPerNodePerInterval: Double
        /// Sync requests and replies (bytes) per node per sync interval, from the join to convergence.
        public var syncBytesPerNodePerInterval: Double
        /// Everything sent (bytes) per node per interval over the same span, repairs relayed included.
        public var allBytesPerNodePerInterval: Double
        public var repairsRelayed: Int
        public var convergenceIntervals: Double? { convergence.map { Double($0) / Double(interval) } }
    }

    /// `progress` is told the share done (0…1): the messages apart are the
    /// first half, the sync intervals allowed after the join the second.
    public func run(on topology: Topology, policy: any RelayPolicy, progress: ((Double) -> Void)? = nil) -> Result {
        precondition(topology.positions != nil, "the cut needs positions")
        let positions = topology.positions!
        let left = positions.map { $0.x < 0.5 }
        var split = topology
        split.neighbors = topology.neighbors.enumerated().map { i, n in n.filter { left[$0] == left[i] } }
        var config = MeshRouter.Configuration()
        config.maxTTL = ttl
        config.sync = sync
        var sim = Simulator(topology: split, radio: radio, policy: policy, seed: seed, configuration: config)
        final class Held: @unchecked Sendable { var keys: [Set<UInt64>] = [] }
        let held = Held()
        held.keys = Array(repeating: [], count: topology.nodeCount)
        sim.onDeliver = { node, packet, _, _ in
            if packet.type == .message { held.keys[node].insert(PacketID(packet).high) }
        }
        var rng = SeededGenerator(seed: seed ^ 0x5917)
        let component = Set(topology.largestComponent)
        let sides = [component.filter { left[$0] }.sorted(), component.filter { !left[$0] }.sorted()]
        var all: Set<UInt64> = []
        var ofSide: [Set<UInt64>] = [[], []]
        let total = messagesPerSide * 2
        for m in 0..<total {
            let side = sides[m % 2]
            guard !side.isEmpty else { continue }
            let at = Millis(m) * window / Millis(total)
            sim.run(until: at)
            let source = side[Int(rng.next() % UInt64(side.count))]
            let packet = Packet(type: .message, ttl: ttl, timestamp: sim.now, senderID: Simulator.peerID(source),
                                payload: Array("message \(m) from \(source)".utf8), compress: false)
            all.insert(PacketID(packet).high)
            ofSide[m % 2].insert(PacketID(packet).high)
            held.keys[source].insert(PacketID(packet).high)
            sim.originate(packet, at: source)
            progress?(Double(m + 1) / Double(total) / 2)
        }
        sim.run(until: window)
        let windowSync = sim.routers.reduce(0) { $0 + $1.statistics.syncRequestBytes + $1.statistics.syncReplyBytes }
        let before = component.filter { held.keys[$0].isSuperset(of: ofSide[left[$0] ? 0 : 1]) }.count
        let healAt = sim.now
        let bytes0 = sim.bytesSent.reduce(0, +)
        let sync0 = sim.routers.reduce(0) { $0 + $1.statistics.syncRequestBytes + $1.statistics.syncReplyBytes }
        _ = sim.rewire(to: topology)
        var converged: Millis?
        while sim.now < healAt + Millis(maxIntervals) * sync.interval {
            sim.run(until: sim.now + 250)
            if component.allSatisfy({ held.keys[$0].isSuperset(of: all) }) { converged = sim.now - healAt; break }
            progress?(0.5 + Double(sim.now - healAt) / Double(Millis(maxIntervals) * sync.interval) / 2)
        }
        let span = Double(sim.now - healAt) / Double(sync.interval)
        let perNode = Double(component.count) * max(span, 1e-9)
        let syncBytes = sim.routers.reduce(0) { $0 + $1.statistics.syncRequestBytes + $1.statistics.syncReplyBytes } - sync0
        return Result(nodes: topology.nodeCount, messages: all.count, completeBeforeHeal: before, convergence: converged,
                      interval: sync.interval,
                      splitSyncBytesPerNodePerInterval: Double(windowSync) / (Double(component.count) * Double(window) / Double(sync.interval)),
                      syncBytesPerNodePerInterval: Double(syncBytes) / perNode,
                      allBytesPerNodePerInterval: Double(sim.bytesSent.reduce(0, +) - bytes0) / perNode,
                      repairsRelayed: sim.routers.reduce(0) { $0 + $1.statistics.repairsRelayed })
    }
}
