import StarlingCrypto
import StarlingMesh
import StarlingNostr
import StarlingWire

/// Mesh bridges as a part of the node (docs/PROTOCOL.md, "Mesh bridges"):
/// our own bridge when we are one (``NodeCore/Configuration/bridge``), our
/// lines and board notices crossing to other meshes (through our bridge, or
/// the nearest bridge peer with ``NodeCore/Configuration/crossesBridges``),
/// and what every node hears from bridges: `fromBridge` carriers shown once
/// and offered to sync (200, for 15 minutes).
struct BridgeFeature: NodeFeature {
    struct Settings: Sendable {
        var crosses: Bool
        /// The seed our bridge keys come from (nil: nothing of ours crosses).
        var seed: [UInt8]?
        var limits: BridgeCore.Limits
    }

    let settings: Settings
    /// The bridge's tables (any node's too: what it heard from bridges, and the radio messages it heard).
    var core: BridgeCore
    /// Whether the runtime has a relay up for what the bridge publishes.
    var relaysUp = false
    /// `fromBridge` carriers shown here or sent by our bridge, offered to sync
    /// (``carriersKept``, ``carrierLifetime``), oldest first.
    private var carriersForSync: [Packet] = []
    static let carriersKept = 200
    /// A carrier's event is shown only within 15 minutes of its time: no use syncing it after.
    static let carrierLifetime: UInt64 = 900_000
    /// Deletions of our crossed notices made while no bridge was near: they
    /// cross when one is (``tombstonesWaiting``, the oldest going).
    private(set) var tombstonesToCross: [BoardPacket] = []
    static let tombstonesWaiting = 32
    /// They go one every 15 s (a bridge takes 10 deposits a minute of a
    /// depositor, and queues 5 while its relays are down), each after our
    /// announce has followed the bridge's appearance (it must know us to take one).
    static let tombstoneGap: Millis = 15_000
    private var lastTombstoneCrossed: Millis?
    /// The bridge peer our lines cross through: none, or one since when and
    /// whether its last announce named us. A new one (or one that forgot us)
    /// gets our announce at once, so that it can check our deposits.
    private enum Crossing: Sendable {
        case none
        case through(PeerID, since: Millis, knewUs: Bool)
    }
    private var crossing = Crossing.none
    private(set) var lastCrossingAnnounce: Millis?
    /// The bridge peer our lines cross through, and since when (nil: none).
    var crossingPeer: (peer: PeerID, since: Millis)? {
        if case let .through(peer, since, _) = crossing { (peer, since) } else { nil }
    }
    /// Moves when the deletions waiting to cross change: the node writes the memory at once then
    /// (a deletion a person made is not left to the next 30 s).
    private(set) var deletionsToCrossChanges = 0

    init(cell: String?, settings: Settings) {
        self.settings = settings
        let key = cell.flatMap { c in settings.seed.map { MeshBridge.identity(seed: $0, cell: c) } }
        core = BridgeCore(cell: key == nil ? nil : cell, key: key, limits: settings.limits)
    }

    /// Our bridge's cell (nil: we are no bridge).
    var cell: String? { core.cell }

    var tableSizes: [String: Int] {
        var sizes = ["node.carriersForSync": carriersForSync.count, "node.tombstonesToCross": tombstonesToCross.count]
        for name in ["bridge.queue", "bridge.pending", "bridge.depositors", "bridge.radioIDs", "bridge.meshBroadcastIDs", "bridge.publishedIDs",
                     "bridge.receivedIDs", "bridge.rebroadcastIDs", "bridge.inbound", "bridge.shownFromRadio", "bridge.participants",
                     "bridge.pendingBoard", "bridge.boardOut", "bridge.boardIn"] {
            sizes[name] = core.sizes[name] ?? 0
        }
        return sizes
    }

    var nextDeadline: Millis? { core.cell == nil ? nil : core.nextDeadline(relaysUp: relaysUp) }

    /// Our bridge's downlinks and presence that are due (its board entries are the node's to take: ``NodeCore/takeBridgedBoard(now:)``).
    mutating func tick(_ context: inout NodeContext) {
        guard let cell = core.cell else { return }
        for c in core.due(now: context.now, wall: context.wall) {
            let packet = Packet(type: .nostrCarrier, ttl: 7, timestamp: context.wall, senderID: context.peerID, recipientID: nil, payload: c.encoded())
            offerForSync(packet, context: &context)
            context.originate(packet)
        }
        if let e = core.presenceDue(now: context.now, wall: context.wall, relaysUp: relaysUp) {
            context.output(.publishNostr(GatewayCore.Upload(event: e, geohash: cell, depositor: context.peerID)))
        }
    }

