import StarlingCrypto
import StarlingMesh
import StarlingNostr
import StarlingStately
import StarlingWire

/// A bitchat node without I/O: the mesh router, Noise sessions, signed
/// announces, private delivery with retries and receipts, favourites and
/// their hold, blocks, files and Stately, as one plain value.
///
/// Frames come in with the link they came on and the time; commands come in
/// with the time. Out come ``Output``s: frames for links, events for the
/// application, links to close, files to save. The caller takes them with
/// ``takeOutputs()`` after every call, and calls ``tick(now:)`` at
/// ``nextDeadline``. The node runtime (`MeshNode`) does this over real
/// transports and the wall clock; ``EmbeddedNetwork`` does it for many nodes
/// in one process on a virtual clock.
public struct NodeCore: Sendable {
    /// What every node can do, as its announces say: it answers pings, and it
    /// reads private files (Noise payload 0x20).
    public static let capabilities: Capabilities = [.meshDiagnostics, .privateMedia]

    /// What this node's announces say it does: ``capabilities``, and the board
    /// (bit 4) when it keeps one, large files (bit 1) with `bulk`.
    public var announcedCapabilities: Capabilities {
        var c = Self.capabilities
        if configuration.board != nil { c.formUnion(.board) }
        if configuration.bulk { c.formUnion(.wifiBulk) }
        if configuration.publishesPrekeys { c.formUnion(.prekeys) }
        if configuration.gateway { c.formUnion(.gateway) }
        if configuration.bridge != nil, configuration.bridgeSeed != nil { c.formUnion(.bridge) }
        if configuration.groups != nil { c.formUnion(.groups) }
        return c
    }

    public let identity: Identity
    public private(set) var configuration: Configuration
    public private(set) var nickname: String
    private var outbox: [Output] = []
    /// The mesh router inside (read-only: statistics, routes, neighbourhood).
    public internal(set) var router: MeshRouter
    var sessions: SessionManager
    /// Stately: our state, the states around, the power mode.
    var statelyFeatureSlot: StatelyFeature?
    var statelyFeature: StatelyFeature {
        get { statelyFeatureSlot! } // set in init, never taken but while it works
        set { statelyFeatureSlot = newValue }
    }
    /// The wall clock minus `now`. Every `now` a node core is given is its
    /// monotonic time (timers: retries, expiries, relay delays, sessions); what
    /// goes on the wire (packet and announce stamps) and the freshness rule use
    /// the wall clock, `now` plus this. A driver sets it from
    /// `StarlingTransport.NodeTime`; 0 where the two are one clock (the simulator).
    public var wallClockOffset: Int64 = 0 {
        didSet {
            router.wallClockOffset = wallClockOffset
            statelyFeatureSlot?.engine.wallClockOffset = wallClockOffset
        }
    }
    var rng: SeededGenerator
    var links: Set<LinkID> = []
    /// Link health: no announce within 15 s, or silence for `linkTimeout`, drops a link.
    var watch = LinkWatch<LinkID>()
    /// Peers present (an announce within the last 60 s): the one record of them.
    var present = PeerTable<PeerCard>()
    /// Blocked, verified, favourites, and what waits for those decisions.
    var trust: Trust
    var lastAnnounce: Millis?
    var nextHousekeeping: Millis = 0
    /// What waits for a session, what is not yet acknowledged, handshakes and probes, private messages shown.
    var delivery: PrivateDelivery
    /// What each link's announces said of its clock.
    var clocks = ClockWatch()
    /// Private messages emitted whose receipt waits for ``stored(_:now:)``.
    var awaitingStore: StoreReceipts
    /// Copies saved of each file (by transfer ID), 1,024 files at most.
    var fileCopies = FileCopies()
    /// Rekeys started (a fresh XX handshake on a live session), for statistics.
    public internal(set) var rekeys = 0
    public internal(set) var refusals = Refusals()
    /// Public messages shown (packet IDs), so that a replay is never shown twice.
    var shownPublic = BoundedSet<PacketID>(capacity: 10_000)
    /// Signed public packets from senders whose announce has not come yet
    /// (a relay's jitter can put a message before its announce): held 2 s,
    /// 64 at most, then counted ``Refusals/unverifiable``.
    var awaitingAnnounce = AwaitingAnnounce()
    /// The packet `admits` let through for the router call under way: any
    /// other packet the router delivers (one reassembled from fragments) is
    /// screened by the same rules on delivery.
    var admitted: PacketID?
    /// Signing keys pinned to Noise keys.
    var pins = Pins()
    /// Bytes of public text each sender may still have shown (4,096 senders at most).
    var shownBudget: ShownBudget
    /// Our pings awaiting their pong, and the pings answered per link.
    var pings = Pings()
    var handshakeBudget: TokenBucket
    var strangerHandshakeBudget: TokenBucket
    /// Which off-mesh transports reach which peers, and what went that way.
    var offMesh = OffMeshRoutes()
    /// Our private messages not yet read, and to whom.
    var unread = ReadReceipts()
    /// The mesh board (nil: off).
    var boardFeature: BoardFeature?
    /// Live voice bursts being put back together.
    var voiceFeature: VoiceFeature? = VoiceFeature()
    /// Private groups (nil: off).
    var groupsFeature: GroupsFeature?
    /// Noise static keys of peers whose verified announce we took (1,024, the oldest going).
    var noiseKeys: [Fingerprint: [UInt8]] = [:]
    var noiseKeyOrder: [Fingerprint] = []
    /// Announce v2 recognition, and vouches taken.
    var recognitionFeature: RecognitionFeature? = RecognitionFeature()
    var vouchesFeature: VouchesFeature? = VouchesFeature()
    /// Courier drops: carried for others, sealed to others' prekeys, online (docs/PROTOCOL.md, "Courier drops").
    var courierFeature: CourierFeature?
    /// Location channels through gateways (ours when we are one), and mesh bridges (ours when we are one).
    var gatewayFeature: GatewayFeature?
    var bridgeFeature: BridgeFeature?
    /// Whether the runtime has a relay up for what the gateway and the bridge publish.
    var nostrRelaysUp = false

