import Foundation
import StarlingWire
import StarlingYaOKServer
import StarlingYaOKServerCore
import StarlingYaOKServerPostgres
import Testing

/// The courier mailbox's rules in every store: the in-memory reference,
/// SQLite and PostgreSQL (a real cluster) give the same answers.
@Suite(.serialized, .usesProcesses) struct MailboxStoreTests {
    static func drop(_ n: UInt64, tag: UInt8, expires: UInt64 = 10_000, at: UInt64 = 100) -> StoredDrop {
        StoredDrop(dropID: Bytes16(high: n, low: 0), tag: Bytes16([UInt8](repeating: tag, count: 16))!, envelope: [UInt8(n), 1, 2],
                   expiresAt: expires, receivedAt: at)
    }

    static func rules(_ store: any ServerStore, _ name: String) async throws {
        var limits = DropLimits()
        limits.perTag = 3
        limits.total = 5
        let a = Bytes16([UInt8](repeating: 1, count: 16))!, b = Bytes16([UInt8](repeating: 2, count: 16))!, c = Bytes16([UInt8](repeating: 3, count: 16))!
        for n in 1...3 { #expect(try await store.putDrop(drop(UInt64(n), tag: 1), limits: limits) == .stored(new: true), "\(name)") }
        #expect(try await store.putDrop(drop(1, tag: 1), limits: limits) == .stored(new: false), "\(name): the same drop is held once")
        let first = try await store.drops(for: [a], after: 0, notExpiredAt: 200, limit: 10)
        #expect(first.map(\.dropID.high) == [1, 2, 3] && first.map(\.envelope) == [[1, 1, 2], [2, 1, 2], [3, 1, 2]], "\(name)")
        #expect(zip(first, first.dropFirst()).allSatisfy { $0.sequence < $1.sequence }, "\(name): in arrival order")
        // A tag's share: the fourth pushes out the tag's oldest.
        #expect(try await store.putDrop(drop(4, tag: 1), limits: limits) == .stored(new: true))
        #expect(try await store.drops(for: [a], after: 0, notExpiredAt: 200, limit: 10).map(\.dropID.high) == [2, 3, 4], "\(name)")
        // The same drop again with a later expiry keeps the later (a copy cannot cut it short); an earlier one changes nothing.
        var later = drop(4, tag: 1, expires: 12_000)
        later.envelope = [4, 9, 9]
        #expect(try await store.putDrop(later, limits: limits) == .stored(new: false))
        #expect(try await store.putDrop(drop(4, tag: 1, expires: 50), limits: limits) == .stored(new: false))
        let four = try await store.drops(for: [a], after: 0, notExpiredAt: 11_000, limit: 10)
        #expect(four.map(\.dropID.high) == [4] && four.first?.envelope == [4, 9, 9] && four.first?.expiresAt == 12_000, "\(name)")
        // The total: 5; then the expired go, then the oldest of all.
        #expect(try await store.putDrop(drop(5, tag: 2, expires: 500), limits: limits) == .stored(new: true))
        #expect(try await store.putDrop(drop(6, tag: 2), limits: limits) == .stored(new: true))
        #expect(try await store.putDrop(drop(7, tag: 3, at: 600), limits: limits) == .stored(new: true), "\(name): the expired one made room")
        #expect(try await store.dropCount() == 5)
        #expect(try await store.putDrop(drop(8, tag: 3, at: 700), limits: limits) == .stored(new: true), "\(name): the oldest of all made room")
        #expect(try await store.dropCount() == 5)
        // Several tags, a cursor, a limit; expired ones left out.
        let all = try await store.drops(for: [a, b, c], after: 0, notExpiredAt: 700, limit: 10)
        #expect(all.map(\.dropID.high) == [3, 4, 6, 7, 8], "\(name)")
        let page = try await store.drops(for: [a, b, c], after: all[1].sequence, notExpiredAt: 700, limit: 2)
        #expect(page.map(\.dropID.high) == [6, 7], "\(name)")
        #expect(try await store.drops(for: [c, a, b, a, c], after: 0, notExpiredAt: 700, limit: 10).map(\.dropID.high) == [3, 4, 6, 7, 8],
                "\(name): a tag named twice, each drop once, in arrival order")
        #expect(try await store.drops(for: [a, b, c], after: 0, notExpiredAt: 700, limit: 3).map(\.dropID.high) == [3, 4, 6],
                "\(name): the first of all the tags' drops, not of each tag's")
        #expect(try await store.drops(for: [a, b, c], after: UInt64.max, notExpiredAt: 700, limit: 10).isEmpty, "\(name): a cursor past any")
        #expect(try await store.drops(for: [a, b, c], after: 0, notExpiredAt: 20_000, limit: 10).isEmpty, "\(name): expired are not given")
        #expect(try await store.expireDrops(at: 20_000) == 5, "\(name)")
        #expect(try await store.dropCount() == 0)
        // A share lowered since: the tag comes down to it at its next drop.
        for n in 20..<26 { _ = try await store.putDrop(drop(UInt64(n), tag: 5), limits: DropLimits()) }
        var small = DropLimits()
        small.perTag = 2
        _ = try await store.putDrop(drop(30, tag: 5), limits: small)
        #expect(try await store.drops(for: [Bytes16([UInt8](repeating: 5, count: 16))!], after: 0, notExpiredAt: 0, limit: 10)
            .map(\.dropID.high) == [25, 30], "\(name)")

        // In one group commit (issue 57), as if one by one: one twice is held once (the later expiry),
        // the tag keeps its newest, and the total makes room for the batch (the expired first, then the oldest).
        #expect(try await store.expireDrops(at: 10_000) == 2)
        let tag = { (n: UInt8) in Bytes16([UInt8](repeating: n, count: 16))! }
        var batch = DropLimits()
        batch.perTag = 3
        batch.total = 5
        let written = try await store.commit(StoreWrites(drops: [drop(40, tag: 6), drop(40, tag: 6, expires: 20_000), drop(41, tag: 6),
                                                                 drop(42, tag: 6), drop(43, tag: 6)], dropLimits: batch))
        #expect(written.dropped == [.stored(new: true), .stored(new: false), .stored(new: true), .stored(new: true), .stored(new: true)], "\(name)")
        #expect(try await store.drops(for: [tag(6)], after: 0, notExpiredAt: 0, limit: 10).map(\.dropID.high) == [41, 42, 43], "\(name)")
        _ = try await store.commit(StoreWrites(drops: [drop(44, tag: 8, expires: 150)], dropLimits: batch))
        let two = try await store.commit(StoreWrites(drops: [drop(45, tag: 7, at: 200), drop(46, tag: 7, at: 200)], dropLimits: batch))
        #expect(two.dropped == [.stored(new: true), .stored(new: true)])
        #expect(try await store.dropCount() == 5, "\(name): the expired one made room")
        _ = try await store.commit(StoreWrites(drops: [drop(47, tag: 7, at: 300)], dropLimits: batch))
        #expect(try await store.drops(for: [tag(6), tag(7), tag(8)], after: 0, notExpiredAt: 300, limit: 10).map(\.dropID.high)
                == [42, 43, 45, 46, 47], "\(name): then the oldest of all")
        // A drop twice in one batch, pushed out by the tag's share between its copies: as one by one,
        // the second copy goes in anew (a review found the batch keeping the wrong two).
        batch.perTag = 2
        batch.total = 100
        let again = try await store.commit(StoreWrites(drops: [drop(50, tag: 11), drop(51, tag: 11), drop(52, tag: 11), drop(50, tag: 11)], dropLimits: batch))
        #expect(again.dropped == Array(repeating: .stored(new: true), count: 4), "\(name)")
        #expect(try await store.drops(for: [tag(11)], after: 0, notExpiredAt: 0, limit: 10).map(\.dropID.high) == [52, 50], "\(name)")
    }

    @Test func everyStoreKeepsTheSameRules() async throws {
        try await Self.rules(InMemoryServerStore(), "memory")
        let dir = ContactCommandTests.temporaryDirectory("mailbox-store")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/relay.sqlite"
        do {
            let sqlite = try SQLiteServerStore(path: path)
            try await Self.rules(sqlite, "sqlite")
            _ = try await sqlite.putDrop(Self.drop(9, tag: 9), limits: DropLimits())
        }
        // Kept across a reopening (durable when it returned).
        let reopened = try SQLiteServerStore(path: path)
        #expect(try await reopened.drops(for: [Bytes16([UInt8](repeating: 9, count: 16))!], after: 0, notExpiredAt: 0, limit: 10).count == 1)
        let pg = try PostgresCluster()
        defer { pg.stop() }
        let store = try await PostgresServerStore(url: pg.url)
        defer { store.close() }
        try await Self.rules(store, "postgres")
        // PostgreSQL keeps the drops' number in a row (no count(*) a commit): it is the table's,
        // after the shares, the expiry and the oldest made room; and counted again at a start.
        let rows = { Int(try pg.sql("SELECT count(*) FROM relay_drops").trimmingCharacters(in: .whitespacesAndNewlines)) }
        #expect(try await store.dropCount() == (try rows()), "the kept count is the table's")
        try pg.sql("UPDATE relay_drop_count SET total = 999")
        #expect(try await store.dropCount() == 999, "the count is read from its row (the control)")
        let again = try await PostgresServerStore(url: pg.url)
        defer { again.close() }
        #expect(try await again.dropCount() == (try rows()), "counted again at a start")
    }
}