    /// A relay is up: what our bridge queued goes.
    mutating func relaysUp(_ context: inout NodeContext) {
        relaysUp = true
        for u in core.relaysUp() { context.output(.publishNostr(u)) }
    }

    // MARK: The chores

    /// The carriers' sync round asks only while a peer announcing bridge (bit 7)
    /// is present or we hold carriers; a new bridge peer we cross through gets
    /// our announce at once (``noteCrossingPeer(lastAnnounce:routes:context:)``).
    mutating func chores(lastAnnounce: Millis?, routes: RouteTable, context: inout NodeContext) {
        let asks = !carriersForSync.isEmpty || core.cell != nil
            || context.present.entries.values.contains { $0.info.capabilities?.contains(.bridge) == true }
        context.silenceSyncRounds(asks ? SyncTypes() : SyncTypes([.nostrCarrier]))
        noteCrossingPeer(lastAnnounce: lastAnnounce, routes: routes, context: &context)
    }

    /// What waits for the announce the chores may have sent: a deletion to
    /// cross, and carriers past their time leaving the sync round.
    mutating func choresAfterAnnounce(lastAnnounce: Millis?, context: inout NodeContext) {
        let now = context.now
        if !tombstonesToCross.isEmpty, crossingTarget(context) != nil, crossingPeer.map({ (lastAnnounce ?? 0) >= $0.since }) ?? true,
           lastTombstoneCrossed.map({ now >= $0 + Self.tombstoneGap }) ?? true {
            let t = tombstonesToCross.removeFirst()
            lastTombstoneCrossed = now
            deletionsToCrossChanges += 1
            crossBoard(t, context: &context)
        }
        if let oldest = carriersForSync.first, oldest.timestamp + Self.carrierLifetime < context.wall {
            carriersForSync.removeAll { $0.timestamp + Self.carrierLifetime < context.wall }
            context.provide(.nostrCarrier, packets: carriersForSync) // past their time they leave the round
        }
    }

    /// When an announce owed to a bridge next to us may go (the rate lets one every 10 s).
    func announceOwed(lastAnnounce: Millis?, now: Millis) -> Millis? {
        crossingPeer.flatMap { c in (lastAnnounce ?? 0) < c.since ? (lastCrossingAnnounce ?? now) + 10_000 : nil }
    }

    /// The nearest reachable peer whose verified announce says bridge (bit 7)
    /// with its cell, not blocked.
    private func bridgePeer(_ context: NodeContext) -> (peer: PeerID, cell: String)? {
        context.present.entries.filter {
            $0.key != context.peerID && $0.value.info.capabilities?.contains(.bridge) == true && $0.value.info.bridgeGeohash != nil
                && !context.blocked.contains($0.value.info.fingerprint)
        }
        .min { ($0.value.hops, $0.key.rawValue) < ($1.value.hops, $1.key.rawValue) }
        .map { ($0.key, $0.value.info.bridgeGeohash ?? "") }
    }

    /// A bridge peer we cross through that is new (it appeared, or another took
    /// its place) may have started after our last announce, and a deposit from
    /// a sender it does not know waits only 2 s: we announce at once (such extra
    /// announces at most one every 10 s, so that bridges coming and going cannot
    /// make us flood announces; one held back goes when it may).
    private mutating func noteCrossingPeer(lastAnnounce: Millis?, routes: RouteTable, context: inout NodeContext) {
        guard settings.crosses, core.cell == nil, settings.seed != nil, let peer = bridgePeer(context)?.peer else {
            crossing = .none
            return
        }
        let now = context.now
        // A bridge next to us whose announce stops naming us (it names fewer than 10, so it would) has started
        // afresh or lost us: it cannot check our deposits until it has our announce, which is owed again.
        var knowsUs = true
        if context.present[peer]?.hops == 1, let named = routes.neighbors(of: peer), named.count < Announce.maxNeighbors {
            knowsUs = named.contains(context.peerID)
        }
        switch crossing {
        case let .through(p, since, knewUs) where p == peer && (knowsUs || !knewUs):
            crossing = .through(peer, since: since, knewUs: knowsUs) // the same bridge, still knowing us (or never having)
        default:
            crossing = .through(peer, since: now, knewUs: knowsUs) // new, or it forgot us: our announce is owed
        }
        // Owed while our last announce is older than its appearance; paid when the rate lets us.
        if let c = crossingPeer, (lastAnnounce ?? 0) < c.since, lastCrossingAnnounce.map({ now >= $0 + 10_000 }) ?? true {
            lastCrossingAnnounce = now
            context.announce()
        }
    }

