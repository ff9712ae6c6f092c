import HeapModule
import StarlingWire

/// The mesh relay engine of one node, without I/O.
///
/// Bytes come in from links with the time; bytes go out to links, and packets
/// go up to the application. Relays are scheduled with a jitter chosen by the
/// ``RelayPolicy`` and may be cancelled by copies heard meanwhile; the caller
/// runs ``tick(now:)`` at ``nextDeadline``. The same code runs in real nodes and
/// in the simulator.
public struct MeshRouter: Sendable {
    public struct Configuration: Sendable {
        /// The TTL new packets start with, and from which hop counts are reckoned.
        public var maxTTL: UInt8 = 7
        /// Pending relays at most; further ones are refused (and counted).
        public var maxPendingRelays = 1024
        public var dedupRetention: Millis = 300_000
        public var dedupCapacity = 65_536
        public var reassembly = Reassembler.Limits()
        /// Gossip sync (REQUEST_SYNC with a GCS filter); nil: off.
        public var sync: GossipStore.Configuration? = nil
        /// Directed packets this node originates take a source route when the
        /// announced topology knows one (v2, HAS_ROUTE).
        public var sourceRoutes = true
        /// Store-and-forward for ``MeshRouter/favorites``.
        public var favoriteHold = FavoriteHold.Limits()
        /// After a directed packet from a peer reached us flooded, what we send
        /// that peer is flooded too for this long (answers to a retry take the
        /// way that worked, not the route that failed).
        public var floodAnswersFor: Millis = 30_000
        /// A broadcast reassembly with no new piece for `stall` ms asks the
        /// links for its stream by fragment ID (REQUEST_SYNC 0x06), each
        /// stream at most every `again` ms, as the apps do (5 s, 10 s). Off
        /// unless set (the simulator measures the mesh without it).
        public var stalledFragments: (stall: Millis, again: Millis)? = nil
        public init() {}
    }

    /// How a directed packet this node originates travels.
    public enum Routing: Hashable, Sendable {
        /// To the recipient's link when it is a neighbour, else along a source
        /// route when one is known, else flooded.
        case automatic
        /// Flooded (a retry after a route failed).
        case flood
    }

    public enum Action: Sendable {
        /// Send these bytes (one packet or fragment) on these links.
        case transmit([UInt8], links: [LinkID])
        /// A packet for this node (addressed to it, or broadcast), reassembled if
        /// it came in fragments. `hops` counts from its originator (1 = direct).
        case deliver(Packet, link: LinkID?, hops: Int)
        /// A fragmented packet for this node is arriving: `received` of `total` pieces.
        case progress(sender: PeerID, fragmentID: UInt64, received: Int, total: Int)
    }

    struct Pending {
        var fireAt: Millis
        var bytes: [UInt8]
        var packet: Packet
        var incoming: LinkID?
        var links: LinkSelection
        var tracking: RelayTracking
        var context: RelayContext
    }

    struct Deadline: Comparable {
        var at: Millis
        var seq: UInt64
        var key: UInt64
        static func < (a: Deadline, b: Deadline) -> Bool { (a.at, a.seq) < (b.at, b.seq) }
    }

    public let configuration: Configuration
    public var localPeer: PeerID? { didSet { neighborhood.localPeer = localPeer } }
    public var policy: any RelayPolicy
    /// Senders whose packets are dropped on arrival (blocked peers): not
    /// delivered, not relayed.
    public var blockedSenders: Set<PeerID> = []
    /// Signs the REQUEST_SYNC packets this node sends (the router holds no keys).
    public var signer: (@Sendable (inout Packet) -> Void)?
    public private(set) var neighborhood: Neighborhood
    /// The mesh as announces describe it, for source routes.
    public private(set) var routes = RouteTable()
    /// Peers this node holds directed packets for while they are out of reach
    /// (store-and-forward), handed over when they link with us again.
    public var favorites: Set<PeerID> = []
    /// The wall clock minus `now` (``wallTime(_:offset:)``): sync requests are
    /// stamped with the wall clock, and a sync answer's age is judged by it.
    public var wallClockOffset: Int64 = 0
    public private(set) var favoriteHold: FavoriteHold
    public private(set) var statistics = MeshStatistics()
    private var frameLimits: [LinkID: Int] = [:]
    private var dedup: Deduplicator
    private var pending: [UInt64: Pending] = [:]
    private var deadlines = Heap<Deadline>()
    private var sequence: UInt64 = 0
    private var rng: SeededGenerator
    private var reassembler: Reassembler
    private var gossip: GossipStore?
    private var nextSync: Millis?
    private var lastSync: Millis = 0
    /// Sync requests sent: each filter's M is spread by it (mod 64).
    private var syncRound: UInt32 = 0
    private var syncDue: [LinkID: Millis] = [:]
    /// When we last asked each link for a sync: its answers (isRSR) are
    /// expected for a while (a node's freshness rule lets them through).
    private var syncAsked: [LinkID: Millis] = [:]
    /// When we answered each link's sync requests lately (a rate limit).
    private var answeredAt: [LinkID: [Millis]] = [:]
    /// When each stalled fragment stream was last asked for.
    private var streamAsked: [UInt64: Millis] = [:]
    /// The stalled-stream check runs at most once a second.
    private var streamCheckAfter: Millis = 0
    /// Per link, the packets our last sync answer there carried: asked for
    /// again, one was lost on the way.
    private var lastAnswers: [LinkID: Set<UInt64>] = [:]
    private var nextHousekeeping: Millis = 0
    /// Peers whose directed packets reached us flooded, and when: their route
    /// to us failed or they had none, so ours to them is suspect too.
    private var floodedFrom: [PeerID: Millis] = [:]
    /// Packets another store keeps for sync (the board), by type, newest first.
    private var provided: [MessageType: [(id: PacketID, packet: Packet)]] = [:]
    /// When each of the sync configuration's own rounds is due next.
    private var nextRounds: [Millis?] = []

