import StarlingCrypto
import StarlingMesh
import StarlingNodeCore
import StarlingNostr
import StarlingWire

/// Two meshes that never meet, one bridge in each, a Nostr relay between
/// them with a latency (docs/PROTOCOL.md, "Mesh bridges"): real node cores on
/// the virtual clock. Senders in mesh A let their public messages cross
/// (`crossesBridges`); the relay hands each event the bridges publish to
/// both of them (its author's bridge too) after `relayLatency`. Measured:
/// how many of mesh B's nodes show each message, how often one is shown
/// twice or comes back, the delay, and the bridges' load.
public struct BridgeSimulation: Sendable {
    public var nodesPerMesh = 100
    public var meanDegree = 8.0
    public var messages = 20
    /// One message every this many ms, from a random node of mesh A.
    public var interval: Millis = 3_000
    public var relayLatency: Millis = 500
    /// Per-hop latency of the radio links, ms.
    public var linkLatency: Millis = 20
    public var loss = 0.0
    /// How long after the last message before counting, ms.
    public var settle: Millis = 30_000
    public var seed: UInt64 = 1
    /// Bridges in each mesh: 1 (its node 0) or 2 (nodes 0 and n/2).
    public var bridgesPerMesh = 1
    /// Nodes repair what they missed with gossip sync (REQUEST_SYNC), as they
    /// do outside the simulator. Off: flooding alone, for every packet type
    /// (carriers never are synced: no type bit names them).
    public var gossipSync = true
    public init() {}

    public struct Result: Sendable, Hashable {
        public var relayLatency: Millis
        public var nodesPerMesh: Int
        public var messages: Int
        /// Of mesh B's nodes, the share that showed each message (mean over messages).
        public var delivery: Double
        /// Messages shown more than once at one node of mesh B (should be 0).
        public var duplicates: Int
        /// Messages shown in mesh A as bridged (they came back: should be 0).
        public var echoes: Int
        /// Deposits mesh A's bridges published, and fromBridge carriers mesh B's bridges sent.
        public var depositsAtA: Int
        public var carriersFromB: Int
        /// Median ms from a message's send to its showing at a node of mesh B.
        public var medianLatency: Millis?
        /// The control: of mesh B's nodes, the share that heard each of as many
        /// (interleaved with the messages, half an interval after each)
        /// ordinary public messages (0x02, TTL 7) sent by its first bridge node
        /// itself. Delivery across near it says the loss is the mesh's flood, not the bridge's.
        public var controlDelivery: Double
        /// Radio transmissions in mesh B of `fromBridge` carriers (0x28), a
        /// message (one a send, a broadcast on the air), and the frames they
        /// took (one a link).
        public var carrierTransmissionsPerMessage: Double
        public var carrierFramesPerMessage: Double
        /// The load on each bridge (mesh A's first, then mesh B's): events the
        /// relay brought it, events it published, and the frames it sent and
        /// received beside a mean node of its mesh (all packets, for the whole run).
        public var bridgeLoad: [BridgeLoad]
    }

    public struct BridgeLoad: Sendable, Hashable {
        public var node: String
        public var eventsIn: Int
        public var eventsPublished: Int
        public var framesSent: Int
        public var framesReceived: Int
        public var meshMeanFramesSent: Double
        public var meshMeanFramesReceived: Double
        /// The other bridges of its mesh whose announces it holds, and the hops to the nearest (nil: none)
        /// as its peer table says (an announce that came only through gossip sync counts 2: docs/NODE.md).
        public var otherBridgesKnown: Int
        public var nearestOtherBridgeHops: Int?
        /// The hops to the nearest other bridge of its mesh in the simulated graph (nil: none). Past the
        /// carriers' TTL of 7, the other bridge's carriers cannot reach it by flooding, and it cannot yield.
        public var otherBridgeDistance: Int?
        /// `fromBridge` carriers it sent.
        public var carriersSent: Int
    }

