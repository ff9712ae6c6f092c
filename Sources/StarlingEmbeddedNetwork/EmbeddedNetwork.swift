import HeapModule
import StarlingCrypto
import StarlingMesh
import StarlingNodeCore
import StarlingWire

/// Many node cores in one process, joined by in-memory links, on a virtual
/// clock: no sockets, no sleeps, no threads. Time moves only when
/// ``run(for:)`` (or ``run(until:timeout:)``) moves it; frames arrive after
/// their link's latency, deadlines fire in order. The model is swift-nio's
/// EmbeddedChannel: the same code as a real node, driven by hand.
///
/// Besides nodes, a test can open a raw link to a node (``openRawLink(to:)``)
/// and speak for a peer that is not a node: anyone in radio range.
public final class EmbeddedNetwork {
    /// What one link end looks like from the network.
    struct End: Hashable {
        var node: Int
        var link: LinkID
    }

    struct Wire {
        var to: End?
        var latency: Millis
        var loss: Double
        var maxFrame: Int?
    }

    struct InFlight: Comparable {
        var at: Millis
        var seq: UInt64
        var to: End
        var bytes: [UInt8]
        var channel: FrameChannel
        static func < (a: InFlight, b: InFlight) -> Bool { (a.at, a.seq) < (b.at, b.seq) }
        static func == (a: InFlight, b: InFlight) -> Bool { a.seq == b.seq }
    }

    /// The far end of a raw link: what the node sent on it is collected here.
    public struct RawLink: Hashable, Sendable {
        public var node: Int
        public var link: LinkID
    }

    public private(set) var now: Millis
    public private(set) var nodes: [NodeCore] = []
    /// Every event each node produced, in order.
    public var events: [[NodeEvent]] = []
    /// Files each node was asked to save.
    public private(set) var savedFiles: [[NodeCore.IncomingFile]] = []
    /// Voice bursts each node put back together, in order.
    public private(set) var savedVoice: [[VoiceAssembler.Note]] = []
    /// Each node's own prekeys as it last said to keep them.
    public private(set) var savedPrekeys: [Int: LocalPrekeys] = [:]
    /// What each node's gateway published (``NodeCore/Output/publishNostr(_:)``).
    public private(set) var published: [[GatewayCore.Upload]] = []
    /// The recipient tags each node's bridge last said it follows (``NodeCore/Output/followDrops(_:)``).
    public private(set) var dropTags: [Int: [String]] = [:]
    /// What each node handed its courier mailbox (``NodeCore/Output/postToMailbox(_:)``).
    public private(set) var mailboxPosts: [[CourierEnvelope]] = []
    /// Large files offered to each node (carried over TCP by a runtime, not here).
    public private(set) var bulkOffers: [[(offer: BulkOffer, from: PeerID)]] = []
    /// Frames sent on each raw link.
    public private(set) var rawReceived: [RawLink: [[UInt8]]] = [:]
    /// Frames that links lost (by their loss rate).
    public private(set) var framesLost = 0
    public private(set) var framesDelivered = 0
    /// Frames each node received.
    public private(set) var framesReceived: [Int: Int] = [:]
    /// Radio transmissions each node made, by packet type (the header's second
    /// byte): one a send, however many links it went on (a broadcast on the air).
    public private(set) var transmissions: [Int: [UInt8: Int]] = [:]
    /// Frames each node sent, one a link, in all and by packet type.
    public private(set) var framesSent: [Int: Int] = [:]
    public private(set) var framesSentByType: [Int: [UInt8: Int]] = [:]
    /// Two nodes whose link a node closed are still in range: they link again
    /// this long after (a UDP transport re-admits the address on its next
    /// packet; a BLE central reconnects). Raw links stay closed.
    public var relinkAfter: Millis = 1_000
    private var relinks: [(at: Millis, a: Int, b: Int, wire: Wire)] = []
    /// An off-mesh transport between the nodes (a Nostr relay, in effect): what a
    /// node sends off the mesh reaches the node with that peer ID after
    /// `offMeshLatency`, if `offMeshUp`; otherwise the send fails at once.
    public var offMeshUp = true
    public var offMeshLatency: Millis = 500
    /// Every payload the off-mesh transport carried: from, to, what.
    public private(set) var offMeshCarried: [(from: Int, to: Int, payload: NoisePayload)] = []
    private var offMeshInFlight: [(at: Millis, from: Int, to: Int, payload: NoisePayload, via: String)] = []
    private var wires: [End: Wire] = [:]
    private var inFlight = Heap<InFlight>()
    private var sequence: UInt64 = 0
    private var nextLink: UInt32 = 1
    private var rng: SeededGenerator