    public init(localPeer: PeerID?, policy: any RelayPolicy, seed: UInt64, configuration: Configuration = Configuration()) {
        self.localPeer = localPeer
        self.neighborhood = Neighborhood(localPeer: localPeer)
        self.policy = policy
        self.configuration = configuration
        self.rng = SeededGenerator(seed: seed)
        self.dedup = Deduplicator(retention: configuration.dedupRetention, capacity: configuration.dedupCapacity)
        self.reassembler = Reassembler(limits: configuration.reassembly)
        self.gossip = configuration.sync.map { GossipStore(configuration: $0) }
        self.nextRounds = Array(repeating: nil, count: configuration.sync?.rounds.count ?? 0)
        self.favoriteHold = FavoriteHold(limits: configuration.favoriteHold)
    }

    // MARK: Links and neighbourhood

    /// A link came up. `maxFrame` is the largest packet it carries in one piece.
    /// Returns what the favourites' hold kept for that peer, when it is known.
    @discardableResult
    public mutating func linkUp(_ link: LinkID, peer: PeerID? = nil, maxFrame: Int? = nil, now: Millis = 0) -> [Action] {
        neighborhood.add(link, peer: peer)
        frameLimits[link] = maxFrame
        if let sync = configuration.sync {
            syncDue[link] = now + sync.initialDelay
            if nextSync == nil { nextSync = now + sync.interval + uniform(sync.interval, &rng) }
        }
        guard let peer else { return [] }
        return peerLinked(peer, on: link, now: now)
    }

    /// A link's largest frame changed (BLE: a smaller MTU joined a shared notification).
    public mutating func setMaxFrame(_ link: LinkID, _ maxFrame: Int?) {
        guard neighborhood.links[link] != nil else { return }
        frameLimits[link] = maxFrame
    }

    public mutating func linkDown(_ link: LinkID) {
        neighborhood.remove(link)
        frameLimits[link] = nil
        syncDue[link] = nil
        syncAsked[link] = nil
        answeredAt[link] = nil
        lastAnswers[link] = nil
    }

    /// The peer at the end of `link` is now known (its announce came on it).
    /// Returns what the favourites' hold kept for it.
    @discardableResult
    public mutating func bind(_ link: LinkID, to peer: PeerID, now: Millis = 0) -> [Action] {
        // An announce that arrives after its link went down binds nothing (and
        // hands nothing over to a link that is gone).
        guard neighborhood.links[link] != nil else { return [] }
        let known = neighborhood.peer(on: link) == peer
        neighborhood.bind(link, to: peer)
        guard !known else { return [] }
        // A new peer's first announce: sync with it 5 s from now.
        if let sync = configuration.sync { syncDue[link] = now + sync.initialDelay }
        return peerLinked(peer, on: link, now: now)
    }

    private mutating func peerLinked(_ peer: PeerID, on link: LinkID, now: Millis) -> [Action] {
        if let n = routes.neighbors(of: peer) { neighborhood.setNeighbors(of: peer, n) }
        guard favoriteHold.count(for: peer) > 0 else { return [] }
        let parcels = favoriteHold.release(for: peer, now: now)
        statistics.handedOver += parcels.count
        var actions: [Action] = []
        for bytes in parcels {
            // Held as received; decoded again to fragment it for this link.
            guard let packet = try? Packet(decoding: bytes) else { continue }
            actions += transmit(bytes, packet: packet, on: [link], now: now)
        }
        return actions
    }

    /// What a peer announced as its neighbours (verified by the caller): the
    /// topology for source routes, and 2-hop knowledge when it is a neighbour.
    public mutating func setNeighbors(of peer: PeerID, _ neighbors: Set<PeerID>, now: Millis = 0) {
        routes.learn(peer, neighbors: neighbors, now: now)
        if neighborhood.neighborPeers.contains(peer) { neighborhood.setNeighbors(of: peer, neighbors) }
    }

