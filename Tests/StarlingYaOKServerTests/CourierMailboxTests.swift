import Foundation
import StarlingWire
@testable import StarlingYaOKServerCore
import Testing

/// The courier mailbox (docs/PROTOCOL.md "The courier mailbox"): the server
/// core with an in-memory store, and the client core, talking through the harness.
@Suite struct CourierMailboxTests {
    static func envelope(tag: UInt8 = 1, size: Int = 100, expiresIn: UInt64 = 3_600_000, now: UInt64, salt: UInt64 = .random(in: 0...UInt64.max))
        -> CourierEnvelope {
        var seal = [UInt8](repeating: 0, count: size)
        withUnsafeBytes(of: salt) { for (i, b) in $0.enumerated() where i < size { seal[i] = b } }
        return CourierEnvelope(recipientTag: [UInt8](repeating: tag, count: 16), expiry: now + expiresIn, ciphertext: seal, copies: 3)
    }

    static func tag(_ n: UInt8) -> Bytes16 { Bytes16([UInt8](repeating: n, count: 16))! }

    /// Carries `outputs`' datagrams from a client at `address` to the server and
    /// the answers back, until nothing more is sent (at most 200 rounds);
    /// everything else the client said.
    static func pump(_ h: ServerHarness, _ client: inout CourierMailboxCore, at address: Int,
                     _ outputs: [CourierMailboxCore.Output]) async -> [CourierMailboxCore.Output] {
        var said: [CourierMailboxCore.Output] = []
        var queue = outputs
        var rounds = 0
        while !queue.isEmpty, rounds < 200 {
            rounds += 1
            var next: [CourierMailboxCore.Output] = []
            for o in queue {
                guard case let .send(bytes) = o else { said.append(o); continue }
                await h.receive(bytes, from: address)
                let now = await h.now
                let answers = await h.takeRaw(address)
                _ = await h.take(address)
                for answer in answers { next += client.receive(answer, now: now) }
            }
            queue = next
        }
        _ = await h.take(address)
        return said
    }

    @Test func aDropLeftByOneNodeIsFetchedByAnother() async throws {
        let h = ServerHarness()
        var alice = CourierMailboxCore(), bob = CourierMailboxCore(), carol = CourierMailboxCore()
        let now = await h.now
        let small = Self.envelope(tag: 1, now: now), large = Self.envelope(tag: 1, size: CourierEnvelope.maxCiphertext, now: now)
        var said = await Self.pump(h, &alice, at: 1, alice.post(small, now: now))
        said += await Self.pump(h, &alice, at: 1, alice.post(large, now: now))
        #expect(said == [.taken(CourierMailbox.dropID(of: small)), .taken(CourierMailbox.dropID(of: large))])
        #expect(alice.ready && alice.waiting == 0 && alice.posted == 2)
        #expect(try await h.store.dropCount() == 2)
        // The same seal from someone else is held already: taken, kept once.
        #expect(await Self.pump(h, &carol, at: 3, carol.post(small, now: now)) == [.taken(CourierMailbox.dropID(of: small))])
        #expect(try await h.store.dropCount() == 2)
        // Bob follows the tag (and another): both come, as they went in but with copies 1.
        let got = await Self.pump(h, &bob, at: 2, bob.follow([Self.tag(1), Self.tag(9)], now: now))
        var one = small, two = large
        one.copies = 1
        two.copies = 1
        #expect(got == [.drop(one), .drop(two)])
        // The control: a tag nobody left anything for brings nothing.
        var dave = CourierMailboxCore()
        #expect(await Self.pump(h, &dave, at: 4, dave.follow([Self.tag(2)], now: now)).isEmpty)
        // Fetched again every 30 s (the drops stay for whoever turns up).
        await h.advance(30_000)
        #expect(await Self.pump(h, &bob, at: 2, bob.tick(now: now + 30_000)).count == 2)
    }