    /// A network whose clock starts at `start` (ms; the default is a plausible wall time).
    public init(start: Millis = 1_763_800_000_000, seed: UInt64 = 1) {
        now = start
        rng = SeededGenerator(seed: seed)
    }

    /// Adds a node; returns its index.
    @discardableResult
    public func addNode(_ configuration: NodeCore.Configuration, identity: Identity = .generate()) -> Int {
        nodes.append(NodeCore(identity: identity, configuration: configuration, seed: rng.next()))
        events.append([])
        savedFiles.append([])
        savedVoice.append([])
        bulkOffers.append([])
        published.append([])
        mailboxPosts.append([])
        return nodes.count - 1
    }

    /// The node's process starts again: a fresh core with the same identity
    /// (sessions, peers and retries gone), `configure`d before it runs; its
    /// links come up again at once (as a UDP node's do on its first packet).
    public func restart(_ node: Int, configure: (inout NodeCore.Configuration) -> Void = { _ in }) {
        var c = nodes[node].configuration
        c.favorites = nodes[node].favoriteFingerprints
        configure(&c)
        let ends = wires.keys.filter { $0.node == node }
        nodes[node] = NodeCore(identity: nodes[node].identity, configuration: c, seed: rng.next())
        if let kept = savedPrekeys[node] { nodes[node].adoptPrekeys(kept) }
        for end in ends { nodes[node].linkUp(end.link, maxFrame: wires[end]?.maxFrame, now: now) }
        flush(node)
    }

    /// Adds a node with a default configuration and this nickname.
    @discardableResult
    public func addNode(_ nickname: String, configure: (inout NodeCore.Configuration) -> Void = { _ in }) -> Int {
        var c = NodeCore.Configuration(nickname: nickname)
        configure(&c)
        return addNode(c)
    }

    private func newLink() -> LinkID {
        defer { nextLink += 1 }
        return LinkID(nextLink)
    }

    /// Links two nodes both ways.
    public func connect(_ a: Int, _ b: Int, maxFrame: Int? = nil, latency: Millis = 5, loss: Double = 0) {
        let la = newLink(), lb = newLink()
        let ea = End(node: a, link: la), eb = End(node: b, link: lb)
        wires[ea] = Wire(to: eb, latency: latency, loss: loss, maxFrame: maxFrame)
        wires[eb] = Wire(to: ea, latency: latency, loss: loss, maxFrame: maxFrame)
        nodes[a].linkUp(la, maxFrame: maxFrame, now: now)
        nodes[b].linkUp(lb, maxFrame: maxFrame, now: now)
        flush(a)
        flush(b)
    }

    /// Ends every link between two nodes.
    public func disconnect(_ a: Int, _ b: Int) {
        for (end, wire) in wires where end.node == a && wire.to?.node == b {
            drop(end)
        }
    }

    /// A link to `node` whose other end is the test: what the node sends on it
    /// is kept in ``rawReceived``; ``inject(_:on:channel:)`` speaks on it.
    public func openRawLink(to node: Int, maxFrame: Int? = nil) -> RawLink {
        let l = newLink()
        wires[End(node: node, link: l)] = Wire(to: nil, latency: 0, loss: 0, maxFrame: maxFrame)
        nodes[node].linkUp(l, maxFrame: maxFrame, now: now)
        flush(node)
        return RawLink(node: node, link: l)
    }

    /// A frame from the far end of a raw link, received now.
    public func inject(_ bytes: [UInt8], on raw: RawLink, channel: FrameChannel = .mesh) {
        nodes[raw.node].receive(bytes, channel: channel, on: raw.link, now: now)
        flush(raw.node)
    }

    /// Runs a command on a node now, then carries out what it produced. The
    /// body must not read the network (the node is being changed): take what
    /// it needs (a peer ID) before.
    @discardableResult
    public func on<T>(_ node: Int, _ body: (inout NodeCore, Millis) throws -> T) rethrows -> T {
        defer { flush(node) }
        return try body(&nodes[node], now)
    }

