import StarlingCrypto
import StarlingMesh
import StarlingNodeCore
import StarlingWire

/// A long run of many nodes with churn, on the virtual clock: does anything
/// grow that should not, and does delivery hold as the hours go by?
///
/// The mesh: `nodes` cores on a grid of ten columns, each linked to its right
/// and lower neighbours, plus one random long link a node. Every minute
/// each node may go (its links down for 1–10 minutes, then up again), or
/// restart (a fresh core with the same identity: sessions, peers and retries
/// gone). Traffic: a public message from a random node every `publicEvery`,
/// a private one between two random nodes every `privateEvery`.
///
/// Each sample (every `sampleEvery`) says, for the messages sent in that
/// period, how many private ones were acknowledged by the end of the next
/// period and how many nodes heard each public one, and the largest size of
/// every table (``NodeCore/tableSizes``) over all nodes, with the totals.
public struct Soak {
    public struct Configuration: Sendable {
        public var nodes = 50
        public var duration: Millis = 24 * 3_600_000
        public var sampleEvery: Millis = 3_600_000
        public var publicEvery: Millis = 10_000
        public var privateEvery: Millis = 20_000
        /// Chance a minute that a node goes away, and that it restarts.
        public var awayPerMinute = 0.004
        public var restartPerMinute = 0.002
        public var announceInterval: Millis = 10_000
        public var seed: UInt64 = 7
        public init() {}
    }

    public struct Sample: Sendable {
        /// The period's end, from the start.
        public var at: Millis
        public var privateSent = 0
        public var privateDelivered = 0
        public var publicSent = 0
        /// Nodes that heard the period's public messages, all together, and how many could have.
        public var publicHeard = 0
        public var publicPossible = 0
        /// Nodes away or restarted during the period.
        public var churn = 0
        /// The largest size of each table over all nodes, and the sum.
        public var largest: [String: Int] = [:]
        public var total: [String: Int] = [:]

        public var privateRatio: Double { privateSent == 0 ? 1 : Double(privateDelivered) / Double(privateSent) }
        public var publicRatio: Double { publicPossible == 0 ? 1 : Double(publicHeard) / Double(publicPossible) }
    }