    /// Takes a whole table of announces at once, as if each had been heard
    /// through ``setNeighbors(of:_:now:)`` (a simulation hands every router the
    /// same table, shared until one of them changes it).
    public mutating func adoptRoutes(_ table: RouteTable) {
        routes = table
        for peer in neighborhood.neighborPeers {
            if let n = table.neighbors(of: peer) { neighborhood.setNeighbors(of: peer, n) }
        }
    }

    /// A peer left (LEAVE) or its announces expired: its edges go from the topology.
    public mutating func peerGone(_ peer: PeerID) { routes.forget(peer) }

    public var pendingRelayCount: Int { pending.count }

    /// The size of every table the router keeps, by name (docs/MESH.md,
    /// "Bounds"): a soak checks none grows past its cap.
    public var tableSizes: [String: Int] {
        var sizes: [String: Int] = [
            "router.frameLimits": frameLimits.count,
            "router.dedup": dedup.count,
            "router.pendingRelays": pending.count,
            "router.deadlines": deadlines.count,
            "router.reassemblies": reassembler.count,
            "router.reassemblyBytes": reassembler.totalBytes,
            "router.gossip": gossip?.count ?? 0,
            "router.gossipBytes": gossip?.bytes ?? 0,
            "router.syncDue": syncDue.count,
            "router.syncAsked": syncAsked.count,
            "router.syncProvided": providedCount,
            "router.answeredAt": answeredAt.count,
            "router.streamAsked": streamAsked.count,
            "router.lastAnswers": lastAnswers.count,
            "router.floodedFrom": floodedFrom.count,
            "router.routes": routes.count,
            "router.favoriteHold": favoriteHold.count,
        ]
        sizes["router.neighbors"] = neighborhood.neighborPeers.count
        return sizes
    }

    /// The largest encoded packet like `packet` (same header, recipient and
    /// route) that every link up carries, whole or in as many fragments as
    /// receivers accept; `defaultFrame` stands for links that give no limit,
    /// and for all of them when none is up.
    public func largestPacket(like packet: Packet, defaultFrame: Int) -> Int {
        let smallest = frameLimits.values.min().map { min($0, defaultFrame) } ?? defaultFrame
        return Fragmenter.chunkSize(for: packet, linkLimit: smallest) * Reassembler.Limits.default.maxFragmentsPerMessage
    }

    /// Counts input refused before it reached the router (a transport's junk).
    public mutating func noteMalformed() { statistics.malformed += 1 }
    public var nextDeadline: Millis? {
        let stall = configuration.stalledFragments.flatMap { reassembler.nextStall(stall: $0.stall) }.map { max($0, streamCheckAfter) }
        // With no link, no sync round is due (a link's arrival asks at once, syncDue).
        let rounds = neighborhood.links.isEmpty ? [] : [nextSync] + nextRounds
        return ([deadlines.min?.at, syncDue.values.min(), stall] + rounds).compactMap { $0 }.min()
    }

    /// Packets kept for gossip sync, and what they cost (GossipStore.bytes).
    public var gossipCount: Int { gossip?.count ?? 0 }
    public var gossipBytes: Int { gossip?.bytes ?? 0 }
    /// Bytes held by fragmented messages in progress.
    public var reassemblyBytes: Int { reassembler.totalBytes }
    public var pendingCount: Int { pending.count }

    // MARK: Sending

    /// Originates a packet: records it as seen and sends it now — on every
    /// link, or, when it is directed and unsigned, to the recipient's link or
    /// along a source route when one is known (see ``Routing``).
    public mutating func originate(_ packet: Packet, now: Millis, routing: Routing = .automatic) -> [Action] {
        let id = PacketID(packet)
        _ = dedup.insert(id.high, now: now)
        gossip?.keep(packet, id: id, now: now)
        statistics.originated += 1
        var packet = packet
        var links = neighborhood.linkIDs
        if routing == .automatic, let recipient = packet.recipientID, recipient != .broadcast, packet.signature == nil,
           let me = localPeer {
            let flooded = floodedFrom[recipient].map { now >= $0 && now - $0 < configuration.floodAnswersFor } ?? false
            if let link = neighborhood.link(to: recipient) {
                links = [link]
            } else if configuration.sourceRoutes, !flooded,
                      let path = routes.route(from: me, to: recipient, direct: neighborhood.neighborPeers, now: now,
                                              maxHops: Int(packet.ttl)),
                      let first = path.first, let link = neighborhood.link(to: first) {
                // The route is not signed and not part of the packet ID: adding it changes neither.
                if packet.version == 1 {
                    packet.version = 2
                    if packet.compressedPayload != nil { packet.setPayload(packet.payload) }
                }
                packet.route = path
                links = [link]
                statistics.routed += 1
            }
        }
        guard let bytes = try? Self.wireBytes(packet) else { return [] }
        let actions = transmit(bytes, packet: packet, on: links, now: now)
        if packet.isBroadcast, packet.type != .requestSync {
            var context = RelayContext(ttl: packet.ttl, type: packet.type, fromLink: nil, fromPeer: nil, now: now,
                                       source: packet.senderID, routes: policy.usesTopology ? routes : nil)
            context.originTTL = configuration.maxTTL
            watch(id.high, bytes: bytes, packet: packet, incoming: nil, links: .allButIncoming, context: context,
                  tracking: RelayTracking(), now: now)
        }
        return actions
    }