    // MARK: Crossing

    /// Where what we write crosses to other meshes: our own bridge (peer nil),
    /// or, with ``Settings/crosses``, the nearest bridge peer; nil: it does not cross.
    private func crossingTarget(_ context: NodeContext) -> (peer: PeerID?, cell: String, key: Secp256k1.PrivateKey)? {
        guard let seed = settings.seed else { return nil }
        if let cell = core.cell { return (nil, cell, MeshBridge.identity(seed: seed, cell: cell)) }
        if settings.crosses, let (peer, cell) = bridgePeer(context) { return (peer, cell, MeshBridge.identity(seed: seed, cell: cell)) }
        return nil
    }

    /// Our public message crosses (a bridge here, or a bridge peer we cross
    /// through): published by our bridge, or handed to the nearest bridge
    /// peer as a `toBridge` deposit.
    mutating func cross(_ text: String, timestamp: UInt64, context: inout NodeContext) {
        guard let target = crossingTarget(context) else { return }
        guard let e = MeshBridge.message(text, nickname: context.nickname, cell: target.cell, senderIDHex: context.peerID.description,
                                         timestampMs: timestamp, key: target.key, now: Int64(context.wall / 1_000)) else {
            return // empty once trimmed, or over 16,000 bytes: not one to cross (as iOS)
        }
        send(e, to: target, what: "your line", context: &context)
    }

    /// Our board post or tombstone crosses as our public messages do (kind
    /// 1402, docs/PROTOCOL.md "Board posts across bridges").
    mutating func crossBoard(_ b: BoardPacket, context: inout NodeContext) {
        guard BridgeCore.mayCross(b) else { return }
        guard let target = crossingTarget(context) else {
            if case .tombstone = b, core.crossedOut(b.postID, author: b.authorKey) {
                // It follows its post when a bridge is near again (checked every second; kept across restarts in the bridge memory).
                if !tombstonesToCross.contains(b) {
                    if tombstonesToCross.count >= Self.tombstonesWaiting { tombstonesToCross.removeFirst() }
                    tombstonesToCross.append(b)
                    deletionsToCrossChanges += 1
                }
                context.emit(.notice("your notice is deleted here; it had crossed to other meshes, and its deletion follows it there when a bridge is near"))
            }
            return
        }
        guard let e = MeshBridge.board(b, cell: target.cell, key: target.key, now: Int64(context.wall / 1_000)) else {
            return context.emit(.notice("your board notice stays on this mesh only: it could not be made a bridge event"))
        }
        send(e, to: target, what: "your board notice", context: &context)
    }

    /// Publishes `e` (our bridge) or hands it to the bridge peer; said in words when it cannot cross.
    private mutating func send(_ e: NostrEvent, to target: (peer: PeerID?, cell: String, key: Secp256k1.PrivateKey), what: String,
                               context: inout NodeContext) {
        // Said, not dropped in silence: what the radio carried but could not cross.
        func notCrossed(_ why: String) { context.emit(.notice("\(what) went out on this mesh only: \(why)")) }
        // The other bridges take events of at most 16 KiB of JSON (the carrier's bound), whichever way they come.
        guard let carrier = try? NostrCarrier(direction: .toBridge, geohash: target.cell, eventJSON: Array(e.json.utf8)) else {
            return notCrossed("as a bridge event it is over 16 KiB (long lines of quotes or control characters grow when escaped)")
        }
        guard let peer = target.peer else {
            let upload = GatewayCore.Upload(event: e, geohash: target.cell, depositor: context.peerID)
            core.published(e)
            if relaysUp {
                context.output(.publishNostr(upload))
            } else if !core.queueOwn(upload) {
                notCrossed("no relay is up and our bridge's queue holds 5 of ours already")
            }
            return
        }
        var packet = Packet(type: .nostrCarrier, ttl: 7, timestamp: context.wall, senderID: context.peerID, recipientID: peer, payload: carrier.encoded())
        do { try PacketSigning.sign(&packet, with: context.identity.signingKey) } catch { return notCrossed("it could not be signed (\(error))") }
        core.published(e)
        context.originate(packet)
    }