    /// Every table's cap (docs/MESH.md, "Bounds"). Tables that grow only with
    /// a node's links are held by its transports (64 UDP links); those that
    /// grow only with what its person does (sends, blocks, verifications) are
    /// given the peer cap here, far above what a soak's traffic reaches.
    public static let caps: [String: Int] = {
        let perLink = ["node.links", "node.linkWatch", "node.linkErrors", "node.linksBlocked", "node.linkClocks", "node.pingTimes",
                       "router.frameLimits", "router.syncDue", "router.syncAsked", "router.answeredAt", "router.lastAnswers", "router.neighbors"]
        var caps = Dictionary(uniqueKeysWithValues: perLink.map { ($0, 64) })
        let listed: [String: Int] = [
            "router.dedup": 65_536, "router.pendingRelays": 1_024, "router.deadlines": 1_024 + 64,
            "router.reassemblies": 128, "router.reassemblyBytes": 4 << 20, "router.gossip": 1_000, "router.gossipBytes": 4 << 20,
            "router.streamAsked": 1_024, "router.floodedFrom": 4_096, "router.routes": 4_096, "router.favoriteHold": 1_000,
            "node.present": 4_096, "node.awaitingTrust": 256, "node.waitingPeers": 1_024, "node.waitingPayloads": 256 * 1_024,
            "node.heldProbes": 4_096, "node.privateShown": 10_000, "node.awaitingStore": 1_024, "node.fileCopies": 1_024,
            "node.publicShown": 10_000, "node.awaitingAnnounce": 64, "node.pins": 4_096, "node.shownBudget": 4_096,
            "node.offMesh": 4_096, "node.handedOff": 10_000, "node.handedOffFailed": 1_025, "node.unread": 10_000,
            "node.offMeshSent": 1_024, "node.sessions": 1_024, "node.pendingHandshakes": 128, "node.handshakeStarted": 4_096,
            "node.pings": 4_096, "node.blocked": 4_096, "node.verifiedFingerprints": 4_096, "node.unacknowledged": 4_096,
            "node.tracked": 4_096, "node.boardPosts": 200, "node.voiceBursts": 8, "node.prekeyBundles": 200, "node.boardTombstones": 300, "router.syncProvided": 1_100, "node.carriersForSync": 200, "node.tombstonesToCross": 32,
            "node.groups": 64, "node.groupsLeft": 64, "node.groupPackets": 200, "node.groupMessagesShown": 4_096, "node.groupRemovalNotices": 64,
            "node.noiseKeys": 1_024, "node.recognizedIDs": 1_024, "node.announceV2Times": 10, "node.vouchees": 1_024,
            "node.courierHeld": 40, "node.dropsOpened": 512, "node.prekeysUsed": 256, "node.dropsAwaitingTrust": 64,
            "gateway.queue": 20, "gateway.pending": 30, "gateway.depositors": 512, "gateway.heardIDs": 512, "gateway.publishedIDs": 512,
            "gateway.rebroadcastIDs": 512, "gateway.shown": 60,
            "node.dropEventsTaken": 4_096, "node.dropsMailboxed": 4_096, "node.dropsPosted": 512, "node.dropsToPost": 20, "node.dropTagsFollowed": 51,
            "bridge.queue": 20, "bridge.pending": 30, "bridge.depositors": 512, "bridge.radioIDs": 1_337, "bridge.meshBroadcastIDs": 18_000, "bridge.shownFromRadio": 60,
            "bridge.publishedIDs": 512, "bridge.receivedIDs": 18_000, "bridge.rebroadcastIDs": 512, "bridge.inbound": 600, "bridge.participants": 128, "bridge.pendingBoard": 200, "bridge.boardOut": 512, "bridge.boardIn": 512,
            "stately.board": 1_024, "stately.seen": 4 * 1_024 + 64, "stately.pending": 256,
        ]
        caps.merge(listed) { a, _ in a }
        return caps
    }()

    public let configuration: Configuration
    public let network: EmbeddedNetwork
    private var rng: SeededGenerator
    private var away: [Int: Millis] = [:]
    private var links: [(Int, Int)] = []
    /// Private messages: ID → (sender, period); public: text → period, and who was up then.
    private var privateSent: [String: (node: Int, period: Int)] = [:]
    private var publicSent: [String: (period: Int, possible: Int)] = [:]
    private var delivered: Set<String> = []
    private var heard: [String: Int] = [:]
    private var samples: [Sample] = []

    public init(_ configuration: Configuration = .init()) {
        self.configuration = configuration
        network = EmbeddedNetwork(seed: configuration.seed)
        rng = SeededGenerator(seed: configuration.seed &+ 1)
        for i in 0..<configuration.nodes {
            network.addNode("n\(i)") { $0.announceInterval = configuration.announceInterval }
        }
        let n = configuration.nodes
        for i in 0..<n {
            if i % 10 != 9, i + 1 < n { links.append((i, i + 1)) }
            if i + 10 < n { links.append((i, i + 10)) }
        }
        for i in 0..<n {
            let j = Int(rng.next() % UInt64(n))
            if j != i, !links.contains(where: { ($0 == (i, j)) || ($0 == (j, i)) }) { links.append((i, j)) }
        }
        for (a, b) in links { network.connect(a, b) }
    }

