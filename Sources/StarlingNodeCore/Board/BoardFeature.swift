import StarlingCrypto
import StarlingMesh
import StarlingWire

/// The mesh board as a part of the node (docs/PROTOCOL.md, "Board (0x23)"):
/// the ``BoardStore`` of signed posts and tombstones, the screening of each
/// board packet before it is relayed, what sync offers of them (type bit 8),
/// and our own posts. Who wrote a post as far as we can tell, and what crosses
/// a bridge, are the node's to say: it composes the board with the peers it
/// knows and the bridge.
struct BoardFeature: NodeFeature {
    private(set) var store: BoardStore
    /// Grows with every change to what the board holds (the runtime saves it then).
    private(set) var version = 0
    /// The packet just taken by ``takes(_:context:)``: shown when the router delivers it.
    private var taken: PacketID?
    private var providedAt: Millis?

    init(configuration: BoardStore.Configuration) {
        store = BoardStore(configuration: configuration)
    }

    var tableSizes: [String: Int] { ["node.boardPosts": store.postCount, "node.boardTombstones": store.tombstoneCount] }

    /// Whether the board takes a post or tombstone (new or a duplicate): what
    /// it refuses is not relayed. A new one is shown when the router delivers it.
    mutating func takes(_ packet: Packet, context: inout NodeContext) -> Bool {
        guard let decoded = try? BoardPacket(decoding: packet.payload[...]), BoardSigning.isValid(decoded) else {
            context.refuse(\.board)
            return false
        }
        switch store.ingest(packet, decoded, now: context.wall) {
        case .accepted:
            version += 1
            taken = PacketID(packet)
            provide(&context)
            return true
        case .duplicate:
            return true
        case .rejected:
            context.refuse(\.board)
            return false
        }
    }

    /// A packet the router delivered: the post or tombstone to show, when it
    /// is new (one reassembled from fragments is screened whole now).
    mutating func delivered(_ packet: Packet, context: inout NodeContext) -> BoardPacket? {
        if taken != PacketID(packet) { guard takes(packet, context: &context), taken == PacketID(packet) else { return nil } }
        taken = nil
        return try? BoardPacket(decoding: packet.payload[...])
    }

    /// Signs and sends one of ours (a post, or a tombstone for one), kept on our board first.
    mutating func originate(_ b: BoardPacket, context: inout NodeContext) throws {
        var packet = Packet(type: .boardPost, ttl: 7, timestamp: context.wall, senderID: context.peerID, payload: b.encoded())
        try PacketSigning.sign(&packet, with: context.identity.signingKey)
        guard case .accepted = store.ingest(packet, b, now: context.wall) else { throw NodeCore.BoardError.refused }
        version += 1
        provide(&context)
        context.originate(packet)
    }

    /// Takes an entry our bridge brought from the relays, in a packet of ours:
    /// whether it is new (one held already, expired or refused costs nothing).
    mutating func take(_ packet: Packet, _ b: BoardPacket, context: inout NodeContext) -> Bool {
        guard case .accepted = store.ingest(packet, b, now: context.wall) else { return false }
        version += 1
        provide(&context)
        return true
    }

    /// Takes back a board kept on disk: each packet checked again as if it came
    /// (decoded, its signature, not expired, not deleted); none is shown or
    /// relayed. Returns how many were taken.
    mutating func restore(_ packets: [Packet], context: inout NodeContext) -> Int {
        var count = 0
        // Tombstones first would refuse their posts; posts first, as they came.
        for packet in packets.sorted(by: { $0.timestamp < $1.timestamp }) where packet.type == .boardPost {
            guard let decoded = try? BoardPacket(decoding: packet.payload[...]), BoardSigning.isValid(decoded) else { continue }
            if case .accepted = store.ingest(packet, decoded, now: context.wall) { count += 1 }
        }
        provide(&context)
        return count
    }

    /// Expired posts leave the board, and the sync round, within a minute.
    mutating func chores(_ context: inout NodeContext) {
        if context.now >= (providedAt ?? 0) + 60_000 { provide(&context) }
    }

    /// Prunes what expired and hands the board's live packets to sync.
    private mutating func provide(_ context: inout NodeContext) {
        let held = store.postCount + store.tombstoneCount
        store.prune(now: context.wall)
        if store.postCount + store.tombstoneCount != held { version += 1 }
        context.provide(.boardPost, packets: store.syncPackets(now: context.wall))
        providedAt = context.now
    }
}