    @Test func anAddressThatHasNotProvenItselfGetsNothingButACookie() async throws {
        let h = ServerHarness()
        let now = await h.now
        let e = Self.envelope(now: now)
        let drop = ServerPacket.drop(envelope: try e.encoded()).encode()
        await h.receive(drop, from: 9)
        await h.receive(ServerPacket.dropFetch(after: 0, tags: [Self.tag(1)]).encode(), from: 9)
        #expect(await h.take(9) == [.rejected(.unprovenAddress, messageID: nil), .rejected(.unprovenAddress, messageID: nil)])
        // Chunks from it are not reassembled, nor answered.
        let big = ServerPacket.drop(envelope: try Self.envelope(size: 5_000, now: now).encoded()).encode()
        for d in try #require(ServerChunk.datagrams(big, transferID: 1)) { await h.receive(d, from: 9) }
        #expect(await h.take(9).isEmpty)
        // A cookie it never got proves nothing.
        await h.receive(ServerPacket.dropHello(cookie: Self.tag(5)).encode(), from: 9)
        guard case let .dropCookie(cookie, false)? = await h.take(9).first else { Issue.record("no cookie"); return }
        // A forged source (another address) bringing that cookie back proves nothing either.
        await h.receive(ServerPacket.dropHello(cookie: cookie).encode(), from: 10)
        guard case .dropCookie(_, false)? = await h.take(10).first else { Issue.record("proven from elsewhere"); return }
        // The control: it brings its cookie back, and the same DROP and chunks are taken.
        await h.receive(ServerPacket.dropHello(cookie: cookie).encode(), from: 9)
        #expect(await h.take(9) == [.dropCookie(cookie: cookie, ready: true)])
        await h.receive(drop, from: 9)
        for d in try #require(ServerChunk.datagrams(big, transferID: 2)) { await h.receive(d, from: 9) }
        #expect(await h.take(9).count == 2)
        #expect(try await h.store.dropCount() == 2)
        // Five quiet minutes and the proof lapses; the client core proves itself again and its drop goes through.
        await h.advance(300_001)
        await h.receive(drop, from: 9)
        #expect(await h.take(9) == [.rejected(.unprovenAddress, messageID: nil)])
        var client = CourierMailboxCore()
        let later = await h.now
        let again = await Self.pump(h, &client, at: 9, client.post(Self.envelope(now: later), now: later))
        #expect(again.count == 1, "\(again)")
    }

