import Foundation
import GRDB
@testable import StarlingYaOKServer
import StarlingWire
import StarlingYaOKServerCore
import StarlingTestSupport
import Testing

/// The SQLite store's rules, as InMemoryServerStore states them, on a real file.
@Suite struct SQLiteServerStoreTests {
    static func temporaryPath(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString).sqlite").path
    }

    static func remove(_ path: String) {
        for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + s) }
    }

    /// A store on `path` with one registered recipient.
    static func storeWithARecipient(_ path: String, walPages: Int = 16_384) async throws -> (SQLiteServerStore, UserID) {
        let store = try SQLiteServerStore(path: path, walPages: walPages)
        let b = UserID.random()
        #expect(try await store.register(b, key: [UInt8](repeating: 1, count: 32), timestamp: 1) == .registered)
        return (store, b)
    }

    @Test func durableAndTheSameRulesAsTheReference() async throws {
        let path = Self.temporaryPath("relay")
        defer { Self.remove(path) }
        let store = try SQLiteServerStore(path: path, maxUsers: 2)
        #expect(try store.synchronousMode() == 2, "synchronous = FULL: a QUEUED answer survives a power cut")
        let a = UserID.random(), b = UserID.random(), key = [UInt8](repeating: 1, count: 32)
        #expect(try await store.register(a, key: key, timestamp: 10) == .registered)
        #expect(try await store.register(a, key: key, timestamp: 10) == .conflict, "not newer: a replay")
        #expect(try await store.register(a, key: [UInt8](repeating: 2, count: 32), timestamp: 11) == .conflict, "another key")
        #expect(try await store.register(b, key: key, timestamp: 1) == .registered)
        #expect(try await store.register(.random(), key: key, timestamp: 1) == .full, "no pin is dropped to make room")
        var limits = QueueLimits()
        limits.perUser = 2
        let m = { (id: UserID) in QueuedMessage(messageID: id, sender: a, recipient: b, payload: [9], receivedAt: 5) }
        let first = UserID.random()
        let outcomes = try await store.enqueue([m(first), m(first), m(.random()), m(.random()),
                                                QueuedMessage(messageID: .random(), sender: a, recipient: .random(), payload: [9], receivedAt: 5)],
                                               limits: limits)
        #expect(outcomes == [.stored, .stored, .stored, .recipientQueueFull, .unknownRecipient])
        #expect(try await store.enqueue([m(first)], limits: limits) == [.stored], "a retry of one held is QUEUED again, even when full")
        #expect(try await store.counts().queued == 2)
        #expect(try await store.fetch(b, limit: 10).first?.messageID == first)
        #expect(try await store.remove(a, messageID: first) == nil, "only the recipient removes")
        #expect(try await store.remove(b, messageID: first)?.messageID == first)
        #expect(try await store.counts().queued == 1)
        #expect(try await store.expire(before: 6) == 1)
        #expect(try await store.counts().queued == 0)
        // After expiry (which forgets what is held) and on a fresh opening of the
        // file (which has to find it again), a retry is still stored once.
        let again = UserID.random()
        #expect(try await store.enqueue([m(again)], limits: limits) == [.stored])
        let reopened = try SQLiteServerStore(path: path, maxUsers: 2)
        #expect(try await reopened.enqueue([m(again)], limits: limits) == [.stored])
        #expect(try await reopened.counts().queued == 1)
        #expect(try await reopened.fetch(b, limit: 10).map(\.messageID) == [again])
    }

    /// A message ID under which another sender's message is queued for the
    /// same recipient is refused, never answered QUEUED: anyone who saw an ID
    /// on the way (the relay's UDP is plain) and sent first would otherwise
    /// have the real message taken for a retry and lost. Its own sender's
    /// retry is still QUEUED once; a refused one leaves nothing held behind.
    @Test(arguments: ["memory", "sqlite"])
    func aMessageIDBelongsToItsSender(_ kind: String) async throws {
        let path = Self.temporaryPath("relay-ids")
        defer { Self.remove(path) }
        let store: any ServerStore = kind == "memory" ? InMemoryServerStore() : try SQLiteServerStore(path: path)
        let alice = UserID.random(), mallory = UserID.random(), bob = UserID.random()
        #expect(try await store.register(bob, key: [UInt8](repeating: 1, count: 32), timestamp: 1) == .registered)
        let id = UserID.random()
        let from = { (sender: UserID, payload: UInt8) in
            QueuedMessage(messageID: id, sender: sender, recipient: bob, payload: [payload], receivedAt: 5)
        }
        var limits = QueueLimits()
        limits.perUser = 1
        // In one batch: mallory first; alice's is refused, mallory's retry is QUEUED.
        #expect(try await store.enqueue([from(mallory, 1), from(alice, 2), from(mallory, 1)], limits: limits)
                == [.stored, .messageIDTaken, .stored])
        // In a later batch too, and whatever the queue's room.
        #expect(try await store.enqueue([from(alice, 2)], limits: limits) == [.messageIDTaken])
        #expect(try await store.fetch(bob, limit: 10).map(\.payload) == [[1]])
        // Once bob has taken mallory's, alice's goes in.
        #expect(try await store.remove(bob, messageID: id)?.sender == mallory)
        #expect(try await store.enqueue([from(alice, 2)], limits: limits) == [.stored])
        #expect(try await store.fetch(bob, limit: 10).map(\.sender) == [alice])
        // A message refused for a full queue leaves nothing behind: the same
        // ID from another sender in the same batch is refused for the same reason.
        let other = UserID.random()
        let full = { (sender: UserID) in QueuedMessage(messageID: other, sender: sender, recipient: bob, payload: [3], receivedAt: 5) }
        #expect(try await store.enqueue([full(mallory), full(alice)], limits: limits) == [.recipientQueueFull, .recipientQueueFull])
        // The same sender's ID with other bytes is refused (issue 39), in the
        // same batch and a later one; the same bytes are QUEUED, stored once.
        #expect(try await store.enqueue([from(alice, 2), from(alice, 7)], limits: limits) == [.stored, .messageIDReused])
        #expect(try await store.enqueue([from(alice, 8)], limits: limits) == [.messageIDReused])
        #expect(try await store.fetch(bob, limit: 10).map(\.payload) == [[2]])
    }

    /// Expiry takes what it takes out of the counts and the set of what is
    /// queued: the recipient has room again, an expired message sent again is
    /// a new one, and one still queued is still a retry.
    @Test func expiryFreesRoomAndForgetsWhatItTook() async throws {
        let path = Self.temporaryPath("relay-expire")
        defer { Self.remove(path) }
        let (store, b) = try await Self.storeWithARecipient(path)
        let a = UserID.random()
        var limits = QueueLimits()
        limits.perUser = 2
        let m = { (id: UserID, at: UInt64) in QueuedMessage(messageID: id, sender: a, recipient: b, payload: [9], receivedAt: at) }
        let old = UserID.random(), kept = UserID.random(), late = UserID.random()
        #expect(try await store.enqueue([m(old, 5), m(kept, 50), m(late, 55)], limits: limits) == [.stored, .stored, .recipientQueueFull])
        #expect(try await store.expire(before: 10) == 1)
        #expect(try await store.enqueue([m(late, 60)], limits: limits) == [.stored], "room again")
        #expect(try await store.enqueue([m(old, 61)], limits: limits) == [.recipientQueueFull], "expired: a new message, and the queue is full")
        #expect(try await store.enqueue([m(kept, 62)], limits: limits) == [.stored], "still queued: a retry")
        #expect(try await store.counts().queued == 2)
        #expect(try await store.remove(b, messageID: kept)?.receivedAt == 50)
        #expect(try await store.remove(b, messageID: kept) == nil)
        #expect(try await store.fetch(b, limit: 10).map(\.messageID) == [late])
    }

    /// Under a steady load the WAL is started afresh once it is past its
    /// bound and copied: the file stays small while many times its bound is
    /// written, and every message is still there, in order.
    @Test func theWALStaysBoundedUnderASteadyLoad() async throws {
        let path = Self.temporaryPath("relay-wal")
        defer { Self.remove(path) }
        let (store, b) = try await Self.storeWithARecipient(path, walPages: 64) // 256 KiB
        let a = UserID.random()
        var limits = QueueLimits()
        limits.perUser = 1_000_000
        limits.total = 1_000_000
        let payload = [UInt8](repeating: 7, count: 1_000)
        var sent: [UserID] = [], largestWAL = 0
        let deadline = Date().addingTimeInterval(60)
        // 100 KB a batch, one every 10 ms: at least 24 MB, and two restarts.
        while (sent.count < 24_000 || store.walRestarts < 2), Date() < deadline {
            let batch = (0..<100).map { _ in QueuedMessage(messageID: .random(), sender: a, recipient: b, payload: payload, receivedAt: 1) }
            #expect(try await store.enqueue(batch, limits: limits).allSatisfy { $0 == .stored })
            sent += batch.map(\.messageID)
            let wal = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
            largestWAL = max(largestWAL, wal)
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(store.walRestarts >= 2, "\(store.walRestarts) restarts")
        #expect(sent.count >= 24_000)
        #expect(largestWAL < 12 << 20, "the WAL reached \(largestWAL) bytes while \(sent.count / 1_000) MB were written")
        #expect(try await store.counts().queued == sent.count)
        #expect(try await store.fetch(b, limit: 5).map(\.messageID) == Array(sent.prefix(5)))
    }

    /// ACKs that arrived together are taken in one transaction, each as a
    /// single removal would be: only the recipient's, each once.
    /// Runs `body` while a trigger aborts each `event` (as a full disk would
    /// fail the commit), and expects it to throw. The trigger is made through
    /// the store's own connection: no second one waits on the file's locks.
    static func expectFailure(of store: SQLiteServerStore, when event: String, sourceLocation: SourceLocation = #_sourceLocation,
                              _ body: () async throws -> Void) async throws {
        try await store.db.write { try $0.execute(sql: "CREATE TRIGGER fail BEFORE \(event) BEGIN SELECT RAISE(ABORT, 'injected'); END") }
        await #expect(throws: (any Error).self, sourceLocation: sourceLocation) { try await body() }
        try await store.db.write { try $0.execute(sql: "DROP TRIGGER fail") }
    }

    @Test func acksTogetherAreRemovedTogether() async throws {
        let path = Self.temporaryPath("relay-acks")
        defer { Self.remove(path) }
        let (store, b) = try await Self.storeWithARecipient(path)
        let a = UserID.random()
        let ids = (0..<3).map { _ in UserID.random() }
        let batch = ids.map { QueuedMessage(messageID: $0, sender: a, recipient: b, payload: [1], receivedAt: 5) }
        #expect(try await store.enqueue(batch, limits: QueueLimits()) == [.stored, .stored, .stored])
        let found = try await store.remove([(b, ids[0]), (a, ids[1]), (b, .random()), (b, ids[2]), (b, ids[0])])
        #expect(found.map { $0?.messageID } == [ids[0], nil, nil, ids[2], nil])
        #expect(found[0]?.sender == a && found[0]?.payload == [1])
        #expect(try await store.counts().queued == 1)
        #expect(try await store.fetch(b, limit: 10).map(\.messageID) == [ids[1]])
        // What was taken can be queued again (the set of what is queued forgot it).
        #expect(try await store.enqueue([batch[0]], limits: QueueLimits()) == [.stored])
        #expect(try await store.counts().queued == 2)
    }

    /// MSGs and ACKs that arrived together are one transaction: both are
    /// done, or, when it fails, neither (the ACKed message is still there to
    /// be taken, and nothing of the batch is).
    @Test func messagesAndAcksTogetherAreOneTransaction() async throws {
        let path = Self.temporaryPath("relay-commit")
        defer { Self.remove(path) }
        let (store, b) = try await Self.storeWithARecipient(path)
        let a = UserID.random()
        let m = { (id: UserID, at: UInt64) in QueuedMessage(messageID: id, sender: a, recipient: b, payload: [7], receivedAt: at) }
        let first = UserID.random(), second = UserID.random(), third = UserID.random()
        #expect(try await store.enqueue([m(first, 5)], limits: QueueLimits()) == [.stored])
        let both = try await store.commit([m(second, 6)], limits: QueueLimits(), removing: [(b, first), (b, .random())])
        #expect(both.stored == [.stored])
        #expect(both.removed.map { $0?.messageID } == [first, nil])
        #expect(try await store.fetch(b, limit: 10).map(\.messageID) == [second])
        // A failure takes both back.
        try await Self.expectFailure(of: store, when: "INSERT ON queue WHEN NEW.received_at = 666") {
            _ = try await store.commit([m(third, 7), m(.random(), 666)], limits: QueueLimits(), removing: [(b, second)])
        }
        #expect(try await store.fetch(b, limit: 10).map(\.messageID) == [second])
        #expect(try await store.counts().queued == 1)
        // And the ACK, sent again, takes it (the set of what is queued was counted again).
        #expect(try await store.commit([m(third, 7)], limits: QueueLimits(), removing: [(b, second)]).removed.first??.messageID == second)
        #expect(try await store.fetch(b, limit: 10).map(\.messageID) == [third])
        // A failure in the ACKs' part takes back the MSGs stored before it in the transaction.
        let fourth = UserID.random()
        try await Self.expectFailure(of: store, when: "DELETE ON queue") {
            _ = try await store.commit([m(fourth, 8)], limits: QueueLimits(), removing: [(b, third)])
        }
        #expect(try await store.fetch(b, limit: 10).map(\.messageID) == [third])
        #expect(try await store.counts().queued == 1)
        let again = try await store.commit([m(fourth, 8)], limits: QueueLimits(), removing: [(b, third)])
        #expect(again.stored == [.stored], "stored for real, not taken for one held")
        #expect(again.removed.first??.messageID == third)
        #expect(try await store.fetch(b, limit: 10).map(\.messageID) == [fourth])
    }

    /// Issue 57: courier drops go into the same group commit as MSGs and ACKs:
    /// kept together, in order (the same drop twice in one batch is held once;
    /// the tag's share holds within the batch), and a failure takes all back.
    @Test(arguments: ["memory", "sqlite"])
    func dropsAreGroupCommittedWithMessages(_ kind: String) async throws {
        let path = Self.temporaryPath("relay-drops")
        defer { Self.remove(path) }
        let store: any ServerStore = kind == "memory" ? InMemoryServerStore() : try SQLiteServerStore(path: path)
        let a = UserID.random(), b = UserID.random()
        #expect(try await store.register(b, key: [UInt8](repeating: 1, count: 32), timestamp: 1) == .registered)
        let tag = Bytes16(high: 1, low: 1)
        func drop(_ n: UInt64, tag: Bytes16 = tag) -> StoredDrop {
            StoredDrop(dropID: Bytes16(high: 9, low: n), tag: tag, envelope: [UInt8](repeating: UInt8(n), count: 40), expiresAt: 10_000, receivedAt: 5)
        }
        var dropLimits = DropLimits()
        dropLimits.perTag = 3
        let m = QueuedMessage(messageID: .random(), sender: a, recipient: b, payload: [7], receivedAt: 5)
        let written = try await store.commit(StoreWrites(messages: [m], drops: [drop(1), drop(1), drop(2), drop(3), drop(4)], dropLimits: dropLimits))
        #expect(written.stored == [.stored])
        #expect(written.dropped == [.stored(new: true), .stored(new: false), .stored(new: true), .stored(new: true), .stored(new: true)])
        // The tag keeps its newest 3, the first went for the fourth.
        #expect(try await store.drops(for: [tag], after: 0, notExpiredAt: 6, limit: 10).map(\.dropID.low) == [2, 3, 4])
        #expect(try await store.fetch(b, limit: 10).map(\.messageID) == [m.messageID])
        #expect(try await store.dropCount() == 3)
        // The rollback needs a failure injected into SQLite (the reference store has no disk to fail).
        guard kind == "sqlite" else { return }
        let sqlite = try #require(store as? SQLiteServerStore)
        // A failure in the MSGs' part takes the drops of the same commit back (the control: the same drop alone is kept).
        let other = Bytes16(high: 2, low: 2)
        try await Self.expectFailure(of: sqlite, when: "INSERT ON queue WHEN NEW.received_at = 666") {
            _ = try await sqlite.commit(StoreWrites(messages: [QueuedMessage(messageID: .random(), sender: a, recipient: b, payload: [1], receivedAt: 666)],
                                                    drops: [drop(5, tag: other)], dropLimits: dropLimits))
        }
        #expect(try await store.dropCount() == 3)
        #expect(try await store.commit(StoreWrites(drops: [drop(5, tag: other)], dropLimits: dropLimits)).dropped == [.stored(new: true)])
        #expect(try await store.dropCount() == 4)
    }

    /// The set of what is held names each queued message by a keyed 64-bit
    /// hash of (recipient, message ID), and the row read at its arrival number
    /// says whether it is the one: the store answers as the reference store
    /// does with the real hash, and with one of three values where nearly
    /// every message shares its hash with another (kept whole beside it):
    /// retries, other senders' IDs, ACKs of others' messages, expiry, caps.
    @Test(arguments: [false, true])
    func whatIsHeldIsFoundByAKeyedHashAsTheReferenceFindsIt(colliding: Bool) async throws {
        let path = Self.temporaryPath("relay-held")
        defer { Self.remove(path) }
        // Three values: nearly every message shares its hash with others.
        let threeValues: @Sendable (HeldSet.Pair) -> UInt64 = { pair in UInt64(pair.messageID.bytes[0] % 3) }
        let hash: (@Sendable (HeldSet.Pair) -> UInt64)? = colliding ? threeValues : nil
        let store = try SQLiteServerStore(path: path, heldHash: hash)
        // Opened again halfway: the set is read from the file, colliding pairs and all.
        var reopened: SQLiteServerStore?
        let wide = try await StoreComparison.compare(store, limits: StoreComparison.limits(perUser: 100_000, total: 1_000_000),
                                                     rounds: 150, seed: 7, expiring: true) {
            reopened = try SQLiteServerStore(path: path, heldHash: hash)
            return reopened!
        }
        #expect(wide[.stored, default: 0] > 500 && wide[.messageIDTaken, default: 0] > 10 && wide[.messageIDReused, default: 0] > 10, "\(wide)")
        let last = try #require(reopened)
        let held = try last.heldCounts()
        let counts = try #require(held)
        #expect(counts.all == (try await last.counts().queued) && counts.all > 20, "the set holds what the queue holds: \(counts)")
        #expect(colliding ? counts.collided > 0 : counts.collided == 0, "pairs kept whole beside another of their hash: \(counts)")
        // Tight caps, in a store of its own.
        let tightPath = Self.temporaryPath("relay-held-tight")
        defer { Self.remove(tightPath) }
        let tightStore = try SQLiteServerStore(path: tightPath, heldHash: hash)
        let tight = try await StoreComparison.compare(tightStore, limits: StoreComparison.limits(perUser: 12, total: 40), rounds: 150, seed: 11)
        #expect(tight[.recipientQueueFull, default: 0] > 10 && tight[.serverFull, default: 0] > 10, "both caps reached: \(tight)")
    }

    /// A batch whose transaction fails (here a trigger aborts one insert, as a
    /// full disk would fail the commit) leaves nothing behind in what the store
    /// keeps beside the queue: a retry of its messages is stored for real, not
    /// taken for one held already. The trigger is made through the store's own
    /// connection: no second connection waits on the file's locks.
    @Test func aFailedBatchLeavesNoTraceInWhatIsKeptBesideTheQueue() async throws {
        let path = Self.temporaryPath("relay-fail")
        defer { Self.remove(path) }
        let (store, b) = try await Self.storeWithARecipient(path)
        let a = UserID.random()
        let m = { (id: UserID, at: UInt64) in QueuedMessage(messageID: id, sender: a, recipient: b, payload: [9], receivedAt: at) }
        #expect(try await store.enqueue([m(.random(), 5)], limits: QueueLimits()) == [.stored]) // the caches are warm
        let good = UserID.random()
        try await Self.expectFailure(of: store, when: "INSERT ON queue WHEN NEW.received_at = 666") {
            _ = try await store.enqueue([m(good, 5), m(.random(), 666)], limits: QueueLimits())
        }
        #expect(try await store.counts().queued == 1) // the failed batch's first message is not there
        #expect(try await store.enqueue([m(good, 5)], limits: QueueLimits()) == [.stored])
        #expect(try await store.counts().queued == 2, "stored for real this time")
        #expect(try await store.fetch(b, limit: 10).map(\.messageID).last == good)
    }

    /// An ACK taken in a commit that then fails (here its drop's insert) is
    /// back in what the store keeps beside the queue: the set of what is held
    /// is read again, so that the message's retry is found held (QUEUED, one
    /// row) and its ACK, sent again, takes it. Without the set read again the
    /// retry was a second row.
    @Test func anAckInAFailedCommitIsHeldAgain() async throws {
        let path = Self.temporaryPath("relay-ack-fail")
        defer { Self.remove(path) }
        let (store, b) = try await Self.storeWithARecipient(path)
        let a = UserID.random()
        let m = QueuedMessage(messageID: .random(), sender: a, recipient: b, payload: [3], receivedAt: 5)
        #expect(try await store.enqueue([m], limits: QueueLimits()) == [.stored])
        let drop = StoredDrop(dropID: Bytes16(high: 7, low: 7), tag: Bytes16(high: 1, low: 1), envelope: [1, 2], expiresAt: 10_000, receivedAt: 5)
        try await Self.expectFailure(of: store, when: "INSERT ON drops") {
            _ = try await store.commit(StoreWrites(acks: [(b, m.messageID)], drops: [drop]))
        }
        #expect(try await store.counts().queued == 1, "the ACK's removal was taken back")
        #expect(try await store.enqueue([m], limits: QueueLimits()) == [.stored])
        #expect(try await store.counts().queued == 1, "the retry found it held: one row")
        #expect(try await store.remove(b, messageID: m.messageID)?.messageID == m.messageID)
        #expect(try await store.counts().queued == 0)
    }

    /// A file written by the first schema (a UNIQUE index on message IDs, an
    /// age index) is migrated with its queue: in order, retries found.
    @Test func aFirstSchemaFileIsMigratedWithItsQueue() async throws {
        let path = Self.temporaryPath("relay-v1")
        defer { Self.remove(path) }
        let b = UserID.random(), a = UserID.random(), ids = (0..<3).map { _ in UserID.random() }
        do {
            let old = try DatabaseQueue(path: path)
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
            try migrator.migrate(old)
            try await old.write { db in
                try db.execute(sql: "INSERT INTO users VALUES (?, ?, 1)", arguments: [Data(b.bytes), Data(repeating: 1, count: 32)])
                for id in ids {
                    try db.execute(sql: "INSERT INTO queue (recipient, message_id, sender, payload, received_at) VALUES (?, ?, ?, ?, 5)",
                                   arguments: [Data(b.bytes), Data(id.bytes), Data(a.bytes), Data([7])])
                }
            }
            try old.close()
        }
        let store = try SQLiteServerStore(path: path)
        #expect(try await store.fetch(b, limit: 10).map(\.messageID) == ids)
        let retry = QueuedMessage(messageID: ids[1], sender: a, recipient: b, payload: [7], receivedAt: 6)
        #expect(try await store.enqueue([retry], limits: QueueLimits()) == [.stored])
        #expect(try await store.counts().queued == 3)
        // The queue clustered by (recipient, arrival), and one index beside it: arrival time, for expiry.
        let (indexes, table) = try await store.db.read { db in
            (try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'queue'"),
             try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'queue'") ?? "")
        }
        #expect(indexes.filter { !$0.hasPrefix("sqlite_autoindex") } == ["queue_by_age"] && indexes.count <= 2, "\(indexes)")
        #expect(table.contains("WITHOUT ROWID") && table.contains("PRIMARY KEY (recipient, seq)"), "\(table)")
        // A new message arrives after the migrated ones.
        let later = UserID.random()
        #expect(try await store.enqueue([QueuedMessage(messageID: later, sender: a, recipient: b, payload: [8], receivedAt: 7)],
                                        limits: QueueLimits()) == [.stored])
        #expect(try await store.fetch(b, limit: 10).map(\.messageID) == ids + [later])
        let reopened = try SQLiteServerStore(path: path)
        let afterThat = UserID.random()
        #expect(try await reopened.enqueue([QueuedMessage(messageID: afterThat, sender: a, recipient: b, payload: [8], receivedAt: 8)],
                                           limits: QueueLimits()) == [.stored])
        #expect(try await reopened.fetch(b, limit: 10).map(\.messageID) == ids + [later, afterThat], "the order goes on after a reopening")
    }
}