    /// After our transmission of a broadcast: the policy may watch for signs
    /// that it arrived, and send it again at the deadline.
    private mutating func watch(_ key: UInt64, bytes: [UInt8], packet: Packet, incoming: LinkID?, links: LinkSelection,
                                context: RelayContext, tracking: RelayTracking, now: Millis) {
        var tracking = tracking
        // A packet sent in fragments is not sent again: new fragments would be
        // new packets to every relay.
        let fits = neighborhood.linkIDs.allSatisfy { frameLimits[$0].map { bytes.count <= $0 } ?? true }
        guard fits, pending.count < configuration.maxPendingRelays,
              let delay = policy.transmitted(context, neighborhood: neighborhood, tracking: &tracking, rng: &rng) else {
            return
        }
        tracking.watching = true
        pending[key] = Pending(fireAt: now + delay, bytes: bytes, packet: packet, incoming: incoming, links: links,
                               tracking: tracking, context: context)
        sequence += 1
        deadlines.insert(Deadline(at: now + delay, seq: sequence, key: key))
    }

    /// The packet a relay sends: the same bytes but for the TTL, encoded.
    static func relayed(_ packet: Packet, ttl: UInt8) -> (Packet, [UInt8])? {
        var copy = packet
        copy.ttl = ttl
        guard let bytes = try? wireBytes(copy) else { return nil }
        return (copy, bytes)
    }

    static func wireBytes(_ packet: Packet) throws -> [UInt8] {
        let padded = packet.type == .noiseHandshake || packet.type == .noiseEncrypted
        return try packet.encoded(padded: padded)
    }

    // MARK: Receiving

    /// Whether we asked `link` for a sync within `window` ms before `now`.
    public func askedForSync(on link: LinkID, within window: Millis, now: Millis) -> Bool {
        syncAsked[link].map { now >= $0 && now - $0 <= window } ?? false
    }

    /// Whether the duplicate filter holds this packet (we saw or sent it lately).
    public func hasSeen(_ packet: Packet) -> Bool { dedup.contains(PacketID(packet).high) }

    /// The largest frame `link` carries (nil: no limit given, or no such link).
    public func maxFrame(of link: LinkID) -> Int? { frameLimits[link] }

    public mutating func receive(_ bytes: [UInt8], on link: LinkID, now: Millis) -> [Action] {
        guard let packet = try? Packet(decoding: bytes) else {
            statistics.malformed += 1
            return []
        }
        return receive(packet, bytes: bytes, on: link, now: now)
    }