    /// A random geometric graph of `n` nodes (unit square) of about `degree` links each,
    /// each node also linked to its nearest earlier node, so that it is connected.
    static func topology(_ n: Int, degree: Double, rng: inout SeededGenerator) -> [(Int, Int)] {
        let points = (0..<n).map { _ in (Double(rng.next() % 1_000_000) / 1e6, Double(rng.next() % 1_000_000) / 1e6) }
        let r2 = degree / (Double.pi * Double(n))
        var edges = Set<[Int]>()
        for i in 0..<n {
            for j in (i + 1)..<max(i + 1, n) {
                let dx = points[i].0 - points[j].0, dy = points[i].1 - points[j].1
                if dx * dx + dy * dy <= r2 { edges.insert([i, j]) }
            }
            if i > 0, let nearest = (0..<i).min(by: {
                let a = (points[$0].0 - points[i].0, points[$0].1 - points[i].1), b = (points[$1].0 - points[i].0, points[$1].1 - points[i].1)
                return a.0 * a.0 + a.1 * a.1 < b.0 * b.0 + b.1 * b.1
            }) { edges.insert([nearest, i]) }
        }
        return edges.sorted { ($0[0], $0[1]) < ($1[0], $1[1]) }.map { ($0[0], $0[1]) }
    }

    /// Hops from `source` to every node it reaches over `edges` (breadth first).
    static func distances(from source: Int, edges: [(Int, Int)], nodes: Int) -> [Int?] {
        var adjacent = [[Int]](repeating: [], count: nodes)
        for (x, y) in edges { adjacent[x].append(y); adjacent[y].append(x) }
        var distance = [Int?](repeating: nil, count: nodes)
        distance[source] = 0
        var queue = [source], head = 0
        while head < queue.count {
            let n = queue[head]
            head += 1
            for m in adjacent[n] where distance[m] == nil {
                distance[m] = (distance[n] ?? 0) + 1
                queue.append(m)
            }
        }
        return distance
    }

