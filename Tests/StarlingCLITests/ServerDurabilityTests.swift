import Crypto
import Foundation
import StarlingTestSupport
import StarlingCrypto
import StarlingTransport
import StarlingWire
import StarlingYaOK
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A relay user speaking the packets directly (no retries, no manners): for
/// loads and for what a well-behaved client never sends.
actor RawRelayUser {
    let identity = Identity.generate()
    let id = UserID.random()
    private let socket: UDPSocket
    private(set) var port: UInt16
    private(set) var token: ServerToken?
    private(set) var answers: [ServerPacket] = []
    private(set) var queued: Set<UserID> = []
    private var reader: Task<Void, Never>?

    init(port: UInt16) throws {
        self.port = port
        socket = try UDPSocket(bindTo: .loopback(0))
    }

    func start() {
        let stream = socket.datagrams(maxSize: 2_048)
        reader = Task { [weak self] in
            for await (_, bytes) in stream {
                guard let p = try? ServerPacket.decode(bytes, .toClient) else { continue }
                await self?.got(p)
            }
        }
    }

    private func got(_ p: ServerPacket) {
        if case let .queued(id, _) = p { queued.insert(id); return }
        if case let .registered(t, _) = p { token = t }
        if answers.count < 100_000 { answers.append(p) }
    }

    func moveTo(_ port: UInt16) { self.port = port; token = nil }

    func send(_ packet: ServerPacket) { _ = socket.send(packet.encode(), to: .loopback(port)) }
    func sendRaw(_ bytes: [UInt8]) { _ = socket.send(bytes, to: .loopback(port)) }

    func registration(at t: UInt64) throws -> ServerPacket {
        var r = ServerRegistration(userID: id, timestamp: t, signature: [], publicKey: identity.signingPublicKey)
        r.signature = Array(try identity.signingKey.signature(for: r.signedBytes()))
        return .register(r)
    }

    /// Registers; waits for the token (a generous limit for a loaded machine).
    func register() async throws -> ServerToken {
        token = nil
        let deadline = Date().addingTimeInterval(20)
        while token == nil, Date() < deadline {
            send(try registration(at: UInt64(Date().timeIntervalSince1970 * 1000)))
            for _ in 0..<50 where token == nil { try await Task.sleep(for: .milliseconds(10)) }
        }
        return try #require(token)
    }

    func takeAnswers() -> [ServerPacket] { defer { answers = [] }; return answers }
    func queuedCount() -> Int { queued.count }
    func stop() { reader?.cancel(); socket.close() }
}

@Suite(.serialized, .usesProcesses) struct ServerDurabilityTests {
    /// `starling yaok-server` on a free loopback port with `db`; its "started" event.
    /// The caller stops it.
    static func relayServer(db: String, _ options: [String] = []) async throws -> (LiveProcess, started: [String: Any]) {
        let server = try LiveProcess(["yaok-server", "--bind", "127.0.0.1", "--port", "0", "--db", db, "--json", "--duration", "120"] + options)
        guard let started = await server.waitFor({ $0["event"] as? String == "started" }) else {
            server.stop()
            throw Failure(text: "the Ya OK server did not start: \(server.text)")
        }
        return (server, started)
    }

    /// Alice and bob registered; bob then away (BYE), so that what alice
    /// sends waits in his queue. The caller stops both.
    static func aliceAndAwayBob(port: UInt16) async throws -> (alice: RawRelayUser, bob: RawRelayUser, aliceToken: ServerToken) {
        let alice = try RawRelayUser(port: port), bob = try RawRelayUser(port: port)
        await alice.start(); await bob.start()
        let aliceToken = try await alice.register()
        await bob.send(.bye(token: try await bob.register()))
        return (alice, bob, aliceToken)
    }

    struct Failure: Error, CustomStringConvertible { var text: String; var description: String { text } }

