import StarlingCrypto
import StarlingWire

/// The mesh board a node keeps (docs/PROTOCOL.md, "Board (0x23)"): the signed
/// posts and tombstones it has heard, as the whole packets that carried them
/// (gossip sync hands those same packets on), bounded as iOS bounds them
/// (bitchat BoardStore.swift): 200 posts, 5 an author, the oldest made going
/// first; tombstones of posts we never saw ("orphans") 100, 5 an author, the
/// oldest heard going first, each for at most 7 days; and (beyond iOS)
/// tombstones in all 300, the oldest heard going first. Nothing lives past its
/// expiry. Plain value: wall-clock milliseconds in, outcomes out.
///
/// Posts and tombstones are told apart by (post ID, author key), as Android
/// keys them: iOS keys by the post ID alone, so a forged tombstone for a post
/// not yet seen there would make its author's real one a duplicate. Posts are
/// self-authenticating (each signed by the key it carries): callers pass only
/// packets whose signature holds.
/// A board post as a person is shown it: the post, and who wrote it as far
/// as this node can tell. A post is signed by the key it carries, but its
/// nickname is the author's own claim: anyone can post as "alice". Only a key
/// this node ties to a peer (a verified announce now, or our own) names them.
public struct BoardEntry: Hashable, Sendable {
    public var post: BoardPost
    /// The announced name of the peer whose verified announce carries the
    /// post's author key (ours: our own nickname); nil when no peer present
    /// has that key, and the post's nickname is only a claim.
    public var author: String?
    /// Written with our own key: ours to delete.
    public var ours: Bool
    /// It came from another mesh through our bridge (docs/PROTOCOL.md, "Board posts across bridges").
    public var crossed: Bool

    public init(post: BoardPost, author: String?, ours: Bool, crossed: Bool = false) {
        self.post = post
        self.author = author
        self.ours = ours
        self.crossed = crossed
    }

    /// The name to show: the peer's, or the post's own claim marked with "?"
    /// and the first 8 hex digits of its key ("alice? 03a107bf"), so that two
    /// strangers calling themselves alice are told apart from her and each other.
    public var shownName: String {
        if let author { return DisplayText.clean(author) }
        let claim = DisplayText.clean(post.nickname.isEmpty ? "anonymous" : post.nickname)
        return "\(claim)? \(post.authorKey.prefix(4).map { String(format: "%02x", $0) }.joined())"
    }
}

public struct BoardStore: Sendable {
    public struct Configuration: Hashable, Sendable {
        public var maxPosts = 200
        public var maxPostsPerAuthor = 5
        public var maxOrphanTombstones = 100
        public var maxOrphanTombstonesPerAuthor = 5
        /// Tombstones in all (iOS does not bound those of posts it held: an
        /// author that posts and deletes in turn would grow them for 7 days).
        public var maxTombstones = 300
        /// An orphan tombstone is kept this long after its deletion time, at most.
        public var orphanLifetime: UInt64 = 604_800_000
        /// How far ahead of our clock a post may be made (iOS: 1 hour).
        public var clockSkew: UInt64 = 3_600_000
        public init() {}
    }

    public enum Outcome: Hashable, Sendable {
        /// New: kept (or, past a bound, kept and at once evicted: still relayed, as iOS does).
        case accepted
        /// Already held (another packet with the same post, or the same packet).
        case duplicate
        /// Not kept and not to be relayed, for this reason (in words).
        case rejected(String)
    }

    /// A post or tombstone held, with the packet that carried it.
    public struct Entry: Hashable, Sendable {
        public var packet: Packet
        public var board: BoardPacket
        /// When it was taken (our wall clock): the orphans' eviction order.
        public var heardAt: UInt64
        /// A tombstone's end (posts end at their expiry).
        public var retainUntil: UInt64?
        /// A post whose packet its author did not sign: another node put it on
        /// this mesh's board, which only a mesh bridge does (it came across one).
        public var carriedByAnother = false
    }

    struct Key: Hashable, Sendable {
        var postID: [UInt8]
        var author: [UInt8]
    }

    public let configuration: Configuration
    private(set) var posts: [Key: Entry] = [:]
    private(set) var tombstones: [Key: Entry] = [:]
    /// The tombstones of posts never seen, in the order heard (the first goes first).
    private(set) var orphans: [Key] = []

    public init(configuration: Configuration = Configuration()) { self.configuration = configuration }

    public var postCount: Int { posts.count }
    public var tombstoneCount: Int { tombstones.count }
    public var orphanCount: Int { orphans.count }