    /// A packet its caller decoded (and screened) already; `bytes` are as received.
    public mutating func receive(_ packet: Packet, bytes: [UInt8], on link: LinkID, now: Millis) -> [Action] {
        var packet = packet
        if !blockedSenders.isEmpty, blockedSenders.contains(packet.senderID) {
            statistics.blockedDropped += 1
            return []
        }
        // No packet goes further than this node's own would: a TTL above ours
        // (a broken or hostile sender's) is taken as ours.
        if packet.ttl > configuration.maxTTL {
            packet.ttl = configuration.maxTTL
            statistics.ttlClamped += 1
        }
        let packetID = PacketID(packet)
        let key = packetID.high
        let fromPeer = neighborhood.peer(on: link)
        guard dedup.insert(key, now: now) else {
            statistics.duplicatesBlocked += 1
            if var p = pending[key] {
                if policy.duplicateHeard(from: fromPeer, neighborhood: neighborhood, tracking: &p.tracking) {
                    pending[key] = nil
                    if !p.tracking.watching { statistics.relaysCancelled += 1 }
                } else if p.tracking.watching {
                    pending[key] = p
                } else {
                    // A copy that came a shorter way carries more TTL: relay that one,
                    // or the packet stops short of nodes within its TTL.
                    if let ttl = relayTTL(packet.ttl), ttl > p.packet.ttl, p.packet.signature == packet.signature,
                       let (better, bytes) = Self.relayed(p.packet, ttl: ttl) {
                        p.packet = better
                        p.bytes = bytes
                    }
                    pending[key] = p
                }
            }
            return []
        }
        var actions: [Action] = []
        gossip?.keep(packet, id: packetID, now: now)
        if packet.isRSR, let sync = configuration.sync, let due = nextSync {
            // New to us and from a sync: the mesh is repairing (a partition healed).
            // Ask our own links soon rather than at the next interval, in case a
            // repair passed us by.
            let soon = max(now + sync.repairHint + uniform(sync.repairHint, &rng), lastSync + sync.initialDelay)
            if soon < due { nextSync = soon }
        }
        if packet.type == .leave { gossip?.senderLeft(packet.senderID) }
        if packet.type == .requestSync, gossip != nil {
            actions += answerSync(packet, on: link, now: now)
        }
        // A sync answer (TTL 0) came from the neighbour that held it: one hop.
        // Its first path is unknown, and TTL 0 does not mean it travelled far.
        let hops = packet.isSyncAnswer ? 1 : Int(configuration.maxTTL) - Int(packet.ttl) + 1
        statistics.received += 1
        statistics.hopSum += max(1, hops)
        if hops <= 1 { statistics.direct += 1 } else { statistics.relayed += 1 }

        let forUs = packet.recipientID == nil || packet.recipientID == .broadcast || packet.recipientID == localPeer
        if packet.recipientID == localPeer, localPeer != nil, packet.route == nil, hops > 1 {
            if floodedFrom.count >= 1_024 {
                floodedFrom = floodedFrom.filter { now >= $0.value && now - $0.value < configuration.floodAnswersFor }
            }
            if floodedFrom.count < 1_024 { floodedFrom[packet.senderID] = now }
        }
        if packet.type == .fragment {
            if forUs { actions += reassemble(packet, link: link, hops: max(1, hops), now: now) }
        } else if forUs {
            statistics.delivered += 1
            actions.append(.deliver(packet, link: link, hops: max(1, hops)))
        }

        // Relay? Never a sync request, never a packet addressed to us.
        guard packet.type != .requestSync, packet.recipientID == nil || packet.recipientID != localPeer else {
            return actions
        }
        // Directed: straight to the recipient when it is a neighbour, else to the
        // route's next hop when that is; a route we cannot follow is flooded.
        if let recipient = packet.recipientID, recipient != .broadcast {
            if favorites.contains(recipient), neighborhood.link(to: recipient) == nil,
               !routes.knows(recipient, now: now), favoriteHold.hold(bytes, key: key, for: recipient, now: now) {
                statistics.held += 1
            }
            var next: PeerID? = recipient
            if neighborhood.link(to: recipient) == nil {
                next = nil
                if let route = packet.route, let me = localPeer, let i = route.firstIndex(of: me) {
                    next = i + 1 < route.count ? route[i + 1] : recipient
                    if neighborhood.link(to: next!) == nil { next = nil; statistics.routeFallbacks += 1 }
                }
            }
            if let next, let out = neighborhood.link(to: next), out != link {
                guard let ttl = relayTTL(packet.ttl) else {
                    statistics.relaysDeclined += 1
                    return actions
                }
                guard let (copy, b) = Self.relayed(packet, ttl: ttl) else { return actions }
                statistics.relaysScheduled += 1
                statistics.relaysExecuted += 1
                statistics.unicastForwards += 1
                return actions + transmit(b, packet: copy, on: [out], now: now)
            }
        }
        // A public packet learnt from a sync reply (TTL 0, isRSR) that is recent
        // enough for every node to still hold it in its dedup filter is spread on
        // as if new: a healed partition converges in one sweep, not a hop per
        // sync interval. Nodes that have it drop it as a duplicate.
        if packet.isSyncAnswer, packet.isBroadcast, packet.type == .announce || packet.type == .message,
           let window = configuration.sync?.repairRelayWindow,
           case let wall = wallTime(now, offset: wallClockOffset),
           (wall >= packet.timestamp ? wall - packet.timestamp : packet.timestamp - wall) < window {
            packet.ttl = configuration.maxTTL
            statistics.repairsRelayed += 1
        }
        var context = RelayContext(ttl: packet.ttl, type: packet.type, fromLink: link, fromPeer: fromPeer, now: now,
                                   source: packet.senderID, routes: policy.usesTopology ? routes : nil)
        context.originTTL = configuration.maxTTL
        var tracking = RelayTracking()
        let decision = policy.firstHeard(context, neighborhood: neighborhood, tracking: &tracking, rng: &rng)
        // A packet heard (not ours) needs the route table only for that first decision: what is kept
        // for its relay holds no copy of it (the next announce would otherwise copy the whole table).
        context.routes = nil
        switch decision {
        case .drop:
            statistics.relaysDeclined += 1
        case let .relay(delay, ttl, links):
            guard pending.count < configuration.maxPendingRelays else {
                statistics.relaysOverflowed += 1
                return actions
            }
            guard let (copy, out) = Self.relayed(packet, ttl: ttl) else { return actions }
            statistics.relaysScheduled += 1
            if delay == 0 {
                statistics.relaysExecuted += 1
                actions += transmit(out, packet: copy, on: select(links, excluding: link), now: now)
                if copy.isBroadcast {
                    watch(key, bytes: out, packet: copy, incoming: link, links: links, context: context,
                          tracking: tracking, now: now)
                }
            } else {
                pending[key] = Pending(fireAt: now + delay, bytes: out, packet: copy, incoming: link,
                                       links: links, tracking: tracking, context: context)
                sequence += 1
                deadlines.insert(Deadline(at: now + delay, seq: sequence, key: key))
            }
        }
        return actions
    }

