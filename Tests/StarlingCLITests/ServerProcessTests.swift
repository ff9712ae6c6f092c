import Foundation
import StarlingTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import StarlingYaOKServerPostgres
import StarlingWire
import StarlingYaOKServerCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `starling yaok-server` with real `send --server` and `listen --server`
/// processes on loopback: a recipient who was away receives on return.
@Suite(.serialized, .usesProcesses) struct ServerProcessTests {
    static func server(db: String, duration: Int = 120) async throws -> (LiveProcess, UInt16) {
        let p = try LiveProcess(["yaok-server", "--bind", "127.0.0.1", "--port", "0", "--db", db, "--json",
                                 "--duration", String(duration)])
        let started = try #require(await p.waitFor { $0["event"] as? String == "started" }, "\(p.text)")
        return (p, UInt16(try #require(started["port"] as? Int)))
    }

    /// Two people who are each other's contacts.
    static func pair() async throws -> (alice: String, bob: String) {
        let alice = ContactCommandTests.temporaryDirectory("alice"), bob = ContactCommandTests.temporaryDirectory("bob")
        #expect(try await StarlingProcess.run(["id", "--data-dir", alice, "--name", "alice"]).status == 0)
        #expect(try await StarlingProcess.run(["id", "--data-dir", bob, "--name", "bob"]).status == 0)
        for (from, to) in [(alice, bob), (bob, alice)] {
            let card = try ContactCommandTests.json(try await StarlingProcess.run(["contact", "qr", "--data-dir", from, "--json"]).stdout)
            let uri = try #require(card["uri"] as? String)
            let added = try await StarlingProcess.run(["contact", "add", "--data-dir", to, uri])
            #expect(added.status == 0, "\(added.stderr)")
        }
        return (alice, bob)
    }

    static func listen(_ dir: String, relay: UInt16, duration: Int = 60) throws -> LiveProcess {
        try LiveProcess(["listen", "--no-discovery", "--port", "0", "--json", "--data-dir", dir, "--server", "127.0.0.1:\(relay)",
                         "--duration", String(duration)])
    }

    static func send(_ dir: String, relay: UInt16, to: String, _ text: String, wait: Int = 15) async throws -> StarlingProcess.Result {
        try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--announce-interval", "1", "--data-dir", dir,
                                       "--server", "127.0.0.1:\(relay)", "--to", to, "--wait", String(wait), text])
    }

    @Test func anOfflineRecipientReceivesOnReturnOnceAndTheSenderHearsQueued() async throws {
        let db = ContactCommandTests.temporaryDirectory("relay") + ".sqlite"
        let (server, port) = try await Self.server(db: db)
        defer { server.stop() }
        let (alice, bob) = try await Self.pair()

        // Bob registers once (the relay queues only for users it knows), then goes away.
        let first = try Self.listen(bob, relay: port)
        #expect(await first.waitFor { ($0["text"] as? String)?.hasPrefix("registered with the Ya OK server") == true } != nil, "\(first.text)")
        first.stop()

        let sent = try await Self.send(alice, relay: port, to: "bob", "while you were away")
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        #expect(sent.stdout.contains("queued at the Ya OK server 127.0.0.1:\(port) for bob (they get it when they poll)"), "\(sent.stdout)")
        // Said once, by name: not again as the node's line by message ID and peer ID.
        #expect(!sent.stdout.contains("via yaok-server"), "\(sent.stdout)")

        // Bob comes back: the message arrives, stored, then acknowledged.
        let back = try Self.listen(bob, relay: port)
        let got = await back.waitFor { $0["event"] as? String == "privateMessage" }
        #expect(got?["text"] as? String == "while you were away" && got?["nickname"] as? String == "alice", "\(back.text)")
        #expect(got?["via"] as? String == "yaok-server", "\(back.text)")
        // Online now: the next one is sent on at once.
        let second = try await Self.send(alice, relay: port, to: "bob", "and now you are here")
        #expect(second.stdout.contains("(online: sent on at once)"), "\(second.stdout)")
        #expect(await back.waitFor { $0["text"] as? String == "and now you are here" } != nil, "\(back.text)")
        // Longer than a datagram (chunks both ways), whole.
        let long = String(repeating: "the water point at the school is open; ", count: 200) // 7,800 bytes
        let big = try await Self.send(alice, relay: port, to: "bob", long)
        #expect(big.status == 0, "\(big.stdout)\(big.stderr)")
        #expect(await back.waitFor { $0["text"] as? String == long } != nil, "\(back.text.suffix(500))")
        back.stop()

        // A third listen gets nothing twice: the ACKs emptied the queue.
        let third = try Self.listen(bob, relay: port)
        defer { third.stop() }
        #expect(await third.waitFor { ($0["text"] as? String)?.hasPrefix("registered with the Ya OK server") == true } != nil)
        let barrier = try await Self.send(alice, relay: port, to: "bob", "barrier")
        #expect(barrier.status == 0)
        #expect(await third.waitFor { $0["text"] as? String == "barrier" } != nil, "\(third.text)")
        #expect(!third.text.contains("while you were away") && !third.text.contains("and now you are here"), "\(third.text)")

        // Bob's history has each once.
        third.stop()
        let history = try await StarlingProcess.run(["contact", "list", "--data-dir", bob])
        #expect(history.status == 0)
    }

