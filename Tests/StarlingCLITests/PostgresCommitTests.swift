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
    static func limits(perUser: Int, total: Int) -> QueueLimits {
        var l = QueueLimits()
        l.perUser = perUser
        l.total = total
        return l
    }

    /// `retries`: false, and every message is new (nothing held already, none twice in a batch).
    static func compare(_ pg: PostgresServerStore, limits: QueueLimits, rounds: Int, seed: UInt64,
                        retries: Bool = true) async throws -> [EnqueueOutcome: Int] {
        let reference = InMemoryServerStore()
        var rng = SeededGenerator(seed: seed) // the router's SplitMix64: a failing run replays
        let users = (0..<4).map { _ in UserID.random() }, stranger = UserID.random()
        let senders = (0..<3).map { _ in UserID.random() }
        for u in users {
            #expect(try await pg.register(u, key: [1], timestamp: 1) == .registered)
            #expect(await reference.register(u, key: [1], timestamp: 1) == .registered)
        }
        var sent: [QueuedMessage] = []
        var tally: [EnqueueOutcome: Int] = [:]
        for round in 0..<rounds {
            var batch: [QueuedMessage] = []
            for _ in 0..<Int.random(in: 1...24, using: &rng) {
                let pick = Int.random(in: retries ? 0..<10 : 5..<10, using: &rng)
                if pick < 2, let old = sent.randomElement(using: &rng) {
                    batch.append(old) // a retry (of one held, or of one acknowledged since)
                } else if pick == 2, let old = sent.randomElement(using: &rng) {
                    var other = old
                    other.sender = senders.randomElement(using: &rng)!
                    batch.append(other) // the same ID from another sender (or the same one)
                } else if pick == 3, let old = sent.randomElement(using: &rng) {
                    var other = old
                    other.payload = [UInt8.random(in: 0...3, using: &rng)]
                    batch.append(other) // other bytes under the ID
                } else if pick == 4, let last = batch.last {
                    batch.append(last) // twice in one batch
                } else {
                    let recipient = pick == 5 && Bool.random(using: &rng) ? stranger : users.randomElement(using: &rng)!
                    batch.append(QueuedMessage(messageID: .random(), sender: senders.randomElement(using: &rng)!, recipient: recipient,
                                               payload: [UInt8.random(in: 0...3, using: &rng)], receivedAt: UInt64(round)))
                }
            }
            sent += batch
            var acks: [(user: UserID, messageID: UserID)] = []
            for _ in 0..<Int.random(in: 0...6, using: &rng) {
                guard let m = sent.randomElement(using: &rng) else { break }
                acks.append((Bool.random(using: &rng) ? m.recipient : users.randomElement(using: &rng)!, m.messageID))
            }
            let writes = StoreWrites(messages: batch, limits: limits, acks: acks)
            let got = try await pg.commit(writes), want = await reference.commit(writes)
            #expect(got.stored == want.stored, "round \(round): \(got.stored) against the reference's \(want.stored)")
            #expect(got.removed.map { $0?.messageID } == want.removed.map { $0?.messageID }, "round \(round): the ACKs")
            #expect(got.removed.map { $0?.payload } == want.removed.map { $0?.payload }, "round \(round): the ACKs' payloads")
            for o in got.stored { tally[o, default: 0] += 1 }
        }
        for u in users {
            let got = try await pg.fetch(u, limit: 10_000), want = await reference.fetch(u, limit: 10_000)
            #expect(got.map(\.messageID) == want.map(\.messageID), "the queue, in arrival order")
            #expect(got.map(\.payload) == want.map(\.payload) && got.map(\.sender) == want.map(\.sender))
        }
        #expect(try await pg.counts().queued == (await reference.counts().queued))
        return tally
    }

    @Test func theOneStatementCommitAnswersAsTheReferenceStore() async throws {
        let pg = try PostgresCluster()
        defer { pg.stop() }
        // Room for everything: every batch takes the path for a batch that fits whole.
        let roomy = try await PostgresServerStore(url: pg.url)
        defer { roomy.close() }
        let wide = try await Self.compare(roomy, limits: Self.limits(perUser: 100_000, total: 1_000_000), rounds: 150, seed: 7)
        #expect(wide[.stored, default: 0] > 500 && wide[.messageIDTaken, default: 0] > 10 && wide[.messageIDReused, default: 0] > 10
                && wide[.unknownRecipient, default: 0] > 10, "\(wide)")
        #expect(wide[.recipientQueueFull, default: 0] == 0 && wide[.serverFull, default: 0] == 0, "no cap reached: \(wide)")
        // New messages only: each batch goes in by the plain INSERT (nothing held already), beside unknown recipients.
        try pg.sql("TRUNCATE relay_queue, relay_queue_lengths, relay_users; UPDATE relay_queue_count SET total = 0; UPDATE relay_user_count SET total = 0")
        let fresh = try await Self.compare(roomy, limits: Self.limits(perUser: 100_000, total: 1_000_000), rounds: 60, seed: 13, retries: false)
        #expect(fresh[.stored, default: 0] > 300 && fresh[.unknownRecipient, default: 0] > 10, "\(fresh)")
        #expect(fresh[.messageIDTaken, default: 0] == 0 && fresh[.messageIDReused, default: 0] == 0, "nothing held already: \(fresh)")
        // Tight caps: batches near them go message by message.
        try pg.sql("TRUNCATE relay_queue, relay_queue_lengths, relay_users; UPDATE relay_queue_count SET total = 0; UPDATE relay_user_count SET total = 0")
        let tight = try await Self.compare(roomy, limits: Self.limits(perUser: 12, total: 40), rounds: 150, seed: 11)
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