    /// A fragment for this node: the whole, once every piece is in, is
    /// delivered (and answered, when it is a sync request). A fragment that a
    /// relay sent on over a link with a smaller frame was fragmented again:
    /// its pieces make the fragment, which goes on to make the whole.
    private mutating func reassemble(_ packet: Packet, link: LinkID, hops: Int, now: Millis) -> [Action] {
        var piece = packet
        for _ in 0..<Self.maxFragmentNesting {
            guard let fragment = try? Fragment(decoding: piece.payload) else { return [] }
            switch try? reassembler.receive(fragment, from: piece.senderID, now: now, broadcast: piece.isBroadcast) {
            case let .complete(bytes)?:
                statistics.messagesReassembled += 1
                // The whole counts once, whichever fragments (or ways) made it; its
                // sender must be the fragments' (a fragment cannot carry someone else's packet).
                guard let whole = try? Packet(decoding: bytes), whole.senderID == piece.senderID,
                      dedup.insert(PacketID(whole).high, now: now) else {
                    return []
                }
                if whole.type == .fragment {
                    piece = whole
                    continue
                }
                var actions: [Action] = []
                // A sync request too large for its link's frame came in pieces:
                // answered as one that came whole.
                if whole.type == .requestSync, gossip != nil {
                    actions += answerSync(whole, on: link, now: now)
                }
                statistics.delivered += 1
                actions.append(.deliver(whole, link: link, hops: hops))
                return actions
            case let .waiting(received, total)? where fragment.originalType != .fragment:
                return [.progress(sender: piece.senderID, fragmentID: fragment.fragmentID, received: received, total: total)]
            default:
                return []
            }
        }
        return []
    }

    /// Fragments of fragments, at most this deep (each level needs a link with a smaller frame).
    static let maxFragmentNesting = 4

    /// Fires the relays that are due, and sends the sync requests that are.
    public mutating func tick(now: Millis) -> [Action] {
        if now >= nextHousekeeping {
            nextHousekeeping = now + 10_000
            routes.expire(now: now)
            favoriteHold.expire(now: now)
            floodedFrom = floodedFrom.filter { now >= $0.value && now - $0.value < configuration.floodAnswersFor }
        }
        var actions = syncRequests(now: now)
        actions += stalledStreamRequests(now: now)
        while let next = deadlines.min, next.at <= now {
            _ = deadlines.popMin()
            guard var p = pending[next.key], p.fireAt == next.at else { continue }
            pending[next.key] = nil
            if p.tracking.watching {
                guard policy.retransmit(neighborhood: neighborhood, tracking: &p.tracking) else { continue }
                statistics.retransmissions += 1
            } else {
                statistics.relaysExecuted += 1
            }
            actions += transmit(p.bytes, packet: p.packet, on: select(p.links, excluding: p.incoming), now: now)
            if p.packet.isBroadcast {
                watch(next.key, bytes: p.bytes, packet: p.packet, incoming: p.incoming, links: p.links,
                      context: p.context, tracking: p.tracking, now: now)
            }
        }
        return actions
    }

    /// A REQUEST_SYNC for fragments (types: fragment; 0x06: the stalled
    /// streams' IDs, at most 60) on every link, TTL 0, signed.
    private mutating func stalledStreamRequests(now: Millis) -> [Action] {
        guard let rule = configuration.stalledFragments, let me = localPeer, now >= streamCheckAfter,
              let due = reassembler.nextStall(stall: rule.stall), now >= due else { return [] }
        streamCheckAfter = now + 1_000
        streamAsked = streamAsked.filter { now >= $0.value && now - $0.value < rule.again }
        let ids = reassembler.stalled(now: now, stall: rule.stall).filter { streamAsked[$0] == nil }
            .prefix(RequestSync.maxFragmentIDs)
        guard !ids.isEmpty, !neighborhood.linkIDs.isEmpty else { return [] }
        for id in ids { streamAsked[id] = now }
        // The filter holds what we have of those streams: only the rest comes back.
        let request = RequestSync(filter: gossip?.filter(spread: syncRound % 64, streams: Set(ids)) ?? GCSFilter(p: 7, m: 0, data: []),
                                  types: SyncTypes([.fragment]), fragmentIDs: Array(ids))
        guard let payload = try? request.encoded() else { return [] }
        var packet = Packet(type: .requestSync, ttl: 0, timestamp: wallTime(now, offset: wallClockOffset), senderID: me, payload: payload)
        signer?(&packet)
        guard let bytes = try? Self.wireBytes(packet) else { return [] }
        _ = dedup.insert(PacketID(packet).high, now: now)
        statistics.streamRequestsSent += 1
        return transmit(bytes, packet: packet, on: neighborhood.linkIDs, now: now)
    }