    /// Runs the whole duration, handing each sample on once its delivery is
    /// settled (at the end of the period after it).
    public mutating func run(_ sampled: (Sample) -> Void = { _ in }) -> [Sample] {
        let start = network.now
        network.run(for: 30_000) // the mesh forms
        var next = (pub: network.now, priv: network.now + 5_000, minute: network.now + 60_000,
                    sample: network.now + configuration.sampleEvery)
        var period = 0
        var current = Sample(at: 0)
        while network.now - start < configuration.duration + 30_000 {
            let t = min(next.pub, next.priv, next.minute, next.sample)
            network.run(for: t - network.now)
            collect()
            if t == next.pub {
                next.pub += configuration.publicEvery
                sendPublic(period: period, into: &current)
            }
            if t == next.priv {
                next.priv += configuration.privateEvery
                sendPrivate(period: period, into: &current)
            }
            if t == next.minute {
                next.minute += 60_000
                current.churn += churn()
            }
            if t == next.sample {
                next.sample += configuration.sampleEvery
                measure(&current)
                current.at = network.now - start
                samples.append(current)
                period += 1
                current = Sample(at: 0)
                // A period's delivery is counted by the end of the next one:
                // handed on then, with its ratios.
                if samples.count >= 2 {
                    settle(samples.count - 2)
                    sampled(samples[samples.count - 2])
                }
            }
        }
        if let last = samples.indices.last {
            settle(last)
            sampled(samples[last])
        }
        return samples
    }

    // MARK: Traffic

    private mutating func present() -> [Int] { (0..<configuration.nodes).filter { away[$0] == nil } }

    private mutating func sendPublic(period: Int, into sample: inout Sample) {
        let up = present()
        guard !up.isEmpty else { return }
        let from = up[Int(rng.next() % UInt64(up.count))]
        let text = "p\(period)-\(rng.next() % 1_000_000_000)"
        guard (try? network.on(from, { try $0.sendPublic(text, now: $1) })) != nil else { return }
        publicSent[text] = (period, up.count - 1)
        sample.publicSent += 1
    }

    private mutating func sendPrivate(period: Int, into sample: inout Sample) {
        let n = configuration.nodes
        let from = Int(rng.next() % UInt64(n)), to = Int(rng.next() % UInt64(n))
        guard from != to, away[from] == nil, away[to] == nil else { return }
        let peer = network.nodes[to].peerID
        guard network.nodes[from].peers[peer] != nil else { return } // only to someone it can see
        guard let id = try? network.on(from, { try $0.sendPrivate("to n\(to)", to: peer, now: $1) }) else { return }
        privateSent[id] = (from, period)
        sample.privateSent += 1
    }

    /// Reads the events that came since the last look, then forgets them (a
    /// day of events would be the largest table in the process).
    private mutating func collect() {
        for i in network.events.indices {
            for e in network.events[i] {
                switch e {
                case let .delivered(id, _): delivered.insert(id)
                case let .message(_, _, text, _, _, _): heard[text, default: 0] += 1
                default: break
                }
            }
            network.events[i].removeAll(keepingCapacity: true)
        }
    }

    private mutating func settle(_ index: Int) {
        var s = samples[index]
        s.privateDelivered = privateSent.filter { $0.value.period == index && delivered.contains($0.key) }.count
        let pubs = publicSent.filter { $0.value.period == index }
        s.publicHeard = pubs.keys.reduce(0) { $0 + min(heard[$1] ?? 0, pubs[$1]!.possible) }
        s.publicPossible = pubs.values.reduce(0) { $0 + $1.possible }
        samples[index] = s
        for (id, p) in privateSent where p.period <= index { privateSent[id] = nil; delivered.remove(id) }
        for (text, p) in publicSent where p.period <= index { publicSent[text] = nil; heard[text] = nil }
    }

    // MARK: Churn

    private mutating func churn() -> Int {
        var changed = 0
        for (i, until) in away where until <= network.now {
            away[i] = nil
            for (a, b) in links where (a == i || b == i) && away[a] == nil && away[b] == nil { network.connect(a, b) }
        }
        for i in 0..<configuration.nodes where away[i] == nil {
            let roll = rng.unit()
            if roll < configuration.awayPerMinute {
                away[i] = network.now + 60_000 * (1 + rng.next() % 10)
                for (a, b) in links where a == i || b == i { network.disconnect(a, b) }
                changed += 1
            } else if roll < configuration.awayPerMinute + configuration.restartPerMinute {
                network.restart(i)
                changed += 1
            }
        }
        return changed
    }

    private func measure(_ sample: inout Sample) {
        for node in network.nodes {
            for (name, size) in node.tableSizes {
                sample.largest[name] = max(sample.largest[name] ?? 0, size)
                sample.total[name, default: 0] += size
            }
        }
    }
}
