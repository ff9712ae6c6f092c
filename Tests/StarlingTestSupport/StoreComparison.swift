import Foundation
import StarlingMesh
import StarlingWire
import StarlingYaOKServerCore
import Testing

/// A store against the in-memory reference store: the same random batches
/// (retries, a message twice in a batch, another sender's ID, other bytes
/// under one's own ID, unknown recipients, ACKs of what is there and of what
/// is not, and expiry when asked) give the same answers, and leave the same
/// queues. PostgreSQL's `relay_commit` and SQLite's set of what is held are
/// held to it.
public enum StoreComparison {
    public static func limits(perUser: Int, total: Int) -> QueueLimits {
        var l = QueueLimits()
        l.perUser = perUser
        l.total = total
        return l
    }

    /// `retries`: false, and every message is new (nothing held already, none
    /// twice in a batch). `expiring`: every fifth round both expire what arrived
    /// more than ten rounds before. `reopen`: the store opened again on its
    /// data halfway through (what it keeps beside its tables read again).
    public static func compare(_ store: any ServerStore, limits: QueueLimits, rounds: Int, seed: UInt64,
                               retries: Bool = true, expiring: Bool = false,
                               reopen: (() async throws -> any ServerStore)? = nil) async throws -> [EnqueueOutcome: Int] {
        var store = store
        let reference = InMemoryServerStore()
        var rng = SeededGenerator(seed: seed) // the router's SplitMix64: a failing run replays
        let users = (0..<4).map { _ in UserID.random() }, stranger = UserID.random()
        let senders = (0..<3).map { _ in UserID.random() }
        for u in users {
            #expect(try await store.register(u, key: [1], timestamp: 1) == .registered)
            #expect(await reference.register(u, key: [1], timestamp: 1) == .registered)
        }
        var sent: [QueuedMessage] = []
        var tally: [EnqueueOutcome: Int] = [:]
        for round in 0..<rounds {
            if round == rounds / 2, let reopen { store = try await reopen() }
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
            let got = try await store.commit(writes), want = await reference.commit(writes)
            #expect(got.stored == want.stored, "round \(round): \(got.stored) against the reference's \(want.stored)")
            #expect(got.removed.map { $0?.messageID } == want.removed.map { $0?.messageID }, "round \(round): the ACKs")
            #expect(got.removed.map { $0?.payload } == want.removed.map { $0?.payload }, "round \(round): the ACKs' payloads")
            for o in got.stored { tally[o, default: 0] += 1 }
            if expiring, round % 5 == 4 {
                let cutoff = UInt64(max(0, round - 10))
                let took = try await store.expire(before: cutoff), want = await reference.expire(before: cutoff)
                #expect(took == want, "round \(round): expiry took \(took) against the reference's \(want)")
            }
        }
        for u in users {
            let got = try await store.fetch(u, limit: 10_000), want = await reference.fetch(u, limit: 10_000)
            #expect(got.map(\.messageID) == want.map(\.messageID), "the queue, in arrival order")
            #expect(got.map(\.payload) == want.map(\.payload) && got.map(\.sender) == want.map(\.sender))
        }
        #expect(try await store.counts().queued == (await reference.counts().queued))
        return tally
    }
}
