import Foundation
import GRDB
import GRDBSQLite
import StarlingWire
import StarlingYaOKServerCore

/// The relay's queues and pinned keys in SQLite (GRDB): WAL, and
/// `synchronous = FULL`, so that a committed batch survives a power cut as
/// well as a SIGKILL. A batch is one transaction (the server's group commit).
///
/// The file holds sealed messages (end-to-end encrypted) and user IDs; see
/// docs/YAOK.md for what a relay can see.
public final class SQLiteServerStore: ServerStore, @unchecked Sendable {
    /// Internal, not private: the tests inject a failure through this same
    /// connection (a second one would contend for the file's locks).
    let db: DatabaseQueue
    public let maxUsers: Int
    // Kept beside the queue, touched only inside `db.write` (one at a time),
    // and forgotten whole when a transaction rolls back (counted again on the
    // next write). One server a file.
    /// The queue's length: COUNT(*) over 100,000 rows a batch would cost more than the batch.
    private var total: Int?
    /// Each recipient's queue length as far as it is known (forgotten whole
    /// past 65,536 recipients).
    private var queued: [UserID: Int] = [:]
    /// Every (recipient, message ID) queued, with its arrival number, loaded
    /// on first use: a sender's retry is found here, and an ACK's row by its
    /// primary key (recipient, arrival), not through an index. A UNIQUE index on random
    /// message IDs dirtied a page per message in each commit (4 MiB of WAL a
    /// 1,000-message commit, at 100,000 queued); this costs ~32 bytes a
    /// queued message in memory (a keyed hash of the pair: ``HeldSet``).
    private var held: HeldSet?
    /// The hash `held` is made with (tests: one that collides).
    private let heldHash: (@Sendable (HeldSet.Pair) -> UInt64)?
    /// The size `held` is made at: the total cap, as the last batch gave it.
    private var heldCapacity = 100_000
    /// The next arrival number (one more than any queued), loaded with `held`.
    private var nextSeq: Int64 = 1

    /// A second connection that copies the WAL into the database, so that
    /// a commit (and the QUEUED answers waiting for it) never does.
    private let checkpointer: DatabaseQueue
    private let checkpoints: DispatchSourceTimer

    /// Set by the checkpointer when the WAL is long and wholly copied; the
    /// writer then starts it afresh before its next batch.
    private let restartWanted = Flag()
    /// WAL restarts done (for the tests).
    public var walRestarts: Int { restartWanted.count }
    /// Passive checkpoints that failed (each is tried again 200 ms later).
    public var checkpointFailures: Int { restartWanted.failed }

