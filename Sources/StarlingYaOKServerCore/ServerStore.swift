import StarlingWire

/// Where a Ya OK server keeps its users' pinned keys and its queues: SQLite
/// (`SQLiteServerStore`, the default), PostgreSQL (several servers, one
/// population), or memory (tests). Every call is durable when it returns.
public protocol ServerStore: Sendable {
    /// The key pinned to a user ID, and the last REGISTER timestamp accepted.
    func pinned(_ user: UserID) async throws -> (key: [UInt8], lastTimestamp: UInt64)?
    /// Pins `key` to `user` (first registration) or renews the timestamp, in
    /// one step: `.conflict` when another key is pinned or a timestamp as new
    /// was accepted meanwhile (two servers on one database), `.full` when the
    /// store holds `maxUsers` users (a pin is never dropped to make room: it
    /// would let anyone take that user ID).
    func register(_ user: UserID, key: [UInt8], timestamp: UInt64) async throws -> RegisterOutcome
    /// The one write: MSGs, ACKs and courier drops that arrived together, in
    /// one transaction (a group commit: one sync of the disk; either all of it
    /// happens or none). The MSGs are stored in order — a message already held
    /// (same recipient and ID) from the same sender, with the same bytes, counts
    /// as stored, once; with other bytes it is `.messageIDReused`; from another
    /// sender it is `.messageIDTaken` — the ACKs remove their messages, each
    /// from its recipient's queue only, and the drops are kept within their
    /// limits (``DropLimits``: a drop with a held drop's ID is held already; past
    /// the tag's share the tag's oldest goes). What each found.
    func commit(_ writes: StoreWrites) async throws -> StoreWritten
    /// Begins ``commit(_:)`` with its place among the commits fixed by the time
    /// this returns: a commit begun later takes effect after it (sees what it
    /// wrote, and its messages queue behind). A server keeps up to
    /// ``commitsUnderWay`` begun and not yet returned, so that the store need
    /// not wait for the server between them.
    func beginCommit(_ writes: StoreWrites) -> CommitUnderWay
    /// How many commits a server may have begun at once (1: each one waits
    /// for the last to return).
    var commitsUnderWay: Int { get }
    /// The oldest `limit` messages for `user`.
    func fetch(_ user: UserID, limit: Int) async throws -> [QueuedMessage]
    /// Drops messages received before `cutoff`; how many.
    func expire(before cutoff: UInt64) async throws -> Int
    /// Registered users and queued messages.
    func counts() async throws -> (users: Int, queued: Int)

    // The courier mailbox (docs/PROTOCOL.md "The courier mailbox"); drops are kept by ``commit(_:)``.
    /// Up to `limit` drops for these tags with a sequence number above
    /// `after`, not expired at `now`, in sequence order.
    func drops(for tags: [Bytes16], after: UInt64, notExpiredAt now: UInt64, limit: Int) async throws -> [StoredDrop]
    /// Drops those expired at `now`; how many.
    func expireDrops(at now: UInt64) async throws -> Int
    /// Drops held (expired ones not yet removed included).
    func dropCount() async throws -> Int
}

/// What one group commit writes (``ServerStore/commit(_:)``).
public struct StoreWrites: Sendable {
    public var messages: [QueuedMessage]
    public var limits: QueueLimits
    public var acks: [(user: UserID, messageID: UserID)]
    public var drops: [StoredDrop]
    public var dropLimits: DropLimits

    public init(messages: [QueuedMessage] = [], limits: QueueLimits = QueueLimits(), acks: [(user: UserID, messageID: UserID)] = [],
                drops: [StoredDrop] = [], dropLimits: DropLimits = DropLimits()) {
        self.messages = messages
        self.limits = limits
        self.acks = acks
        self.drops = drops
        self.dropLimits = dropLimits
    }

    public var isEmpty: Bool { messages.isEmpty && acks.isEmpty && drops.isEmpty }
}

/// What a group commit found: an outcome for each MSG and each drop, in
/// order, and the message each ACK removed (nil: not in that queue).
public struct StoreWritten: Sendable {
    public var stored: [EnqueueOutcome]
    public var removed: [QueuedMessage?]
    public var dropped: [DropOutcome]