    @Test func theMailboxsBoundsHold() async throws {
        var config = YaOKServerCore<Int>.Configuration()
        config.dropLimits.total = 40
        config.maxDropAddresses = 100
        config.dropRate = 1_000
        config.dropBurst = 1_000
        let h = ServerHarness(configuration: config)
        var client = CourierMailboxCore(configuration: { var c = CourierMailboxCore.Configuration(); c.maxPending = 1_000; return c }())
        let now = await h.now
        // A tag holds 32: a flood for bob's tag pushes out the oldest, the newest 32 stay.
        let real = Self.envelope(tag: 1, now: now)
        _ = await Self.pump(h, &client, at: 1, client.post(real, now: now))
        let flood = (0..<40).map { _ in Self.envelope(tag: 1, size: 20, now: now) }
        for e in flood { _ = await Self.pump(h, &client, at: 1, client.post(e, now: now)) }
        let held = try await h.store.drops(for: [Self.tag(1)], after: 0, notExpiredAt: now, limit: 100)
        #expect(held.count == 32 && held.map(\.dropID) == flood.suffix(32).map { CourierMailbox.dropID(of: $0) })
        // In all, 40: the 41st is refused (07) until some expire.
        for i in 0..<8 { _ = await Self.pump(h, &client, at: 1, client.post(Self.envelope(tag: UInt8(2 + i), expiresIn: 60_000, now: now), now: now)) }
        #expect(try await h.store.dropCount() == 40)
        let refusedEnvelope = Self.envelope(tag: 20, now: now)
        await h.receive(ServerPacket.drop(envelope: try refusedEnvelope.encoded()).encode(), from: 1)
        #expect(await h.take(1) == [.rejected(.serverFull, messageID: UserID(CourierMailbox.dropID(of: refusedEnvelope)))])
        await h.advance(60_001)
        await h.receive(ServerPacket.drop(envelope: try refusedEnvelope.encoded()).encode(), from: 1)
        #expect(await h.take(1) == [.dropTaken(dropID: CourierMailbox.dropID(of: refusedEnvelope), new: true)])
        // Expired, or expiring more than a day ahead: 11; not an envelope: 09.
        let later = await h.now
        let expired = Self.envelope(expiresIn: 0, now: later), far = Self.envelope(expiresIn: 2 * 86_400_000, now: later)
        await h.receive(ServerPacket.drop(envelope: try expired.encoded()).encode(), from: 1)
        await h.receive(ServerPacket.drop(envelope: try far.encoded()).encode(), from: 1)
        await h.receive(ServerPacket.drop(envelope: [1, 2, 3]).encode(), from: 1)
        #expect(await h.take(1) == [.rejected(.dropExpiry, messageID: UserID(CourierMailbox.dropID(of: expired))),
                                    .rejected(.dropExpiry, messageID: UserID(CourierMailbox.dropID(of: far))),
                                    .rejected(.malformed, messageID: nil)])
        // A flood of hellos from 1,000 addresses keeps at most 100 cookies.
        for a in 1_000..<2_000 { await h.receive(ServerPacket.dropHello(cookie: Self.tag(0)).encode(), from: a) }
        #expect(await h.core.dropAddressCount <= 100)
        for a in 1_000..<2_000 { _ = await h.take(a) }
    }

    @Test func dropsPastTheRateAreRefusedAndAFetchPagesThroughMany() async throws {
        let h = ServerHarness()
        var client = CourierMailboxCore(configuration: { var c = CourierMailboxCore.Configuration(); c.maxPending = 1_000; return c }())
        let now = await h.now
        _ = await Self.pump(h, &client, at: 1, client.tick(now: now)) // proven
        // 20 at once, then 2 a second: the 21st at once is refused (08) and tried again later by the client.
        var answers: [ServerPacket] = []
        let many = (0..<25).map { _ in Self.envelope(tag: 3, size: 30, now: now) }
        for e in many.prefix(21) { await h.receive(ServerPacket.drop(envelope: try e.encoded()).encode(), from: 1) }
        answers = await h.take(1)
        #expect(answers.filter { if case .dropTaken = $0 { true } else { false } }.count == 20)
        #expect(answers.last == .rejected(.rateLimited, messageID: UserID(CourierMailbox.dropID(of: many[20]))))
        await h.advance(3_000)
        for e in many.suffix(5) { await h.receive(ServerPacket.drop(envelope: try e.encoded()).encode(), from: 1) }
        _ = await h.take(1)
        #expect(try await h.store.dropCount() == 26 - 1 - 1 + 1) // 20, then 6 tokens in 3 s: 5 taken; the 21st not
        // A fetch of 25 comes in pages of 10 (DROP_END says more), all of them, in order.
        var reader = CourierMailboxCore()
        let got = await Self.pump(h, &reader, at: 2, reader.follow([Self.tag(3)], now: now + 3_000))
        #expect(got.count == 25)
        #expect(reader.fetched == 25)
    }

    /// A server (or a forger) saying "more" without moving the cursor on ends
    /// the round: no endless paging. The control: one that moves on is followed.
    @Test func aFetchPagesOnlyForward() throws {
        func fetches(_ outputs: [CourierMailboxCore.Output]) -> [UInt64] {
            outputs.compactMap {
                guard case let .send(b) = $0, case let .dropFetch(after, _)? = try? ServerPacket.decode(b, .toServer) else { return nil }
                return after
            }
        }
        var client = CourierMailboxCore()
        _ = client.tick(now: 0)
        #expect(fetches(client.follow([Self.tag(1)], now: 0)).isEmpty, "not proven yet")
        #expect(fetches(client.receive(ServerPacket.dropCookie(cookie: Self.tag(2), ready: true).encode(), now: 1)) == [0])
        #expect(fetches(client.receive(ServerPacket.dropEnd(count: 10, last: 12, more: true).encode(), now: 2)) == [12])
        #expect(fetches(client.receive(ServerPacket.dropEnd(count: 0, last: 12, more: true).encode(), now: 3)).isEmpty)
        #expect(fetches(client.receive(ServerPacket.dropEnd(count: 0, last: 40, more: true).encode(), now: 4)).isEmpty, "no fetch under way")
        #expect(fetches(client.tick(now: 30_003)) == [0], "the next round, from the start")
    }

    @Test func aDropTheServerNeverAnswersIsTriedEightTimesThenGivenUp() {
        var client = CourierMailboxCore()
        var sent = 0
        var said: [CourierMailboxCore.Output] = []
        _ = client.tick(now: 0)
        // Proven (as if the server said so).
        _ = client.receive(ServerPacket.dropCookie(cookie: Self.tag(1), ready: true).encode(), now: 0)
        let e = Self.envelope(now: 0)
        for o in client.post(e, now: 0) { if case .send = o { sent += 1 } }
        var t: UInt64 = 0
        while t < 600_000 {
            t += 500
            for o in client.tick(now: t) { if case .send = o { sent += 1 } else { said.append(o) } }
        }
        #expect(sent == 8 && said == [.notTaken(CourierMailbox.dropID(of: e), nil)] && client.waiting == 0)
    }
}
