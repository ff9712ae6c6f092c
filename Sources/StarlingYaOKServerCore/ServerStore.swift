import StarlingWire

/// Where a relay server keeps its users' pinned keys and its queues: SQLite
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
    /// The one write of MSGs and ACKs, in one transaction (a group commit:
    /// one sync of the disk; either all of it happens or none): the batch is
    /// stored in order — a message already held (same recipient and ID) from
    /// the same sender, with the same bytes, counts as stored, once; with
    /// other bytes it is `.messageIDReused`; from another sender it is
    /// `.messageIDTaken` — and the ACKs remove their messages, each from its
    /// recipient's queue only; what each ACK found.
    func commit(_ batch: [QueuedMessage], limits: QueueLimits,
                removing acks: [(user: UserID, messageID: UserID)]) async throws
        -> (stored: [EnqueueOutcome], removed: [QueuedMessage?])
    /// The oldest `limit` messages for `user`.
    func fetch(_ user: UserID, limit: Int) async throws -> [QueuedMessage]
    /// Drops messages received before `cutoff`; how many.
    func expire(before cutoff: UInt64) async throws -> Int
    /// Registered users and queued messages.
    func counts() async throws -> (users: Int, queued: Int)
}

extension ServerStore {
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
    public func commit(_ batch: [QueuedMessage], limits: QueueLimits,
                       removing acks: [(user: UserID, messageID: UserID)])
        -> (stored: [EnqueueOutcome], removed: [QueuedMessage?]) {
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
        return (stored, removed)
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