    public init(stored: [EnqueueOutcome] = [], removed: [QueuedMessage?] = [], dropped: [DropOutcome] = []) {
        self.stored = stored
        self.removed = removed
        self.dropped = dropped
    }
}

/// A commit begun (``ServerStore/beginCommit(_:)``); `value` is what it found.
public struct CommitUnderWay: Sendable {
    private let task: Task<StoreWritten, any Error>
    public init(_ task: Task<StoreWritten, any Error>) { self.task = task }
    public var value: StoreWritten { get async throws { try await task.value } }
}

extension ServerStore {
    /// One at a time: the commit begun is the only one under way.
    public var commitsUnderWay: Int { 1 }
    public func beginCommit(_ writes: StoreWrites) -> CommitUnderWay { CommitUnderWay(Task { try await commit(writes) }) }

    /// MSGs and ACKs (``commit(_:)``).
    public func commit(_ batch: [QueuedMessage], limits: QueueLimits,
                       removing acks: [(user: UserID, messageID: UserID)]) async throws
        -> (stored: [EnqueueOutcome], removed: [QueuedMessage?]) {
        let written = try await commit(StoreWrites(messages: batch, limits: limits, acks: acks))
        return (written.stored, written.removed)
    }

    /// One drop (``commit(_:)``).
    public func putDrop(_ drop: StoredDrop, limits: DropLimits) async throws -> DropOutcome {
        try await commit(StoreWrites(drops: [drop], dropLimits: limits)).dropped[0]
    }

    /// A batch of MSGs alone (``commit(_:limits:removing:)``).
    public func enqueue(_ batch: [QueuedMessage], limits: QueueLimits) async throws -> [EnqueueOutcome] {
        try await commit(batch, limits: limits, removing: []).stored
    }

    /// ACKs alone (``commit(_:limits:removing:)``).
    public func remove(_ acks: [(user: UserID, messageID: UserID)]) async throws -> [QueuedMessage?] {
        try await commit([], limits: QueueLimits(), removing: acks).removed
    }

    /// One ACK: the message, if it was in `user`'s queue.
    public func remove(_ user: UserID, messageID: UserID) async throws -> QueuedMessage? {
        try await remove([(user, messageID)])[0]
    }
}

public enum RegisterOutcome: Hashable, Sendable {
    case registered
    case full
    case conflict
}

/// A store in memory, for tests and as the reference for the others' rules.
public actor InMemoryServerStore: ServerStore {
    private var keys: [UserID: (key: [UInt8], lastTimestamp: UInt64)] = [:]
    private var queues: [UserID: [QueuedMessage]] = [:]
    private var total = 0
    /// The courier mailbox, in sequence order.
    var drops: [StoredDrop] = []
    var dropSequence: UInt64 = 0
    public let maxUsers: Int

    public init(maxUsers: Int = 1_000_000) { self.maxUsers = maxUsers }

    public func pinned(_ user: UserID) -> (key: [UInt8], lastTimestamp: UInt64)? { keys[user] }

    public func register(_ user: UserID, key: [UInt8], timestamp: UInt64) -> RegisterOutcome {
        if let pinned = keys[user] {
            guard pinned.key == key, pinned.lastTimestamp < timestamp else { return .conflict }
        } else if keys.count >= maxUsers {
            return .full
        }
        keys[user] = (key, timestamp)
        return .registered
    }

    /// One actor turn: all of it or none.
    public func commit(_ writes: StoreWrites) -> StoreWritten {
        let (batch, limits, acks) = (writes.messages, writes.limits, writes.acks)
        let stored: [EnqueueOutcome] = batch.map { m in
            guard keys[m.recipient] != nil else { return .unknownRecipient }
            let queue = queues[m.recipient] ?? []
            if let held = queue.first(where: { $0.messageID == m.messageID }) {
                return held.sender != m.sender ? .messageIDTaken : held.payload == m.payload ? .stored : .messageIDReused
            }
            guard queue.count < limits.perUser else { return .recipientQueueFull }
            guard total < limits.total else { return .serverFull }
            queues[m.recipient, default: []].append(m)
            total += 1
            return .stored
        }
        let removed: [QueuedMessage?] = acks.map { user, messageID in
            guard let i = queues[user]?.firstIndex(where: { $0.messageID == messageID }) else { return nil }
            total -= 1
            return queues[user]!.remove(at: i)
        }
        return StoreWritten(stored: stored, removed: removed, dropped: writes.drops.map { keep($0, limits: writes.dropLimits) })
    }

    public func fetch(_ user: UserID, limit: Int) -> [QueuedMessage] { Array((queues[user] ?? []).prefix(limit)) }

    public func expire(before cutoff: UInt64) -> Int {
        var n = 0
        for (user, queue) in queues {
            let kept = queue.filter { $0.receivedAt >= cutoff }
            n += queue.count - kept.count
            queues[user] = kept
        }
        total -= n
        return n
    }

    public func counts() -> (users: Int, queued: Int) { (keys.count, total) }
}

