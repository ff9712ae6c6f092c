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
    public private(set) var router: MeshRouter
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
    private var links: Set<LinkID> = []
    /// Link health: no announce within 15 s, or silence for `linkTimeout`, drops a link.
    private var watch = LinkWatch<LinkID>()
    /// Peers present (an announce within the last 60 s): the one record of them.
    var present = PeerTable<PeerCard>()
    var blocked: Set<Fingerprint> = []
    /// Private payloads that came while trust was not known yet (256 at most,
    /// the oldest going unacknowledged: its sender tries again).
    private var awaitingTrust: [(payload: NoisePayload, from: PeerID, hops: Int, via: String?)] = []
    private var trustKnown: Bool
    private var verifiedFingerprints: Set<Fingerprint> = []
    private var favorites: Set<Fingerprint>
    private var lastAnnounce: Millis?
    private var nextHousekeeping: Millis = 0
    /// Private payloads waiting for a session, per peer (256 a peer, 1,024 peers).
    private var waiting: [PeerID: [NoisePayload]] = [:]
    /// Our private messages and files not yet acknowledged, by message ID.
    private var unacknowledged: [String: NoisePayload] = [:]
    var tracker: DeliveryTracker<String>
    /// When each handshake we started began, to start over when one stalls.
    private var handshakeStarted: [PeerID: Millis] = [:]
    /// When a present peer we hold messages for was last sent a fresh handshake
    /// (``probeHeld(_:now:)``; forgotten when it leaves, so no more than the peers present).
    private var heldProbes: [PeerID: Millis] = [:]
    /// Message IDs already shown, so a retried message is shown once.
    private var seen = BoundedSet<String>(capacity: 10_000)
    /// What each link's announces said of its clock.
    private var clocks = ClockWatch()
    /// Private messages emitted whose receipt waits for ``stored(_:now:)``.
    var awaitingStore: StoreReceipts
    /// Copies saved of each file (by transfer ID), 1,024 files at most.
    var fileCopies = FileCopies()
    /// Rekeys started (a fresh XX handshake on a live session), for statistics.
    public private(set) var rekeys = 0
    public internal(set) var refusals = Refusals()
    /// Public messages shown (packet IDs), so that a replay is never shown twice.
    private var shownPublic = BoundedSet<PacketID>(capacity: 10_000)
    /// Signed public packets from senders whose announce has not come yet
    /// (a relay's jitter can put a message before its announce): held 2 s,
    /// 64 at most, then counted ``Refusals/unverifiable``.
    private var awaitingAnnounce = AwaitingAnnounce()
    /// The packet `admits` let through for the router call under way: any
    /// other packet the router delivers (one reassembled from fragments) is
    /// screened by the same rules on delivery.
    private var admitted: PacketID?
    /// Signing keys pinned to Noise keys.
    var pins = Pins()
    /// Bytes of public text each sender may still have shown (4,096 senders at most).
    private var shownBudget: ShownBudget
    /// Our pings awaiting their pong, and the pings answered per link.
    private var pings = Pings()
    private var handshakeBudget: TokenBucket
    private var strangerHandshakeBudget: TokenBucket
    /// Which off-mesh transports reach which peers, and what went that way.
    var offMesh = OffMeshRoutes()
    /// Our private messages not yet read, and to whom.
    private var unread = ReadReceipts()
    /// The mesh board (nil: off).
    var boardFeature: BoardFeature?
    /// Live voice bursts being put back together.
    var voiceFeature: VoiceFeature? = VoiceFeature()
    /// Private groups (nil: off).
    var groupsFeature: GroupsFeature?
    /// Noise static keys of peers whose verified announce we took (1,024, the oldest going).
    var noiseKeys: [Fingerprint: [UInt8]] = [:]
    private var noiseKeyOrder: [Fingerprint] = []
    /// Announce v2 recognition, and vouches taken.
    var recognitionFeature: RecognitionFeature? = RecognitionFeature()
    var vouchesFeature: VouchesFeature? = VouchesFeature()
    /// Courier drops: carried for others, sealed to others' prekeys, online (docs/PROTOCOL.md, "Courier drops").
    var courierFeature: CourierFeature?
    /// Location channels through gateways (ours when we are one), and mesh bridges (ours when we are one).
    var gatewayFeature: GatewayFeature?
    var bridgeFeature: BridgeFeature?
    /// Whether the runtime has a relay up for what the gateway and the bridge publish.
    private var nostrRelaysUp = false

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
        self.tracker = DeliveryTracker(schedule: configuration.retry)
        self.statelyFeatureSlot = StatelyFeature(identity: identity, configuration: configuration, seed: rng.next())
        self.favorites = configuration.favorites
        self.watch.silenceLimit = configuration.linkTimeout
        self.present.capacity = configuration.maxPeers
        self.awaitingStore = StoreReceipts(capacity: configuration.maxAwaitingStore, timeout: configuration.storeTimeout)
        self.shownBudget = ShownBudget(burst: configuration.shownBytesBurst, perSecond: configuration.shownBytesPerSecond)
        self.handshakeBudget = TokenBucket(perMinute: configuration.handshakesPerMinute)
        self.strangerHandshakeBudget = TokenBucket(perMinute: configuration.strangerHandshakesPerMinute)
        self.rng = rng
        self.trustKnown = configuration.trustKnown
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
        NodeContext(now: now, wall: wall(now), identity: identity, peerID: peerID, nickname: nickname, trustKnown: trustKnown, blocked: blocked,
                    favorites: favorites, verified: verifiedFingerprints, pins: pins.all, noiseKeys: noiseKeys, present: present, sessions: sessions)
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

    /// The rules for a packet reassembled from fragments: our own ID, freshness
    /// and signatures, as for one that came whole.
    private mutating func screensWhole(_ packet: Packet, link: LinkID?, now: Millis) -> Bool {
        if packet.senderID == peerID {
            refusals.ownID += 1
            return false
        }
        guard isFresh(packet, link: link, now: now) else {
            refusals.stale += 1
            return false
        }
        return signatureHolds(packet, queue: nil)
    }

    /// The wall-clock time at `now`.
    func wall(_ now: Millis) -> Millis { wallTime(now, offset: wallClockOffset) }

    /// Within 120 s of our clock, or an answer (isRSR, TTL 0, an announce or a
    /// public message: what sync stores) on a link we asked within 30 s.
    private func isFresh(_ packet: Packet, link: LinkID?, now: Millis) -> Bool {
        let wall = wall(now)
        let skew = wall >= packet.timestamp ? wall - packet.timestamp : packet.timestamp - wall
        if skew <= configuration.freshness { return true }
        guard packet.isSyncAnswer, packet.type == .message || packet.type == .announce || packet.type == .boardPost
            || packet.type == .prekeyBundle || packet.type == .groupMessage, let link else { return false }
        return router.askedForSync(on: link, within: configuration.syncAnswerWindow, now: now)
    }

    private mutating func noteClock(of packet: Packet, on link: LinkID?, fresh: Bool, now: Millis) {
        guard let link, links.contains(link) else { return }
        clocks.note(packet, on: link, fresh: fresh, wall: wall(now), now: now)
    }

    /// What a person reads as said by a peer must be signed by that peer's key:
    /// public messages, leaves and file transfers, whatever their recipient; so
    /// must a carrier deposited with us (our gateway or bridge publishes it for
    /// its depositor). One from a sender with no verified announce goes into
    /// `queue` (to wait for it) when one is given: a deposit can overtake its
    /// depositor's announce when we have just come up beside it.
    private mutating func signatureHolds(_ packet: Packet, queue: (bytes: [UInt8], link: LinkID, now: Millis)?) -> Bool {
        let deposit = packet.type == .nostrCarrier && packet.recipientID == peerID
        guard packet.type == .message || packet.type == .leave || packet.type == .fileTransfer || packet.type == .voiceFrame || deposit else {
            return true
        }
        guard let card = present[packet.senderID]?.info else {
            if let q = queue, packet.signature != nil, links.contains(q.link), awaitingAnnounce.hold(packet, bytes: q.bytes, on: q.link, now: q.now) {
                choresSoon(now: q.now)
            } else {
                refusals.unverifiable += 1
            }
            return false
        }
        guard packet.signature != nil, PacketSigning.isValid(packet, publicKey: card.signingKey) else {
            refusals.forged += 1
            return false
        }
        return true
    }

    /// The rules a packet passes before the router sees it (docs/PROTOCOL.md,
    /// "Authentication and freshness"): no relay, no answer, no event for what fails.
    private mutating func admits(_ packet: Packet, bytes: [UInt8], on link: LinkID, now: Millis) -> Bool {
        let sender = packet.senderID
        // Our own ID: only a copy of a packet of ours (a relay's echo, which the
        // router counts as a duplicate and uses as evidence) goes on.
        if sender == peerID {
            if router.hasSeen(packet) { return true }
            // Or one of our own public messages from before a restart, replayed
            // by a sync we asked for and signed with our own key: our history.
            if packet.type == .message, packet.isSyncAnswer, isFresh(packet, link: link, now: now),
               packet.signature != nil, PacketSigning.isValid(packet, publicKey: identity.signingPublicKey) {
                return true
            }
            // Or our own board posts, handed back by a sync after a restart (each signed inside).
            if packet.type == .boardPost, packet.isSyncAnswer, isFresh(packet, link: link, now: now) {
                return takesBoard(packet, now: now)
            }
            refusals.ownID += 1
            return false
        }
        guard isFresh(packet, link: link, now: now) else {
            refusals.stale += 1
            noteClock(of: packet, on: link, fresh: false, now: now)
            return false
        }
        noteClock(of: packet, on: link, fresh: true, now: now)
        // A copy of a packet the duplicate filter holds costs nothing more: the
        // first copy was checked before it got there (a forged first copy never
        // does), and the router only counts this one (a genuine replay would do
        // the same). In a mesh each packet comes from several neighbours.
        if router.hasSeen(packet) { return true }
        // An announce whose signing key is not the one pinned to its Noise key
        // goes no further: not bound, not relayed, not stored (cheap: no crypto).
        if packet.type == .announce, let a = try? Announce(decoding: packet.payload),
           let pinned = pins[Fingerprint(noiseStaticKey: a.noisePublicKey)], pinned != a.signingPublicKey {
            refusals.pinMismatch += 1
            emit(.rejected(Rejection(.badAnnounce, peer: packet.senderID,
                                     "announce from \(packet.senderID): its signing key is not the one first seen with its Noise key (refused)")))
            return false
        }
        // Live voice is live: a public burst packet over 30 s old goes nowhere (as iOS).
        if packet.type == .voiceFrame, wall(now) > packet.timestamp, wall(now) - packet.timestamp > 30_000 {
            refusals.stale += 1
            return false
        }
        // A board post is relayed only when the board takes it (as iOS): decoded,
        // signed by the key it carries, live, not deleted.
        if packet.type == .boardPost, boardFeature != nil, packet.isBroadcast { return takesBoard(packet, now: now) }
        // A prekey bundle: its packet and the bundle inside signed by its owner's announced key, or it goes nowhere.
        if packet.type == .prekeyBundle, packet.isBroadcast { return takesPrekeys(packet, now: now) }
        return signatureHolds(packet, queue: (bytes, link, now))
    }

    // MARK: The board

    /// Whether the board takes a post or tombstone (new or a duplicate); a new
    /// one is shown when the router delivers it. Without a board, all go on.
    mutating func takesBoard(_ packet: Packet, now: Millis) -> Bool {
        using(\.boardFeature, now: now) { board, context in board.takes(packet, context: &context) } ?? true
    }

    /// Whether a prekey bundle holds (``CourierFeature/takesPrekeys(_:context:)``).
    private mutating func takesPrekeys(_ packet: Packet, now: Millis) -> Bool {
        using(\.courierFeature, now: now) { courier, context in courier.takesPrekeys(packet, context: &context) } ?? false
    }

    /// Sends a live voice burst packet: to everyone (a signed voiceFrame, TTL 7,
    /// as the apps send them), or privately to `peer` in its Noise session
    /// (payload 0x08; no receipt, no retry: live audio late is no use).
    public mutating func sendVoice(_ burst: VoiceBurst, to peer: PeerID? = nil, now: Millis) throws {
        if let peer {
            try sendNoise(.unknown(type: NoisePayload.Kind.voiceFrame, body: burst.encoded()), to: peer, now: now, fresh: true)
            return
        }
        var packet = Packet(type: .voiceFrame, ttl: 7, timestamp: wall(now), senderID: peerID, payload: burst.encoded())
        try PacketSigning.sign(&packet, with: identity.signingKey)
        perform(router.originate(packet, now: now), now: now)
    }

    // MARK: Noise keys

    /// Remembers the Noise key a verified announce (or a contact's card) gave.

    mutating func rememberNoiseKey(_ f: Fingerprint, _ key: [UInt8]) {
        if noiseKeys[f] == key { return }
        if noiseKeys[f] == nil { noiseKeyOrder.append(f) }
        noiseKeys[f] = key
        recognitionFeature?.forget(f)
        while noiseKeyOrder.count > 1_024 {
            let gone = noiseKeyOrder.removeFirst()
            noiseKeys[gone] = nil
            recognitionFeature?.forget(gone)
        }
    }

    // MARK: Nostr carriers

    /// The runtime has (or lost) a relay for what the gateway and the bridge
    /// publish: what waited goes when one is up.
    public mutating func nostrRelays(up: Bool, now: Millis) {
        nostrRelaysUp = up
        guard up else {
            courierFeature?.relaysUp = false
            bridgeFeature?.relaysUp = false
            return
        }
        using(\.gatewayFeature, now: now) { gateway, context in gateway.relaysUp(&context) }
        using(\.bridgeFeature, now: now) { bridge, context in bridge.relaysUp(&context) }
        using(\.courierFeature, now: now) { courier, context in courier.relays(up: true, context: &context) }
        bridgeDue(now: now)
    }

    /// A carrier directed to us: a deposit, signed by its depositor's
    /// announced key (it may be hops away), for our gateway or our bridge.
    private mutating func takeDeposit(_ packet: Packet, now: Millis) {
        guard let card = present[packet.senderID]?.info, packet.signature != nil, PacketSigning.isValid(packet, publicKey: card.signingKey),
              let carrier = try? NostrCarrier(decoding: packet.payload[...]),
              (carrier.direction == .toGateway && configuration.gateway) || (carrier.direction == .toBridge && bridge.cell != nil) else {
            refusals.carriers += 1 // unsigned, another's, not ours to take, or malformed
            return
        }
        if carrier.direction == .toBridge {
            using(\.bridgeFeature, now: now) { bridge, context in bridge.deposit(carrier, from: packet.senderID, signingKey: card.signingKey, context: &context) }
        } else {
            let up = nostrRelaysUp
            using(\.gatewayFeature, now: now) { gateway, context in gateway.deposit(carrier, from: packet.senderID, relaysUp: up, context: &context) }
        }
    }

    /// A broadcast carrier: a bridge's or a gateway's event for the mesh, shown
    /// once when its own signature holds (whoever relayed it).
    private mutating func hearCarrier(_ packet: Packet, hops: Int, now: Millis) {
        guard let carrier = try? NostrCarrier(decoding: packet.payload[...]) else {
            refusals.carriers += 1
            return
        }
        switch carrier.direction {
        case .fromBridge: using(\.bridgeFeature, now: now) { bridge, context in bridge.heard(carrier, in: packet, hops: hops, context: &context) }
        case .fromGateway: using(\.gatewayFeature, now: now) { gateway, context in gateway.heard(carrier, hops: hops, context: &context) }
        default: break // a deposit broadcast: nobody's to take
        }
    }

    // MARK: Time

    /// When ``tick(now:)`` must run next.
    public var nextDeadline: Millis? {
        // Alone, no announce is due: the first link's arrival announces at once.
        var deadlines = [nextHousekeeping] + (links.isEmpty ? [] : [(lastAnnounce ?? 0) + configuration.announceInterval])
        if let d = router.nextDeadline { deadlines.append(d) }
        if let d = tracker.nextDeadline { deadlines.append(d) }
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
        if let due = tracker.nextDeadline, now >= due { followUp(tracker.due(now: now), now: now) }
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
        let waits = !handshakeStarted.isEmpty || !awaitingAnnounce.isEmpty
        let pace = now + configuration.housekeepingInterval * (links.isEmpty ? 30 : waits ? 1 : 5)
        let w = wall(now)
        let courierDue = courierFeature?.nextExpiry.map { $0 > w ? now + ($0 - w) : now }
        // An announce owed to a bridge next to us goes when the rate lets it.
        let owed = bridgeFeature?.announceOwed(lastAnnounce: lastAnnounce, now: now)
        let due = [present.nextExpiry, watch.nextCheck, sessions.nextExpiry, courierDue, owed].compactMap { $0 }.min()
        return max(now + 1, min(pace, due ?? .max))
    }

    /// Something now waits on the chores (a handshake to retry, a packet for its announce): within one interval.
    private mutating func choresSoon(now: Millis) {
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
        for (peer, started) in handshakeStarted where now > started && now - started > 5_000 {
            if sessions.hasSession(with: peer) { handshakeStarted[peer] = nil; continue }
            if (waiting[peer] ?? []).isEmpty {
                // Nothing of ours waits for it (a restart after an undecryptable frame): let it go.
                if now - started > configuration.sessions.handshakeTimeoutMillis { handshakeStarted[peer] = nil }
                continue
            }
            try? startHandshake(with: peer, now: now) // rate-limited by the session manager
        }
        for (l, _) in watch.check(now: now) {
            links.remove(l)
            pings.linkDown(l)
            router.linkDown(l)
            statelyFeature.engine.linkDown(l)
            outbox.append(.closeLink(l))
        }
        for gone in present.expire(now: now) {
            router.peerGone(gone)
            heldProbes[gone] = nil
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

    /// Sends a private message, end-to-end encrypted with Noise (a handshake
    /// first when there is no session). Returns its message ID (a UUID v4).
    @discardableResult
    public mutating func sendPrivate(_ text: String, to peer: PeerID, messageID: String? = nil, now: Millis) throws -> String {
        let id = messageID ?? newMessageID()
        try sendTracked(.privateMessage(PrivateMessage(messageID: id, content: text)), id: id, to: peer, now: now)
        awaitRead(id, from: peer)
        return id
    }

    /// A read receipt for `id` counts once, and only from `peer` (messages and
    /// files alike: issue 52, a file's "read" was dropped). The newest 10,000.
    mutating func awaitRead(_ id: String, from peer: PeerID) { unread.expect(id, from: peer) }

    /// Pings `peer` (mesh diagnostics, 0x26): its pong comes back as
    /// ``NodeEvent/pong(from:rttMillis:hops:)``. At most 64 pings wait at once.
    public mutating func ping(_ peer: PeerID, now: Millis) {
        let nonce = (0..<8).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        guard pings.send(nonce, to: peer, now: now) else { return }
        let p = Packet(type: .ping, ttl: 7, timestamp: wall(now), senderID: peerID, recipientID: peer, payload: nonce + [7])
        perform(router.originate(p, now: now), now: now)
    }

    /// Tells `peer` that its message was displayed.
    public mutating func sendReadReceipt(_ messageID: String, to peer: PeerID, now: Millis) throws {
        try sendNoise(.readReceipt(messageID: messageID), to: peer, now: now)
    }

    /// Marks a peer a favourite, or not: its messages are held while it is
    /// away, and this node holds what it relays for it.
    public mutating func setFavorite(_ fingerprint: Fingerprint, _ on: Bool) {
        if on { favorites.insert(fingerprint) } else { favorites.remove(fingerprint) }
        router.favorites = Set(favorites.map(\.peerID))
    }

    public var favoriteFingerprints: Set<Fingerprint> { favorites }

    /// Marks a fingerprint verified (compared out of band), or not.
    public mutating func setVerified(_ fingerprint: Fingerprint, _ on: Bool) {
        if on { verifiedFingerprints.insert(fingerprint) } else { verifiedFingerprints.remove(fingerprint) }
    }

    public var verified: Set<Fingerprint> { verifiedFingerprints }

    public mutating func block(_ fingerprint: Fingerprint) {
        blocked.insert(fingerprint)
        updateBlockedSenders()
    }

    public mutating func unblock(_ fingerprint: Fingerprint) {
        blocked.remove(fingerprint)
        updateBlockedSenders()
    }

    public var blockedFingerprints: Set<Fingerprint> { blocked }

    /// Whether what `peer` sends is dropped: the Noise key of its verified
    /// announce, or of the session it opened (a private message can come
    /// before the announce), is blocked.
    public func isBlocked(_ peer: PeerID) -> Bool {
        guard !blocked.isEmpty else { return false }
        if let f = present[peer]?.info.fingerprint, blocked.contains(f) { return true }
        if let f = sessions.fingerprint(of: peer), blocked.contains(f) { return true }
        return false
    }

    /// Holds the receipt of `id` until ``stored(_:now:)`` (the oldest let go past the cap).
    mutating func awaitAndKeep(_ id: String, from sender: PeerID, now: Millis) { awaitingStore.wait(id, from: sender, now: now) }

    /// The application stored this private message (``Configuration/receiptsAfterStored``):
    /// its delivery receipt goes now.
    public mutating func stored(_ messageID: String, now: Millis) {
        guard let sender = awaitingStore.take(messageID) else { return }
        try? sendNoise(.delivered(messageID: messageID), to: sender, now: now)
        outbox.append(.acknowledged(messageID: messageID))
    }

    /// The application could not store it (a full disk): no receipt, and the
    /// sender's next retry is taken as new (shown again, stored again).
    public mutating func notStored(_ messageID: String) {
        guard awaitingStore.take(messageID) != nil else { return }
        seen.remove(messageID)
    }

    /// Messages whose receipt waits for the application to store them.
    public var awaitingStoreCount: Int { awaitingStore.count }

    /// Trust decisions are loaded: what waited for them is taken now (a
    /// blocked sender's dropped unanswered, the rest shown and acknowledged).
    public mutating func trustDecided(now: Millis) {
        guard !trustKnown else { return }
        trustKnown = true
        let waiting = awaitingTrust
        awaitingTrust = []
        for w in waiting where !isBlocked(w.from) { inner(w.payload, from: w.from, hops: w.hops, via: w.via, now: now) }
        // Drops for us and group messages that came meanwhile: read now, the blocks known.
        using(\.courierFeature, now: now) { courier, context in courier.trustDecided(&context) }
        using(\.groupsFeature, now: now) { groups, context in groups.readKept(context: &context) }
    }

    /// Private payloads waiting for trust decisions.
    public var awaitingTrustCount: Int { awaitingTrust.count }

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
        waiting = [:]
        heldProbes = [:]
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
            "node.blocked": blocked.count,
            "node.awaitingTrust": awaitingTrust.count,
            "node.verifiedFingerprints": verifiedFingerprints.count,
            "node.waitingPeers": waiting.count,
            "node.waitingPayloads": waitingCount,
            "node.unacknowledged": unacknowledged.count,
            "node.tracked": tracker.count,
            "node.handshakeStarted": handshakeStarted.count,
            "node.heldProbes": heldProbes.count,
            "node.privateShown": seen.count,
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
    /// Messages and files not yet acknowledged.
    public var unacknowledgedCount: Int { unacknowledged.count }
    /// Payloads waiting for a session, all peers together.
    public var waitingCount: Int { waiting.values.reduce(0) { $0 + $1.count } }
    public var neighborPeers: Set<PeerID> { router.neighborhood.neighborPeers }

    // MARK: Sending privately

    mutating func newMessageID() -> String {
        // A UUID v4 from the node's generator, in the apps' upper-case form.
        var b = (0..<16).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        let hex = b.map { String($0, radix: 16, uppercase: true) }.map { $0.count == 1 ? "0" + $0 : $0 }
        return [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(separator: "-")
    }

    /// Sends a payload that a delivered receipt will acknowledge, and keeps
    /// sending it until one comes (or the tracker gives up).
    mutating func sendTracked(_ payload: NoisePayload, id: String, to peer: PeerID, now: Millis) throws {
        // Fails here, not on a retry. A payload the mesh cannot carry (a private
        // message over 255 bytes) may still go to a peer away from the mesh
        // through an off-mesh transport that can (the Ya OK server carries 10,240 bytes).
        if present[peer] != nil || offMeshRoute(peer) == nil { _ = try payload.encoded() }
        unacknowledged[id] = payload
        tracker.sent(id, to: peer, now: now, favorite: isFavorite(peer))
        try sendNoise(payload, to: peer, now: now, fresh: true)
    }

    private func isFavorite(_ peer: PeerID) -> Bool {
        if let f = present[peer]?.info.fingerprint { return favorites.contains(f) }
        return router.favorites.contains(peer)
    }

    /// Seals and sends; without a session the payload waits for a handshake.
    /// A session due for a rekey (an hour, or 10,000 messages) starts a fresh
    /// handshake; its old keys carry this payload and keep working until the
    /// new ones exist. A retry is flooded (`routing: .flood`): the route the
    /// first try took may be what failed. Without a session the payload
    /// waits once (a retry of one already waiting is not queued again); a
    /// `fresh` send always waits (the same file sent twice is two sends).
    mutating func sendNoise(_ payload: NoisePayload, to peer: PeerID, now: Millis,
                                    routing: MeshRouter.Routing = .automatic, fresh: Bool = false) throws {
        // Mesh first, always: off the mesh only for a peer no announce has come
        // from within the last minute, and only what an off-mesh transport carries.
        if present[peer] == nil, let via = offMeshRoute(peer), let ticket = Self.offMeshTicket(payload) {
            handOff(payload, to: peer, via: via, ticket: ticket)
            return
        }
        guard sessions.hasSession(with: peer) else {
            // Bounded: 256 a peer (the oldest goes; a tracked one comes back at
            // its retry), for at most 1,024 peers at once.
            if fresh || !(waiting[peer] ?? []).contains(payload), waiting[peer] != nil || waiting.count < 1_024 {
                if waiting[peer, default: []].count >= 256 { waiting[peer]!.removeFirst() }
                waiting[peer, default: []].append(payload)
            }
            if !sessions.isHandshaking(with: peer) { try startHandshake(with: peer, now: now) }
            return
        }
        let frame = try sessions.seal(try payload.encoded(), for: peer)
        let actions = router.originate(NoisePackets.encrypted(frame, from: peerID, to: peer, timestamp: wall(now)), now: now, routing: routing)
        perform(actions, now: now)
        if case let .privateFile(file) = payload, let bytes = try? file.encoded() {
            // The sender's progress: out to the links now (a retry says so again).
            let pieces = actions.reduce(0) { n, a in if case .transmit = a { n + 1 } else { n } }
            emit(.fileSent(transferID: sha256Hex(bytes), to: peer, fragments: pieces))
        }
        if sessions.needsRekey(peer, now: now), (try? startHandshake(with: peer, now: now)) != nil { rekeys += 1 }
    }

    /// A peer that announces while we hold messages for it has not acknowledged
    /// them: it may have restarted, within its 60 s of presence, and lost our
    /// session (then what we send it can never be opened, and it has nothing to
    /// say that would tell us). A fresh handshake, at most every 30 s, settles
    /// it: once it completes, what is held goes again.
    private mutating func probeHeld(_ peer: PeerID, now: Millis) {
        guard !sessions.isHandshaking(with: peer), now >= (heldProbes[peer] ?? 0) + 30_000 || now < (heldProbes[peer] ?? 0),
              handshakeBudget.take(now: now) else { return }
        heldProbes[peer] = now
        try? startHandshake(with: peer, now: now)
    }

    private mutating func startHandshake(with peer: PeerID, now: Millis) throws {
        let m1 = try sessions.initiateHandshake(with: peer, now: now)
        handshakeStarted[peer] = now
        choresSoon(now: now)
        perform(router.originate(NoisePackets.handshake(m1, from: peerID, to: peer, timestamp: wall(now)), now: now), now: now)
    }

    mutating func followUp(_ steps: [DeliveryTracker<String>.Step], now: Millis) {
        for step in steps {
            switch step {
            case let .resend(id, peer, _):
                // Without a session it waits (once) for the handshake.
                if let payload = unacknowledged[id] { try? sendNoise(payload, to: peer, now: now, routing: .flood) }
            case let .failed(id, peer):
                unacknowledged[id] = nil
                emit(.failed(messageID: id, to: peer))
            case let .held(id, peer):
                emit(.held(messageID: id, for: peer))
            }
        }
    }

    /// The router drops packets from blocked peers before anything else: not
    /// processed, not relayed, not answered.
    private mutating func updateBlockedSenders() {
        router.blockedSenders = Set(present.entries.filter { blocked.contains($0.value.info.fingerprint) }.keys)
    }

    // MARK: Receiving

    /// Sends a packet of ours into the mesh.
    mutating func originate(_ packet: Packet, now: Millis) { perform(router.originate(packet, now: now), now: now) }

    private mutating func perform(_ actions: [MeshRouter.Action], now: Millis) {
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
            // A message that starts a new handshake (whatever its size)
            // costs us two DH operations and a state: budgeted for all senders
            // together, more tightly for strangers.
            if !sessions.isHandshaking(with: sender) {
                let known = present[sender] != nil
                guard known ? handshakeBudget.take(now: now) : strangerHandshakeBudget.take(now: now) else {
                    refusals.handshakeBudget += 1
                    return
                }
            }
            handshake(packet, now: now)
        case .noiseEncrypted where packet.recipientID == peerID:
            do {
                // A frame that comes before its handshake completes is held (with its
                // hop count) and handed back in the handshake step.
                if case let .plaintext(p) = try sessions.open(packet.payload, from: sender, now: now, note: hops) {
                    inner(p, from: sender, hops: hops, now: now)
                }
            } catch {
                emit(.rejected(Rejection(.undecryptable, peer: sender, "frame from \(sender): \(error)")))
                // A peer we know sends frames we cannot open: one of us restarted
                // and lost the session. A fresh handshake (rate-limited) recovers it.
                if present[sender] != nil, !sessions.isHandshaking(with: sender), handshakeBudget.take(now: now) {
                    try? startHandshake(with: sender, now: now)
                }
            }
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
                heldProbes[gone] = nil
                emit(.left(gone)) // made room for a newcomer (docs/MESH.md, "Bounds")
            }
            if blocked.contains(card.fingerprint) { updateBlockedSenders() }
            // A bridge's announce may owe it ours (noteCrossingPeer): the chores look right after it, not 5 s on.
            if configuration.crossesBridges, a.bridgeGeohash != nil { nextHousekeeping = min(nextHousekeeping, now + 1) }
            if previous == nil {
                using(\.courierFeature, now: now) { courier, context in courier.follow(&context) } // a newcomer's drops are followed at once
                followUp(tracker.peerReturned(sender, now: now), now: now) // back: try again now
                using(\.groupsFeature, now: now) { groups, context in groups.peerReturned(sender, fingerprint: card.fingerprint, context: &context) }
            } else if tracker.isHolding(for: sender) {
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

    private mutating func handshake(_ packet: Packet, now: Millis) {
        let sender = packet.senderID
        do {
            let step = try sessions.receiveHandshake(packet.payload, from: sender, now: now)
            if let reply = step.reply {
                perform(router.originate(NoisePackets.handshake(reply, from: peerID, to: sender, timestamp: wall(now)), now: now), now: now)
            }
            if let fingerprint = step.established {
                handshakeStarted[sender] = nil
                // A blocked key: nothing it sent is opened, shown or answered.
                if blocked.contains(fingerprint) { return }
                emit(.sessionEstablished(sender, fingerprint: fingerprint.hex))
                for (p, hops) in step.released { inner(p, from: sender, hops: hops, now: now) }
                // A new session: what went into the old one may be lost (a restart), so a group's state goes again.
                using(\.groupsFeature, now: now) { groups, context in groups.peerReturned(sender, fingerprint: fingerprint, context: &context) }
                // The drops we carry for it (or copies for it to carry), now that it proved its key.
                if let key = noiseKeys[fingerprint], present[sender]?.hops == 1 {
                    using(\.courierFeature, now: now) { courier, context in courier.handOver(to: sender, noiseKey: key, context: &context) }
                }
                let flushed = waiting.removeValue(forKey: sender) ?? []
                for payload in flushed { try? sendNoise(payload, to: sender, now: now) }
                // A session with the peer: it is back. What we still owe it goes now,
                // what was held for it with a fresh budget (but not twice).
                let again = tracker.peerReturned(sender, now: now).filter {
                    guard case let .resend(id, _, _) = $0, let p = unacknowledged[id] else { return true }
                    return !flushed.contains(p)
                }
                followUp(again, now: now)
            }
        } catch {
            emit(.rejected(Rejection(.handshakeFailed, peer: sender, "handshake from \(sender): \(error)")))
        }
    }

    /// A decrypted inner payload.
    private mutating func inner(_ plaintext: [UInt8], from sender: PeerID, hops: Int, now: Millis) {
        guard let payload = try? NoisePayload(decoding: plaintext) else {
            emit(.rejected(Rejection(.malformedPrivatePayload, peer: sender, "malformed private payload from \(sender)")))
            return
        }
        inner(payload, from: sender, hops: hops, via: nil, now: now)
    }

    /// A private payload from `sender`, over the mesh (`via` nil) or an off-mesh transport.
    mutating func inner(_ payload: NoisePayload, from sender: PeerID, hops: Int, via: String?, now: Millis) {
        // Blocked: dropped unanswered, whatever came first (a session before an announce).
        if isBlocked(sender) { return }
        if !trustKnown {
            switch payload {
            case .privateMessage, .privateFile, .bulkOffer:
                if awaitingTrust.count >= 256 { awaitingTrust.removeFirst() }
                awaitingTrust.append((payload, sender, hops, via))
                return
            case let .unknown(type, _) where type == NoisePayload.Kind.groupInvite || type == NoisePayload.Kind.groupKeyUpdate:
                // A blocked creator's state is not taken: it waits for the blocks.
                if awaitingTrust.count >= 256 { awaitingTrust.removeFirst() }
                awaitingTrust.append((payload, sender, hops, via))
                return
            default:
                break
            }
        }
        switch payload {
        case let .privateMessage(m):
            // A retried copy is acknowledged again but shown once. A favourite
            // notification is a notice, not text (docs/PROTOCOL.md).
            if seen.insert(m.messageID) {
                let nickname = present[sender]?.info.nickname
                if let notice = Self.favoriteNotice(m.content) {
                    emit(.favorited(by: sender, nickname: nickname, on: notice.on, npub: notice.npub))
                } else {
                    emit(.privateMessage(from: sender, nickname: nickname, text: m.content, messageID: m.messageID, hops: hops, via: via))
                    if configuration.receiptsAfterStored {
                        // Its receipt goes once the application has stored it.
                        awaitAndKeep(m.messageID, from: sender, now: now)
                        return
                    }
                }
            } else if awaitingStore.isWaiting(m.messageID) {
                return // a retry while it is being stored: the receipt follows the store
            }
            try? sendNoise(.delivered(messageID: m.messageID), to: sender, now: now)
            outbox.append(.acknowledged(messageID: m.messageID))
        case let .privateFile(file):
            receiveFile(file, from: sender, now: now)
        case let .bulkOffer(offer):
            let id = Self.bulkID(offer.transferID)
            guard configuration.acceptsFiles, configuration.bulk else {
                try? sendNoise(.bulkAnswer(BulkAnswer(transferID: offer.transferID, accepted: false,
                                                      reason: "this node takes no large files")), to: sender, now: now)
                return
            }
            // A retried offer is acknowledged again, handed on once.
            if seen.insert(id) { outbox.append(.bulkOffered(offer, from: sender)) }
            try? sendNoise(.delivered(messageID: id), to: sender, now: now)
        case let .bulkAnswer(answer):
            outbox.append(.bulkAnswered(answer, from: sender))
        case let .delivered(id):
            // A duplicate receipt, or one from anyone but the recipient, counts for nothing.
            guard tracker.recipient(of: id) == sender, tracker.acknowledged(id) != nil else { return }
            if !tracker.isTracking(id) { unacknowledged[id] = nil }
            emit(.delivered(messageID: id, by: sender))
        case let .readReceipt(id):
            // Once, and only from the one we sent it to (a replayed or forged receipt counts for nothing).
            guard unread.read(id, by: sender) else { return }
            emit(.read(messageID: id, by: sender))
        case let .unknown(type, body) where type == NoisePayload.Kind.voiceFrame:
            takeVoice(body, from: sender, isPrivate: true, now: now)
        case let .unknown(type, body) where type == NoisePayload.Kind.vouch:
            using(\.vouchesFeature, now: now) { vouches, context in vouches.take(body, from: sender, context: &context) }
        case let .unknown(type, body) where type == NoisePayload.Kind.groupInvite || type == NoisePayload.Kind.groupKeyUpdate:
            using(\.groupsFeature, now: now) { groups, context in
                groups.takeState(body, invite: type == NoisePayload.Kind.groupInvite, from: sender, context: &context)
            }
        default:
            break
        }
    }

    private mutating func takeVoice(_ bytes: [UInt8], from sender: PeerID, isPrivate: Bool, now: Millis) {
        using(\.voiceFeature, now: now) { voice, context in voice.take(bytes, from: sender, isPrivate: isPrivate, context: &context) }
    }

    /// `[FAVORITED]:npub1…` or `[UNFAVORITED]:npub1…` (the npub may be empty,
    /// as Android sends it without a Nostr key): whether, and the key.
    static func favoriteNotice(_ text: String) -> (on: Bool, npub: String?)? {
        for (prefix, on) in [("[FAVORITED]:", true), ("[UNFAVORITED]:", false)] where text.hasPrefix(prefix) {
            let key = String(text.dropFirst(prefix.count))
            // A bech32 npub: "npub1" and lowercase letters and digits; anything else is not a key.
            let valid = key.hasPrefix("npub1") && key.count <= 100 && key.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber) }
            return (on, valid ? key : nil)
        }
        return nil
    }

    /// Pins on first use (``Pins``: 4,096, the newest going), and says so to the application.
    private mutating func pin(_ fingerprint: Fingerprint, _ key: [UInt8]) {
        guard pins.pinFirst(fingerprint, key) else { return }
        emit(.pinned(fingerprint: fingerprint, signingKey: key))
    }

    /// Pins a signing key to a Noise key from a source the application
    /// trusts: a pin kept from an earlier run, or a Ya OK contact card (signed,
    /// scanned in person). It replaces a pin made on first use in this run;
    /// announces with another signing key for that Noise key are refused.
    public mutating func pinSigningKey(_ key: [UInt8], for fingerprint: Fingerprint) {
        guard key.count == 32 else { return }
        pins.set(key, for: fingerprint)
    }

    /// The signing key pinned to a Noise key, if any.
    public func pinnedSigningKey(for fingerprint: Fingerprint) -> [UInt8]? { pins[fingerprint] }

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