    /// The packets of `type` another store keeps (the board), newest first:
    /// offered in the sync rounds that name the type, and sent back to an asker
    /// whose filter lacks them. Replaces those given before.
    /// Rounds whose every type is here ask nobody (the node says when they
    /// matter: carriers only with a bridge in the mesh); they still answer.
    public var silencedRounds = SyncTypes()

    public mutating func provide(_ type: MessageType, packets: [Packet]) {
        provided[type] = packets.isEmpty ? nil : packets.map { (PacketID($0), $0) }
    }

    /// How many packets are provided for sync, of every type.
    public var providedCount: Int { provided.values.reduce(0) { $0 + $1.count } }

    /// REQUEST_SYNC (TTL 0, signed when a signer is set) with a filter of what we keep.
    private mutating func syncRequests(now: Millis) -> [Action] {
        guard let sync = configuration.sync else { return [] }
        // Links that came up lately hear every round's first request.
        let starting = syncDue.filter { now >= $0.value }.keys.sorted()
        var actions = mainSyncRequests(now: now)
        for (i, round) in sync.rounds.enumerated() {
            if nextRounds[i] == nil { nextRounds[i] = now + round.interval + uniform(round.interval / 10, &rng) }
            var links = starting
            if let due = nextRounds[i], now >= due {
                links = neighborhood.linkIDs
                nextRounds[i] = now + round.interval + uniform(round.interval / 10, &rng)
            }
            actions += roundRequest(round, on: links, now: now)
        }
        return actions
    }

    /// A request of one of the configuration's own rounds: its filter holds
    /// the newest `capacity` of the packets provided for its types.
    private mutating func roundRequest(_ round: GossipStore.Round, on links: [LinkID], now: Millis) -> [Action] {
        guard !links.isEmpty, let me = localPeer, let sync = configuration.sync else { return [] }
        let ids = provided.filter { round.types.includes($0.key) }.values.joined()
            .sorted { ($0.packet.timestamp, $0.id.high) > ($1.packet.timestamp, $1.id.high) }.prefix(round.capacity).map(\.id)
        guard round.types.rawValue & ~silencedRounds.rawValue != 0 else { return [] }
        syncRound &+= 1
        let filter = GCSFilter(ids: Array(ids), budget: sync.filterBudget, falsePositiveRate: sync.falsePositiveRate,
                               spread: syncRound % 64, spendSpareBudget: true)
        guard let payload = try? RequestSync(filter: filter, types: round.types).encoded() else { return [] }
        return sendSyncRequest(payload: payload, from: me, on: links, now: now)
    }

    /// Sends a REQUEST_SYNC (TTL 0, signed when a signer is set) on `links`,
    /// counted, and marked as ours so that an echo is not taken. A filter
    /// larger than a link's frame goes in fragments (TTL 0: never relayed).
    private mutating func sendSyncRequest(payload: [UInt8], from me: PeerID, on links: [LinkID], now: Millis) -> [Action] {
        var request = Packet(type: .requestSync, ttl: 0, timestamp: wallTime(now, offset: wallClockOffset), senderID: me, payload: payload)
        signer?(&request)
        guard let bytes = try? Self.wireBytes(request) else { return [] }
        _ = dedup.insert(PacketID(request).high, now: now)
        statistics.syncRequestsSent += 1
        statistics.syncRequestBytes += bytes.count
        for link in links { syncAsked[link] = now }
        return transmit(bytes, packet: request, on: links.sorted(), now: now)
    }

    /// The announce-and-message round (no types named: what the apps ask by default).
    private mutating func mainSyncRequests(now: Millis) -> [Action] {
        guard let sync = configuration.sync, var store = gossip else { return [] }
        if nextSync == nil { nextSync = now + sync.interval + uniform(sync.interval, &rng) }
        var links: [LinkID] = []
        if let due = nextSync, now >= due {
            links = neighborhood.linkIDs
            nextSync = now + sync.interval + uniform(sync.interval, &rng)
            lastSync = now
            syncDue = [:]
        } else {
            for (link, due) in syncDue where now >= due { links.append(link) }
            for link in links { syncDue[link] = nil }
        }
        guard !links.isEmpty, let me = localPeer else { return [] }
        store.expire(now: now)
        gossip = store
        syncRound &+= 1
        guard let payload = try? RequestSync(filter: store.filter(spread: syncRound % 64)).encoded() else { return [] }
        return sendSyncRequest(payload: payload, from: me, on: links, now: now)
    }