// MARK: The courier mailbox

/// A courier drop the server keeps for its recipient tag until its expiry
/// (docs/PROTOCOL.md "The courier mailbox"). `sequence` is the store's
/// arrival number (0 in a drop not stored yet): DROP_FETCH's cursor.
public struct StoredDrop: Hashable, Sendable {
    public var sequence: UInt64
    /// The first 16 bytes of the SHA-256 of its tag and seal: the same twice is one drop.
    public var dropID: Bytes16
    public var tag: Bytes16
    /// The envelope as the server re-encoded it (copies 1).
    public var envelope: [UInt8]
    /// Its own expiry (Unix ms): gone after it.
    public var expiresAt: UInt64
    public var receivedAt: UInt64

    public init(sequence: UInt64 = 0, dropID: Bytes16, tag: Bytes16, envelope: [UInt8], expiresAt: UInt64, receivedAt: UInt64) {
        self.sequence = sequence
        self.dropID = dropID
        self.tag = tag
        self.envelope = envelope
        self.expiresAt = expiresAt
        self.receivedAt = receivedAt
    }
}

/// What the store did with a drop.
public enum DropOutcome: Hashable, Sendable {
    /// Committed; `new` false: it was held already (with the later of the two
    /// expiries: a copy expiring sooner cannot cut the real one short).
    case stored(new: Bool)
}

/// The mailbox's bounds: drops a recipient tag, and in all. Past either the
/// oldest goes for a new one (of the tag; of all, after the expired): anyone
/// who heard a peer's announce can compute its tags, so a flood must not shut
/// the real drops out for a day; it has to go on to push them out.
public struct DropLimits: Hashable, Sendable {
    public var perTag = 32
    public var total = 10_000
    public init() {}
}

extension InMemoryServerStore {
    func keep(_ drop: StoredDrop, limits: DropLimits) -> DropOutcome {
        if let i = drops.firstIndex(where: { $0.dropID == drop.dropID }) {
            if drop.expiresAt > drops[i].expiresAt { (drops[i].envelope, drops[i].expiresAt) = (drop.envelope, drop.expiresAt) }
            return .stored(new: false)
        }
        let ofTag = drops.indices.filter { drops[$0].tag == drop.tag }
        if ofTag.count >= limits.perTag { for i in ofTag.prefix(ofTag.count - limits.perTag + 1).reversed() { drops.remove(at: i) } }
        if drops.count >= limits.total {
            drops.removeAll { $0.expiresAt <= drop.receivedAt }
            if drops.count >= limits.total { drops.removeFirst(drops.count - limits.total + 1) }
        }
        dropSequence += 1
        var kept = drop
        kept.sequence = dropSequence
        drops.append(kept)
        return .stored(new: true)
    }

    public func drops(for tags: [Bytes16], after: UInt64, notExpiredAt now: UInt64, limit: Int) -> [StoredDrop] {
        let wanted = Set(tags)
        return Array(drops.lazy.filter { $0.sequence > after && wanted.contains($0.tag) && $0.expiresAt > now }.prefix(limit))
    }

    public func expireDrops(at now: UInt64) -> Int {
        let before = drops.count
        drops.removeAll { $0.expiresAt <= now }
        return before - drops.count
    }

    public func dropCount() -> Int { drops.count }
}
