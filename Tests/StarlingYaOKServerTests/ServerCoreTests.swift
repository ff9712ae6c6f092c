import Crypto
import Foundation
import StarlingCrypto
import StarlingWire
import StarlingYaOK
@testable import StarlingYaOKServerCore
import Testing

/// A user of the relay: an identity and a user ID.
struct ServerUser {
    var identity = Identity.generate()
    var id = UserID.random()

    func seal(_ text: String, to other: ServerUser, id messageID: UserID = .random(), now: UInt64 = 1_795_000_000_000) throws -> [UInt8] {
        try SealedMessage.seal(.text(text), id: messageID, timestamp: now, from: identity, senderID: id, to: other.id,
                               recipientAgreementKey: other.identity.noisePublicKey)
    }

    func registration(at t: UInt64, key: Bool = true, signer: Curve25519.Signing.PrivateKey? = nil) throws -> [UInt8] {
        var r = ServerRegistration(userID: id, timestamp: t, signature: [], publicKey: key ? identity.signingPublicKey : nil)
        r.signature = Array(try (signer ?? identity.signingKey).signature(for: r.signedBytes()))
        return ServerPacket.register(r).encode()
    }
}

/// The server core and a store, driven as the runtime drives them, with
/// every answer collected per address.
actor ServerHarness {
    var core: YaOKServerCore<Int>
    let store: any ServerStore
    var outbox: [Int: [ServerPacket]] = [:]
    /// Every datagram sent, as sent (chunks too), per address.
    var raw: [Int: [[UInt8]]] = [:]
    func takeRaw(_ address: Int) -> [[UInt8]] {
        defer { raw[address] = [] }
        return raw[address] ?? []
    }
    var now: UInt64 = 1_795_000_000_000
    var reassembly = ServerReassembler<Int>()

    init(store: any ServerStore = InMemoryServerStore(), configuration: YaOKServerCore<Int>.Configuration = .init()) {
        core = YaOKServerCore(configuration: configuration)
        self.store = store
    }

    func advance(_ ms: UInt64) { now += ms }
    func setCore(_ c: YaOKServerCore<Int>) { core = c }

    /// A datagram from `address`; every store request is carried out at once.
    func receive(_ bytes: [UInt8], from address: Int) async {
        await perform(core.receive(bytes, from: address, now: now))
    }

    func take(_ address: Int) -> [ServerPacket] {
        defer { outbox[address] = []; raw[address] = [] }
        return outbox[address] ?? []
    }

    func perform(_ steps: [YaOKServerCore<Int>.Step]) async {
        for step in steps {
            switch step {
            case let .send(bytes, to):
                raw[to, default: []].append(bytes)
                guard let p = try? ServerPacket.decode(bytes, .toClient) else { Issue.record("undecodable answer"); continue }
                if case let .chunk(c) = p {
                    if let whole = reassembly.add(c, from: to, now: now) { outbox[to, default: []].append(try! ServerPacket.decode(whole, .toClient)) }
                } else {
                    outbox[to, default: []].append(p)
                }
            case let .register(r, from):
                let pinned = try? await store.pinned(r.userID)
                let result: Result<UserID, ServerRejection>
                switch YaOKServerCore<Int>.check(r, pinned: pinned ?? nil, now: now, window: core.configuration.registrationWindow) {
                case let .failure(why): result = .failure(why)
                case let .success(key):
                    switch try? await store.register(r.userID, key: key, timestamp: r.timestamp) {
                    case .registered?: result = .success(r.userID)
                    case .conflict?: result = .failure(.replayed)
                    default: result = .failure(.serverFull)
                    }
                }
                await perform(core.registration(result, from: from, now: now, timestamp: r.timestamp))
            case let .enqueue(m, from):
                let outcome = try! await store.enqueue([m], limits: core.configuration.limits)[0]
                await perform(core.enqueued(m, outcome, from: from))
            case let .fetch(user, limit, to):
                await perform(core.fetched(try! await store.fetch(user, limit: limit), for: to))
            case let .remove(user, id):
                await perform(core.removed(try! await store.remove(user, messageID: id)))
            case let .putDrop(drop, from):
                await perform(core.dropPut(drop, try! await store.putDrop(drop, limits: core.configuration.dropLimits), from: from))
            case let .fetchDrops(tags, after, limit, to):
                await perform(core.dropsFetched(try! await store.drops(for: tags, after: after, notExpiredAt: now, limit: limit),
                                                after: after, for: to))
            }
        }
    }

    /// Registers `user` from `address`; its token.
    func register(_ user: ServerUser, from address: Int) async throws -> ServerToken {
        await receive(try user.registration(at: now), from: address)
        guard case let .registered(token, _)? = take(address).last else { throw ServerTestError.notRegistered }
        return token
    }
}