    /// A one-shot `send --server` says BYE as it leaves (issue 39): the server
    /// no longer counts it online, and what comes for it next is queued for
    /// its next POLL rather than pushed to a port that is gone.
    @Test func aOneShotSenderSaysByeAsItLeaves() async throws {
        let db = ContactCommandTests.temporaryDirectory("relay-bye") + ".sqlite"
        let (server, port) = try await Self.server(db: db)
        defer { server.stop() }
        let (alice, bob) = try await Self.pair()
        let first = try Self.listen(bob, relay: port)
        #expect(await first.waitFor { ($0["text"] as? String)?.hasPrefix("registered with the Ya OK server") == true } != nil, "\(first.text)")
        first.stop()
        let sent = try await Self.send(alice, relay: port, to: "bob", "from a one-shot sender")
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        // Alice has gone: bob's answer waits for her next POLL.
        let answer = try await Self.send(bob, relay: port, to: "alice", "an answer")
        #expect(answer.status == 0, "\(answer.stdout)\(answer.stderr)")
        #expect(answer.stdout.contains("queued at the Ya OK server 127.0.0.1:\(port) for alice (they get it when they poll)"), "\(answer.stdout)")
        #expect(!answer.stdout.contains("online"), "\(answer.stdout)")
    }

    /// `send --server --linger 6` waits the six seconds for the receipts past
    /// QUEUED (issue 52 item 11: it left at QUEUED); without --linger it leaves
    /// at the server's word, as README shows.
    @Test func anExplicitLingerWaitsPastQueuedForTheReceipts() async throws {
        let db = ContactCommandTests.temporaryDirectory("relay-linger") + ".sqlite"
        let (server, port) = try await Self.server(db: db)
        defer { server.stop() }
        let (alice, bob) = try await Self.pair()
        let online = try LiveProcess(["listen", "--no-discovery", "--port", "0", "--json", "--mark-read", "--data-dir", bob,
                                      "--server", "127.0.0.1:\(port)", "--duration", "90"])
        defer { online.stop() }
        #expect(await online.waitFor { ($0["text"] as? String)?.hasPrefix("registered with the Ya OK server") == true } != nil, "\(online.text)")
        func lingering(_ text: String) async throws -> (StarlingProcess.Result, Duration) {
            let started = ContinuousClock.now
            let r = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--announce-interval", "1", "--data-dir", alice,
                                                   "--server", "127.0.0.1:\(port)", "--to", "bob", "--wait", "15", "--linger", "6", text])
            return (r, ContinuousClock.now - started)
        }
        // --linger 6: the delivered and read receipts come back through the server.
        let (read, _) = try await lingering("and wait")
        #expect(read.status == 0, "\(read.stdout)\(read.stderr)")
        #expect(read.stdout.contains("queued at the Ya OK server 127.0.0.1:\(port) for bob (online: sent on at once)"), "\(read.stdout)")
        #expect(read.stdout.contains("* delivered to bob"), "\(read.stdout)")
        #expect(read.stdout.contains("* read by bob"), "\(read.stdout)")
        // Bob away: --linger 6 waits its six seconds for a receipt; without it, out at QUEUED.
        online.stop()
        let (queued, waited) = try await lingering("while away")
        #expect(queued.status == 0, "\(queued.stdout)\(queued.stderr)")
        #expect(queued.stdout.contains("(they get it when they poll)") && !queued.stdout.contains("delivered"), "\(queued.stdout)")
        #expect(waited >= .seconds(6), "left after \(waited)")
        let started = ContinuousClock.now
        let plain = try await Self.send(alice, relay: port, to: "bob", "quick")
        let quick = ContinuousClock.now - started
        #expect(plain.status == 0 && plain.stdout.contains("(they get it when they poll)"), "\(plain.stdout)\(plain.stderr)")
        #expect(quick < waited, "without --linger \(quick), with --linger 6 \(waited)")
    }

    /// The Ya OK server over IPv6 (issue 52 item 8): `yaok-server --bind ::1`, and
    /// `--server [::1]:PORT` on both sides; then a host name that has only an IPv6
    /// address (the namespace's hosts file), as a person's DNS would give it.
    @Test func theServerOverIPv6ByLiteralAndByName() async throws {
        let db = ContactCommandTests.temporaryDirectory("relay-v6") + ".sqlite"
        let p = try LiveProcess(["yaok-server", "--bind", "::1", "--port", "0", "--db", db, "--json", "--duration", "120"])
        defer { p.stop() }
        let started = try #require(await p.waitFor { $0["event"] as? String == "started" }, "\(p.text)")
        let port = UInt16(try #require(started["port"] as? Int))
        let (alice, bob) = try await Self.pair()
        func listen() throws -> LiveProcess {
            try LiveProcess(["listen", "--no-discovery", "--port", "0", "--json", "--data-dir", bob, "--server", "[::1]:\(port)", "--duration", "60"])
        }
        let first = try listen()
        #expect(await first.waitFor { ($0["text"] as? String) == "registered with the Ya OK server [::1]:\(port)" } != nil, "\(first.text)")
        first.stop()
        let sent = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--announce-interval", "1", "--data-dir", alice,
                                                  "--server", "[::1]:\(port)", "--to", "bob", "--wait", "15", "over IPv6"])
        #expect(sent.status == 0 && sent.stdout.contains("queued at the Ya OK server [::1]:\(port) for bob"), "\(sent.stdout)\(sent.stderr)")
        let back = try listen()
        defer { back.stop() }
        #expect(await back.waitFor { $0["text"] as? String == "over IPv6" } != nil, "\(back.text)")
        back.stop()
        // A name with an IPv6 address only, in a namespace of its own (its hosts file says so).
        let world = try ReadmeWorld("v6name")
        try "::1 relay6.example.org\n".write(toFile: "/etc/netns/\(world.namespace.name)/hosts", atomically: true, encoding: .utf8)
        let inside = try world.start("starling yaok-server --bind :: --port 41641 --db server.sqlite", as: "operator")
        defer { inside.stop() }
        #expect(await inside.waitForText("Ya OK server on [::]:41641"), "\(inside.text)")
        let named = try world.start("starling listen --server relay6.example.org:41641", as: "bob")
        defer { named.stop() }
        #expect(await named.waitForText("registered with the Ya OK server relay6.example.org:41641 ([::1]:41641)", seconds: 60), "\(named.text)")
    }

    /// Nobody registered under that name: the relay refuses at once, and the
    /// message is kept (exit 1), said in words. Sent again later as `send`
    /// says (`listen --server`, words on a terminal), once bob has registered:
    /// `listen` says that they go and what became of each.
    @Test func aRecipientTheRelayDoesNotKnowIsRefusedAndTheMessageKept() async throws {
        let db = ContactCommandTests.temporaryDirectory("relay") + ".sqlite"
        let (server, port) = try await Self.server(db: db)
        defer { server.stop() }
        let (alice, bob) = try await Self.pair()
        let r = try await Self.send(alice, relay: port, to: "bob", "hello?")
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("the Ya OK server refused it: the recipient has never registered with this server"), "\(r.stdout)")
        #expect(r.stdout.contains("the message is kept"))
        // No relay at all: kept as well.
        let none = try await Self.send(alice, relay: 1, to: "bob", "anyone?", wait: 3)
        #expect(none.status == 1)
        #expect(none.stdout.contains("did not answer"), "\(none.stdout)")
        // Bob registers; alice's `listen --server` (words) sends both and says so.
        let bobListens = try Self.listen(bob, relay: port)
        defer { bobListens.stop() }
        #expect(await bobListens.waitFor { ($0["text"] as? String)?.hasPrefix("registered with the Ya OK server") == true } != nil, "\(bobListens.text)")
        let again = try LiveProcess(["listen", "--no-discovery", "--port", "0", "--data-dir", alice, "--server", "127.0.0.1:\(port)", "--duration", "60"])
        defer { again.stop() }
        #expect(await again.waitForText("* sending 2 waiting messages to bob", seconds: 60), "\(again.text)")
        for text in ["hello?", "anyone?"] {
            #expect(await again.waitForText("· to bob: queued at the Ya OK server (“\(text)”)", seconds: 60), "\(again.text)")
            #expect(await again.waitForText("· to bob: delivered (“\(text)”)", seconds: 60), "\(again.text)")
            #expect(await bobListens.waitFor { $0["text"] as? String == text } != nil, "\(bobListens.text)")
        }
        // Each said once (the control: each was said).
        #expect(again.text.components(separatedBy: "· to bob: delivered (“hello?”)").count == 2, "\(again.text)")
    }

    /// Two Ya OK servers on one PostgreSQL share the queues: alice sends
    /// through one, bob (away at the time) collects through the other. The
    /// metrics endpoint counts what went through.
    /// A store on the cluster with one registered recipient (the caller closes it).
    static func postgresStoreWithARecipient(_ pg: PostgresCluster) async throws -> (PostgresServerStore, UserID) {
        let store = try await PostgresServerStore(url: pg.url)
        let b = UserID.random()
        #expect(try await store.register(b, key: [UInt8](repeating: 1, count: 32), timestamp: 1) == .registered)
        return (store, b)
    }

    /// The PostgreSQL store's rules, as the in-memory reference and the SQLite
    /// store state them, with its batches in a few round trips: unknown
    /// recipients, retries stored once (within a batch too), a full queue, order.
    /// PostgreSQL restarted under load: commits during the outage fail (the
    /// server answers REJECTED, the sender retries), commits succeed again once
    /// it is back (the pool reconnects), and every message of a commit that
    /// succeeded is there, once: nothing acknowledged is lost.
    @Test func aPostgreSQLRestartUnderLoadLosesNothingAcknowledged() async throws {
        let pg = try PostgresCluster()
        defer { pg.stop() }
        let (store, b) = try await Self.postgresStoreWithARecipient(pg)
        defer { store.close() }
        let a = UserID.random()
        final class Shared: @unchecked Sendable {
            let lock = NSLock()
            var acknowledged: [UserID] = []
            var failures = 0
            var afterRestart = 0
            var restarted = false
            var done = false
        }
        let shared = Shared()
        // Room for every round (the writer stops at 20,000 rounds of 10): a queue that filled
        // would answer recipientQueueFull, and nothing would count as after the restart.
        var limits = QueueLimits()
        limits.perUser = 1_000_000
        limits.total = 1_000_000
        let roomy = limits
        let writer = Task {
            var rounds = 0
            while !shared.lock.withLock({ shared.done }), rounds < 20_000 {
                rounds += 1
                let ids = (0..<10).map { _ in UserID.random() }
                let batch = ids.map { QueuedMessage(messageID: $0, sender: a, recipient: b, payload: [7], receivedAt: 5) }
                do {
                    let (outcomes, _) = try await store.commit(batch, limits: roomy, removing: [])
                    let stored = zip(ids, outcomes).filter { $0.1 == .stored }.map(\.0)
                    shared.lock.withLock {
                        shared.acknowledged += stored
                        if shared.restarted { shared.afterRestart += stored.count }
                    }
                } catch {
                    shared.lock.withLock { shared.failures += 1 }
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }
        }
        // Under load, then restarted.
        let started = ContinuousClock.now
        while shared.lock.withLock({ shared.acknowledged.count }) < 500, ContinuousClock.now - started < .seconds(60) {
            try await Task.sleep(for: .milliseconds(10))
        }
        try pg.restart()
        shared.lock.withLock { shared.restarted = true }
        // Commits succeed again.
        let back = ContinuousClock.now
        while shared.lock.withLock({ shared.afterRestart }) < 200, ContinuousClock.now - back < .seconds(60) {
            try await Task.sleep(for: .milliseconds(20))
        }
        shared.lock.withLock { shared.done = true }
        await writer.value
        let (acknowledged, afterRestart) = shared.lock.withLock { (shared.acknowledged, shared.afterRestart) }
        #expect(afterRestart >= 200, "commits after the restart: \(afterRestart)")
        let held = try await store.counts().queued
        #expect(held == acknowledged.count, "\(held) held, \(acknowledged.count) acknowledged")
        // Each acknowledged one is there (fetched in pages of the recipient's queue).
        let there = Set(try await store.fetch(b, limit: 100_000).map(\.messageID))
        #expect(Set(acknowledged).isSubset(of: there), "\(Set(acknowledged).subtracting(there).count) acknowledged messages lost")
        print("PostgreSQL restart under load: \(acknowledged.count) acknowledged, \(shared.lock.withLock { shared.failures }) commits refused during it, \(afterRestart) after, 0 lost")
    }

    @Test func thePostgreSQLStoreKeepsTheSameRules() async throws {
        let pg = try PostgresCluster()
        defer { pg.stop() }
        let (store, b) = try await Self.postgresStoreWithARecipient(pg)
        defer { store.close() }
        let a = UserID.random()
        var limits = QueueLimits()
        limits.perUser = 3
        let m = { (id: UserID) in QueuedMessage(messageID: id, sender: a, recipient: b, payload: [9, 8], receivedAt: 5) }
        let ids = (0..<4).map { _ in UserID.random() }
        let outcomes = try await store.enqueue([m(ids[0]), m(ids[0]), m(ids[1]), m(ids[2]), m(ids[3]),
                                                QueuedMessage(messageID: .random(), sender: a, recipient: .random(), payload: [9], receivedAt: 5)],
                                               limits: limits)
        #expect(outcomes == [.stored, .stored, .stored, .stored, .recipientQueueFull, .unknownRecipient])
        #expect(try await store.enqueue([m(ids[1])], limits: limits) == [.stored], "a retry of one held is QUEUED again, even when full")
        #expect(try await store.counts().queued == 3)
        #expect(try await store.fetch(b, limit: 10).map(\.messageID) == Array(ids.prefix(3)), "in arrival order")
        #expect(try await store.fetch(b, limit: 10).first?.payload == [9, 8])
        #expect(try await store.remove(b, messageID: ids[0])?.messageID == ids[0])
        limits.total = 2
        #expect(try await store.enqueue([m(.random())], limits: limits) == [.serverFull])
        #expect(try await store.expire(before: 6) == 2)
        // The length kept beside the queue followed the removal and the expiry.
        let kept = [UserID.random(), UserID.random()]
        #expect(try await store.enqueue([m(kept[0]), m(kept[1]), m(.random())], limits: limits) == [.stored, .stored, .serverFull])
        // ACKs together, in one statement: each finds its own, once; not someone else's.
        let found = try await store.remove([(b, kept[0]), (a, kept[1]), (b, .random()), (b, kept[0])])
        #expect(found.map { $0?.messageID } == [kept[0], nil, nil, nil])
        #expect(found[0]?.sender == a && found[0]?.payload == [9, 8])
        // MSGs and ACKs in one transaction.
        let next = UserID.random()
        let both = try await store.commit([m(next)], limits: limits, removing: [(b, kept[1])])
        #expect(both.stored == [.stored] && both.removed.map { $0?.messageID } == [kept[1]])
        #expect(try await store.fetch(b, limit: 10).map(\.messageID) == [next])
        // Each recipient's length followed too: b holds 1 of 3 (the total cap lifted).
        limits.total = 100
        #expect(try await store.enqueue([m(.random()), m(.random()), m(.random())], limits: limits) == [.stored, .stored, .recipientQueueFull])
        #expect(try pg.sql("SELECT n FROM relay_queue_lengths").trimmingCharacters(in: .whitespacesAndNewlines) == "3")
        #expect(try await store.expire(before: 6) == 3)
        #expect(try pg.sql("SELECT n FROM relay_queue_lengths").trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        // Lengths that drifted are counted again when a server starts.
        try pg.sql("UPDATE relay_queue_count SET total = 100; UPDATE relay_queue_lengths SET n = 3")
        #expect(try await store.enqueue([m(.random())], limits: limits) == [.recipientQueueFull])
        let reopened = try await PostgresServerStore(url: pg.url)
        defer { reopened.close() }
        #expect(try await reopened.enqueue([m(.random())], limits: limits) == [.stored])
        limits.total = 1
        #expect(try await reopened.enqueue([m(.random())], limits: limits) == [.serverFull])
        // A message ID another sender's message is queued under is refused, not QUEUED.
        let taken = UserID.random(), mallory = UserID.random()
        limits.total = 100
        #expect(try await reopened.enqueue([QueuedMessage(messageID: taken, sender: mallory, recipient: b, payload: [1], receivedAt: 9),
                                            m(taken)], limits: limits) == [.stored, .messageIDTaken])
        #expect(try await reopened.enqueue([m(taken)], limits: limits) == [.messageIDTaken])
        #expect(try await reopened.fetch(b, limit: 10).filter { $0.messageID == taken }.map(\.sender) == [mallory])
        // The same sender's ID with other bytes is refused, in a batch and after (issue 39).
        let reused = UserID.random()
        let bytes = { (p: UInt8) in QueuedMessage(messageID: reused, sender: a, recipient: b, payload: [p], receivedAt: 9) }
        #expect(try await reopened.enqueue([bytes(1), bytes(2), bytes(1)], limits: limits) == [.stored, .messageIDReused, .stored])
        #expect(try await reopened.enqueue([bytes(3)], limits: limits) == [.messageIDReused])
        #expect(try await reopened.fetch(b, limit: 10).filter { $0.messageID == reused }.map(\.payload) == [[1]])
    }

    final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var raised = false
        private var count = 0
        func raise() { lock.withLock { raised = true } }
        var isRaised: Bool { lock.withLock { raised } }
        /// The writer's rounds so far.
        func tick() { lock.withLock { count += 1 } }
        var rounds: Int { lock.withLock { count } }
    }

    /// A server that starts while another one writes (a rolling restart under
    /// load) starts: its startup takes the locks in the writers' order. (When
    /// the recount ran inside the DDL's transaction, PostgreSQL found a deadlock
    /// and the starting server failed.) Every write of the busy one succeeds.
    @Test func aServerStartingBesideABusyOneStarts() async throws {
        let pg = try PostgresCluster()
        defer { pg.stop() }
        let (busy, b) = try await Self.postgresStoreWithARecipient(pg)
        defer { busy.close() }
        let a = UserID.random()
        let done = Flag() // not Task.cancel(): a cancelled query would count as a failure
        let writer = Task {
            var failures = 0, rounds = 0
            let limits = QueueLimits()
            while !done.isRaised, rounds < 5_000 {
                rounds += 1
                done.tick()
                let ids = (0..<20).map { _ in UserID.random() }
                let batch = ids.map { QueuedMessage(messageID: $0, sender: a, recipient: b, payload: [1], receivedAt: 5) }
                do {
                    _ = try await busy.commit(batch, limits: limits, removing: [])
                    _ = try await busy.commit([], limits: limits, removing: ids.map { (b, $0) })
                } catch {
                    failures += 1
                }
            }
            return (failures, rounds)
        }
        // The writer is under way before the first startup (bounded: 30 s), and writes during them.
        let started = ContinuousClock.now
        while done.rounds == 0, ContinuousClock.now - started < .seconds(30) { try await Task.sleep(for: .milliseconds(10)) }
        let before = done.rounds
        var opened = 0
        for _ in 0..<10 {
            let starting = try await PostgresServerStore(url: pg.url)
            starting.close()
            opened += 1
        }
        let during = done.rounds - before
        done.raise()
        let (failures, rounds) = await writer.value
        #expect(opened == 10)
        #expect(failures == 0, "\(failures) of \(rounds) rounds failed")
        #expect(before > 0 && during > 0, "the writer ran beside the startups: \(before) rounds before, \(during) during")
        #expect(try await busy.counts().queued == 0)
    }

    @Test func twoServersOnOnePostgreSQLShareTheQueues() async throws {
        let pg = try PostgresCluster()
        defer { pg.stop() }
        var servers: [(LiveProcess, UInt16)] = []
        var metricsPorts: [Int] = []
        for _ in 0..<2 {
            let p = try LiveProcess(["yaok-server", "--bind", "127.0.0.1", "--port", "0", "--postgres", pg.url, "--json",
                                     "--duration", "120", "--metrics", "127.0.0.1:0"])
            let started = try #require(await p.waitFor(seconds: 60) { $0["event"] as? String == "started" }, "\(p.text)")
            servers.append((p, UInt16(try #require(started["port"] as? Int))))
            metricsPorts.append(try #require(started["metricsPort"] as? Int))
            #expect((started["db"] as? String)?.contains("127.0.0.1:\(pg.port)") == true)
        }
        defer { for (p, _) in servers { p.stop() } }
        let (alice, bob) = try await Self.pair()
        // Bob registers through server B, then goes away.
        let first = try Self.listen(bob, relay: servers[1].1)
        #expect(await first.waitFor { ($0["text"] as? String)?.hasPrefix("registered with the Ya OK server") == true } != nil, "\(first.text)")
        first.stop()
        let sent = try await Self.send(alice, relay: servers[0].1, to: "bob", "through A, for B")
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        #expect(sent.stdout.contains("queued at the Ya OK server 127.0.0.1:\(servers[0].1)"), "\(sent.stdout)")
        let back = try Self.listen(bob, relay: servers[1].1)
        defer { back.stop() }
        let got = await back.waitFor { $0["event"] as? String == "privateMessage" }
        #expect(got?["text"] as? String == "through A, for B", "\(back.text)")

        // Prometheus text from server A: one message in; the shared queue's depth on both.
        func metrics(_ port: Int) async -> String {
            let url = URL(string: "http://127.0.0.1:\(port)/metrics")!
            return (try? await URLSession.shared.data(from: url)).map { String(decoding: $0.0, as: UTF8.self) } ?? ""
        }
        var text = ""
        let until = Date().addingTimeInterval(20)
        while !text.contains("starling_relay_messages_in_total 1"), Date() < until {
            text = await metrics(metricsPorts[0])
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(text.contains("starling_relay_messages_in_total 1"), "\(text)")
        #expect(text.contains("# TYPE starling_relay_queue_depth gauge") && text.contains("starling_relay_registered_users 2"), "\(text)")
        #expect(text.contains(#"starling_relay_rejections_total{reason="#))
        // Label values are short identifiers, one per reason, as docs/YAOK.md lists them.
        for reason in ServerRejection.allCases {
            #expect(text.contains(#"starling_relay_rejections_total{reason="\#(reason.identifier)"}"#), "\(reason.identifier)")
        }
        #expect(!text.contains(#"reason="the_"#) && text.contains("starling_relay_dead_pushes_total 0"), "\(text)")
        #expect(text.contains("# TYPE starling_relay_checkpoint_failures_total counter") && text.contains("starling_relay_store_failures_total 0"), "\(text)")
    }

    /// A message through the Ya OK server stays on the server until the
    /// recipient has stored it: bob's disk is full when it comes (not stored,
    /// so not acknowledged to the server: a restarted server still holds it),
    /// and once space is back it is offered again, stored and taken off.
    @Test func aMessageStaysOnTheServerUntilTheRecipientStoredIt() async throws {
        let disk = try await SmallDisk(megabytes: 4) // bob's data directory goes on it
        defer { disk.remove() }
        let db = ContactCommandTests.temporaryDirectory("relay-held") + ".sqlite"
        var (server, port) = try await Self.server(db: db)
        defer { server.stop() }
        let (aliceDir, bobHome) = try await Self.pair()
        let bobDir = disk.path + "/bob"
        let copied = try await StarlingProcess.run(executable: URL(fileURLWithPath: "/bin/cp"), ["-a", bobHome, bobDir])
        try #require(copied.status == 0, "\(copied.stderr)")
        let card = try ContactCommandTests.json(try await StarlingProcess.run(["contact", "qr", "--data-dir", bobDir, "--json"]).stdout)
        let bobUser = try #require(card["userID"] as? String).replacingOccurrences(of: "-", with: "").uppercased()
        func waitingFor(_ user: String) async throws -> String {
            let r = try await StarlingProcess.run(executable: URL(fileURLWithPath: "/usr/bin/python3"), ["-c", """
                import sqlite3, sys
                print(sqlite3.connect(sys.argv[1]).execute("SELECT COUNT(*) FROM queue WHERE hex(recipient) = ?", (sys.argv[2],)).fetchone()[0])
                """, db, user])
            return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) + r.stderr
        }
        let first = try Self.listen(bobDir, relay: port)
        #expect(await first.waitFor { ($0["text"] as? String)?.hasPrefix("registered with the Ya OK server") == true } != nil, "\(first.text)")
        first.stop()
        let sent = try await Self.send(aliceDir, relay: port, to: "bob", "keep it until I have it")
        #expect(sent.stdout.contains("queued at the Ya OK server"), "\(sent.stdout)")

        // Full: taken, not stored, so not acknowledged to the server.
        try await disk.fill()
        let full = try Self.listen(bobDir, relay: port)
        #expect(await full.waitFor(seconds: 30) { $0["event"] as? String == "notSaved" } != nil, "\(full.text)")
        full.stop()
        server.stop()
        let again = try LiveProcess(["yaok-server", "--bind", "127.0.0.1", "--port", "0", "--db", db, "--json", "--duration", "120"])
        let started = try #require(await again.waitFor { $0["event"] as? String == "started" }, "\(again.text)")
        #expect(started["queued"] as? Int == 1, "still on the server while not stored: \(started)")
        #expect(try await waitingFor(bobUser) == "1", "the one waiting is bob's")
        (server, port) = (again, UInt16(try #require(started["port"] as? Int)))

        // Space again: offered again, stored, acknowledged, taken off the server.
        try disk.free()
        let back = try Self.listen(bobDir, relay: port)
        let got = await back.waitFor(seconds: 40) { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "keep it until I have it" }
        #expect(got != nil, "\(back.text)")
        try await Task.sleep(for: .seconds(2)) // its ACK reaches the server
        back.stop()
        // Taken off: nothing waits for bob on the server any more (what it holds
        // now is bob's receipt, for alice, who is away).
        #expect(try await waitingFor(bobUser) == "0", "still on the server for bob after it was stored")
    }

    /// `starling chat --server`: a contact who is not on the mesh gets the
    /// message through the relay (the mesh has no route: no discovery, no
    /// peers), the state shows on the line, and the sealed receipts come back.
    @Test func chatReachesAContactOffTheMeshThroughTheRelay() async throws {
        let db = ContactCommandTests.temporaryDirectory("relay") + ".sqlite"
        let (server, port) = try await Self.server(db: db)
        defer { server.stop() }
        let (aliceDir, bobDir) = try await Self.pair()
        let first = try Self.listen(bobDir, relay: port)
        #expect(await first.waitFor { ($0["text"] as? String)?.hasPrefix("registered with the Ya OK server") == true } != nil, "\(first.text)")
        first.stop()

        func chat(_ dir: String) throws -> LiveProcess {
            try LiveProcess(["chat", "--plain", "--no-discovery", "--port", "0", "--data-dir", dir, "--server", "127.0.0.1:\(port)"])
        }
        let alice = try chat(aliceDir)
        defer { alice.stop() }
        #expect(await alice.waitForText("registered with the Ya OK server"), "\(alice.text)")
        alice.type("/msg bob are you at the shelter?")
        #expect(await alice.waitForText("queued at the Ya OK server"), "\(alice.text)")
        let bob = try chat(bobDir)
        defer { bob.stop() }
        #expect(await bob.waitForText("<alice → you> (via the Ya OK server) are you at the shelter?"), "\(bob.text)")
        // Bob's receipts (sealed, through the relay; alice is online, so they are pushed at once).
        #expect(await alice.waitForText("to bob: read"), "\(alice.text)")
        // And back: alice is online, so bob's answer is sent on at once.
        bob.type("/msg alice yes, since noon")
        #expect(await alice.waitForText("<bob → you> (via the Ya OK server) yes, since noon"), "\(alice.text)")
        alice.type("/contacts")
        #expect(await alice.waitForText("bob  away · last reached via the Ya OK server"), "\(alice.text)")
    }
}