    final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var raised = false
        private var taken = 0
        func raise() { lock.withLock { raised = true } }
        /// Whether it was raised (and lowers it).
        func take() -> Bool { lock.withLock { defer { raised = false }; return raised } }
        func done() { lock.withLock { taken += 1 } }
        var count: Int { lock.withLock { taken } }
        private var failures = 0
        func checkpointFailed() { lock.withLock { failures += 1 } }
        var failed: Int { lock.withLock { failures } }
    }

    /// `walPages`: past this many pages (4 KiB each) in the WAL, the writer
    /// starts it afresh once the checkpointer has copied all of it.
    public convenience init(path: String, maxUsers: Int = 1_000_000, walPages: Int = 16_384) throws {
        try self.init(path: path, maxUsers: maxUsers, walPages: walPages, heldHash: nil)
    }

    init(path: String, maxUsers: Int = 1_000_000, walPages: Int = 16_384, heldHash: (@Sendable (HeldSet.Pair) -> UInt64)?) throws {
        self.heldHash = heldHash
        var config = Configuration()
        config.journalMode = .wal
        config.busyMode = Self.briefWaits // a moment's wait for the checkpointer's lock
        db = try DatabaseQueue(path: path, configuration: config)
        self.maxUsers = maxUsers
        // GRDB sets NORMAL with WAL; a QUEUED answer promises durability: FULL.
        // Checkpoints are the checkpointer's (below), not the committing writer's.
        try db.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL; PRAGMA wal_autocheckpoint = 0") }
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
        // One index a message, in arrival order per recipient: the rowid is the
        // arrival order (max + 1, so never behind a message still queued), duplicates
        // are found in `held`, and expiry scans the table every 30 s.
        migrator.registerMigration("v2 queue with one index") { db in
            try db.execute(sql: """
                CREATE TABLE queue_v2 (seq INTEGER PRIMARY KEY, recipient BLOB NOT NULL, message_id BLOB NOT NULL,
                                       sender BLOB NOT NULL, payload BLOB NOT NULL, received_at INTEGER NOT NULL);
                INSERT INTO queue_v2 SELECT seq, recipient, message_id, sender, payload, received_at FROM queue;
                DROP TABLE queue;
                ALTER TABLE queue_v2 RENAME TO queue;
                CREATE INDEX queue_by_recipient ON queue (recipient, seq);
                """)
        }
        // One B-tree a message instead of two: the queue clustered by
        // (recipient, arrival order), which is how it is read (POLL) and
        // counted; the arrival order is the store's own counter (max + 1).
        migrator.registerMigration("v3 queue clustered by recipient") { db in
            try db.execute(sql: """
                CREATE TABLE queue_v3 (recipient BLOB NOT NULL, seq INTEGER NOT NULL, message_id BLOB NOT NULL,
                                       sender BLOB NOT NULL, payload BLOB NOT NULL, received_at INTEGER NOT NULL,
                                       PRIMARY KEY (recipient, seq)) WITHOUT ROWID;
                INSERT INTO queue_v3 SELECT recipient, seq, message_id, sender, payload, received_at FROM queue;
                DROP TABLE queue;
                ALTER TABLE queue_v3 RENAME TO queue;
                """)
        }
        // The courier mailbox: drops by recipient tag, in arrival order (the rowid, DROP_FETCH's cursor).
        migrator.registerMigration("v4 courier mailbox") { db in
            try db.execute(sql: """
                CREATE TABLE drops (seq INTEGER PRIMARY KEY AUTOINCREMENT, drop_id BLOB NOT NULL UNIQUE, tag BLOB NOT NULL,
                                    envelope BLOB NOT NULL, expires_at INTEGER NOT NULL, received_at INTEGER NOT NULL);
                CREATE INDEX drops_by_tag ON drops (tag, seq);
                CREATE INDEX drops_by_expiry ON drops (expires_at);
                """)
        }
        // Expiry by arrival time through an index (appended at its right edge, as
        // messages arrive in time order): a scan of the table took 266 ms at
        // 1,000,000 queued, every 30 s, holding the commits back for it.
        migrator.registerMigration("v5 queue by arrival time") { db in
            try db.execute(sql: "CREATE INDEX queue_by_age ON queue (received_at)")
        }
        try migrator.migrate(db)
        var waits = Configuration()
        waits.busyMode = Self.briefWaits // a RESTART waits for the commit under way
        checkpointer = try DatabaseQueue(path: path, configuration: waits)
        checkpoints = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "starling.relay.checkpoint"))
        let checkpointer = self.checkpointer
        let restartWanted = self.restartWanted
        checkpoints.setEventHandler {
            do {
                if try Self.checkpoint(checkpointer, walPages: walPages) { restartWanted.raise() }
            } catch {
                restartWanted.checkpointFailed() // counted (the metrics show it); the next one tries again
            }
        }
        checkpoints.schedule(deadline: .now() + .milliseconds(200), repeating: .milliseconds(200), leeway: .milliseconds(50))
        checkpoints.resume()
    }

    deinit { checkpoints.cancel() }

    /// Waiting for a lock in steps of 0.2 ms, up to 5 s (SQLite's own busy
    /// timeout sleeps in steps growing to 100 ms, which a commit would feel).
    static let briefWaits = Database.BusyMode.callback { tries in
        guard tries < 25_000 else { return false }
        usleep(200)
        return true
    }

    /// A passive checkpoint every 200 ms (it never waits for the writer);
    /// true when the WAL is past `walPages` and wholly copied. SQLite starts
    /// the WAL afresh only when a commit begins with every frame copied, which
    /// a commit-after-commit load never gives it: the writer then runs a
    /// RESTART checkpoint itself, between two batches (see `enqueue`). Run
    /// here, on the second connection, a RESTART contended with the writer
    /// for its locks and once held commits back for ~220 ms; the writer's own
    /// costs that batch the copy of the last frames and one sync of the file.
    /// Without either the WAL would grow for as long as such a load lasts.
    static func checkpoint(_ db: DatabaseQueue, walPages: Int) throws -> Bool {
        try db.writeWithoutTransaction { db in
            guard let row = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(PASSIVE)") else { return false }
            let log: Int = row[1], done: Int = row[2]
            return log > walPages && done == log
        }
    }

    /// What the set of what is held holds: pairs, and pairs kept whole beside
    /// another of the same hash (tests; nil before the first write loads it).
    func heldCounts() throws -> (all: Int, collided: Int)? {
        try db.read { _ in self.held.map { ($0.count, $0.collidedCount) } }
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

    public func register(_ user: UserID, key: [UInt8], timestamp: UInt64) async throws -> RegisterOutcome {
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

    /// Reads every (recipient, message ID) queued and its arrival number, made
    /// at once with room for the whole queue (up to 2^20): growing past a power
    /// of two would rehash every entry inside one commit (~50 ms at 150,000).
    private func loadHeld(_ db: Database) throws {
        var all = HeldSet(minimumCapacity: min(max(heldCapacity, 1_024), 1 << 20), hash: heldHash)
        var last: Int64 = 0
        let rows = try Row.fetchCursor(db, sql: "SELECT recipient, message_id, seq FROM queue")
        while let row = try rows.next() {
            let seq = row["seq"] as Int64
            if let r = UserID(bytes: row["recipient"] as Data), let m = UserID(bytes: row["message_id"] as Data) {
                all.insert(HeldSet.Pair(recipient: r, messageID: m), seq: seq)
            }
            last = max(last, seq)
        }
        held = all
        nextSeq = last + 1
    }

    /// All in one transaction: one sync of the disk for what arrived together.
    public func commit(_ writes: StoreWrites) async throws -> StoreWritten {
        try await writing(restartingTheWAL: restartWanted.take()) { db in
            StoreWritten(stored: writes.messages.isEmpty ? [] : try self.store(writes.messages, limits: writes.limits, in: db),
                         removed: writes.acks.isEmpty ? [] : try self.take(writes.acks, in: db),
                         dropped: try writes.drops.map { try self.keep($0, limits: writes.dropLimits, in: db) })
        }
    }

    /// Inside a write.
    private func store(_ batch: [QueuedMessage], limits: QueueLimits, in db: Database) throws -> [EnqueueOutcome] {
        var total = try self.total ?? Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM queue")) ?? 0
        self.heldCapacity = limits.total
        if self.held == nil { try self.loadHeld(db) }
        if self.queued.count > 65_536 { self.queued = [:] }
        var known: [UserID: Bool] = [:]
        let isUser = try db.cachedStatement(sql: "SELECT 1 FROM users WHERE user_id = ?")
        let countFor = try db.cachedStatement(sql: "SELECT COUNT(*) FROM queue WHERE recipient = ?")
        let heldRow = try db.cachedStatement(sql: "SELECT message_id, sender, payload FROM queue WHERE recipient = ? AND seq = ?")
        // Prepared once (cached across batches) and bound in place: a message costs one step.
        let insert = try db.cachedStatement(sql: """
            INSERT INTO queue (recipient, seq, message_id, sender, payload, received_at) VALUES (?, ?, ?, ?, ?, ?)
            """).sqliteStatement
        let outcomes: [EnqueueOutcome] = try batch.map { m in
            if known[m.recipient] == nil {
                known[m.recipient] = try Bool.fetchOne(isUser, arguments: [Data(m.recipient.bytes)]) ?? false
            }
            guard known[m.recipient]! else { return .unknownRecipient }
            // A retry of one held already is QUEUED again, stored once (even when the queue is full);
            // another sender's message under the same ID is not, nor the same sender's with
            // other bytes (its row is read: rare).
            // The set names a row by a hash of the pair: the row read says whether it is the pair's.
            let key = HeldSet.Pair(recipient: m.recipient, messageID: m.messageID)
            var found: Row?
            if try self.held!.find(key, isThePair: { seq in
                found = try Row.fetchOne(heldRow, arguments: [Data(m.recipient.bytes), seq])
                return (found?["message_id"] as Data?) == Data(m.messageID.bytes)
            }) != nil {
                guard let row = found, (row["sender"] as Data?) == Data(m.sender.bytes) else { return .messageIDTaken }
                return (row["payload"] as Data?) == Data(m.payload) ? .stored : .messageIDReused
            }
            let count = try self.queued[m.recipient] ?? Int.fetchOne(countFor, arguments: [Data(m.recipient.bytes)]) ?? 0
            self.queued[m.recipient] = count
            guard count < limits.perUser else { return .recipientQueueFull }
            guard total < limits.total else { return .serverFull }
            sqlite3_reset(insert)
            Self.bind(insert, 1, m.recipient)
            sqlite3_bind_int64(insert, 2, self.nextSeq)
            Self.bind(insert, 3, m.messageID)
            Self.bind(insert, 4, m.sender)
            Self.bind(insert, 5, m.payload)
            sqlite3_bind_int64(insert, 6, Int64(m.receivedAt))
            let rc = sqlite3_step(insert)
            sqlite3_reset(insert)
            guard rc == SQLITE_DONE else {
                throw DatabaseError(resultCode: ResultCode(rawValue: rc), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
            }
            self.held!.insert(key, seq: self.nextSeq)
            self.nextSeq += 1
            self.queued[m.recipient] = count + 1
            total += 1
            return .stored
        }
        self.total = total
        return outcomes
    }

    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

    /// A user ID's 16 bytes (copied by SQLite while they are in scope).
    private static func bind(_ statement: OpaquePointer, _ index: Int32, _ id: UserID) {
        id.withUnsafeBytes { _ = sqlite3_bind_blob(statement, index, $0.baseAddress, 16, transient) }
    }

    /// A blob, never NULL (an empty array has no base address: a zero-length blob).
    private static func bind(_ statement: OpaquePointer, _ index: Int32, _ bytes: [UInt8]) {
        if bytes.isEmpty {
            sqlite3_bind_zeroblob(statement, index, 0)
        } else {
            bytes.withUnsafeBytes { _ = sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), transient) }
        }
    }

    /// A write whose failure (a thrown error, a rollback, a COMMIT that
    /// failed: SQLite may roll back by itself, unseen by transaction
    /// observers) forgets what is kept beside the queue, to be counted again
    /// from the file by the next write.
    private func writing<T: Sendable>(restartingTheWAL restart: Bool = false,
                                      _ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            guard restart else { return try await db.write(body) }
            let restartWanted = self.restartWanted
            return try await db.writeWithoutTransaction { db in
                // (busy, log, checkpointed): busy 0 when it went through.
                if let row = try? Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(RESTART)"), (row[0] as Int) == 0 { restartWanted.done() }
                var result: T?
                try db.inTransaction {
                    result = try body(db)
                    return .commit
                }
                return result!
            }
        } catch {
            try? await db.writeWithoutTransaction { _ in
                self.total = nil
                self.queued = [:]
                self.held = nil
            }
            throw error
        }
    }


    public func fetch(_ user: UserID, limit: Int) async throws -> [QueuedMessage] {
        try await db.read { db in
            try Row.fetchAll(db, sql: """
                SELECT message_id, sender, payload, received_at FROM queue WHERE recipient = ? ORDER BY seq LIMIT ?
                """, arguments: [Data(user.bytes), limit]).map { row in
                QueuedMessage(messageID: UserID(bytes: row["message_id"] as Data)!, sender: UserID(bytes: row["sender"] as Data)!,
                                   recipient: user, payload: [UInt8](row["payload"] as Data),
                                   receivedAt: UInt64(row["received_at"] as Int64))
            }
        }
    }

    /// ACKs, inside a write (with the MSGs beside them: one fsync, not one each).
    private func take(_ acks: [(user: UserID, messageID: UserID)], in db: Database) throws -> [QueuedMessage?] {
        // Each found by its arrival number, kept in `held`: one primary-key
        // lookup, however long the recipient's queue (a scan of it per ACK
        // made a drained relay ~5× slower).
        if self.held == nil { try self.loadHeld(db) }
        // The message ID in the condition: the set names a row by a hash, the row itself says whose it is.
        let delete = try db.cachedStatement(sql: """
            DELETE FROM queue WHERE recipient = ? AND seq = ? AND message_id = ? RETURNING sender, payload, received_at
            """)
        return try acks.map { user, messageID in
            let key = HeldSet.Pair(recipient: user, messageID: messageID)
            var row: Row?
            // (SQLite makes all of a RETURNING statement's changes at its first step.)
            guard let seq = try self.held!.find(key, isThePair: { seq in
                row = try Row.fetchOne(delete, arguments: [Data(user.bytes), seq, Data(messageID.bytes)])
                return row != nil
            }), let row else { return nil }
            self.held!.remove(key, seq: seq)
            if let t = self.total { self.total = max(0, t - 1) }
            if let q = self.queued[user] { self.queued[user] = max(0, q - 1) }
            return QueuedMessage(messageID: messageID, sender: UserID(bytes: row["sender"] as Data)!, recipient: user,
                                      payload: [UInt8](row["payload"] as Data), receivedAt: UInt64(row["received_at"] as Int64))
        }
    }

    /// Takes what is older than `cutoff` (through the arrival-time index: it
    /// runs every 30 s); what it takes leaves the counts and the set of what is queued
    /// one by one, so that they need not be read again from the file.
    public func expire(before cutoff: UInt64) async throws -> Int {
        try await writing { db in
            let taken = try Row.fetchCursor(db, sql: "DELETE FROM queue WHERE received_at < ? RETURNING recipient, message_id, seq",
                                            arguments: [Int64(cutoff)])
            var n = 0
            while let row = try taken.next() {
                n += 1
                guard let r = UserID(bytes: row["recipient"] as Data), let m = UserID(bytes: row["message_id"] as Data) else { continue }
                self.held?.remove(HeldSet.Pair(recipient: r, messageID: m), seq: row["seq"] as Int64)
                if let q = self.queued[r] { self.queued[r] = max(0, q - 1) }
            }
            if let t = self.total { self.total = max(0, t - n) }
            return n
        }
    }

    public func counts() async throws -> (users: Int, queued: Int) {
        try await db.read { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM users") ?? 0, try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM queue") ?? 0)
        }
    }

    // MARK: The courier mailbox

    /// Inside a write: one held already is answered as held (with the later
    /// expiry); past the tag's share its oldest go; past the total, the expired,
    /// then the oldest of all.
    private func keep(_ drop: StoredDrop, limits: DropLimits, in db: Database) throws -> DropOutcome {
        let id = Data(drop.dropID.bytes), tag = Data(drop.tag.bytes)
        let expires = Int64(clamping: drop.expiresAt), received = Int64(clamping: drop.receivedAt)
        // Prepared once (cached across commits).
        if let held = try Int64.fetchOne(db.cachedStatement(sql: "SELECT expires_at FROM drops WHERE drop_id = ?"), arguments: [id]) {
            if expires > held {
                try db.cachedStatement(sql: "UPDATE drops SET envelope = ?, expires_at = ? WHERE drop_id = ?")
                    .execute(arguments: [Data(drop.envelope), expires, id])
            }
            return .stored(new: false)
        }
        try db.cachedStatement(sql: """
            DELETE FROM drops WHERE tag = ? AND seq NOT IN (SELECT seq FROM drops WHERE tag = ? ORDER BY seq DESC LIMIT ?)
            """).execute(arguments: [tag, tag, max(0, limits.perTag - 1)])
        let count = try db.cachedStatement(sql: "SELECT COUNT(*) FROM drops")
        if try Int.fetchOne(count) ?? 0 >= limits.total {
            try db.cachedStatement(sql: "DELETE FROM drops WHERE expires_at <= ?").execute(arguments: [received])
            let n = try Int.fetchOne(count) ?? 0
            if n >= limits.total {
                try db.cachedStatement(sql: "DELETE FROM drops WHERE seq IN (SELECT seq FROM drops ORDER BY seq LIMIT ?)")
                    .execute(arguments: [n - limits.total + 1])
            }
        }
        try db.cachedStatement(sql: "INSERT INTO drops (drop_id, tag, envelope, expires_at, received_at) VALUES (?, ?, ?, ?, ?)")
            .execute(arguments: [id, tag, Data(drop.envelope), expires, received])
        return .stored(new: true)
    }

    public func drops(for tags: [Bytes16], after: UInt64, notExpiredAt now: UInt64, limit: Int) async throws -> [StoredDrop] {
        guard !tags.isEmpty else { return [] }
        return try await db.read { db in
            let marks = Array(repeating: "?", count: tags.count).joined(separator: ", ")
            var arguments: [any DatabaseValueConvertible] = tags.map { Data($0.bytes) }
            arguments += [Int64(clamping: after), Int64(clamping: now), limit]
            return try Row.fetchAll(db, sql: """
                SELECT seq, drop_id, tag, envelope, expires_at, received_at FROM drops
                WHERE tag IN (\(marks)) AND seq > ? AND expires_at > ? ORDER BY seq LIMIT ?
                """, arguments: StatementArguments(arguments)).compactMap { row in
                guard let id = Bytes16(row["drop_id"] as Data), let tag = Bytes16(row["tag"] as Data) else { return nil }
                return StoredDrop(sequence: UInt64(row["seq"] as Int64), dropID: id, tag: tag, envelope: [UInt8](row["envelope"] as Data),
                                  expiresAt: UInt64(row["expires_at"] as Int64), receivedAt: UInt64(row["received_at"] as Int64))
            }
        }
    }

    public func expireDrops(at now: UInt64) async throws -> Int {
        try await db.write { db in
            try db.execute(sql: "DELETE FROM drops WHERE expires_at <= ?", arguments: [Int64(clamping: now)])
            return db.changesCount
        }
    }

    public func dropCount() async throws -> Int {
        try await db.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM drops") ?? 0 }
    }
}