    /// Moves the clock `duration` ms on, delivering frames and firing
    /// deadlines in time order.
    public func run(for duration: Millis) {
        let end = now + duration
        var steps = 0
        while steps < 50_000_000 {
            steps += 1
            let nextFrame = inFlight.min?.at
            let nextDeadline = nodes.compactMap(\.nextDeadline).min()
            let nextRelink = relinks.map(\.at).min()
            let nextMail = offMeshInFlight.map(\.at).min()
            guard let t = [nextFrame, nextDeadline, nextRelink, nextMail].compactMap({ $0 }).min(), t <= end else { break }
            now = max(now, t)
            for r in relinks where r.at <= now {
                connect(r.a, r.b, maxFrame: r.wire.maxFrame, latency: r.wire.latency, loss: r.wire.loss)
            }
            relinks.removeAll { $0.at <= now }
            for m in offMeshInFlight where m.at <= now {
                nodes[m.to].receiveOffMesh(m.payload, from: nodes[m.from].peerID, via: m.via, now: now)
                flush(m.to)
            }
            offMeshInFlight.removeAll { $0.at <= now }
            while let f = inFlight.min, f.at <= now {
                _ = inFlight.removeMin()
                framesDelivered += 1
                framesReceived[f.to.node, default: 0] += 1
                nodes[f.to.node].receive(f.bytes, channel: f.channel, on: f.to.link, now: now)
                flush(f.to.node)
            }
            for i in nodes.indices where (nodes[i].nextDeadline ?? .max) <= now {
                nodes[i].tick(now: now)
                flush(i)
            }
        }
        now = max(now, end)
    }

    /// Runs until `condition` holds (checked every `step` ms) or `timeout` ms
    /// pass; returns whether it held.
    @discardableResult
    public func run(until condition: (EmbeddedNetwork) -> Bool, timeout: Millis, step: Millis = 10) -> Bool {
        let end = now + timeout
        while !condition(self) {
            guard now < end else { return false }
            run(for: min(step, end - now))
        }
        return true
    }

    private func drop(_ end: End) {
        guard let wire = wires.removeValue(forKey: end) else { return }
        nodes[end.node].linkDown(end.link, now: now)
        flush(end.node)
        if let other = wire.to, wires.removeValue(forKey: other) != nil {
            nodes[other.node].linkDown(other.link, now: now)
            flush(other.node)
        }
    }

    private func flush(_ node: Int) {
        for output in nodes[node].takeOutputs() {
            switch output {
            case let .send(bytes, channel, links):
                if bytes.count >= 2 {
                    transmissions[node, default: [:]][bytes[1], default: 0] += 1
                    framesSentByType[node, default: [:]][bytes[1], default: 0] += links.count
                }
                framesSent[node, default: 0] += links.count
                for l in links {
                    let from = End(node: node, link: l)
                    guard let wire = wires[from] else { continue }
                    guard let to = wire.to else {
                        rawReceived[RawLink(node: node, link: l), default: []].append(bytes)
                        continue
                    }
                    if wire.loss > 0, rng.unit() < wire.loss { framesLost += 1; continue }
                    sequence += 1
                    inFlight.insert(InFlight(at: now + wire.latency, seq: sequence, to: to, bytes: bytes, channel: channel))
                }
            case let .event(e):
                events[node].append(e)
            case let .closeLink(l):
                // The core let the link go; the network ends both sides.
                let end = End(node: node, link: l)
                if let wire = wires.removeValue(forKey: end), let other = wire.to, wires.removeValue(forKey: other) != nil {
                    nodes[other.node].linkDown(other.link, now: now)
                    flush(other.node)
                    relinks.append((now + relinkAfter, node, other.node, wire))
                }
            case let .sendOffMesh(payload, peer, via, ticket):
                guard offMeshUp, let to = nodes.firstIndex(where: { $0.peerID == peer }) else {
                    nodes[node].offMeshFailed(ticket, reason: "the off-mesh transport is down", now: now)
                    flush(node)
                    continue
                }
                offMeshCarried.append((node, to, payload))
                offMeshInFlight.append((now + offMeshLatency, node, to, payload, via))
                nodes[node].offMeshAccepted(ticket, now: now)
                flush(node)
            case let .saveFile(file):
                savedFiles[node].append(file)
                events[node].append(.fileReceived(from: file.from, name: file.name, size: file.content.count,
                                                  path: "memory:" + file.name, transferID: file.transferID))
                nodes[node].stored(file.transferID, now: now) // saved (in memory): its receipt
                flush(node)
            case let .saveVoice(note):
                savedVoice[node].append(note)
                events[node].append(.voiceNote(from: note.from, path: "memory:voice", durationMillis: note.durationMillis, isPrivate: note.isPrivate,
                                               id: note.id, size: note.adts.count))
            case let .savePrekeys(p):
                savedPrekeys[node] = p // kept "on disk": a restart adopts them
            case .acknowledged:
                break // the simulated off-mesh transports hold nothing for a server
            case let .bulkOffered(offer, from):
                bulkOffers[node].append((offer, from))
            case .bulkAnswered:
                break
            case let .publishNostr(u):
                published[node].append(u) // what a gateway would hand its relays
            case let .followDrops(tags):
                dropTags[node] = tags
            case let .postToMailbox(e):
                mailboxPosts[node].append(e) // what a courier mailbox would keep
            }
        }
    }
}