    public init(identity: Identity, configuration: Configuration, seed: UInt64) {
        self.identity = identity
        self.peerID = identity.peerID
        self.configuration = configuration
        self.nickname = configuration.nickname
        self.groupsFeature = configuration.groups.map { GroupsFeature(configuration: $0) }
        var rng = SeededGenerator(seed: seed)
        var routing = configuration.router
        if configuration.board != nil, var sync = routing.sync, !sync.rounds.contains(where: { $0.types.includes(.boardPost) }) {
            sync.rounds.append(GossipStore.Round(types: SyncTypes([.boardPost]), interval: configuration.boardSyncInterval,
                                                 capacity: configuration.board?.maxPosts ?? 200))
            routing.sync = sync
        }
        // Prekey bundles: a round of their own too (type bit 9, 60 s, 200), as iOS asks.
        if var sync = routing.sync, !sync.rounds.contains(where: { $0.types.includes(.prekeyBundle) }) {
            sync.rounds.append(GossipStore.Round(types: SyncTypes([.prekeyBundle]), interval: configuration.boardSyncInterval, capacity: 200))
            routing.sync = sync
        }
        // Carriers from a bridge (Starling's type bit 40, 15 s, 200): asked only while a bridge is in the
        // mesh or we hold some (``askForCarriers``), so a mesh without a bridge pays nothing; the apps neither ask nor answer.
        if var sync = routing.sync, !sync.rounds.contains(where: { $0.types.includes(.nostrCarrier) }) {
            sync.rounds.append(GossipStore.Round(types: SyncTypes([.nostrCarrier]), interval: configuration.carrierSyncInterval,
                                                 capacity: BridgeFeature.carriersKept))
            routing.sync = sync
        }
        // Group messages: a round of their own (type bit 10, 30 s, 200); iOS names the bit in its message round.
        if let groups = configuration.groups, var sync = routing.sync, !sync.rounds.contains(where: { $0.types.includes(.groupMessage) }) {
            sync.rounds.append(GossipStore.Round(types: SyncTypes([.groupMessage]), interval: configuration.groupSyncInterval,
                                                 capacity: groups.maxPackets))
            routing.sync = sync
        }
        self.router = MeshRouter(localPeer: identity.peerID, policy: configuration.policy, seed: rng.next(),
                                 configuration: routing)
        if configuration.bridge == nil { router.silencedRounds = SyncTypes([.nostrCarrier]) } // until a bridge is heard of
        self.boardFeature = configuration.board.map { BoardFeature(configuration: $0) }
        self.courierFeature = CourierFeature(settings: .init(publishesPrekeys: configuration.publishesPrekeys, mailbox: configuration.courierMailbox,
                                                             bridging: configuration.bridgeSeed != nil && configuration.bridge != nil))
        self.gatewayFeature = GatewayFeature(serves: configuration.gateway, limits: configuration.gatewayLimits)
        self.bridgeFeature = BridgeFeature(cell: configuration.bridge, settings: .init(crosses: configuration.crossesBridges, seed: configuration.bridgeSeed,
                                                                                      limits: configuration.bridgeLimits))
        let signingKey = identity.signingKey
        self.router.signer = { packet in try? PacketSigning.sign(&packet, with: signingKey) }
        self.router.favorites = Set(configuration.favorites.map(\.peerID))
        self.sessions = SessionManager(identity: identity, configuration: configuration.sessions)
        self.delivery = PrivateDelivery(schedule: configuration.retry)
        self.statelyFeatureSlot = StatelyFeature(identity: identity, configuration: configuration, seed: rng.next())
        self.trust = Trust(known: configuration.trustKnown, favorites: configuration.favorites)
        self.watch.silenceLimit = configuration.linkTimeout
        self.present.capacity = configuration.maxPeers
        self.awaitingStore = StoreReceipts(capacity: configuration.maxAwaitingStore, timeout: configuration.storeTimeout)
        self.shownBudget = ShownBudget(burst: configuration.shownBytesBurst, perSecond: configuration.shownBytesPerSecond)
        self.handshakeBudget = TokenBucket(perMinute: configuration.handshakesPerMinute)
        self.strangerHandshakeBudget = TokenBucket(perMinute: configuration.strangerHandshakesPerMinute)
        self.rng = rng
    }