    // MARK: What comes

    /// An event our bridge's subscription brought from the relays: shown when
    /// it is one to show, and carried into the mesh after a short hold-off
    /// (`jitter`: 200 ms and a random part, from the node's generator).
    mutating func fromRelay(_ event: NostrEvent, jitter: UInt64, context: inout NodeContext) {
        guard core.cell != nil else { return }
        // Two bridges of one mesh both got it from the relays: the one with the lowest peer ID goes first,
        // the others wait longer for its carrier (and yield), so that the mesh carries it once.
        let me = context.peerID
        let ahead = context.present.entries.filter {
            $0.key != me && $0.key.rawValue < me.rawValue && $0.value.info.capabilities?.contains(.bridge) == true
        }.count
        // (Board entries need not wait: a board takes a post once, whoever brings it.)
        let extra = event.kind == MeshBridge.boardKind ? 0 : UInt64(min(ahead, 3)) * settings.limits.holdOffPerBridgeAhead
        if let m = core.fromRelay(event, now: context.now, wall: context.wall, jitter: jitter + extra), !Self.fromBlocked(m, context) {
            context.emit(.bridgedMessage(m))
        }
    }

    /// A `toBridge` deposit, its packet's signature checked by the node against `signingKey`.
    mutating func deposit(_ carrier: NostrCarrier, from depositor: PeerID, signingKey: [UInt8], context: inout NodeContext) {
        switch core.deposit(carrier, from: depositor, signingKey: signingKey, relaysUp: relaysUp, now: context.now, wall: context.wall) {
        case let .publish(u): context.output(.publishNostr(u))
        case .queued: break
        case .refused: context.refuse(\.carriers)
        }
    }

    /// A `fromBridge` carrier: shown once when its author's signature holds, and offered to the neighbours that missed it.
    mutating func heard(_ carrier: NostrCarrier, in packet: Packet, hops: Int, context: inout NodeContext) {
        guard let m = core.heard(carrier, hops: hops, now: context.now, wall: context.wall) else { return }
        offerForSync(packet, context: &context)
        if !Self.fromBlocked(m, context) { context.emit(.bridgedMessage(m)) }
    }

    /// A bridged line whose `m` tag names a peer we blocked is not shown (its
    /// radio copy never was). The tag is not authenticated: naming a blocked
    /// peer can only hide a line, never show one.
    private static func fromBlocked(_ m: BridgedMessage, _ context: NodeContext) -> Bool {
        guard let sender = m.meshSender else { return false }
        return context.blocked.contains { $0.peerID.description == sender }
    }

    /// A `fromBridge` carrier goes into the sync round of carriers (Starling's
    /// type bit 40): flooding alone left ~5% of a 100-node mesh at 5% loss
    /// without it, where public messages are repaired. As it came (a copy
    /// from a sync answer too, made TTL 0 and RSR again when sent on).
    private mutating func offerForSync(_ packet: Packet, context: inout NodeContext) {
        var p = packet
        p.isRSR = false
        let w = context.wall
        carriersForSync.removeAll { $0.timestamp + Self.carrierLifetime < w }
        guard !carriersForSync.contains(where: { PacketID($0) == PacketID(p) }) else { return }
        if carriersForSync.count >= Self.carriersKept { carriersForSync.removeFirst() }
        carriersForSync.append(p)
        context.provide(.nostrCarrier, packets: carriersForSync)
    }

    // MARK: Memory

    /// Takes back what our bridge (or our crossing) remembered before a restart:
    /// of the deletions waiting, only our own tombstones, the last as many as wait while the node runs.
    mutating func remember(_ m: BridgeCore.Memory, signingKey: [UInt8]) {
        core.remember(m)
        for hex in m.deletionsToCross.suffix(Self.tombstonesWaiting) {
            guard let bytes = try? [UInt8](hex: hex), let b = try? BoardPacket(decoding: bytes[...]), case .tombstone = b,
                  b.authorKey == signingKey, !tombstonesToCross.contains(b) else { continue }
            tombstonesToCross.append(b)
        }
    }
}
