import Foundation
import GRDB
import StarlingWire
import StarlingYaOKRelay

/// The relay's queues and pinned keys in SQLite (GRDB): WAL, and
/// `synchronous = FULL`, so that a committed batch survives a power cut as
/// well as a SIGKILL. A batch is one transaction (the server's group commit).
///
/// The file holds sealed messages (end-to-end encrypted) and user IDs; see
/// docs/YAOK.md for what a relay can see.
public final class SQLiteRelayStore: RelayStore, @unchecked Sendable {
    private let db: DatabaseQueue
    public let maxUsers: Int
    /// The queue's length, kept beside it (touched only inside `db.write`,
    /// which runs one at a time): COUNT(*) over 100,000 rows a batch would
    /// cost more than the batch. One server a file.
    private var total: Int?
    /// Each recipient's queue length as far as it is known (the same rules:
    /// touched only inside `db.write`), so that a batch does not count a deep
    /// queue again; forgotten whole past 65,536 recipients and on expiry.
    private var queued: [UserID: Int] = [:]

    public init(path: String, maxUsers: Int = 1_000_000) throws {
        var config = Configuration()
        config.journalMode = .wal
        db = try DatabaseQueue(path: path, configuration: config)
        self.maxUsers = maxUsers
        // GRDB sets NORMAL with WAL; a QUEUED answer promises durability: FULL.
        try db.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1 relay") { db in
            try db.execute(sql: """
                CREATE TABLE users (user_id BLOB PRIMARY KEY, key BLOB NOT NULL, last_register INTEGER NOT NULL);
                CREATE TABLE queue (seq INTEGER PRIMARY KEY AUTOINCREMENT, recipient BLOB NOT NULL, message_id BLOB NOT NULL,
                                    sender BLOB NOT NULL, payload BLOB NOT NULL, received_at INTEGER NOT NULL,
                                    UNIQUE (recipient, message_id));
                CREATE INDEX queue_by_recipient ON queue (recipient, seq);
                CREATE INDEX queue_by_age ON queue (received_at);
                CREATE INDEX users_by_age ON users (last_register);
                """)
        }
        try migrator.migrate(db)
    }

    /// `synchronous` as SQLite reports it (2: FULL), for the tests.
    public func synchronousMode() throws -> Int {
        try db.read { try Int.fetchOne($0, sql: "PRAGMA synchronous") ?? -1 }
    }

    public func pinned(_ user: UserID) async throws -> (key: [UInt8], lastTimestamp: UInt64)? {
        try await db.read { db in
            try Row.fetchOne(db, sql: "SELECT key, last_register FROM users WHERE user_id = ?", arguments: [Data(user.bytes)])
                .map { row in ([UInt8](row["key"] as Data), UInt64(row["last_register"] as Int64)) }
        }
    }

    public func register(_ user: UserID, key: [UInt8], timestamp: UInt64) async throws -> RelayRegisterOutcome {
        let maxUsers = self.maxUsers
        return try await db.write { db in
            let id = Data(user.bytes)
            if let row = try Row.fetchOne(db, sql: "SELECT key, last_register FROM users WHERE user_id = ?", arguments: [id]) {
                guard (row["key"] as Data) == Data(key), (row["last_register"] as Int64) < Int64(timestamp) else { return .conflict }
                try db.execute(sql: "UPDATE users SET last_register = ? WHERE user_id = ?", arguments: [Int64(timestamp), id])
                return .registered
            }
            guard try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM users") ?? 0 < maxUsers else { return .full }
            try db.execute(sql: "INSERT INTO users (user_id, key, last_register) VALUES (?, ?, ?)",
                           arguments: [id, Data(key), Int64(timestamp)])
            return .registered
        }
    }

    public func enqueue(_ batch: [RelayQueuedMessage], limits: RelayQueueLimits) async throws -> [RelayEnqueueOutcome] {
        try await db.write { db in
            var total = try self.total ?? Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM queue")) ?? 0
            var perUser: [UserID: Int] = [:]
            var known: [UserID: Bool] = [:]
            if self.queued.count > 65_536 { self.queued = [:] }
            // Prepared once (cached across batches): a batch costs one statement a message.
            let insert = try db.cachedStatement(sql: """
                INSERT INTO queue (recipient, message_id, sender, payload, received_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (recipient, message_id) DO NOTHING
                """)
            let isUser = try db.cachedStatement(sql: "SELECT 1 FROM users WHERE user_id = ?")
            let countFor = try db.cachedStatement(sql: "SELECT COUNT(*) FROM queue WHERE recipient = ?")
            let held = try db.cachedStatement(sql: "SELECT 1 FROM queue WHERE recipient = ? AND message_id = ?")
            let outcomes: [RelayEnqueueOutcome] = try batch.map { m in
                let recipient = Data(m.recipient.bytes)
                if known[m.recipient] == nil {
                    known[m.recipient] = try Bool.fetchOne(isUser, arguments: [recipient]) ?? false
                }
                guard known[m.recipient]! else { return .unknownRecipient }
                if perUser[m.recipient] == nil {
                    perUser[m.recipient] = try self.queued[m.recipient] ?? Int.fetchOne(countFor, arguments: [recipient]) ?? 0
                }
                guard perUser[m.recipient]! < limits.perUser, total < limits.total else {
                    // Full, unless this is a retry of one held already (then it is QUEUED again).
                    if try Bool.fetchOne(held, arguments: [recipient, Data(m.messageID.bytes)]) ?? false { return .stored }
                    return perUser[m.recipient]! >= limits.perUser ? .recipientQueueFull : .serverFull
                }
                try insert.execute(arguments: [recipient, Data(m.messageID.bytes), Data(m.sender.bytes), Data(m.payload),
                                               Int64(m.receivedAt)])
                if db.changesCount > 0 { // else a retry, held already: QUEUED again, stored once
                    perUser[m.recipient]! += 1
                    total += 1
                }
                return .stored
            }
            let counted = perUser, newTotal = total
            self.afterCommit(db) { store in
                store.total = newTotal
                store.queued.merge(counted) { _, new in new }
            }
            return outcomes
        }
    }

    /// Updates the counts kept beside the queue once the transaction has
    /// committed; a rollback (a failed commit) forgets them, to be counted again.
    private func afterCommit(_ db: Database, _ update: @escaping @Sendable (SQLiteRelayStore) -> Void) {
        db.afterNextTransaction(onCommit: { _ in update(self) }, onRollback: { _ in
            self.total = nil
            self.queued = [:]
        })
    }

    public func fetch(_ user: UserID, limit: Int) async throws -> [RelayQueuedMessage] {
        try await db.read { db in
            try Row.fetchAll(db, sql: """
                SELECT message_id, sender, payload, received_at FROM queue WHERE recipient = ? ORDER BY seq LIMIT ?
                """, arguments: [Data(user.bytes), limit]).map { row in
                RelayQueuedMessage(messageID: UserID(bytes: row["message_id"] as Data)!, sender: UserID(bytes: row["sender"] as Data)!,
                                   recipient: user, payload: [UInt8](row["payload"] as Data),
                                   receivedAt: UInt64(row["received_at"] as Int64))
            }
        }
    }

    public func remove(_ user: UserID, messageID: UserID) async throws -> RelayQueuedMessage? {
        try await db.write { db in
            let args: StatementArguments = [Data(user.bytes), Data(messageID.bytes)]
            guard let row = try Row.fetchOne(db, sql: """
                SELECT sender, payload, received_at FROM queue WHERE recipient = ? AND message_id = ?
                """, arguments: args) else { return nil }
            try db.execute(sql: "DELETE FROM queue WHERE recipient = ? AND message_id = ?", arguments: args)
            let n = db.changesCount
            self.afterCommit(db) { store in
                if let t = store.total { store.total = max(0, t - n) }
                if let q = store.queued[user] { store.queued[user] = max(0, q - n) }
            }
            return RelayQueuedMessage(messageID: messageID, sender: UserID(bytes: row["sender"] as Data)!, recipient: user,
                                      payload: [UInt8](row["payload"] as Data), receivedAt: UInt64(row["received_at"] as Int64))
        }
    }

    public func expire(before cutoff: UInt64) async throws -> Int {
        try await db.write { db in
            try db.execute(sql: "DELETE FROM queue WHERE received_at < ?", arguments: [Int64(cutoff)])
            let n = db.changesCount
            self.afterCommit(db) { store in
                if let t = store.total { store.total = max(0, t - n) }
                if n > 0 { store.queued = [:] }
            }
            return n
        }
    }

    public func counts() async throws -> (users: Int, queued: Int) {
        try await db.read { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM users") ?? 0, try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM queue") ?? 0)
        }
    }
}
