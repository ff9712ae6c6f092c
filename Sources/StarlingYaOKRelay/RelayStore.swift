import StarlingWire

/// Where a relay server keeps its users' pinned keys and its queues: SQLite
/// (`SQLiteRelayStore`, the default), PostgreSQL (several servers, one
/// population), or memory (tests). Every call is durable when it returns.
public protocol RelayStore: Sendable {
    /// The key pinned to a user ID, and the last REGISTER timestamp accepted.
    func pinned(_ user: UserID) async throws -> (key: [UInt8], lastTimestamp: UInt64)?
    /// Pins `key` to `user` (first registration) or renews the timestamp, in
    /// one step: `.conflict` when another key is pinned or a timestamp as new
    /// was accepted meanwhile (two servers on one database), `.full` when the
    /// store holds `maxUsers` users (a pin is never dropped to make room: it
    /// would let anyone take that user ID).
    func register(_ user: UserID, key: [UInt8], timestamp: UInt64) async throws -> RelayRegisterOutcome
    /// Stores a batch in one transaction (a group commit), in order; a message
    /// already held (same recipient and ID) from the same sender counts as
    /// stored, once; from another sender it is `.messageIDTaken`.
    func enqueue(_ batch: [RelayQueuedMessage], limits: RelayQueueLimits) async throws -> [RelayEnqueueOutcome]
    /// The oldest `limit` messages for `user`.
    func fetch(_ user: UserID, limit: Int) async throws -> [RelayQueuedMessage]
    /// Removes a message from `user`'s queue (only theirs); the message, if it was there.
    func remove(_ user: UserID, messageID: UserID) async throws -> RelayQueuedMessage?
    /// Removes several (ACKs that arrived together), in order, in one
    /// transaction where the store has them; what each found.
    func remove(_ acks: [(user: UserID, messageID: UserID)]) async throws -> [RelayQueuedMessage?]
    /// A group commit of both kinds of write that arrived together: the
    /// batch stored (as ``enqueue(_:limits:)``) and the ACKs removed (as
    /// ``remove(_:)``), in one transaction where the store can (one sync of
    /// the disk, not two: then either both happen or neither does).
    func commit(_ batch: [RelayQueuedMessage], limits: RelayQueueLimits,
                removing acks: [(user: UserID, messageID: UserID)]) async throws
        -> (stored: [RelayEnqueueOutcome], removed: [RelayQueuedMessage?])
    /// Drops messages received before `cutoff`; how many.
    func expire(before cutoff: UInt64) async throws -> Int
    /// Registered users and queued messages.
    func counts() async throws -> (users: Int, queued: Int)
}

extension RelayStore {
    /// One at a time, for stores without a batched removal.
    public func remove(_ acks: [(user: UserID, messageID: UserID)]) async throws -> [RelayQueuedMessage?] {
        var found: [RelayQueuedMessage?] = []
        for ack in acks { found.append(try await remove(ack.user, messageID: ack.messageID)) }
        return found
    }

    /// The batch, then the ACKs, in two transactions, for stores without one
    /// for both (a failure of the second leaves the first done: the ACKs'
    /// messages stay queued and come again, which a recipient takes once).
    public func commit(_ batch: [RelayQueuedMessage], limits: RelayQueueLimits,
                       removing acks: [(user: UserID, messageID: UserID)]) async throws
        -> (stored: [RelayEnqueueOutcome], removed: [RelayQueuedMessage?]) {
        let stored = batch.isEmpty ? [] : try await enqueue(batch, limits: limits)
        return (stored, acks.isEmpty ? [] : try await remove(acks))
    }
}

public enum RelayRegisterOutcome: Hashable, Sendable {
    case registered
    case full
    case conflict
}

/// A store in memory, for tests and as the reference for the others' rules.
public actor InMemoryRelayStore: RelayStore {
    private var keys: [UserID: (key: [UInt8], lastTimestamp: UInt64)] = [:]
    private var queues: [UserID: [RelayQueuedMessage]] = [:]
    private var total = 0
    public let maxUsers: Int

    public init(maxUsers: Int = 1_000_000) { self.maxUsers = maxUsers }

    public func pinned(_ user: UserID) -> (key: [UInt8], lastTimestamp: UInt64)? { keys[user] }

    public func register(_ user: UserID, key: [UInt8], timestamp: UInt64) -> RelayRegisterOutcome {
        if let pinned = keys[user] {
            guard pinned.key == key, pinned.lastTimestamp < timestamp else { return .conflict }
        } else if keys.count >= maxUsers {
            return .full
        }
        keys[user] = (key, timestamp)
        return .registered
    }

    public func enqueue(_ batch: [RelayQueuedMessage], limits: RelayQueueLimits) -> [RelayEnqueueOutcome] {
        batch.map { m in
            guard keys[m.recipient] != nil else { return .unknownRecipient }
            let queue = queues[m.recipient] ?? []
            if let held = queue.first(where: { $0.messageID == m.messageID }) { return held.sender == m.sender ? .stored : .messageIDTaken }
            guard queue.count < limits.perUser else { return .recipientQueueFull }
            guard total < limits.total else { return .serverFull }
            queues[m.recipient, default: []].append(m)
            total += 1
            return .stored
        }
    }

    public func fetch(_ user: UserID, limit: Int) -> [RelayQueuedMessage] { Array((queues[user] ?? []).prefix(limit)) }

    public func remove(_ user: UserID, messageID: UserID) -> RelayQueuedMessage? {
        guard let i = queues[user]?.firstIndex(where: { $0.messageID == messageID }) else { return nil }
        total -= 1
        return queues[user]!.remove(at: i)
    }

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
