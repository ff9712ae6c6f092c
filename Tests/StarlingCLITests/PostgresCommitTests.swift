import Foundation
import StarlingMesh
import StarlingTestSupport
import StarlingWire
import StarlingYaOKServerCore
import StarlingYaOKServerPostgres
import Testing

/// `relay_commit`, the PostgreSQL store's commit in one statement, against the
/// in-memory reference store: the same random batches (retries, a message twice
/// in a batch, another sender's ID, other bytes under one's own ID, unknown
/// recipients, ACKs of what is there and of what is not) give the same
/// answers, through the path for a batch that fits whole and the path near a
/// cap, message by message.
@Suite(.serialized, .usesProcesses) struct PostgresCommitTests {
    @Test func theOneStatementCommitAnswersAsTheReferenceStore() async throws {
        let pg = try PostgresCluster()
        defer { pg.stop() }
        // Room for everything: every batch takes the path for a batch that fits whole.
        let roomy = try await PostgresServerStore(url: pg.url)
        defer { roomy.close() }
        let wide = try await StoreComparison.compare(roomy, limits: StoreComparison.limits(perUser: 100_000, total: 1_000_000), rounds: 150, seed: 7)
        #expect(wide[.stored, default: 0] > 500 && wide[.messageIDTaken, default: 0] > 10 && wide[.messageIDReused, default: 0] > 10
                && wide[.unknownRecipient, default: 0] > 10, "\(wide)")
        #expect(wide[.recipientQueueFull, default: 0] == 0 && wide[.serverFull, default: 0] == 0, "no cap reached: \(wide)")
        // New messages only: each batch goes in by the plain INSERT (nothing held already), beside unknown recipients.
        try pg.sql("TRUNCATE relay_queue, relay_queue_lengths, relay_users; UPDATE relay_queue_count SET total = 0; UPDATE relay_user_count SET total = 0")
        let fresh = try await StoreComparison.compare(roomy, limits: StoreComparison.limits(perUser: 100_000, total: 1_000_000), rounds: 60, seed: 13, retries: false)
        #expect(fresh[.stored, default: 0] > 300 && fresh[.unknownRecipient, default: 0] > 10, "\(fresh)")
        #expect(fresh[.messageIDTaken, default: 0] == 0 && fresh[.messageIDReused, default: 0] == 0, "nothing held already: \(fresh)")
        // Tight caps: batches near them go message by message.
        try pg.sql("TRUNCATE relay_queue, relay_queue_lengths, relay_users; UPDATE relay_queue_count SET total = 0; UPDATE relay_user_count SET total = 0")
        let tight = try await StoreComparison.compare(roomy, limits: StoreComparison.limits(perUser: 12, total: 40), rounds: 150, seed: 11)
        #expect(tight[.recipientQueueFull, default: 0] > 10 && tight[.serverFull, default: 0] > 10, "both caps reached: \(tight)")
        #expect(tight[.stored, default: 0] > 100 && tight[.messageIDTaken, default: 0] > 0 && tight[.messageIDReused, default: 0] > 0, "\(tight)")
    }

    /// Commits begun together (a server keeps `commitsUnderWay` of them) take
    /// effect in the order begun: each sees what the one before wrote, and
    /// the queue holds their messages in that order. Sixty begun at once, each
    /// with a message of its own and one under an ID they share (other bytes
    /// each time: the first stored, every later one `.messageIDReused`), one
    /// of them with a drop (a transaction of several statements that holds its
    /// turn to the end).
    @Test func commitsBegunTogetherTakeEffectInTheOrderBegun() async throws {
        let pg = try PostgresCluster()
        defer { pg.stop() }
        let store = try await PostgresServerStore(url: pg.url)
        defer { store.close() }
        #expect(store.commitsUnderWay == 2, "the store's own default")
        let (recipient, sender, shared) = (UserID.random(), UserID.random(), UserID.random())
        #expect(try await store.register(recipient, key: [1], timestamp: 1) == .registered)
        let limits = QueueLimits()
        let own = (0..<60).map { _ in UserID.random() }
        let drop = StoredDrop(dropID: Bytes16(high: 1, low: 2), tag: Bytes16(high: 3, low: 4), envelope: [7], expiresAt: .max, receivedAt: 1)
        let begun = own.indices.map { i in
            store.beginCommit(StoreWrites(
                messages: [QueuedMessage(messageID: own[i], sender: sender, recipient: recipient, payload: [UInt8(i)], receivedAt: UInt64(i)),
                           QueuedMessage(messageID: shared, sender: sender, recipient: recipient, payload: [UInt8(i)], receivedAt: UInt64(i))],
                limits: limits, drops: i == 30 ? [drop] : []))
        }
        var outcomes: [[EnqueueOutcome]] = []
        for c in begun {
            let written = try await c.value
            outcomes.append(written.stored)
            if written.dropped.count == 1 { #expect(written.dropped == [.stored(new: true)]) }
        }
        #expect(outcomes.first == [.stored, .stored], "the first begun stored the shared ID")
        #expect(outcomes.dropFirst().allSatisfy { $0 == [.stored, .messageIDReused] },
                "every later one saw it: \(outcomes.enumerated().filter { $0.element != [.stored, .messageIDReused] }.map(\.offset))")
        let queued = try await store.fetch(recipient, limit: 1_000).map(\.messageID)
        #expect(queued == [own[0], shared] + own.dropFirst(), "the queue in the order begun")
        #expect(try await store.dropCount() == 1)
    }

    /// Commits that wait past the store's time limit (another session holds
    /// the queue's length row) fail with `TimedOut` in about that time, the
    /// ones begun behind them too, and once the row is free the next commit
    /// goes through on a connection made anew: the commits' line is not left
    /// waiting on what timed out.
    @Test func commitsThatTimeOutLeaveTheLineFreeForTheNext() async throws {
        let pg = try PostgresCluster()
        defer { pg.stop() }
        let store = try await PostgresServerStore(url: pg.url, timeout: .seconds(2))
        defer { store.close() }
        let recipient = UserID.random()
        #expect(try await store.register(recipient, key: [1], timestamp: 1) == .registered)
        func writes() -> StoreWrites {
            StoreWrites(messages: [QueuedMessage(messageID: .random(), sender: .random(), recipient: recipient, payload: [1], receivedAt: 1)])
        }
        // The control: a commit goes through at once.
        #expect(try await store.commit(writes()).stored == [.stored])
        // Another session takes the length's row for 8 s.
        let holder = Task.detached {
            try pg.sql("BEGIN; SELECT total FROM relay_queue_count WHERE id = 1 FOR UPDATE; SELECT pg_sleep(8); COMMIT;")
        }
        let taken = ContinuousClock.now
        var held = false
        while !held, ContinuousClock.now - taken < .seconds(30) {
            // psql's answer ends in a newline: "0\n" is not "0".
            let holders = try pg.sql("SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                                     + "WHERE c.relname = 'relay_queue_count' AND l.mode = 'RowShareLock' AND l.granted")
            held = holders.trimmingCharacters(in: .whitespacesAndNewlines) == "1"
            if !held { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(held, "the other session holds the row")
        let started = ContinuousClock.now
        let stuck = (0..<3).map { _ in store.beginCommit(writes()) }
        var timedOut = 0
        for c in stuck {
            do { _ = try await c.value } catch { timedOut += 1 }
        }
        let waited = ContinuousClock.now - started
        #expect(timedOut == 3, "each failed")
        #expect(waited < .seconds(7), "in about the time limit, not when the row came free: \(waited)")
        _ = try await holder.value
        // The row is free: the next commit goes through.
        #expect(try await store.commit(writes()).stored == [.stored])
    }

    /// A database made before 2026-11 (the queue keyed by seq alone, four
    /// B-trees) is moved to three when a server starts, with what it held.
    @Test func anOlderQueueLayoutIsMovedOverWithWhatItHeld() async throws {
        let pg = try PostgresCluster()
        defer { pg.stop() }
        try pg.sql("""
            CREATE TABLE relay_queue (seq BIGSERIAL PRIMARY KEY, recipient BYTEA NOT NULL, message_id BYTEA NOT NULL,
                sender BYTEA NOT NULL, payload BYTEA NOT NULL, received_at BIGINT NOT NULL, UNIQUE (recipient, message_id));
            CREATE INDEX relay_queue_by_recipient ON relay_queue (recipient, seq);
            CREATE INDEX relay_queue_by_age ON relay_queue (received_at);
            CREATE TABLE relay_users (user_id BYTEA PRIMARY KEY, key BYTEA NOT NULL, last_register BIGINT NOT NULL);
            INSERT INTO relay_users VALUES ('\\x000102030405060708090a0b0c0d0e0f', '\\x01', 1);
            INSERT INTO relay_queue (recipient, message_id, sender, payload, received_at)
                SELECT '\\x000102030405060708090a0b0c0d0e0f', decode(lpad(to_hex(g), 32, '0'), 'hex'), '\\xffffffffffffffffffffffffffffffff', '\\x09', g FROM generate_series(1, 5) g;
            """)
        func indexes() throws -> [String] {
            try pg.sql("SELECT indexname FROM pg_indexes WHERE tablename = 'relay_queue' ORDER BY indexname").split(separator: "\n").map(String.init)
        }
        #expect(try indexes() == ["relay_queue_by_age", "relay_queue_by_recipient", "relay_queue_pkey", "relay_queue_recipient_message_id_key"],
                "the older layout, as made")
        let store = try await PostgresServerStore(url: pg.url)
        defer { store.close() }
        #expect(try indexes() == ["relay_queue_by_age", "relay_queue_pkey", "relay_queue_recipient_message_id_key"])
        #expect(try pg.sql("SELECT pg_get_indexdef('relay_queue_pkey'::regclass)").contains("(recipient, seq)"))
        let b = UserID(bytes: (0..<16).map { UInt8($0) })!
        #expect(try await store.fetch(b, limit: 10).map(\.receivedAt) == [1, 2, 3, 4, 5], "what it held, in order")
        let next = QueuedMessage(messageID: .random(), sender: .random(), recipient: b, payload: [1], receivedAt: 6)
        #expect(try await store.enqueue([next], limits: QueueLimits()) == [.stored])
        #expect(try await store.fetch(b, limit: 10).last?.messageID == next.messageID)
        #expect(try await store.expire(before: 3) == 2, "expiry by arrival time")
        // A second start finds the new layout and leaves it.
        let again = try await PostgresServerStore(url: pg.url)
        again.close()
        #expect(try indexes() == ["relay_queue_by_age", "relay_queue_pkey", "relay_queue_recipient_message_id_key"])
    }
}