    /// Our peer ID (the first 8 bytes of our fingerprint: a hash, made once).
    public let peerID: PeerID

    /// Everything produced since the last call, in order.
    public mutating func takeOutputs() -> [Output] {
        defer { outbox = [] }
        return outbox
    }

    mutating func emit(_ event: NodeEvent) { outbox.append(.event(event)) }
    mutating func output(_ output: Output) { outbox.append(output) }

    // MARK: Features

    /// The features this node was built with.
    private var features: [any NodeFeature] { [statelyFeatureSlot as (any NodeFeature)?, boardFeature, groupsFeature, voiceFeature, courierFeature, recognitionFeature, vouchesFeature, gatewayFeature, bridgeFeature]
            .compactMap { $0 } }

    /// The node's facts for a feature, at `now`.
    private func context(now: Millis) -> NodeContext {
        NodeContext(now: now, wall: wall(now), identity: identity, peerID: peerID, nickname: nickname, trustKnown: trust.known, blocked: trust.blocked,
                    favorites: trust.favorites, verified: trust.verified, pins: pins.all, noiseKeys: noiseKeys, present: present, sessions: sessions)
    }

    /// Runs `body` on a feature with the node's facts, then applies what it
    /// asked for, in order (also when it throws: what it did before stands).
    /// Nil when the node was built without it.
    mutating func using<F: NodeFeature, R, E: Error>(_ feature: WritableKeyPath<NodeCore, F?>, now: Millis,
                                                       _ body: (inout F, inout NodeContext) throws(E) -> R) throws(E) -> R? {
        guard var part = self[keyPath: feature] else { return nil }
        self[keyPath: feature] = nil // held alone while it works: no copy of its tables
        var effects: [NodeEffect] = []
        let result: Result<R, E> = {
            var context = context(now: now)
            defer { effects = context.effects }
            do throws(E) { return .success(try body(&part, &context)) } catch { return .failure(error) }
        }()
        self[keyPath: feature] = part
        apply(effects, now: now)
        return try result.get()
    }

    private mutating func apply(_ effects: [NodeEffect], now: Millis) {
        for effect in effects {
            switch effect {
            case let .event(e): emit(e)
            case let .output(o): outbox.append(o)
            case let .refused(reason): refusals[keyPath: reason] += 1
            case let .originate(packet): originate(packet, now: now)
            case let .provide(type, packets): router.provide(type, packets: packets)
            case let .sendPrivately(payload, peer):
                // What cannot go now (no session, a handshake refused by its rate) goes
                // when the session comes: each feature sends its state again then.
                try? sendNoise(payload, to: peer, now: now, fresh: true)
            case let .startHandshake(peer):
                if !sessions.isHandshaking(with: peer) { try? startHandshake(with: peer, now: now) } // rate-limited; retried with the chores
            case .announce: announce(now: now)
            case let .silenceSyncRounds(types): router.silencedRounds = types
            }
        }
    }

    /// Ticks each feature whose own timer is due.
    private mutating func tickFeatures(now: Millis) {
        func due<F: NodeFeature>(_ feature: WritableKeyPath<NodeCore, F?>) {
            guard let d = self[keyPath: feature]?.nextDeadline, now >= d else { return }
            using(feature, now: now) { part, context in part.tick(&context) }
        }
        due(\.boardFeature)
        due(\.groupsFeature)
        due(\.voiceFeature)
        due(\.gatewayFeature)
        due(\.statelyFeatureSlot)
    }

    /// Runs each feature's part of the chores.
    private mutating func featureChores(now: Millis) {
        using(\.boardFeature, now: now) { board, context in board.chores(&context) }
        using(\.groupsFeature, now: now) { groups, context in groups.chores(&context) }
        using(\.courierFeature, now: now) { courier, context in courier.chores(&context) }
    }