    /// Sends back, on the link it came from, what a REQUEST_SYNC's filter lacks.
    private mutating func answerSync(_ packet: Packet, on link: LinkID, now: Millis) -> [Action] {
        // What outlived its retention is not handed out (the store expires only
        // when we ask: a node with no links of its own asked nobody meanwhile).
        gossip?.expire(now: now)
        guard let store = gossip, let request = try? RequestSync(decoding: packet.payload) else { return [] }
        // At most `answersPerWindow` answers per link per window (the apps: 8 in 30 s).
        let window = store.configuration.answerWindow
        var times = (answeredAt[link] ?? []).filter { now >= $0 && now - $0 < window }
        guard times.count < store.configuration.answersPerWindow else {
            statistics.syncRequestsRefused += 1
            answeredAt[link] = times
            return []
        }
        times.append(now)
        answeredAt[link] = times
        var actions: [Action] = []
        // Only the types asked for (announces and messages unless the request says), from `since` on.
        let types = request.types ?? .default
        let replies: [(id: PacketID, packet: Packet)]
        if let streams = request.fragmentIDs, !streams.isEmpty, types.includes(.fragment) {
            // A stalled reassembly asks for its streams: their fragments it lacks, whatever `since` says.
            replies = store.missingFragments(of: Set(streams), from: request.filter)
        } else {
            var found = store.missing(from: request.filter).filter {
                types.includes($0.packet.type) && $0.packet.timestamp >= (request.since ?? 0)
            }
            // And what another store provides (the board), as we keep it.
            let values = request.filter.values()
            for (type, packets) in provided.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where types.includes(type) {
                for (id, packet) in packets where found.count < store.configuration.maxReplies && packet.timestamp >= (request.since ?? 0)
                    && !GCSFilter.contains(sortedValues: values, id, m: request.filter.m) {
                    var p = packet
                    p.ttl = 0
                    p.isRSR = true
                    found.append((id, p))
                }
            }
            replies = found
        }
        // A packet our last answer on this link carried, asked for again, was
        // lost: it goes twice this time (in a short answer; a long one comes
        // from a filter that cannot hold all the asker has, not from loss).
        let lost = replies.count <= store.configuration.resendLostBelow ? lastAnswers[link] ?? [] : []
        var answered = Set<UInt64>()
        for (id, reply) in replies {
            guard let bytes = try? Self.wireBytes(reply) else { continue }
            answered.insert(id.high)
            for _ in 0..<(lost.contains(id.high) ? 2 : 1) {
                statistics.syncRepliesSent += 1
                statistics.syncReplyBytes += bytes.count
                actions += transmit(bytes, packet: reply, on: [link], now: now)
            }
        }
        lastAnswers[link] = answered
        return actions
    }

    private mutating func select(_ selection: LinkSelection, excluding incoming: LinkID?) -> [LinkID] {
        var links = neighborhood.linkIDs
        if let incoming { links.removeAll { $0 == incoming } }
        if case let .randomSubset(count) = selection, links.count > count {
            links.shuffle(using: &rng)
            links = Array(links.prefix(count)).sorted()
        }
        return links
    }

    /// Sends `bytes` on `links`, fragmenting for links whose frame limit is smaller.
    private mutating func transmit(_ bytes: [UInt8], packet: Packet, on links: [LinkID], now: Millis) -> [Action] {
        guard !links.isEmpty else { return [] }
        var whole: [LinkID] = []
        var byLimit: [Int: [LinkID]] = [:]
        for link in links {
            if let limit = frameLimits[link] ?? nil, bytes.count > limit {
                byLimit[limit, default: []].append(link)
            } else {
                whole.append(link)
            }
        }
        var actions: [Action] = []
        if !whole.isEmpty {
            statistics.transmissions += 1
            actions.append(.transmit(bytes, links: whole))
        }
        for (limit, group) in byLimit.sorted(by: { $0.key < $1.key }) {
            let chunk = Fragmenter.chunkSize(for: packet, linkLimit: limit)
            guard let pieces = try? Fragmenter.fragment(packet, chunkSize: chunk, fragmentID: rng.next()) else {
                // More fragments than receivers accept (callers check first: ``largestPacket``).
                statistics.unsendable += 1
                continue
            }
            for piece in pieces {
                guard let b = try? piece.encoded() else { continue }
                _ = dedup.insert(PacketID(piece).high, now: now) // our own fragments come back as duplicates
                statistics.transmissions += 1
                statistics.fragmentsSent += 1
                actions.append(.transmit(b, links: group))
            }
        }
        return actions
    }

}
