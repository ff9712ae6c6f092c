import StarlingCrypto
import StarlingMesh
import StarlingWire

/// The board's commands and queries on the node (``BoardFeature`` holds its state).
extension NodeCore {
    public enum BoardError: Error, Hashable, Sendable, CustomStringConvertible {
        case off, empty, tooLong(Int), badGeohash(String), notOurs, refused
        public var description: String {
            switch self {
            case .off: "this node keeps no board"
            case .empty: "a board post needs some text"
            case let .tooLong(n): "a board post is at most 512 bytes of text (this is \(n))"
            case let .badGeohash(g): "\(g) is not a geohash (at most 12 of 0-9 b-z without a i l o)"
            case .notOurs: "no post of ours has that ID"
            case .refused: "the board refused the post (check the clock)"
            }
        }
    }

    /// What the board holds (nil: this node keeps none).
    public var board: BoardStore? { boardFeature?.store }

    /// Grows with every change to the board (the runtime saves it then).
    public var boardVersion: Int { boardFeature?.version ?? 0 }

    /// Posts `content` on the board of `geohash` ("": the mesh's own), signed
    /// with our signing key, living `lifetime` ms (at most 7 days); the post.
    @discardableResult
    public mutating func postToBoard(_ content: String, geohash: String = "", urgent: Bool = false,
                                     lifetime: UInt64 = 86_400_000, postID: [UInt8]? = nil, now: Millis) throws -> BoardPost {
        guard boardFeature != nil else { throw BoardError.off }
        let text = content.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw BoardError.empty }
        guard text.utf8.count <= BoardPacket.maxContentBytes else { throw BoardError.tooLong(text.utf8.count) }
        guard geohash.utf8.count <= BoardPacket.maxGeohashLength, geohash.allSatisfy({ "0123456789bcdefghjkmnpqrstuvwxyz".contains($0) }) else {
            throw BoardError.badGeohash(geohash)
        }
        var name = nickname
        while name.utf8.count > BoardPacket.maxNicknameBytes { name.removeLast() }
        let created = wall(now)
        let id = postID ?? randomBytes(BoardPacket.postIDLength)
        // Bit 1 says, under our signature, that we let it cross to other meshes (our bridge, or --cross-bridges).
        let crosses = configuration.bridgeSeed != nil && (bridge.cell != nil || configuration.crossesBridges)
        var post = BoardPost(postID: id, geohash: geohash, content: text, authorKey: [], nickname: name, createdAt: created,
                             expiresAt: created + min(max(lifetime, 1), BoardPacket.maxLifetime),
                             flags: (urgent ? 0x01 : 0x00) | (crosses ? BoardPacket.mayCrossFlag : 0))
        try BoardSigning.sign(&post, with: identity.signingKey)
        try using(\.boardFeature, now: now) { board, context in try board.originate(.post(post), context: &context) }
        crossBoard(.post(post), now: now)
        return post
    }

    /// Deletes one of our posts: a signed tombstone goes out, and the post leaves our board.
    public mutating func deleteBoardPost(_ postID: [UInt8], now: Millis) throws {
        guard let held = boardFeature?.store else { throw BoardError.off }
        var t = BoardTombstone(postID: postID, authorKey: [], deletedAt: wall(now))
        try BoardSigning.sign(&t, with: identity.signingKey)
        guard held.post(postID, by: t.authorKey) != nil else { throw BoardError.notOurs }
        try using(\.boardFeature, now: now) { board, context in try board.originate(.tombstone(t), context: &context) }
        crossBoard(.tombstone(t), now: now)
    }

    /// The live posts, urgent first, then the newest first, with who wrote them.
    public func boardPosts(now: Millis) -> [BoardEntry] {
        (board?.currentPosts(now: wall(now)) ?? []).filter { !isBlockedAuthor($0.authorKey) }.map(boardEntry)
    }

    /// Whether a board author's signing key is a blocked peer's: pinned to a
    /// blocked Noise key, or in the verified announce of a blocked peer present.
    /// Their posts stay on the board (it is the mesh's) and are not shown here,
    /// whoever carried them (a bridge puts crossed posts on under its own ID).
    public func isBlockedAuthor(_ signingKey: [UInt8]) -> Bool {
        let blocked = trust.blocked
        guard !blocked.isEmpty else { return false }
        if blocked.contains(where: { pins[$0] == signingKey }) { return true }
        return present.entries.values.contains { $0.info.signingKey == signingKey && blocked.contains($0.info.fingerprint) }
    }

    /// A post with its author as far as we can tell: ours, or a peer present
    /// whose verified announce carries the post's key (``BoardEntry``).
    public func boardEntry(_ post: BoardPost) -> BoardEntry {
        if post.authorKey == identity.signingPublicKey { return BoardEntry(post: post, author: configuration.nickname, ours: true) }
        let author = present.entries.values.filter { $0.info.signingKey == post.authorKey }.map(\.info.nickname).min()
        // Across a bridge: our bridge took it from the relays, or a bridge here put it on the board (its packet is not its author's).
        return BoardEntry(post: post, author: author, ours: false, crossed: bridge.crossedIn(post) || board?.cameAcross(post) == true)
    }

    /// What the board holds, as the packets that carried it (to keep on disk).
    public func boardPackets(now: Millis) -> [Packet] { board?.syncPackets(now: wall(now)) ?? [] }

    /// Takes back a board kept on disk: each packet checked again as if it came
    /// (decoded, its signature, not expired, not deleted); none is shown or
    /// relayed. Returns how many were taken.
    @discardableResult
    public mutating func restoreBoard(_ packets: [Packet], now: Millis) -> Int {
        using(\.boardFeature, now: now) { board, context in board.restore(packets, context: &context) } ?? 0
    }

    /// A board packet the router delivered: a new post or tombstone is shown.
    mutating func showBoard(_ packet: Packet, hops: Int, now: Millis) {
        switch using(\.boardFeature, now: now, { board, context in board.delivered(packet, context: &context) }) ?? nil {
        case let .post(post)?: if !isBlockedAuthor(post.authorKey) { emit(.boardPost(boardEntry(post), from: packet.senderID, hops: hops)) }
        case let .tombstone(t)?: emit(.boardPostDeleted(postID: t.postID, authorKey: t.authorKey))
        case nil: break
        }
    }
}
