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