    /// Thousands of messages in flight, then SIGKILL: every message the
    /// server answered QUEUED for is there after a restart (group commits,
    /// synchronous = FULL), and none comes twice once acknowledged.
    @Test func aServerKilledUnderLoadLosesNothingItAnsweredQueuedFor() async throws {
        let db = ContactCommandTests.temporaryDirectory("relay-kill") + ".sqlite"
        let limits = ["--rate-per-user", "1000000", "--rate-per-address", "1000000"]
        let (first, started) = try await Self.relayServer(db: db, limits)
        defer { first.stop() }
        let (alice, bob, aliceToken) = try await Self.aliceAndAwayBob(port: UInt16(try #require(started["port"] as? Int)))
        defer { Task { await alice.stop(); await bob.stop() } }

        let count = 4_000
        let bobKey = bob.identity.noisePublicKey, bobID = bob.id, aliceID = alice.id, aliceIdentity = alice.identity
        let messages: [(UserID, [UInt8])] = try (0..<count).map { i in
            let id = UserID.random()
            return (id, try SealedMessage.seal(.text("message \(i)"), id: id, timestamp: 1_795_000_000_000 + UInt64(i), from: aliceIdentity,
                                               senderID: aliceID, to: bobID, recipientAgreementKey: bobKey))
        }
        // Send with up to 400 unanswered; kill the server once 1,000 are answered.
        var sent = 0
        let deadline = Date().addingTimeInterval(60)
        while sent < count, Date() < deadline {
            let answered = await alice.queuedCount()
            if answered >= 1_000 { break }
            if sent - answered < 400 {
                let (_, payload) = messages[sent]
                await alice.send(.message(sender: aliceID, recipient: bobID, payload: payload, token: aliceToken))
                sent += 1
            } else {
                try await Task.sleep(for: .milliseconds(1))
            }
        }
        kill(first.process.processIdentifier, SIGKILL)
        _ = StarlingProcess.waitForExit(first.process, seconds: 10)
        let acknowledged = await alice.queued
        #expect(acknowledged.count >= 1_000, "answered \(acknowledged.count) of \(sent) sent")
        #expect(sent > acknowledged.count, "some were in flight at the kill (\(sent) sent)")

        // The same database again: bob collects everything.
        let (second, again) = try await Self.relayServer(db: db, limits)
        defer { second.stop() }
        let queuedAfter = try #require(again["queued"] as? Int)
        #expect(queuedAfter >= acknowledged.count)
        await bob.moveTo(UInt16(try #require(again["port"] as? Int)))
        let token = try await bob.register()
        var received: [UserID: Int] = [:]
        var acked: Set<UserID> = []
        var afterAck = 0
        // Generous: beside the whole suite on two cores a POLL's round can take
        // ~0.5 s, and 100 of them are needed (10 messages a POLL); a fresh-clone
        // run on a busier machine got through 65 in 150 s.
        let until = Date().addingTimeInterval(360)
        var empty = false
        while !empty, Date() < until {
            await bob.send(.poll(token: token))
            // The whole answer: whatever comes until 100 ms pass without a packet.
            var batch: [ServerPacket] = []
            for _ in 0..<400 {
                try await Task.sleep(for: .milliseconds(5))
                batch = await bob.takeAnswers()
                if !batch.isEmpty { break }
            }
            // Until 100 ms pass without a packet, or the whole answer is in (10, or NO_MESSAGES).
            func whole() -> Bool {
                batch.contains { if case .noMessages = $0 { true } else { false } }
                    || batch.filter { if case .message = $0 { true } else { false } }.count >= 10
            }
            var quiet = 0
            while !batch.isEmpty, quiet < 20, !whole() {
                try await Task.sleep(for: .milliseconds(5))
                let more = await bob.takeAnswers()
                quiet = more.isEmpty ? quiet + 1 : 0
                batch += more
            }
            for p in batch {
                switch p {
                case .noMessages: empty = true
                case let .message(_, _, payload, _):
                    let header = try SealedMessage.peek(payload)
                    received[header.messageID, default: 0] += 1
                    // Twice before its ACK is the protocol (a POLL's answer still on its
                    // way when the next POLL goes); after its ACK it must not come again.
                    if acked.contains(header.messageID) { afterAck += 1 }
                    acked.insert(header.messageID)
                    await bob.send(.ack(token: token, messageID: header.messageID))
                default: break
                }
            }
            if !batch.isEmpty { try await Task.sleep(for: .milliseconds(20)) } // the ACKs go in before the next poll
        }
        #expect(empty, "the queue did not empty: \(received.count) received")
        let lost = acknowledged.subtracting(received.keys)
        #expect(lost.isEmpty, "\(lost.count) messages answered QUEUED were lost")
        let sentIDs = Set(messages.prefix(sent).map(\.0))
        #expect(Set(received.keys).isSubset(of: sentIDs))
        #expect(received.count == queuedAfter, "each message once: \(received.count) distinct of \(queuedAfter) held")
        #expect(afterAck == 0, "\(afterAck) messages came again after their ACK")
    }

    /// The server's disk fills up (a 2 MiB tmpfs the test mounts): what it could
    /// not make durable is answered REJECTED (storage failed), never QUEUED; it
    /// keeps answering; when space is freed the same messages are QUEUED; and a
    /// restart on the same database holds exactly what was answered QUEUED.
    @Test func aFullDiskIsRejectedNeverQueuedAndNothingHalfWrittenRemains() async throws {
        let disk = try await SmallDisk(megabytes: 2)
        defer { disk.remove() }
        let db = disk.path + "/queue.sqlite"
        let (server, started) = try await Self.relayServer(db: db)
        defer { server.stop() }
        let port = UInt16(try #require(started["port"] as? Int))
        let (alice, bob, aliceToken) = try await Self.aliceAndAwayBob(port: port)
        defer { Task { await alice.stop(); await bob.stop() } }
        let bobKey = bob.identity.noisePublicKey, bobID = bob.id, aliceID = alice.id, aliceIdentity = alice.identity
        func message(_ i: Int) throws -> (UserID, [UInt8]) {
            let id = UserID.random()
            return (id, try SealedMessage.seal(.text("message \(i) " + String(repeating: "x", count: 600)), id: id,
                                               timestamp: 1_795_000_000_000 + UInt64(i), from: aliceIdentity, senderID: aliceID, to: bobID,
                                               recipientAgreementKey: bobKey))
        }
        func answers(for ids: Set<UserID>) async throws -> (queued: Set<UserID>, rejected: Set<UserID>) {
            var rejected: Set<UserID> = []
            let end = Date().addingTimeInterval(30)
            while Date() < end {
                for p in await alice.takeAnswers() {
                    if case let .rejected(why, id?) = p, ids.contains(id) {
                        #expect(why == .storageFailed, "\(why)")
                        rejected.insert(id)
                    }
                }
                let queued = await alice.queued.intersection(ids)
                if queued.count + rejected.count == ids.count { return (queued, rejected) }
                try await Task.sleep(for: .milliseconds(20))
            }
            return (await alice.queued.intersection(ids), rejected)
        }
        // Before: the positive control.
        let first = try message(0)
        await alice.send(.message(sender: aliceID, recipient: bobID, payload: first.1, token: aliceToken))
        #expect(try await answers(for: [first.0]).queued == [first.0])

        // Full: each is answered, and none QUEUED that could not be stored.
        try await disk.fill()
        let full = try (1...30).map(message)
        for (_, payload) in full {
            await alice.send(.message(sender: aliceID, recipient: bobID, payload: payload, token: aliceToken))
            try await Task.sleep(for: .milliseconds(5))
        }
        let whileFull = try await answers(for: Set(full.map(\.0)))
        #expect(whileFull.queued.count + whileFull.rejected.count == full.count, "every message answered")
        #expect(!whileFull.rejected.isEmpty, "a full disk rejects: \(whileFull.queued.count) queued")

        // Space again: the rejected ones are queued when sent again.
        try disk.free()
        let again = full.filter { whileFull.rejected.contains($0.0) }
        for (_, payload) in again { await alice.send(.message(sender: aliceID, recipient: bobID, payload: payload, token: aliceToken)) }
        let after = try await answers(for: Set(again.map(\.0)))
        #expect(after.queued.count == again.count, "\(after.queued.count) of \(again.count) queued once space came back")

        // A restart on the same database holds what was answered QUEUED, no more, no less.
        server.stop()
        let (second, reopened) = try await Self.relayServer(db: db)
        defer { second.stop() }
        let total = 1 + whileFull.queued.count + after.queued.count
        #expect(reopened["queued"] as? Int == total, "\(reopened) against \(total) answered QUEUED")
        print("full disk: \(whileFull.queued.count) queued, \(whileFull.rejected.count) rejected of \(full.count); \(after.queued.count) queued after; \(total) held after a restart")
    }

    /// ACKs go into the group commits beside the MSGs; a POLL sent right
    /// behind its ACKs (no pause) waits for their commit, so that what was
    /// acknowledged never comes again, and each sender hears DELIVERED.
    @Test func aPollRightBehindItsAcksNeverBringsThemBack() async throws {
        let db = ContactCommandTests.temporaryDirectory("relay-acks") + ".sqlite"
        let (server, started) = try await Self.relayServer(db: db, ["--rate-per-user", "1000000", "--rate-per-address", "1000000"])
        defer { server.stop() }
        let (alice, bob, aliceToken) = try await Self.aliceAndAwayBob(port: UInt16(try #require(started["port"] as? Int)))
        defer { Task { await alice.stop(); await bob.stop() } }
        let count = 60
        for i in 0..<count {
            let id = UserID.random()
            let payload = try SealedMessage.seal(.text("m\(i)"), id: id, timestamp: 1_795_000_000_000, from: alice.identity,
                                                 senderID: alice.id, to: bob.id, recipientAgreementKey: bob.identity.noisePublicKey)
            await alice.send(.message(sender: alice.id, recipient: bob.id, payload: payload, token: aliceToken))
        }
        let deadline = Date().addingTimeInterval(30)
        while await alice.queuedCount() < count, Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(await alice.queuedCount() == count)
        let token = try await bob.register()
        var received: [UserID: Int] = [:]
        var unacknowledged: [UserID] = []
        var empty = false
        await bob.send(.poll(token: token))
        let until = Date().addingTimeInterval(60)
        var quiet = 0
        while !empty, Date() < until {
            try await Task.sleep(for: .milliseconds(5))
            var ids: [UserID] = []
            for p in await bob.takeAnswers() {
                switch p {
                case .noMessages: empty = true
                case let .message(_, _, payload, _): ids.append(try SealedMessage.peek(payload).messageID)
                default: break
                }
            }
            for id in ids { received[id, default: 0] += 1 }
            unacknowledged += ids
            // Once a POLL's 10 are in (or after 500 ms of silence: a datagram
            // lost on a loaded machine): their ACKs and the next POLL at once.
            quiet = ids.isEmpty ? quiet + 1 : 0
            if (!ids.isEmpty && received.values.reduce(0, +) % 10 == 0) || quiet >= 100 {
                for id in unacknowledged { await bob.send(.ack(token: token, messageID: id)) }
                unacknowledged = []
                quiet = 0
                await bob.send(.poll(token: token))
            }
        }
        #expect(empty, "\(received.count) received of \(count)")
        #expect(received.count == count)
        #expect(received.values.allSatisfy { $0 == 1 }, "came again after its ACK: \(received.values.filter { $0 > 1 }.count)")
        // Each ACK told alice her message was taken.
        let delivered = { await alice.takeAnswers().filter { if case .relayReceipt = $0 { true } else { false } }.count }
        var told = 0
        while told < count, Date() < until {
            told += await delivered()
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(told == count)
    }

    /// What an attacker in reach of the server can do, against the real
    /// process: claim someone's user ID, replay a REGISTER, poll without the
    /// token, flood; none of it reads a queue or costs more than its bucket.
    @Test func spoofsReplaysTokenlessPollsAndAFloodAgainstTheRealServer() async throws {
        let db = ContactCommandTests.temporaryDirectory("relay-hostile") + ".sqlite"
        let (server, started) = try await Self.relayServer(db: db, ["--rate-per-address", "200"])
        defer { server.stop() }
        let port = UInt16(try #require(started["port"] as? Int))
        let alice = try RawRelayUser(port: port), mallory = try RawRelayUser(port: port)
        await alice.start(); await mallory.start()
        defer { Task { await alice.stop(); await mallory.stop() } }
        let genuine = try await alice.registration(at: UInt64(Date().timeIntervalSince1970 * 1000))
        await alice.send(genuine)
        try await Task.sleep(for: .milliseconds(300))
        #expect(await alice.token != nil)

        func answer(_ p: ServerPacket) async throws -> [ServerPacket] {
            _ = await mallory.takeAnswers()
            await mallory.send(p)
            for _ in 0..<400 {
                try await Task.sleep(for: .milliseconds(5))
                let a = await mallory.takeAnswers()
                if !a.isEmpty { return a }
            }
            return []
        }
        // A replay of alice's REGISTER from mallory's address.
        #expect(try await answer(genuine) == [.rejected(.replayed, messageID: nil)])
        // Alice's user ID with mallory's key.
        var claim = ServerRegistration(userID: alice.id, timestamp: UInt64(Date().timeIntervalSince1970 * 1000), signature: [],
                                      publicKey: mallory.identity.signingPublicKey)
        claim.signature = Array(try mallory.identity.signingKey.signature(for: claim.signedBytes()))
        #expect(try await answer(.register(claim)) == [.rejected(.keyMismatch, messageID: nil)])
        // A REGISTER from an hour ago.
        #expect(try await answer(try await mallory.registration(at: UInt64(Date().timeIntervalSince1970 * 1000) - 3_600_000))
                == [.rejected(.staleTimestamp, messageID: nil)])
        // A poll with a made-up token.
        #expect(try await answer(.poll(token: .random())) == [.rejected(.unknownSession, messageID: nil)])

        // A flood of 5,000 polls in about a second: at most the bucket answers (200/s, 400 in a burst).
        _ = await mallory.takeAnswers()
        let start = Date()
        for _ in 0..<5_000 { await mallory.send(.poll(token: .random())) }
        try await Task.sleep(for: .milliseconds(500))
        let elapsed = Date().timeIntervalSince(start)
        let answered = await mallory.takeAnswers().count
        #expect(answered <= 400 + Int(elapsed * 200) + 10, "\(answered) answers in \(elapsed) s")
        #expect(answered > 0)
        // Junk costs nothing and the server still serves alice.
        for n in 0..<500 { await mallory.sendRaw((0..<(n % 200)).map { _ in UInt8.random(in: 0...255) }) }
        let token = try #require(await alice.token)
        await alice.send(.poll(token: token))
        var answers: [ServerPacket] = []
        for _ in 0..<400 where answers.isEmpty {
            try await Task.sleep(for: .milliseconds(5))
            answers = await alice.takeAnswers().filter { $0 == .noMessages }
        }
        #expect(answers == [.noMessages])
    }
}
