import StarlingCrypto
import StarlingMesh
import StarlingNostr
import StarlingWire

/// Mesh bridges on the node (``BridgeFeature`` holds their state); the board
/// entries our bridge brings are taken here, where the board and the bridge meet.
extension NodeCore {
    /// The bridge's tables (any node's too: what it heard from bridges, and the radio messages it heard).
    var bridge: BridgeCore { bridgeFeature?.core ?? BridgeCore(cell: nil, key: nil) }

    /// `fromBridge` carriers our bridge sent into the mesh, in all.
    public var bridgeDownlinked: Int { bridge.downlinked }

    /// What our bridge remembers across a restart (nil: no bridge here), and a
    /// counter that moves when it changes (to know when to write it).
    /// A node whose lines cross (``Configuration/crossesBridges``) keeps it too:
    /// what of its own crossed (its board notices) and the deletions waiting for a bridge.
    /// (A node that only crosses keeps what of its own crossed and the deletions waiting:
    /// not the sets a bridge keeps, which every public message heard would move.)
    public var bridgeMemory: BridgeCore.Memory? {
        guard bridge.cell != nil || configuration.crossesBridges else { return nil }
        var m = bridge.cell != nil ? bridge.memory() : bridge.crossingMemory()
        m.deletionsToCross = (bridgeFeature?.tombstonesToCross ?? []).map { $0.encoded().hexString }
        return m
    }
    public var bridgeMemoryChanges: Int { (bridge.cell != nil ? bridge.memoryChanges : bridge.boardOutChanges) + deletionsToCrossChanges }
    /// Moves when the deletions waiting to cross change: the node writes the memory at once then
    /// (a deletion a person made is not left to the next 30 s).
    public var deletionsToCrossChanges: Int { bridgeFeature?.deletionsToCrossChanges ?? 0 }

    /// Takes back what our bridge (or our crossing) remembered before a restart.
    public mutating func restoreBridgeMemory(_ m: BridgeCore.Memory) {
        guard bridge.cell != nil || configuration.crossesBridges else { return }
        let key = identity.signingPublicKey
        bridgeFeature?.remember(m, signingKey: key)
    }

    /// An event our bridge's subscription brought from the relays: shown when
    /// it is one to show, and carried into the mesh after a short hold-off.
    public mutating func bridgeFromRelay(_ event: NostrEvent, now: Millis) {
        let jitter = 200 + rng.next() % 1_301
        using(\.bridgeFeature, now: now) { bridge, context in bridge.fromRelay(event, jitter: jitter, context: &context) }
    }

    /// Our public message crosses to other meshes, when it does (``BridgeFeature/cross(_:timestamp:context:)``).
    mutating func crossBridges(_ text: String, timestamp: UInt64, now: Millis) {
        using(\.bridgeFeature, now: now) { bridge, context in bridge.cross(text, timestamp: timestamp, context: &context) }
    }

    /// Our board post or tombstone crosses as our public messages do.
    mutating func crossBoard(_ b: BoardPacket, now: Millis) {
        using(\.bridgeFeature, now: now) { bridge, context in bridge.crossBoard(b, context: &context) }
    }

    /// The bridge's downlinks, presence and board entries that are due.
    mutating func bridgeDue(now: Millis) {
        guard bridge.cell != nil else { return }
        using(\.bridgeFeature, now: now) { bridge, context in bridge.tick(&context) }
        takeBridgedBoard(now: now)
    }

    /// Board entries from the relays, one at a time (each spaced), put on our
    /// board in packets of ours, counted only when the board takes them; posts
    /// from other meshes hold at most their share of it.
    private mutating func takeBridgedBoard(now: Millis) {
        var tried = 0
        while tried < 64, let b = bridgeFeature?.core.nextBoard(now: now) {
            tried += 1
            if case .post = b, let board,
               board.currentPosts(now: wall(now)).filter({ bridge.crossedIn($0) }).count >= configuration.bridgeLimits.crossedPostsOnBoard {
                refusals.board += 1
                continue
            }
            let w = wall(now)
            var packet = Packet(type: .boardPost, ttl: 7, timestamp: w, senderID: peerID, payload: b.encoded())
            do { try PacketSigning.sign(&packet, with: identity.signingKey) } catch {
                // Not expected with our own key; the entry waits a minute rather than being lost.
                bridgeFeature?.core.boardNotSent(b, now: now, retryAfter: 60_000)
                break
            }
            // One the board holds already (heard on the radio meanwhile), expired or refused costs nothing.
            guard using(\.boardFeature, now: now, { board, context in board.take(packet, b, context: &context) }) == true else { continue }
            let spacing = configuration.bridgeLimits.boardSpacing + rng.next() % 1_501
            bridgeFeature?.core.boardTaken(b, now: now, spacing: spacing)
            switch b {
            case let .post(post): if !isBlockedAuthor(post.authorKey) { emit(.boardPost(boardEntry(post), from: peerID, hops: 0)) }
            case let .tombstone(t): emit(.boardPostDeleted(postID: t.postID, authorKey: t.authorKey))
            }
            originate(packet, now: now)
        }
    }
}
