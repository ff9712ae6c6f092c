import Foundation
import GRDB
import StarlingWire
import StarlingYaOKServer
import StarlingYaOKServerCore
import StarlingYaOKServerPostgres

/// `starling-bench yaok-server-population`: each store with a city's worth of
/// people: 100,000 registered users (put in by SQL, as a fixture), then
/// messages queued through the store in commits of 5,000 (ten a user at the
/// end: 1,000,000). At 0, 250,000, 500,000 and 1,000,000 queued, the same
/// probes: commits of 500 MSGs to random users, of 500 ACKs of random queued
/// messages, a POLL's read, a first registration, an expiry pass with nothing
/// to expire. At the end: a fresh store on the full database (start-up to its
/// first answered commit) and the resident memory the store added.
enum PopulationBench {
    static let users = 100_000
    static let stages = [0, 250_000, 500_000, 1_000_000]

    static func run() {
        print("starling-bench yaok-server-population (release; \(users) users, up to \(stages.last!) queued; every commit durable)\n")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("starling-population-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("population.sqlite").path
        let stores = ProcessInfo.processInfo.environment["STARLING_BENCH_STORES"]?.split(separator: ",").map(String.init) ?? ["sqlite", "postgres"]
        if stores.contains("sqlite") { sqlite(path) }
        if stores.contains("postgres") { postgres() }
    }

    static func sqlite(_ path: String) {
        print("SQLite")
        let sqliteIDs = fixtureUsers { ids in
            let db = try DatabaseQueue(path: path)
            try db.write { db in
                let insert = try db.makeStatement(sql: "INSERT INTO users (user_id, key, last_register) VALUES (?, ?, 1)")
                for id in ids { try insert.execute(arguments: [Data(id.bytes), Data([1])]) }
            }
        } open: { try SQLiteServerStore(path: path) }
        if let (store, ids) = sqliteIDs { measure(store, ids: ids) { try SQLiteServerStore(path: path) } }
    }

    static func postgres() {
        guard let pg = BenchPostgres.start() else { return print("\nPostgreSQL: not installed here (Debian's postgresql), not measured") }
        defer { pg.stop() }
        print("PostgreSQL (\(pg.options.isEmpty ? "default settings" : pg.options), fsync on)")
        let pgIDs = fixtureUsers { ids in
            // One statement: the users' IDs as hex, two thousand a statement (an argument stays under 128 KiB).
            for chunk in stride(from: 0, to: ids.count, by: 2_000) {
                let values = ids[chunk..<min(ids.count, chunk + 2_000)].map { "('\\x" + $0.bytes.map { String(format: "%02x", $0) }.joined() + "', '\\x01', 1)" }
                guard pg.sql("INSERT INTO relay_users (user_id, key, last_register) VALUES " + values.joined(separator: ",")) else {
                    throw PopulationFailure(description: "psql refused the users")
                }
            }
        } open: { ServerBench.blocking { try await PostgresServerStore(url: pg.url) } }
        if let (store, ids) = pgIDs {
            measure(store, ids: ids) { ServerBench.blocking { try await PostgresServerStore(url: pg.url) } }
            store.close()
        }
    }

    struct PopulationFailure: Error, CustomStringConvertible { var description: String }

    /// The store made (its schema), the users put in beside it, the store opened again.
    static func fixtureUsers<S: ServerStore>(_ put: ([UserID]) throws -> Void, open: () throws -> S?) -> (S, [UserID])? {
        do {
            guard try open() != nil else { print("  the store did not open"); return nil }
            let ids = (0..<users).map { _ in UserID.random() }
            let t0 = Date()
            try put(ids)
            guard let store = try open() else { print("  the store did not open"); return nil }
            print("  \(users) users put in by SQL in \(format1(Date().timeIntervalSince(t0))) s (a fixture, not a measure)")
            return (store, ids)
        } catch {
            print("  the fixture failed: \(error)")
            return nil
        }
    }

    static func measure<S: ServerStore>(_ store: S, ids: [UserID], reopen: () throws -> S?) {
        let sender = UserID.random()
        let template = ServerBench.template(from: sender, to: ids[0])
        var limits = QueueLimits()
        limits.perUser = 1_000
        limits.total = 2_000_000
        let fixed = limits
        var queued: [(UserID, UserID)] = [] // (recipient, message ID), some of what is queued, for the ACKs
        var rng = SystemRandomNumberGenerator()
        func message(to recipient: UserID) -> QueuedMessage {
            var payload = template
            let id = UserID.random()
            payload.replaceSubrange(1..<17, with: id.bytes)
            return QueuedMessage(messageID: id, sender: sender, recipient: recipient, payload: payload, receivedAt: UInt64(Date().timeIntervalSince1970 * 1000))
        }
        func ms(_ body: () -> Void) -> Double {
            let t0 = DispatchTime.now().uptimeNanoseconds
            body()
            return Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6
        }
        let memoryBefore = ServerBench.residentBytes()
        var total = 0, fillTime = 0.0
        print("  queued     500 MSGs   500 ACKs   a POLL   a first REGISTER   an expiry pass   the counts   (ms; median of the rounds)")
        for stage in stages {
            // Fill to the stage: ten messages a user, round and round.
            while total < stage {
                let n = min(5_000, stage - total)
                let batch = (0..<n).map { i in message(to: ids[(total + i) % ids.count]) }
                fillTime += ms { _ = ServerBench.blocking { try await store.enqueue(batch, limits: fixed) } }
                for m in batch.prefix(50) { queued.append((m.recipient, m.messageID)) }
                total += n
            }
            func median(_ rounds: Int, _ body: () -> Void) -> Double {
                let times = (0..<rounds).map { _ in ms(body) }.sorted()
                return times[times.count / 2]
            }
            let msgs = median(9) {
                let batch = (0..<500).map { _ in message(to: ids.randomElement(using: &rng)!) }
                _ = ServerBench.blocking { try await store.enqueue(batch, limits: fixed) }
                total += 500
            }
            let acks = median(9) {
                queued.shuffle(using: &rng)
                let taken = Array(queued.suffix(500))
                queued.removeLast(min(500, queued.count))
                _ = ServerBench.blocking { try await store.remove(taken.map { (user: $0.0, messageID: $0.1) }) }
                total -= taken.count
            }
            let poll = median(51) {
                let user = ids.randomElement(using: &rng)!
                _ = ServerBench.blocking { try await store.fetch(user, limit: 11) }
            }
            let register = median(9) { _ = ServerBench.blocking { try await store.register(.random(), key: [2], timestamp: 1) } }
            let expiry = median(3) { _ = ServerBench.blocking { try await store.expire(before: 1) } }
            let counting = median(3) { _ = ServerBench.blocking { try await store.counts() } }
            print("  " + [String(stage).padded(7), format2(msgs).padded(10), format2(acks).padded(10), format2(poll).padded(8),
                          format2(register).padded(18), format2(expiry).padded(16), format2(counting).padded(12)].joined(separator: " "))
        }
        let memory = ServerBench.residentBytes() - memoryBefore
        let counts = ServerBench.blocking { try await store.counts() }
        print("  filled at \(format1(Double(stages.last!) / max(0.001, fillTime / 1_000))) messages/s (commits of 5,000); "
              + "the store holds \(counts?.users ?? -1) users, \(counts?.queued ?? -1) messages; resident memory +\(format1(Double(memory) / 1_048_576)) MiB in this process")
        // Start-up: a fresh store on the full database, to its first answered commit.
        let before = ServerBench.residentBytes()
        var fresh: S?
        let open = ms { fresh = try? reopen() }
        guard let fresh else { return print("  the store did not open again") }
        let one = [message(to: ids[0])]
        let first = ms { _ = ServerBench.blocking { try await fresh.enqueue(one, limits: fixed) } }
        print("  start-up on the full database: opened in \(format1(open)) ms, its first commit answered \(format1(first)) ms later; "
              + "resident memory +\(format1(Double(ServerBench.residentBytes() - before) / 1_048_576)) MiB")
        (fresh as? PostgresServerStore)?.close()
    }
}
