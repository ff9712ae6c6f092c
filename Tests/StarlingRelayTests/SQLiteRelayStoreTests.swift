import Foundation
import StarlingRelayServer
import StarlingWire
import StarlingYaOKRelay
import Testing

/// The SQLite store's rules, as InMemoryRelayStore states them, on a real file.
@Suite struct SQLiteRelayStoreTests {
    @Test func durableAndTheSameRulesAsTheReference() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("relay-\(UUID().uuidString).sqlite").path
        defer { for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + s) } }
        let store = try SQLiteRelayStore(path: path, maxUsers: 2)
        #expect(try store.synchronousMode() == 2, "synchronous = FULL: a QUEUED answer survives a power cut")
        let a = UserID.random(), b = UserID.random(), key = [UInt8](repeating: 1, count: 32)
        #expect(try await store.register(a, key: key, timestamp: 10) == .registered)
        #expect(try await store.register(a, key: key, timestamp: 10) == .conflict, "not newer: a replay")
        #expect(try await store.register(a, key: [UInt8](repeating: 2, count: 32), timestamp: 11) == .conflict, "another key")
        #expect(try await store.register(b, key: key, timestamp: 1) == .registered)
        #expect(try await store.register(.random(), key: key, timestamp: 1) == .full, "no pin is dropped to make room")
        var limits = RelayQueueLimits()
        limits.perUser = 2
        let m = { (id: UserID) in RelayQueuedMessage(messageID: id, sender: a, recipient: b, payload: [9], receivedAt: 5) }
        let first = UserID.random()
        let outcomes = try await store.enqueue([m(first), m(first), m(.random()), m(.random()),
                                                RelayQueuedMessage(messageID: .random(), sender: a, recipient: .random(), payload: [9], receivedAt: 5)],
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
    }
}
