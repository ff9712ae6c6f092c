import Foundation
import StarlingMesh
import StarlingWire

/// Directed traffic: messages from one node to another, acknowledged by the
/// recipient, retried by a ``DeliveryTracker`` — the way a node sends private
/// messages, without the encryption (the router never looks inside).
///
/// Two measures: what a message costs along a known source route against the
/// shortest path (``routeCost(on:policy:)``), and how many messages end up
/// acknowledged under loss and churn (``reliability(on:policy:)``).
public struct DirectedExperiment: Sendable {
    public var messages = 200
    /// Virtual time between two messages' first sends.
    public var spacing: Millis = 500
    /// How long each phase of ``routeCost(on:policy:)`` runs: long enough for a
    /// flood's last repairs, so that none is counted against the next phase.
    public var settle: Millis = 3_000
    public var ttl: UInt8 = 16
    public var radio = Simulator.Radio()
    /// Fraction of nodes offline at any moment. Each node's offline spells
    /// last `churnSpell` on average (geometric, decided each second); their
    /// links go down about a second after they go silent, as a link
    /// supervision timeout would find, and come back when they do.
    public var churn: Double = 0
    public var churnSpell: Millis = 20_000
    public var schedule = DeliveryTracker<UInt32>.Schedule()
    public var sourceRoutes = true
    public var seed: UInt64 = 1
    /// Every node's neighbour list reaches every node this often (announces).
    public var announceInterval: Millis = 10_000
    public init() {}

    public struct RouteCost: Sendable {
        public var messages: Int
        /// Transmissions per message along the route, and flooded.
        public var routedTransmissions: Double
        public var floodedTransmissions: Double
        /// Mean shortest-path hop count between the pairs.
        public var shortestHops: Double
        /// Routed transmissions ÷ shortest-path hops (1.0: one transmission per hop).
        public var routedRatio: Double { shortestHops == 0 ? 0 : routedTransmissions / shortestHops }
        public var delivered: Int
    }

    /// One message at a time between random pairs of the largest component
    /// (within TTL of each other),
    /// each settled before the next: transmissions counted per message, sent
    /// once along the route the announced topology gives, and once flooded.
    /// `progress` is told the share done (0…1) as the run goes.
    public func routeCost(on topology: Topology, policy: any RelayPolicy, progress: ((Double) -> Void)? = nil) -> RouteCost {
        var config = MeshRouter.Configuration()
        config.maxTTL = ttl
        // The comparison floods must not make recipients answer by flood.
        config.floodAnswersFor = 0
        config.sourceRoutes = sourceRoutes
        var sim = Simulator(topology: topology, radio: radio, policy: policy, seed: seed, configuration: config)
        sim.learnTopology()
        final class Log: @unchecked Sendable { var got: Set<UInt64> = [] }
        let log = Log()
        sim.onDeliver = { node, packet, _, _ in
            if packet.recipientID == Simulator.peerID(node) { log.got.insert(PacketID(packet).high) }
        }
        var rng = SeededGenerator(seed: seed ^ 0x5EED)
        let component = topology.largestComponent
        var routedTx = 0, floodTx = 0, hops = 0, delivered = 0
        var learnt: Millis = 0
        for m in 0..<messages {
            if sim.now >= learnt + announceInterval { sim.learnTopology(); learnt = sim.now }
            let (s, d) = pair(component, within: topology, &rng)
            hops += topology.distances(from: s)[d] ?? 0
            for routing in [MeshRouter.Routing.automatic, .flood] {
                let before = sim.transmissions.reduce(0, +)
                let packet = Packet(type: .noiseEncrypted, ttl: ttl, timestamp: sim.now + UInt64(m), senderID: Simulator.peerID(s),
                                    recipientID: Simulator.peerID(d), payload: Array("m\(m)".utf8), compress: false)
                sim.originate(packet, at: s, routing: routing)
                sim.run(until: sim.now + settle)
                let cost = sim.transmissions.reduce(0, +) - before
                if routing == .automatic { routedTx += cost } else { floodTx += cost }
                if routing == .automatic, log.got.contains(PacketID(packet).high) { delivered += 1 }
            }
            progress?(Double(m + 1) / Double(messages))
        }
        let n = Double(max(1, messages))
        return RouteCost(messages: messages, routedTransmissions: Double(routedTx) / n, floodedTransmissions: Double(floodTx) / n,
                         shortestHops: Double(hops) / n, delivered: delivered)
    }