    /// Takes a packet whose board payload decoded as `board` and whose
    /// signature holds; `now`: our wall clock, ms.
    public mutating func ingest(_ packet: Packet, _ board: BoardPacket, now: UInt64) -> Outcome {
        prune(now: now)
        let key = Key(postID: board.postID, author: board.authorKey)
        switch board {
        case let .post(post):
            if post.expiresAt <= now { return .rejected("it expired") }
            if post.createdAt > now + configuration.clockSkew { return .rejected("it is made more than an hour ahead of our clock") }
            if post.expiresAt > now + BoardPacket.maxLifetime + configuration.clockSkew {
                return .rejected("it lives past 7 days from now")
            }
            if tombstones[key] != nil { return .rejected("its author deleted it") }
            if let held = posts[key] {
                // Its author's own packet after a bridge's copy: the author is here, it did not only cross.
                if held.carriedByAnother, packet.signature != nil, PacketSigning.isValid(packet, publicKey: post.authorKey) {
                    posts[key]?.carriedByAnother = false
                }
                return .duplicate
            }
            // (Checked once, when kept: a signed packet whose signature is not the author's.)
            let carried = packet.signature != nil && !PacketSigning.isValid(packet, publicKey: post.authorKey)
            posts[key] = Entry(packet: packet, board: board, heardAt: now, carriedByAnother: carried)
            evict(author: post.authorKey)
            return .accepted
        case let .tombstone(t):
            if tombstones[key] != nil { return .duplicate }
            let retainUntil: UInt64
            let orphan: Bool
            if let known = posts[key], case let .post(p) = known.board {
                retainUntil = p.expiresAt // nothing to suppress once the post would have gone anyway
                orphan = false
            } else {
                let (sum, overflow) = t.deletedAt.addingReportingOverflow(configuration.orphanLifetime)
                retainUntil = min(overflow ? .max : sum, now + configuration.orphanLifetime + configuration.clockSkew)
                orphan = true
            }
            guard retainUntil > now else { return .rejected("the post it deletes is gone already") }
            posts[key] = nil
            tombstones[key] = Entry(packet: packet, board: board, heardAt: now, retainUntil: retainUntil)
            if orphan {
                orphans.append(key)
                while orphans.filter({ $0.author == key.author }).count > configuration.maxOrphanTombstonesPerAuthor,
                      let i = orphans.firstIndex(where: { $0.author == key.author }) {
                    tombstones[orphans.remove(at: i)] = nil
                }
                while orphans.count > configuration.maxOrphanTombstones { tombstones[orphans.removeFirst()] = nil }
            }
            while tombstones.count > configuration.maxTombstones,
                  let first = tombstones.min(by: { a, b in
                      a.value.heardAt != b.value.heardAt ? a.value.heardAt < b.value.heardAt : a.key.postID.lexicographicallyPrecedes(b.key.postID)
                  })?.key {
                tombstones[first] = nil
                orphans.removeAll { $0 == first }
            }
            return .accepted
        }
    }

    /// Past a bound, the posts made first go: the author's own first, then anyone's.
    private mutating func evict(author: [UInt8]) {
        func oldest(_ candidates: [Key: Entry]) -> Key? {
            candidates.min { a, b in
                let (x, y) = (Self.created(a.value), Self.created(b.value))
                if x != y { return x < y }
                if a.value.heardAt != b.value.heardAt { return a.value.heardAt < b.value.heardAt }
                return a.key.postID.lexicographicallyPrecedes(b.key.postID)
            }?.key
        }
        while posts.values.filter({ $0.board.authorKey == author }).count > configuration.maxPostsPerAuthor,
              let k = oldest(posts.filter { $0.value.board.authorKey == author }) {
            posts[k] = nil
        }
        while posts.count > configuration.maxPosts, let k = oldest(posts) { posts[k] = nil }
    }

    static func created(_ e: Entry) -> UInt64 {
        if case let .post(p) = e.board { return p.createdAt }
        return 0
    }

    /// Drops what has expired (posts at their expiry, tombstones at their end).
    public mutating func prune(now: UInt64) {
        posts = posts.filter { _, e in
            guard case let .post(p) = e.board else { return false }
            return p.expiresAt > now
        }
        let ended = tombstones.filter { ($0.value.retainUntil ?? 0) <= now }.keys
        guard !ended.isEmpty else { return }
        for k in ended { tombstones[k] = nil }
        let gone = Set(ended)
        orphans.removeAll { gone.contains($0) }
    }

    /// Whether the post held came in a packet its author did not sign (``Entry/carriedByAnother``).
    public func cameAcross(_ post: BoardPost) -> Bool {
        posts[Key(postID: post.postID, author: post.authorKey)]?.carriedByAnother == true
    }

    /// The live posts, urgent first, then the newest made first.
    public func currentPosts(now: UInt64) -> [BoardPost] {
        posts.values.compactMap { e -> BoardPost? in
            guard case let .post(p) = e.board, p.expiresAt > now else { return nil }
            return p
        }.sorted { a, b in
            if a.isUrgent != b.isUrgent { return a.isUrgent }
            if a.createdAt != b.createdAt { return a.createdAt > b.createdAt }
            return b.postID.lexicographicallyPrecedes(a.postID)
        }
    }

    /// What gossip sync offers and hands on: every live post and tombstone, as
    /// received, newest packet first.
    public func syncPackets(now: UInt64) -> [Packet] {
        (posts.values.filter { Self.created($0) > 0 && Self.expiry($0) > now }
            + tombstones.values.filter { ($0.retainUntil ?? 0) > now })
            .map(\.packet).sorted { a, b in
                a.timestamp != b.timestamp ? a.timestamp > b.timestamp : PacketID(a).high > PacketID(b).high
            }
    }

    static func expiry(_ e: Entry) -> UInt64 {
        if case let .post(p) = e.board { return p.expiresAt }
        return 0
    }

    /// The post `postID` by `author`, if held.
    public func post(_ postID: [UInt8], by author: [UInt8]) -> BoardPost? {
        guard case let .post(p)? = posts[Key(postID: postID, author: author)]?.board else { return nil }
        return p
    }

    /// Posts held by `author`, newest made first.
    public func posts(by author: [UInt8]) -> [BoardPost] {
        posts.values.compactMap { e -> BoardPost? in
            guard case let .post(p) = e.board, p.authorKey == author else { return nil }
            return p
        }.sorted { $0.createdAt > $1.createdAt }
    }
}