enum ServerTestError: Error { case notRegistered }

@Suite struct ServerCoreTests {
    @Test func aMessageForAnOfflineRecipientIsQueuedAndCollectedWithAPollThenRemovedByTheAck() async throws {
        let h = ServerHarness()
        let alice = ServerUser(), bob = ServerUser()
        let aliceToken = try await h.register(alice, from: 1)
        let bobToken = try await h.register(bob, from: 2)
        // Bob goes away (a new address later); alice sends.
        await h.advance(301_000)
        await h.receive(ServerPacket.ping(token: aliceToken).encode(), from: 1)
        await h.perform([]) // nothing
        let id = UserID.random()
        let sealed = try alice.seal("are you there?", to: bob, id: id)
        await h.receive(ServerPacket.message(sender: alice.id, recipient: bob.id, payload: sealed, token: aliceToken).encode(), from: 1)
        let answers = await h.take(1)
        #expect(answers.contains(.pong))
        #expect(answers.contains(.queued(messageID: id, online: true)), "bob's session is still there: \(answers)")
        // Bob's session ends after 5 minutes of silence.
        var core = await h.core
        core.tick(now: await h.now + 10) // bob silent 301 s, alice just spoke
        #expect(core.user(of: bobToken) == nil)
        #expect(core.user(of: aliceToken) == alice.id)

        // A poll gets the message; another gets it again until the ACK; then NO_MESSAGES.
        let bobAgain = try await h.register(bob, from: 3)
        await h.receive(ServerPacket.poll(token: bobAgain).encode(), from: 3)
        #expect(await h.take(3) == [.message(sender: alice.id, recipient: bob.id, payload: sealed, token: nil),
                                    .pollEnd(messageIDs: [id], more: false)])
        await h.receive(ServerPacket.ack(token: bobAgain, messageID: id).encode(), from: 3)
        #expect(await h.take(1) == [.relayReceipt(messageID: id, by: bob.id)], "alice hears it was taken")
        await h.receive(ServerPacket.poll(token: bobAgain).encode(), from: 3)
        #expect(await h.take(3) == [.noMessages])
        // The message opens for bob.
        let (_, body) = try SealedMessage.open(sealed, as: bob.id, with: bob.identity, senderSigningKey: alice.identity.signingPublicKey)
        #expect(body == .text("are you there?"))
    }

    /// REGISTER's rules: the first carries the key; a spoofed one (someone
    /// else's user ID, another key), a replayed one and a stale one are refused.
    @Test func spoofedReplayedAndStaleRegistrationsAreRefused() async throws {
        let h = ServerHarness()
        let alice = ServerUser(), mallory = ServerUser()
        // No key on a first registration.
        await h.receive(try alice.registration(at: await h.now, key: false), from: 1)
        #expect(await h.take(1) == [.rejected(.unknownUser, messageID: nil)])
        let first = try alice.registration(at: await h.now)
        await h.receive(first, from: 1)
        guard case .registered? = await h.take(1).first else { Issue.record("not registered"); return }
        // Mallory claims alice's user ID with her own key.
        var spoof = mallory
        spoof.id = alice.id
        await h.receive(try spoof.registration(at: await h.now + 1), from: 9)
        #expect(await h.take(9) == [.rejected(.keyMismatch, messageID: nil)])
        // ... or signs alice's bytes (with alice's key in the packet) with her own.
        await h.receive(try alice.registration(at: await h.now + 2, signer: mallory.identity.signingKey), from: 9)
        #expect(await h.take(9) == [.rejected(.badSignature, messageID: nil)])
        // A replay of alice's genuine packet.
        await h.receive(first, from: 9)
        #expect(await h.take(9) == [.rejected(.replayed, messageID: nil)])
        // Outside the ±120 s window.
        await h.receive(try alice.registration(at: await h.now - 121_000), from: 1)
        #expect(await h.take(1) == [.rejected(.staleTimestamp, messageID: nil)])
        await h.receive(try alice.registration(at: await h.now + 121_000), from: 1)
        #expect(await h.take(1) == [.rejected(.staleTimestamp, messageID: nil)])
        // A later one without the key is fine.
        await h.advance(5)
        await h.receive(try alice.registration(at: await h.now, key: false), from: 1)
        guard case .registered? = await h.take(1).first else { Issue.record("not registered again"); return }
    }

    /// A user ID alone reads nobody's queue: POLL, ACK and MSG need the token,
    /// and a MSG's sender must be the token's user.
    @Test func withoutTheTokenNothingIsRead() async throws {
        let h = ServerHarness()
        let alice = ServerUser(), bob = ServerUser(), mallory = ServerUser()
        let aliceToken = try await h.register(alice, from: 1)
        _ = try await h.register(bob, from: 2)
        let malloryToken = try await h.register(mallory, from: 9)
        let id = UserID.random()
        await h.receive(ServerPacket.message(sender: alice.id, recipient: bob.id, payload: try alice.seal("for bob", to: bob, id: id),
                                            token: aliceToken).encode(), from: 1)
        _ = await h.take(2)
        await h.receive(ServerPacket.poll(token: .random()).encode(), from: 9)
        #expect(await h.take(9) == [.rejected(.unknownSession, messageID: nil)])
        await h.receive(ServerPacket.ack(token: malloryToken, messageID: id).encode(), from: 9)
        await h.receive(ServerPacket.poll(token: malloryToken).encode(), from: 9)
        #expect(await h.take(9) == [.noMessages], "mallory's ACK removed nothing of bob's, and her poll reads her queue")
        // A MSG in alice's name with mallory's token: refused as not hers, naming the message.
        let forgedID = UserID.random()
        await h.receive(ServerPacket.message(sender: alice.id, recipient: bob.id, payload: try alice.seal("forged", to: bob, id: forgedID),
                                            token: malloryToken).encode(), from: 9)
        #expect(await h.take(9) == [.rejected(.senderMismatch, messageID: forgedID)])
        #expect(try await h.store.counts().queued == 1)
    }

    @Test func queueCapsAndUnknownRecipientsAreSaidToTheSender() async throws {
        var config = YaOKServerCore<Int>.Configuration()
        config.limits.perUser = 3
        config.limits.total = 5
        let h = ServerHarness(configuration: config)
        let alice = ServerUser(), bob = ServerUser(), carol = ServerUser(), stranger = ServerUser()
        let token = try await h.register(alice, from: 1)
        _ = try await h.register(bob, from: 2)
        _ = try await h.register(carol, from: 3)
        var answers: [ServerPacket] = []
        for (to, n) in [(bob, 4), (carol, 3)] {
            for i in 0..<n {
                let id = UserID.random()
                await h.receive(ServerPacket.message(sender: alice.id, recipient: to.id, payload: try alice.seal("\(i)", to: to, id: id),
                                                    token: token).encode(), from: 1)
                answers += await h.take(1)
            }
        }
        let rejections = answers.compactMap { if case let .rejected(why, _) = $0 { why } else { nil } }
        #expect(rejections == [.recipientQueueFull, .serverFull], "\(answers)")
        #expect(try await h.store.counts().queued == 5)
        await h.receive(ServerPacket.message(sender: alice.id, recipient: stranger.id, payload: try alice.seal("?", to: stranger),
                                            token: token).encode(), from: 1)
        guard case .rejected(.unknownRecipient, _)? = await h.take(1).first else { Issue.record("queued for a stranger"); return }
        // A retry of a message held already is QUEUED again, not stored twice.
        let id = UserID.random()
        let h2 = ServerHarness()
        let t2 = try await h2.register(alice, from: 1)
        _ = try await h2.register(bob, from: 2)
        let packet = ServerPacket.message(sender: alice.id, recipient: bob.id, payload: try alice.seal("once", to: bob, id: id), token: t2).encode()
        await h2.receive(packet, from: 1)
        await h2.receive(packet, from: 1)
        #expect(await h2.take(1) == [.queued(messageID: id, online: true), .queued(messageID: id, online: true)])
        #expect(try await h2.store.counts().queued == 1)
        // The same ID from another sender is refused (0D), not answered QUEUED and lost.
        let mallory = ServerUser()
        let t3 = try await h2.register(mallory, from: 3)
        await h2.receive(ServerPacket.message(sender: mallory.id, recipient: bob.id, payload: try mallory.seal("mine", to: bob, id: id),
                                             token: t3).encode(), from: 3)
        #expect(await h2.take(3) == [.rejected(.messageIDTaken, messageID: id)])
        #expect(try await h2.store.counts().queued == 1)
    }

    /// A message larger than a datagram (the largest sealed text, 10 KiB)
    /// goes in CHUNKs both ways and arrives whole.
    @Test func aMessageLargerThanADatagramArrivesWhole() async throws {
        let h = ServerHarness()
        let alice = ServerUser(), bob = ServerUser()
        let token = try await h.register(alice, from: 1)
        let bobToken = try await h.register(bob, from: 2)
        let text = String(repeating: "ü", count: 5_120) // 10,240 bytes
        let id = UserID.random()
        let sealed = try alice.seal(text, to: bob, id: id)
        let datagrams = try #require(ServerChunk.datagrams(ServerPacket.message(sender: alice.id, recipient: bob.id, payload: sealed,
                                                                             token: token).encode(), transferID: 7))
        #expect(datagrams.count == 8 && datagrams.allSatisfy { $0.count <= 1_472 })
        for d in datagrams.reversed() { await h.receive(d, from: 1) } // in any order
        #expect(await h.take(1) == [.queued(messageID: id, online: true)])
        let pushed = await h.take(2)
        #expect(pushed == [.message(sender: alice.id, recipient: bob.id, payload: sealed, token: nil)])
        _ = bobToken
    }

    /// A flood from one address stops costing anything past its bucket.
    @Test func aFloodIsRateLimitedAndUndecodableBytesCostNothing() async throws {
        var config = YaOKServerCore<Int>.Configuration()
        config.perAddressRate = 10
        config.perAddressBurst = 20
        var core = YaOKServerCore<Int>(configuration: config)
        var answered = 0
        for i in 0..<10_000 {
            answered += core.receive(ServerPacket.poll(token: .random()).encode(), from: 5, now: 1_000 + UInt64(i / 100)).count
        }
        #expect(answered <= 21, "\(answered)")
        #expect(core.counters.rateLimited >= 9_979)
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let junk = (0..<Int.random(in: 0...1_500, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            #expect(core.receive(junk, from: Int.random(in: 0...1_000_000, using: &rng), now: 5_000).isEmpty)
        }
    }

    /// A POLL with a real token from a forged source (to reflect ten 10 KiB
    /// messages at a victim) gets only a small REJECTED; chunks from an
    /// address without a session are not reassembled.
    @Test func tokensAreBoundToTheirAddressAndChunksToSessions() async throws {
        let h = ServerHarness()
        let alice = ServerUser(), bob = ServerUser()
        let aliceToken = try await h.register(alice, from: 1)
        let bobToken = try await h.register(bob, from: 2)
        await h.receive(ServerPacket.bye(token: bobToken).encode(), from: 2)
        await h.receive(ServerPacket.message(sender: alice.id, recipient: bob.id, payload: try alice.seal(String(repeating: "x", count: 9_000), to: bob),
                                            token: aliceToken).encode(), from: 1)
        _ = await h.take(1)
        await h.advance(1)
        let bobAgain = try await h.register(bob, from: 2)
        await h.receive(ServerPacket.poll(token: bobAgain).encode(), from: 666) // the victim's address
        #expect(await h.take(666) == [.rejected(.unknownSession, messageID: nil)])
        // BYE from elsewhere ends nothing.
        await h.receive(ServerPacket.bye(token: bobAgain).encode(), from: 666)
        await h.receive(ServerPacket.poll(token: bobAgain).encode(), from: 2)
        #expect(await h.take(2).count == 2, "the session lives; the message comes, then POLL_END")
        // Chunks from a stranger are dropped unread.
        var core = await h.core
        let before = core.counters.undecodable
        let chunk = ServerPacket.chunk(ServerChunk(transferID: 1, index: 0, total: 2, data: [1, 2, 3])).encode()
        _ = core.receive(chunk, from: 777, now: await h.now)
        #expect(core.counters.undecodable == before + 1)
    }

    /// A full users table refuses newcomers (07) and never drops a pin: a
    /// dropped pin would let anyone register that user ID with their key.
    @Test func aFullUserTableRefusesNewcomersAndKeepsEveryPin() async throws {
        let h = ServerHarness(store: InMemoryServerStore(maxUsers: 2))
        let a = ServerUser(), b = ServerUser(), c = ServerUser()
        _ = try await h.register(a, from: 1)
        _ = try await h.register(b, from: 2)
        await h.receive(try c.registration(at: await h.now), from: 3)
        #expect(await h.take(3) == [.rejected(.serverFull, messageID: nil)])
        var thief = c
        thief.id = a.id
        await h.advance(10)
        await h.receive(try thief.registration(at: await h.now), from: 3)
        #expect(await h.take(3) == [.rejected(.keyMismatch, messageID: nil)])
        #expect(try await h.store.counts().users == 2)
    }

    /// The client: unregistered, its only deadline is the next REGISTER (no
    /// spinning on polls and retries that cannot go); many REJECTED 05 for
    /// packets sent with an old token register once; a message it cannot
    /// store does not make it poll again and again.
    @Test func theClientRegistersOnceAndNeverSpins() throws {
        let me = ServerUser(), bob = ServerUser()
        var c = YaOKClientCore(userID: me.id, signingKey: me.identity.signingKey)
        let t0: UInt64 = 1_795_000_000_000
        #expect(c.start(now: t0).count == 1)
        _ = try c.send(sealed: try me.seal("queued before the session", to: bob), now: t0)
        #expect(c.nextDeadline == t0 + 2_000, "the REGISTER's retry, nothing else")
        #expect(c.tick(now: t0 + 1_000).isEmpty)
        let token = ServerToken.random()
        let registered = c.receive(ServerPacket.registered(token: token, serverTime: t0).encode(), now: t0 + 1_100)
        #expect(registered.filter { if case .send = $0 { true } else { false } }.count == 2, "the waiting MSG and a POLL")
        // The server restarted: three packets' REJECTED 05 → one REGISTER.
        var sends = 0
        for _ in 0..<3 {
            sends += c.receive(ServerPacket.rejected(.unknownSession, messageID: nil).encode(), now: t0 + 2_000)
                .filter { if case .send = $0 { true } else { false } }.count
        }
        #expect(sends == 1)
        #expect(!c.isRegistered && c.nextDeadline > t0 + 2_000)
        // Registered again; the same undecodable-for-the-caller message twice: one quick re-poll, not two.
        _ = c.receive(ServerPacket.registered(token: .random(), serverTime: t0).encode(), now: t0 + 3_000)
        let delivery = ServerPacket.message(sender: bob.id, recipient: me.id, payload: try bob.seal("x", to: me), token: nil).encode()
        _ = c.receive(delivery, now: t0 + 3_100)
        let first = c.tick(now: t0 + 3_300).filter { if case .send = $0 { true } else { false } }.count
        _ = c.receive(delivery, now: t0 + 3_400)
        let second = c.tick(now: t0 + 3_700).filter { if case .send = $0 { true } else { false } }.count
        #expect(first == 1 && second == 0, "\(first) \(second)")
    }

    /// REGISTERs to a silent server back off (2, 4, 8 … s); when the client
    /// moves to another address, that one starts from the first interval again.
    @Test func aMoveStartsTheRegisterBackoffAfresh() throws {
        let me = ServerUser()
        var c = YaOKClientCore(userID: me.id, signingKey: me.identity.signingKey)
        var now: UInt64 = 1_795_000_000_000
        _ = c.start(now: now)
        var gaps: [UInt64] = []
        for _ in 0..<4 {
            let next = c.nextDeadline
            gaps.append(next - now)
            now = next
            #expect(c.tick(now: now).contains { if case .send = $0 { true } else { false } }, "a REGISTER at its time")
        }
        #expect(gaps == [2_000, 4_000, 8_000, 16_000], "backing off at the silent server: \(gaps)")
        #expect(c.nextDeadline - now == 32_000, "without a move, the next wait doubles again (the control)")
        c.serverMoved()
        let due = c.nextDeadline
        _ = c.tick(now: due)
        #expect(c.nextDeadline - due == 2_000, "at the next address, from the first interval")
    }

    /// A server gone silent: the session is taken as lost after `lostAfter`
    /// (said once), and REGISTERs go again, backing off; a server that never
    /// answers at all is said not to answer after three REGISTERs, once. An
    /// answering server (the control) keeps the session.
    @Test func aServerThatFallsSilentIsReportedAndRegisteredWithAgain() throws {
        let me = ServerUser()
        let t0: UInt64 = 1_795_000_000_000
        func events(_ steps: [YaOKClientCore.Step]) -> [YaOKClientCore.Event] { steps.compactMap { if case let .event(e) = $0 { e } else { nil } } }
        func registers(_ steps: [YaOKClientCore.Step]) -> Int {
            steps.filter { if case let .send(b) = $0, case .register? = try? ServerPacket.decode(b, .toServer) { true } else { false } }.count
        }
        // Answered: pongs and empty polls keep it registered for an hour.
        var kept = YaOKClientCore(userID: me.id, signingKey: me.identity.signingKey)
        _ = kept.start(now: t0)
        _ = kept.receive(ServerPacket.registered(token: .random(), serverTime: t0).encode(), now: t0)
        var now = t0
        for _ in 0..<10_000 where now < t0 + 3_600_000 {
            now = max(now, kept.nextDeadline)
            let steps = kept.tick(now: now)
            #expect(!events(steps).contains(.lost))
            for case let .send(b) in steps {
                switch try? ServerPacket.decode(b, .toServer) {
                case .ping?: _ = kept.receive(ServerPacket.pong.encode(), now: now + 20)
                case .poll?: _ = kept.receive(ServerPacket.noMessages.encode(), now: now + 20)
                default: break
                }
            }
        }
        #expect(kept.isRegistered && now >= t0 + 3_600_000)

        // Silent from t0: a last PING at 150 s, lost 5 s later, once; REGISTERs from then on, 2 s, doubling, at most a minute apart.
        var c = YaOKClientCore(userID: me.id, signingKey: me.identity.signingKey)
        _ = c.start(now: t0)
        _ = c.receive(ServerPacket.registered(token: .random(), serverTime: t0).encode(), now: t0)
        var said: [(UInt64, YaOKClientCore.Event)] = [], registered: [UInt64] = []
        now = t0
        for _ in 0..<1_000 where now < t0 + 600_000 {
            now = max(now, c.nextDeadline)
            let steps = c.tick(now: now)
            said += events(steps).map { (now - t0, $0) }
            if registers(steps) > 0 { registered.append(now - t0) }
        }
        #expect(said.map(\.0) == [155_000] && said.map(\.1) == [.lost], "\(said)")
        #expect(!c.isRegistered)
        #expect(Array(registered.prefix(6)) == [155_000, 157_000, 161_000, 169_000, 185_000, 217_000], "\(registered)")
        #expect(zip(registered, registered.dropFirst()).allSatisfy { $1 - $0 <= 60_000 })
        // Back: registered, and a later silence is said again.
        _ = c.receive(ServerPacket.registered(token: .random(), serverTime: now).encode(), now: now)
        #expect(c.isRegistered)
        let back = now
        for _ in 0..<100 where now < back + 200_000 {
            now = max(now, c.nextDeadline)
            said += events(c.tick(now: now)).map { (now - t0, $0) }
        }
        #expect(said.filter { $0.1 == .lost }.count == 2)

        // A process not scheduled for 200 s (its answers wait in the socket): the
        // first tick after sends the last PING, the waiting answers are read, and the
        // session holds. The control: the same, with no answer waiting, is lost 5 s later.
        for answered in [true, false] {
            var starved = YaOKClientCore(userID: me.id, signingKey: me.identity.signingKey)
            _ = starved.start(now: t0)
            _ = starved.receive(ServerPacket.registered(token: .random(), serverTime: t0).encode(), now: t0)
            let woke = t0 + 200_000
            let steps = starved.tick(now: woke)
            #expect(events(steps).isEmpty && steps.contains { if case let .send(b) = $0, case .ping? = try? ServerPacket.decode(b, .toServer) { true } else { false } },
                    "\(steps)")
            if answered { _ = starved.receive(ServerPacket.noMessages.encode(), now: woke + 1) }
            var later: [YaOKClientCore.Event] = []
            now = woke
            for _ in 0..<100 where now < woke + 20_000 {
                now = max(now + 1, starved.nextDeadline)
                later += events(starved.tick(now: now))
            }
            #expect(later.contains(.lost) == !answered, "answered: \(answered), \(later)")
        }

        // Never answered at all: "does not answer" after three REGISTERs unanswered, once.
        var never = YaOKClientCore(userID: me.id, signingKey: me.identity.signingKey)
        var first = events(never.start(now: t0))
        now = t0
        for _ in 0..<100 where now < t0 + 600_000 {
            now = max(now, never.nextDeadline)
            first += events(never.tick(now: now))
        }
        #expect(first == [.unreachable], "\(first)")
    }

    /// The client's rhythm (seed 002 §5.2, §6.3), driven by its own
    /// deadlines: a POLL at registration, every 30 s and 200 ms after a send
    /// (every 5 minutes in the background); a PING every 60 s; a MSG without
    /// QUEUED sent again after 2 s, doubling, at most 60 s apart, and reported
    /// failed after its 8th send.
    @Test(arguments: [false, true])
    func theClientKeepsTheSeedsRhythm(background: Bool) throws {
        let me = ServerUser(), bob = ServerUser()
        var configuration: YaOKClientCore.Configuration = background ? .background : .init()
        configuration.lostAfter = .max // a server that never answers: the rhythm alone (lost sessions: below)
        var c = YaOKClientCore(userID: me.id, signingKey: me.identity.signingKey, configuration: configuration)
        let t0: UInt64 = 1_795_000_000_000
        var polls: [UInt64] = [], pings: [UInt64] = [], messages: [UInt64] = [], failed: [UInt64] = []
        func take(_ steps: [YaOKClientCore.Step], at t: UInt64) {
            for step in steps {
                switch step {
                case let .send(bytes):
                    switch try? ServerPacket.decode(bytes, .toServer) {
                    case .poll?: polls.append(t - t0)
                    case .ping?: pings.append(t - t0)
                    case .message?: messages.append(t - t0)
                    default: break
                    }
                case .event(.failed):
                    failed.append(t - t0)
                default: break
                }
            }
        }
        _ = c.start(now: t0)
        take(c.receive(ServerPacket.registered(token: .random(), serverTime: t0).encode(), now: t0), at: t0)
        let sendAt = t0 + 45_000
        var sent = false
        var now = t0
        for _ in 0..<1_000 {
            let next = min(c.nextDeadline, sent ? .max : sendAt)
            guard next <= t0 + 700_000 else { break }
            now = max(now, next)
            if !sent, now >= sendAt {
                take(try c.send(sealed: try me.seal("are you there", to: bob), now: now), at: now)
                sent = true
            }
            take(c.tick(now: now), at: now)
        }
        let interval: UInt64 = background ? 300_000 : 30_000
        // POLLs: at registration, then every interval, except the one 200 ms after the send.
        #expect(polls.first == 0)
        #expect(polls.contains(45_200), "\(polls)")
        for (a, b) in zip(polls, polls.dropFirst()) {
            #expect(b - a == interval || b == 45_200, "\(polls)")
        }
        #expect(polls.count == (background ? 4 : 24), "\(polls)") // 0, (30), 45.2, then every interval to 700 s
        // PINGs every 60 s.
        #expect(pings == stride(from: 60_000, through: 700_000, by: 60_000).map { UInt64($0) })
        // The MSG's sends: at once, then 2, 4, 8, 16, 32, 60, 60 s apart; failed 60 s after the last.
        #expect(messages == [0, 2, 6, 14, 30, 62, 122, 182].map { sendAt - t0 + UInt64($0) * 1_000 })
        #expect(failed == [sendAt - t0 + 242_000])
    }
}