    public struct Reliability: Sendable {
        public var sent: Int
        /// Acknowledged within the retry budget.
        public var delivered: Int
        public var failed: Int
        /// Reported delivered although the recipient never had it (must be 0).
        public var falselyDelivered: Int
        /// Acknowledgements that came more than once for one message (not counted twice).
        public var duplicateAcknowledgements: Int
        public var attemptsPerMessage: Double
        public var transmissionsPerMessage: Double
        /// First send → acknowledgement, virtual ms.
        public var latencies: [Millis]
        public var deliveredRatio: Double { sent == 0 ? 0 : Double(delivered) / Double(sent) }
        public func latencyPercentile(_ p: Double) -> Millis {
            guard !latencies.isEmpty else { return 0 }
            let sorted = latencies.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p + 0.5))]
        }
    }

    /// Messages between random pairs (within TTL), `spacing` apart, under the radio's loss
    /// and churn; the recipient acknowledges each copy it gets; the sender
    /// retries (the first send routed, retries flooded) until acknowledged or
    /// failed. Runs until every message is settled.
    /// `progress` is told the share of the virtual time done (0…1) as the run goes.
    public func reliability(on topology: Topology, policy: any RelayPolicy, progress: ((Double) -> Void)? = nil) -> Reliability {
        var config = MeshRouter.Configuration()
        config.maxTTL = ttl
        config.sourceRoutes = sourceRoutes
        var sim = Simulator(topology: topology, radio: radio, policy: policy, seed: seed, configuration: config)
        sim.learnTopology()
        final class Log: @unchecked Sendable {
            var received: Set<UInt32> = []
            var acks: [Int: [UInt32]] = [:]
            var stamp: UInt64 = 0
        }
        let log = Log()
        func id(of packet: Packet, tag: UInt8) -> UInt32? {
            guard packet.payload.count == 5, packet.payload[0] == tag else { return nil }
            return packet.payload[1...].reduce(0) { $0 << 8 | UInt32($1) }
        }
        func body(_ tag: UInt8, _ id: UInt32) -> [UInt8] { [tag, UInt8(id >> 24), UInt8(id >> 16 & 0xFF), UInt8(id >> 8 & 0xFF), UInt8(id & 0xFF)] }
        sim.respond = { node, packet, at in
            guard packet.recipientID == Simulator.peerID(node) else { return [] }
            if let m = id(of: packet, tag: 0x4D) {           // "M": a message; acknowledge every copy
                log.received.insert(m)
                log.stamp += 1
                return [Packet(type: .noiseEncrypted, ttl: ttl, timestamp: at &+ log.stamp, senderID: Simulator.peerID(node),
                               recipientID: packet.senderID, payload: body(0x41, m), compress: false)]
            }
            if let m = id(of: packet, tag: 0x41) { log.acks[node, default: []].append(m) } // "A"
            return []
        }
        var rng = SeededGenerator(seed: seed ^ 0xACED)
        let component = topology.largestComponent
        var trackers = Array(repeating: DeliveryTracker<UInt32>(schedule: schedule), count: topology.nodeCount)
        var route: [UInt32: (from: Int, to: Int, at: Millis)] = [:]
        var delivered = 0, failed = 0, falsely = 0, duplicates = 0, attempts = 0
        var latencies: [Millis] = []
        let pOn = 1_000.0 / Double(churnSpell)
        let pOff = churn >= 1 ? 1 : churn * pOn / (1 - churn)
        var nextChurn: Millis = 0
        var sentCount = 0
        let step: Millis = 100
        let horizon = Millis(messages) * spacing + schedule.budget + 10 * schedule.maxInterval
        func send(_ m: UInt32, from s: Int, to d: Int, routing: MeshRouter.Routing) {
            attempts += 1
            log.stamp += 1
            let packet = Packet(type: .noiseEncrypted, ttl: ttl, timestamp: sim.now &+ log.stamp, senderID: Simulator.peerID(s),
                                recipientID: Simulator.peerID(d), payload: body(0x4D, m), compress: false)
            sim.originate(packet, at: s, routing: routing)
        }
        var learnt: Millis = 0
        while sim.now < horizon {
            if sim.now >= learnt + announceInterval { sim.learnTopology(); learnt = sim.now }
            if churn > 0, sim.now >= nextChurn {
                nextChurn = sim.now + 1_000
                // Links to nodes that went silent a second ago or more are found dead
                // (supervision timeout) and go down; nodes back come up again.
                var live = topology
                live.neighbors = topology.neighbors.enumerated().map { i, n in
                    sim.offline.contains(i) ? [] : n.filter { !sim.offline.contains($0) }
                }
                _ = sim.rewire(to: live)
                for i in 0..<topology.nodeCount {
                    if sim.offline.contains(i) { if rng.unit() < pOn { sim.offline.remove(i) } }
                    else if rng.unit() < pOff { sim.offline.insert(i) }
                }
            }
            if sentCount < messages, sim.now >= Millis(sentCount) * spacing {
                let (s, d) = pair(component, within: topology, &rng)
                let m = UInt32(sentCount)
                sentCount += 1
                route[m] = (s, d, sim.now)
                trackers[s].sent(m, to: Simulator.peerID(d), now: sim.now)
                send(m, from: s, to: d, routing: .automatic)
            }
            sim.run(until: sim.now + step)
            for (node, acked) in log.acks {
                for m in acked {
                    if trackers[node].acknowledged(m) != nil {
                        delivered += 1
                        if !log.received.contains(m) { falsely += 1 }
                        if let r = route[m] { latencies.append(sim.now - r.at) }
                    } else {
                        duplicates += 1
                    }
                }
            }
            log.acks = [:]
            for s in trackers.indices where !trackers[s].isEmpty {
                for due in trackers[s].due(now: sim.now) {
                    switch due {
                    case let .resend(m, _, _): if let r = route[m] { send(m, from: s, to: r.to, routing: .flood) }
                    case .failed: failed += 1
                    case .held: break
                    }
                }
            }
            if sentCount == messages, trackers.allSatisfy(\.isEmpty) { break }
            progress?(Double(sim.now) / Double(horizon))
        }
        return Reliability(sent: sentCount, delivered: delivered, failed: failed, falselyDelivered: falsely,
                           duplicateAcknowledgements: duplicates,
                           attemptsPerMessage: Double(attempts) / Double(max(1, sentCount)),
                           transmissionsPerMessage: Double(sim.transmissions.reduce(0, +)) / Double(max(1, sentCount)),
                           latencies: latencies)
    }

    /// A random pair of the component at most `ttl` hops apart (a packet
    /// cannot go further, routed or flooded).
    private func pair(_ component: [Int], within topology: Topology, _ rng: inout SeededGenerator) -> (Int, Int) {
        precondition(component.count >= 2 && ttl >= 1, "pairs need two linked nodes and a TTL")
        // In a connected component every node has a neighbour: never empty.
        let s = component[Int(rng.next() % UInt64(component.count))]
        let distance = topology.distances(from: s)
        let reachable = component.filter { $0 != s && (distance[$0].map { $0 <= Int(ttl) } ?? false) }
        return (s, reachable[Int(rng.next() % UInt64(reachable.count))])
    }
}