    /// `count` bytes from the node's generator (seeded: the embedded network is reproducible).
    mutating func randomBytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) } }

    // MARK: Links

    /// A link came up; `maxFrame` is the largest frame it carries (nil: the
    /// configured default). We announce ourselves on it at once.
    public mutating func linkUp(_ link: LinkID, maxFrame: Int?, now: Millis) {
        guard links.insert(link).inserted else { return }
        watch.up(link, now: now)
        router.linkUp(link, maxFrame: maxFrame ?? configuration.maxFrame, now: now)
        usingStately(now) { stately, context in stately.linkUp(link, context: &context) }
        announce(now: now)
        choresSoon(now: now)
    }

    /// A link went down (the transport says so).
    public mutating func linkDown(_ link: LinkID, now: Millis) {
        guard links.remove(link) != nil else { return }
        pings.linkDown(link)
        watch.down(link)
        router.linkDown(link)
        statelyFeature.engine.linkDown(link)
    }

    /// A link's largest frame changed (BLE: a smaller MTU joined a shared notification).
    public mutating func setMaxFrame(_ link: LinkID, _ maxFrame: Int) {
        router.setMaxFrame(link, maxFrame)
    }

    /// Something was heard on the link that is not a frame (a transport's keepalive).
    public mutating func heard(_ link: LinkID, now: Millis) { watch.heard(link, now: now) }

    public var linkCount: Int { links.count }

    /// A frame from a link. Frames on links that are not up are ignored.
    public mutating func receive(_ frame: [UInt8], channel: FrameChannel = .mesh, on link: LinkID, now: Millis) {
        guard links.contains(link) else { return }
        watch.heard(link, now: now)
        // Bounded work first: nothing larger than the link carries is parsed.
        guard frame.count <= max(router.maxFrame(of: link) ?? configuration.maxFrame, 512) else {
            refusals.oversized += 1
            return
        }
        switch channel {
        case .stately: usingStately(now) { stately, context in stately.receive(frame, on: link, context: &context) }
        case .mesh:
            guard let packet = try? Packet(decoding: frame) else {
                router.noteMalformed()
                return
            }
            guard admits(packet, bytes: frame, on: link, now: now) else { return }
            admitted = PacketID(packet)
            defer { admitted = nil }
            perform(router.receive(packet, bytes: frame, on: link, now: now), now: now)
        }
    }

    // MARK: What features screen

    /// Whether the board takes a post or tombstone (new or a duplicate); a new
    /// one is shown when the router delivers it. Without a board, all go on.
    mutating func takesBoard(_ packet: Packet, now: Millis) -> Bool {
        using(\.boardFeature, now: now) { board, context in board.takes(packet, context: &context) } ?? true
    }

    /// Whether a prekey bundle holds (``CourierFeature/takesPrekeys(_:context:)``).
    mutating func takesPrekeys(_ packet: Packet, now: Millis) -> Bool {
        using(\.courierFeature, now: now) { courier, context in courier.takesPrekeys(packet, context: &context) } ?? false
    }

    // MARK: Time

    /// When ``tick(now:)`` must run next.
    public var nextDeadline: Millis? {
        // Alone, no announce is due: the first link's arrival announces at once.
        var deadlines = [nextHousekeeping] + (links.isEmpty ? [] : [(lastAnnounce ?? 0) + configuration.announceInterval])
        if let d = router.nextDeadline { deadlines.append(d) }
        if let d = delivery.tracker.nextDeadline { deadlines.append(d) }
        // (Each by name: no array of existentials made at every re-arm.)
        for d in [statelyFeatureSlot?.nextDeadline, voiceFeature?.nextDeadline, gatewayFeature?.nextDeadline, bridgeFeature?.nextDeadline,
                  boardFeature?.nextDeadline, groupsFeature?.nextDeadline, courierFeature?.nextDeadline] {
            if let d { deadlines.append(d) }
        }
        return deadlines.min()
    }

    /// Runs what is due.
    public mutating func tick(now: Millis) {
        perform(router.tick(now: now), now: now)
        if let due = delivery.tracker.nextDeadline, now >= due { followUp(delivery.tracker.due(now: now), now: now) }
        tickFeatures(now: now)
        if let d = bridgeFeature?.nextDeadline, now >= d { bridgeDue(now: now) }
        if now >= nextHousekeeping {
            housekeeping(now: now)
            nextHousekeeping = choresDeadline(now: now)
        }
        if !links.isEmpty, now >= (lastAnnounce ?? 0) + configuration.announceInterval { announce(now: now) }
    }

    /// When the chores run next: every interval while a handshake or an announce
    /// is awaited; otherwise every 5, alone (no link) every 30 (an idle node wakes
    /// less, issue 52), and at once when a timed table has something due (a peer's
    /// announce too old, a link silent, a handshake timed out, an envelope expired).
    /// A link's arrival, a handshake or a packet waiting for its announce brings them back sooner.
    private func choresDeadline(now: Millis) -> Millis {
        let waits = delivery.handshakesUnderWay || !awaitingAnnounce.isEmpty
        let pace = now + configuration.housekeepingInterval * (links.isEmpty ? 30 : waits ? 1 : 5)
        let w = wall(now)
        let courierDue = courierFeature?.nextExpiry.map { $0 > w ? now + ($0 - w) : now }
        // An announce owed to a bridge next to us goes when the rate lets it.
        let owed = bridgeFeature?.announceOwed(lastAnnounce: lastAnnounce, now: now)
        let due = [present.nextExpiry, watch.nextCheck, sessions.nextExpiry, courierDue, owed].compactMap { $0 }.min()
        return max(now + 1, min(pace, due ?? .max))
    }

    /// Something now waits on the chores (a handshake to retry, a packet for its announce): within one interval.
    mutating func choresSoon(now: Millis) {
        nextHousekeeping = min(nextHousekeeping, now + configuration.housekeepingInterval)
    }

    private mutating func housekeeping(now: Millis) {
        sessions.expire(now: now)
        let routes = router.routes, announcedBefore = lastAnnounce
        using(\.bridgeFeature, now: now) { bridge, context in bridge.chores(lastAnnounce: announcedBefore, routes: routes, context: &context) }
        let announced = lastAnnounce // the chores may have announced just now
        using(\.bridgeFeature, now: now) { bridge, context in bridge.choresAfterAnnounce(lastAnnounce: announced, context: &context) }
        featureChores(now: now)
        // Never said stored (an application that does not answer): forgotten; a retried copy is then acknowledged.
        awaitingStore.expire(now: now)
        if !clocks.isEmpty, let notice = clocks.check(up: links, freshness: configuration.freshness, now: now) { emit(.notice(notice)) }
        refusals.unverifiable += awaitingAnnounce.expire(now: now)
        retryStalledHandshakes(now: now)
        for (l, _) in watch.check(now: now) {
            links.remove(l)
            pings.linkDown(l)
            router.linkDown(l)
            statelyFeature.engine.linkDown(l)
            outbox.append(.closeLink(l))
        }
        for gone in present.expire(now: now) {
            router.peerGone(gone)
            delivery.peerGone(gone)
            emit(.left(gone)) // no announce for 60 s
        }
    }

    // MARK: Commands

    /// Sends a signed public message to everyone.
    /// `nearbyOnly`: this line stays on the radio, whatever crosses otherwise (iOS's per-message opt-out).
    public mutating func sendPublic(_ text: String, nearbyOnly: Bool = false, now: Millis) throws {
        guard !text.isEmpty else { throw PublicTextError.empty }
        guard text.utf8.count <= Self.publicTextLimit else { throw PublicTextError.tooLong(text.utf8.count) }
        var packet = Packet(type: .message, ttl: 7, timestamp: wall(now), senderID: peerID, payload: Array(text.utf8))
        try PacketSigning.sign(&packet, with: identity.signingKey)
        perform(router.originate(packet, now: now), now: now)
        let heard = MeshBridge.stableID(senderIDHex: peerID.description, timestampMs: packet.timestamp, content: text)
        bridgeFeature?.core.heardOnRadio(heard)
        if !nearbyOnly { crossBridges(text, timestamp: packet.timestamp, now: now) }
    }

    /// The most a public message carries: iOS's limit (`InputValidator.Limits.maxMessageLength`),
    /// in UTF-8 bytes, so that every message we send an iPhone would send too (docs/MESSENGER.md, limits).
    public static let publicTextLimit = 60_000

    public enum PublicTextError: Error, Hashable, Sendable, CustomStringConvertible {
        case empty, tooLong(Int)
        public var description: String {
            switch self {
            case .empty: "an empty message is not sent"
            case let .tooLong(n): "the message is \(n) bytes; at most \(NodeCore.publicTextLimit) go in a public message"
            }
        }
    }

    /// Pings `peer` (mesh diagnostics, 0x26): its pong comes back as
    /// ``NodeEvent/pong(from:rttMillis:hops:)``. At most 64 pings wait at once.
    public mutating func ping(_ peer: PeerID, now: Millis) {
        let nonce = (0..<8).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        guard pings.send(nonce, to: peer, now: now) else { return }
        let p = Packet(type: .ping, ttl: 7, timestamp: wall(now), senderID: peerID, recipientID: peer, payload: nonce + [7])
        perform(router.originate(p, now: now), now: now)
    }

    /// Changes this node's nickname and announces it at once.
    public mutating func rename(_ name: String, now: Millis) {
        nickname = name
        statelyFeature.engine.configuration.name = StateReport.clip(name)
        announce(now: now)
    }

    /// Tells everyone this node is leaving (a signed LEAVE).
    public mutating func leave(now: Millis) {
        var packet = Packet(type: .leave, ttl: 7, timestamp: wall(now), senderID: peerID, payload: [])
        do { try PacketSigning.sign(&packet, with: identity.signingKey) } catch {
            // Unsigned, every node would refuse it: peers see us go when our announces stop (60 s).
            return emit(.notice("our leave could not be signed (\(error)): peers see us go within a minute"))
        }
        originate(packet, now: now)
    }

    /// Forgets every session and key in memory, and who is around (panic).
    public mutating func wipe() {
        sessions.wipeAll()
        delivery.wipe()
        present.removeAll()
    }

    // MARK: Queries

    public var peers: [PeerID: PeerInfo] {
        present.entries.mapValues {
            PeerInfo(nickname: $0.info.nickname, fingerprint: $0.info.fingerprint, hops: $0.hops, lastSeen: $0.lastAnnounce,
                     capabilities: $0.info.capabilities, noiseKey: noiseKeys[$0.info.fingerprint], bridgeGeohash: $0.info.bridgeGeohash)
        }
    }

    /// The one present peer with this nickname, nil when none or several have it
    /// (never one of them chosen silently). Faces resolve what a person types
    /// by the messenger's rules (StarlingMessengerCore's `Names`); this is for tools and tests.
    public func peer(named nickname: String) -> PeerID? {
        let matches = present.entries.filter { $0.value.info.nickname == nickname }.keys
        return matches.count == 1 ? matches.first : nil
    }

    public var statistics: MeshStatistics { router.statistics }

    /// The size of every table this node keeps, the router's and Stately's
    /// among them, by name (docs/MESH.md, "Bounds"): what a soak watches.
    public var tableSizes: [String: Int] {
        var sizes = router.tableSizes
        let watched = watch.counts
        let node: [String: Int] = [
            "node.links": links.count,
            "node.linkWatch": watched.links,
            "node.linkErrors": watched.errors,
            "node.linksBlocked": watched.blocked,
            "node.present": present.entries.count,
            "node.blocked": trust.blocked.count,
            "node.awaitingTrust": trust.heldCount,
            "node.verifiedFingerprints": trust.verified.count,
            "node.linkClocks": clocks.count,
            "node.noiseKeys": noiseKeys.count,
            "node.awaitingStore": awaitingStore.count,
            "node.fileCopies": fileCopies.count,
            "node.publicShown": shownPublic.count,
            "node.awaitingAnnounce": awaitingAnnounce.count,
            "node.pins": pins.count,
            "node.shownBudget": shownBudget.count,
            "node.unread": unread.count,
            "node.sessions": sessions.sessionCount,
            "node.pendingHandshakes": sessions.pendingHandshakeCount,
        ]
        sizes.merge(node) { a, _ in a }
        sizes.merge(delivery.tableSizes) { a, _ in a }
        sizes.merge(pings.tableSizes) { a, _ in a }
        sizes.merge(offMesh.tableSizes) { a, _ in a }
        for feature in features { sizes.merge(feature.tableSizes) { a, _ in a } }
        return sizes
    }
    public var sessionCount: Int { sessions.sessionCount }
    /// Noise handshakes under way (bounded: SessionManager.Configuration.maxPendingHandshakes).
    public var pendingHandshakeCount: Int { sessions.pendingHandshakeCount }
    public func hasSession(with peer: PeerID) -> Bool { sessions.hasSession(with: peer) }
    /// The fingerprint of the Noise key our session with `peer` authenticated.
    public func sessionFingerprint(_ peer: PeerID) -> Fingerprint? {
        sessions.hasSession(with: peer) ? sessions.fingerprint(of: peer) : nil
    }
    public var neighborPeers: Set<PeerID> { router.neighborhood.neighborPeers }

    // MARK: Receiving

    /// Sends a packet of ours into the mesh.
    mutating func originate(_ packet: Packet, now: Millis) { perform(router.originate(packet, now: now), now: now) }

    mutating func perform(_ actions: [MeshRouter.Action], now: Millis) {
        for action in actions {
            switch action {
            case let .transmit(bytes, links):
                outbox.append(.send(bytes, channel: .mesh, links: links))
            case let .deliver(packet, link, hops):
                deliver(packet, link: link, hops: hops, now: now)
            case let .progress(sender, _, received, total):
                if !isBlocked(sender) { emit(.fileProgress(from: sender, received: received, total: total)) }
            }
        }
    }

    private mutating func deliver(_ packet: Packet, link: LinkID?, hops: Int, now: Millis) {
        // Blocked peers are discarded at the earliest stage, without a word.
        if isBlocked(packet.senderID) { return }
        // A packet made of fragments passes the rules now (its fragments did, not it).
        if admitted.map({ $0 != PacketID(packet) }) ?? true, !screensWhole(packet, link: link, now: now) { return }
        let sender = packet.senderID
        switch packet.type {
        case .announce:
            takeAnnounce(packet, link: link, hops: hops, now: now)
        case .message:
            showPublic(packet, hops: hops, now: now)
        case .boardPost where boardFeature != nil && packet.isBroadcast:
            showBoard(packet, hops: hops, now: now)
        case .voiceFrame where packet.isBroadcast:
            takeVoice(packet.payload, from: sender, isPrivate: false, now: now)
        case .prekeyBundle where packet.isBroadcast:
            _ = takesPrekeys(packet, now: now) // one that waited for its announce is taken now
        case .groupMessage where packet.isBroadcast:
            using(\.groupsFeature, now: now) { groups, context in groups.take(packet, hops: hops, context: &context) }
        case .announceV2 where packet.isBroadcast:
            let newestFirst = Array(noiseKeyOrder.reversed())
            using(\.recognitionFeature, now: now) { v2, context in v2.take(packet, newestFirst: newestFirst, context: &context) }
        case .courierEnvelope where packet.recipientID == peerID:
            using(\.courierFeature, now: now) { courier, context in courier.take(packet, hops: hops, context: &context) }
        case .nostrCarrier where packet.recipientID == peerID:
            takeDeposit(packet, now: now)
        case .nostrCarrier where packet.isBroadcast:
            hearCarrier(packet, hops: hops, now: now)
        case .ping where packet.recipientID == peerID:
            answerPing(packet, link: link, now: now)
        case .pong where packet.recipientID == peerID:
            if let rtt = pings.pong(packet.payload, from: sender, now: now) { emit(.pong(from: sender, rttMillis: rtt, hops: hops)) }
        case .leave:
            router.peerGone(sender)
            if present.left(sender) != nil { emit(.left(sender)) }
        case .noiseHandshake where packet.recipientID == peerID:
            takeHandshake(packet, now: now)
        case .noiseEncrypted where packet.recipientID == peerID:
            open(packet, hops: hops, now: now)
        default:
            break
        }
    }

    /// A verified announce: the peer is present (or its card updated), its
    /// link and neighbours bound, what waited for it taken.
    private mutating func takeAnnounce(_ packet: Packet, link: LinkID?, hops: Int, now: Millis) {
        let sender = packet.senderID
        do {
            let a = try Announcement.verify(packet, now: now)
            // The signing key is pinned to the Noise key on first use: a later
            // announce with the same Noise key and another signing key is refused
            // before it binds a link or a route (someone signing in a known peer's name).
            if let pinned = pins[Fingerprint(noiseStaticKey: a.noisePublicKey)], pinned != a.signingPublicKey {
                refusals.pinMismatch += 1
                emit(.rejected(Rejection(.badAnnounce, peer: sender,
                                         "announce from \(sender): its signing key is not the one first seen with its Noise key (refused)")))
                return
            }
            // An announce older than the last one taken from this peer (a replay,
            // or one overtaken on the way) changes nothing: not its name, its
            // neighbours, its distance nor a link (while it is present; past 60 s
            // without an announce it is new again).
            if let known = present[sender], packet.timestamp < known.info.announcedAt {
                refusals.outdatedAnnounce += 1
                return
            }
            // A sync answer (RSR, TTL 0) replays a stored announce: its hop count says
            // nothing about distance, and the neighbour that answered is not the
            // announcer. Only a live announce one hop away binds a link; a replayed one
            // keeps what was known of the distance (2 hops when nothing was).
            let replayed = packet.isSyncAnswer
            let hops = replayed ? present[sender]?.hops ?? 2 : hops
            if hops == 1, !replayed, let link {
                perform(router.bind(link, to: sender, now: now), now: now) // hands over what was held for it
                watch.announced(link)
                using(\.courierFeature, now: now) { courier, context in courier.handOver(to: sender, noiseKey: a.noisePublicKey, context: &context) }
            }
            router.setNeighbors(of: sender, Set(a.directNeighbors ?? []), now: now)
            let card = PeerCard(nickname: a.nickname, fingerprint: Fingerprint(noiseStaticKey: a.noisePublicKey),
                                signingKey: a.signingPublicKey, capabilities: a.capabilities.map(Capabilities.init(rawValue:)),
                                announcedAt: packet.timestamp,
                                bridgeGeohash: a.capabilities.map { Capabilities(rawValue: $0).contains(.bridge) } == true
                                    && a.bridgeGeohash.map(NostrCarrier.isValidGeohash) == true ? a.bridgeGeohash : nil)
            pin(card.fingerprint, a.signingPublicKey)
            rememberNoiseKey(card.fingerprint, a.noisePublicKey)
            // §6.4: the session follows the Noise key, whatever ID the peer uses now.
            if sessions.fingerprint(of: sender) == nil, sessions.hasSession(for: card.fingerprint) {
                sessions.rebind(sender, to: card.fingerprint)
            }
            let previous = present.announced(sender, info: card, hops: hops, now: now)
            for gone in present.takeEvicted() {
                router.peerGone(gone)
                delivery.peerGone(gone)
                emit(.left(gone)) // made room for a newcomer (docs/MESH.md, "Bounds")
            }
            if trust.blocked.contains(card.fingerprint) { updateBlockedSenders() }
            // A bridge's announce may owe it ours (noteCrossingPeer): the chores look right after it, not 5 s on.
            if configuration.crossesBridges, a.bridgeGeohash != nil { nextHousekeeping = min(nextHousekeeping, now + 1) }
            if previous == nil {
                using(\.courierFeature, now: now) { courier, context in courier.follow(&context) } // a newcomer's drops are followed at once
                followUp(delivery.peerReturned(sender, now: now), now: now) // back: try again now
                using(\.groupsFeature, now: now) { groups, context in groups.peerReturned(sender, fingerprint: card.fingerprint, context: &context) }
            } else if delivery.tracker.isHolding(for: sender) {
                probeHeld(sender, now: now)
            }
            if previous?.info.nickname != a.nickname { emit(.peer(sender, nickname: a.nickname, hops: hops)) }
            if previous == nil || previous?.info.capabilities != card.capabilities { emit(.capabilities(sender, card.capabilities)) }
            // What came before the announce is checked now.
            for w in awaitingAnnounce.take(from: sender) where links.contains(w.link) && admits(w.packet, bytes: w.bytes, on: w.link, now: now) {
                perform(router.receive(w.packet, bytes: w.bytes, on: w.link, now: now), now: now)
            }
        } catch {
            emit(.rejected(Rejection(.badAnnounce, peer: sender, "announce from \(sender): \(error)")))
        }
    }

    /// A public message: shown once, within its sender's budget.
    private mutating func showPublic(_ packet: Packet, hops: Int, now: Millis) {
        let sender = packet.senderID
        guard packet.payload.count <= configuration.maxShownText else {
            refusals.tooLong += 1
            return
        }
        guard let text = String(validating: packet.payload, as: UTF8.self) else {
            emit(.rejected(Rejection(.notText, peer: sender, "message from \(sender) is not UTF-8")))
            return
        }
        // The duplicate filter forgets after 5 minutes; what was shown is remembered longer.
        guard !shownPublic.contains(PacketID(packet)) else {
            refusals.replayed += 1
            return
        }
        guard shownBudget.take(sender, bytes: packet.payload.count, now: now) else {
            refusals.flooding += 1
            return
        }
        _ = shownPublic.insert(PacketID(packet))
        bridgeFeature?.core.heardOnRadio(MeshBridge.stableID(senderIDHex: sender.description, timestampMs: packet.timestamp, content: text))
        emit(.message(from: sender, nickname: sender == peerID ? nickname : present[sender]?.info.nickname, text: text,
                      hops: hops, timestamp: packet.timestamp, history: packet.isRSR))
    }

    /// A ping for us: a pong back with the same payload, as the apps answer.
    private mutating func answerPing(_ packet: Packet, link: LinkID?, now: Millis) {
        guard pings.answers(on: link, now: now) else {
            refusals.pings += 1
            return
        }
        let pong = Packet(type: .pong, ttl: 7, timestamp: wall(now), senderID: peerID, recipientID: packet.senderID, payload: packet.payload)
        perform(router.originate(pong, now: now), now: now)
    }

    private mutating func announce(now: Millis) {
        lastAnnounce = now
        let neighbors = Array(router.neighborhood.neighborPeers.sorted().prefix(Announce.maxNeighbors))
        guard let packet = try? Announcement.make(identity: identity, nickname: nickname, timestamp: wall(now),
                                                  directNeighbors: neighbors, capabilities: announcedCapabilities.rawValue,
                                                  bridgeGeohash: announcedCapabilities.contains(.bridge) ? bridge.cell : nil) else { return }
        perform(router.originate(packet, now: now), now: now)
    }
}