    public func run(progress: ((Double) -> Void)? = nil) -> Result {
        var rng = SeededGenerator(seed: seed)
        let net = EmbeddedNetwork(seed: seed)
        let seedBytes = { (i: Int) in (0..<32).map { UInt8(truncatingIfNeeded: i &* 31 &+ $0) } }
        // Mesh A: node 0 (and n/2) is a bridge; the others let their lines cross. Mesh B: its node 0 (and n/2).
        let bridgeIndices = bridgesPerMesh >= 2 ? [0, nodesPerMesh / 2] : [0]
        let a = (0..<nodesPerMesh).map { i in
            net.addNode("a\(i)") { c in
                c.bridgeSeed = seedBytes(i)
                if bridgeIndices.contains(i) { c.bridge = "u4pruy" } else { c.crossesBridges = true }
                if !gossipSync { c.router.sync = nil }
            }
        }
        let b = (0..<nodesPerMesh).map { i in
            net.addNode("b\(i)") { c in
                c.bridgeSeed = seedBytes(1_000 + i)
                if bridgeIndices.contains(i) { c.bridge = "u4pruz" }
                if !gossipSync { c.router.sync = nil }
            }
        }
        var graphs: [[(Int, Int)]] = []
        for mesh in [a, b] {
            let edges = Self.topology(nodesPerMesh, degree: meanDegree, rng: &rng)
            for (x, y) in edges { net.connect(mesh[x], mesh[y], latency: linkLatency, loss: loss) }
            graphs.append(edges)
        }
        let gates = bridgeIndices.map { a[$0] } + bridgeIndices.map { b[$0] }
        net.run(for: 25_000) // announces: everyone knows the bridges
        for g in gates { net.on(g) { $0.nostrRelays(up: true, now: $1) } }

        // The relay: what either bridge publishes reaches both after the latency.
        var taken = gates.map { _ in 0 }
        var eventsIn: [Int: Int] = [:]
        var inFlight: [(at: Millis, event: NostrEvent)] = []
        func pumpRelay() {
            for (k, g) in gates.enumerated() {
                for u in net.published[g].dropFirst(taken[k]) { inFlight.append((net.now + relayLatency, u.event)) }
                taken[k] = net.published[g].count
            }
            let due = inFlight.filter { $0.at <= net.now }
            inFlight.removeAll { $0.at <= net.now }
            for d in due { for g in gates { eventsIn[g, default: 0] += 1; net.on(g) { $0.bridgeFromRelay(d.event, now: $1) } } }
        }
        func step(_ span: Millis) {
            let end = net.now + span
            while net.now < end {
                net.run(for: min(50, end - net.now))
                pumpRelay()
            }
        }
        func shown(_ n: Int) -> [String] {
            net.events[n].compactMap { if case let .bridgedMessage(m) = $0 { m.text } else { nil } }
        }
        var sentAt: [String: Millis] = [:]
        var firstSeen: [Int: Int] = Dictionary(uniqueKeysWithValues: b.map { ($0, 0) })
        var latencies: [Millis] = []
        /// Runs `span` in steps of 100 ms, noting when each message first shows at each node of mesh B.
        func watch(for span: Millis) {
            for _ in 0..<(span / 100) {
                step(100)
                for n in b {
                    let s = shown(n)
                    for t in s.dropFirst(firstSeen[n] ?? 0) { if let at = sentAt[t] { latencies.append(net.now - at) } }
                    firstSeen[n] = s.count
                }
            }
        }
        // The control, interleaved (same time, same topology known): half an interval after each message,
        // mesh B's first bridge node says a line of its own on the radio only (nearby only: it does not cross).
        var controls: [String] = []
        for m in 0..<messages {
            let sender = a[1 + Int(rng.next() % UInt64(nodesPerMesh - 1))]
            let text = "message \(m) from \(net.nodes[sender].nickname)"
            // Counted as sent only when it was (a failure would otherwise read as lost on the way).
            if (try? net.on(sender, { try $0.sendPublic(text, now: $1) })) != nil { sentAt[text] = net.now }
            watch(for: interval / 2)
            let control = "control \(m)"
            if (try? net.on(b[0], { try $0.sendPublic(control, nearbyOnly: true, now: $1) })) != nil { controls.append(control) }
            watch(for: interval - interval / 2)
            progress?(Double(m + 1) / Double(messages + 1))
        }
        watch(for: settle)
        let carrierSends = b.map { net.transmissions[$0]?[MessageType.nostrCarrier.rawValue] ?? 0 }.reduce(0, +)
        let carrierFrames = Double(b.map { net.framesSentByType[$0]?[MessageType.nostrCarrier.rawValue] ?? 0 }.reduce(0, +))
        let load = gates.map { g in
            let mesh = a.contains(g) ? a : b
            let index = mesh.firstIndex(of: g) ?? 0
            let distance = Self.distances(from: index, edges: graphs[a.contains(g) ? 0 : 1], nodes: nodesPerMesh)
            return BridgeLoad(node: net.nodes[g].nickname, eventsIn: eventsIn[g] ?? 0, eventsPublished: net.published[g].count,
                              framesSent: net.framesSent[g] ?? 0, framesReceived: net.framesReceived[g] ?? 0,
                              meshMeanFramesSent: Double(mesh.map { net.framesSent[$0] ?? 0 }.reduce(0, +)) / Double(mesh.count),
                              meshMeanFramesReceived: Double(mesh.map { net.framesReceived[$0] ?? 0 }.reduce(0, +)) / Double(mesh.count),
                              otherBridgesKnown: net.nodes[g].peers.values.filter { $0.capabilities?.contains(.bridge) == true }.count,
                              nearestOtherBridgeHops: net.nodes[g].peers.values.filter { $0.capabilities?.contains(.bridge) == true }.map(\.hops).min(),
                              otherBridgeDistance: bridgeIndices.filter { $0 != index }.compactMap { distance[$0] }.min(),
                              carriersSent: net.nodes[g].bridgeDownlinked)
        }
        let carriersFromB = bridgeIndices.map { net.nodes[b[$0]].bridgeDownlinked }.reduce(0, +)
        let depositsAtA = bridgeIndices.map { i in net.published[a[i]].filter { $0.event.kind == 20_000 }.count }.reduce(0, +)
        var delivered = 0, duplicates = 0
        for n in b {
            let s = shown(n)
            delivered += Set(s).intersection(sentAt.keys).count
            duplicates += s.count - Set(s).count
        }
        let echoes = a.map { shown($0).count }.reduce(0, +)
        var heard = 0
        for n in b.dropFirst() {
            let texts = Set(net.events[n].compactMap { if case let .message(_, _, t, _, _, _) = $0 { t } else { nil } })
            heard += controls.filter(texts.contains).count
        }
        progress?(1)
        latencies.sort()
        return Result(relayLatency: relayLatency, nodesPerMesh: nodesPerMesh, messages: sentAt.count,
                      delivery: Double(delivered) / Double(max(1, sentAt.count * b.count)), duplicates: duplicates, echoes: echoes,
                      depositsAtA: depositsAtA, carriersFromB: carriersFromB,
                      medianLatency: latencies.isEmpty ? nil : latencies[latencies.count / 2],
                      controlDelivery: Double(heard) / Double(max(1, controls.count * (b.count - 1))),
                      carrierTransmissionsPerMessage: Double(carrierSends) / Double(max(1, sentAt.count)),
                      carrierFramesPerMessage: carrierFrames / Double(max(1, sentAt.count)),
                      bridgeLoad: load)
    }

    /// An SVG of results over relay latencies: delivery in mesh B and the median delay.
    public static func svg(_ results: [Result]) -> String {
        let w = 640.0, h = 360.0, left = 60.0, right = 60.0, top = 40.0, bottom = 50.0
        let maxX = Double(results.map(\.relayLatency).max() ?? 1), maxDelay = Double(results.compactMap(\.medianLatency).max() ?? 1)
        func x(_ v: Millis) -> Double { left + (w - left - right) * Double(v) / max(1, maxX) }
        func y(_ share: Double) -> Double { top + (h - top - bottom) * (1 - share) }
        func yDelay(_ v: Millis) -> Double { top + (h - top - bottom) * (1 - Double(v) / max(1, maxDelay)) }
        var s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(w))\" height=\"\(Int(h))\" font-family=\"sans-serif\" font-size=\"12\">\n"
        s += "<text x=\"\(left)\" y=\"20\">Two meshes of \(results.first?.nodesPerMesh ?? 0) nodes, one bridge each: delivery across and delay</text>\n"
        s += "<line x1=\"\(left)\" y1=\"\(h - bottom)\" x2=\"\(w - right)\" y2=\"\(h - bottom)\" stroke=\"black\"/>\n"
        s += "<line x1=\"\(left)\" y1=\"\(top)\" x2=\"\(left)\" y2=\"\(h - bottom)\" stroke=\"black\"/>\n"
        s += "<text x=\"\(w / 2 - 60)\" y=\"\(h - 15)\">relay latency (ms)</text>\n"
        s += "<text x=\"5\" y=\"\(top - 8)\" fill=\"#1f77b4\">delivery</text><text x=\"\(w - right - 20)\" y=\"\(top - 8)\" fill=\"#d62728\">median delay (ms)</text>\n"
        for r in results {
            s += "<text x=\"\(x(r.relayLatency) - 10)\" y=\"\(h - bottom + 15)\">\(r.relayLatency)</text>\n"
        }
        for tick in [0.0, 0.5, 1.0] { s += "<text x=\"20\" y=\"\(y(tick) + 4)\">\(Int(tick * 100))%</text>\n" }
        s += "<text x=\"\(w - right + 5)\" y=\"\(top + 4)\">\(Int(maxDelay))</text>\n"
        let d = results.map { "\(x($0.relayLatency)),\(y($0.delivery))" }.joined(separator: " ")
        s += "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"\(d)\"/>\n"
        let c = results.map { "\(x($0.relayLatency)),\(y($0.controlDelivery))" }.joined(separator: " ")
        s += "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1\" stroke-dasharray=\"2,3\" points=\"\(c)\"/>\n"
        s += "<text x=\"\(left + 10)\" y=\"\(h - bottom - 10)\" fill=\"#1f77b4\">dotted: the control, mesh B's own broadcasts from its bridge node</text>\n"
        let l = results.compactMap { r in r.medianLatency.map { "\(x(r.relayLatency)),\(yDelay($0))" } }.joined(separator: " ")
        s += "<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"6,3\" points=\"\(l)\"/>\n"
        for r in results {
            s += "<circle cx=\"\(x(r.relayLatency))\" cy=\"\(y(r.delivery))\" r=\"3\" fill=\"#1f77b4\"/>\n"
            if let m = r.medianLatency { s += "<circle cx=\"\(x(r.relayLatency))\" cy=\"\(yDelay(m))\" r=\"3\" fill=\"#d62728\"/>\n" }
        }
        return s + "</svg>\n"
    }
}
