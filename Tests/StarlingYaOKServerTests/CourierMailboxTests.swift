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

    /// The cookie the server holds for `address` (asked as a client would: its answer to a hello).
    static func cookie(_ h: ServerHarness, at address: Int) async -> Bytes16? {
        await h.receive(ServerPacket.dropHello(cookie: Bytes16(high: 0, low: 0)).encode(), from: address)
        guard case let .dropCookie(c, _)? = await h.take(address).last else { return nil }
        return c
    }

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
        // Fetched again every 30 s, from where the last round got to: what was left since comes, not the rest again.
        let third = Self.envelope(tag: 9, now: now)
        _ = await Self.pump(h, &alice, at: 1, alice.post(third, now: now))
        await h.advance(30_000)
        var three = third
        three.copies = 1
        #expect(await Self.pump(h, &bob, at: 2, bob.tick(now: now + 30_000)) == [.drop(three)])
        // The drops stay for whoever turns up: a newcomer gets all three.
        var erin = CourierMailboxCore()
        #expect(await Self.pump(h, &erin, at: 5, erin.follow([Self.tag(1), Self.tag(9)], now: now + 30_000)).count == 3)
    }

    @Test func anAddressThatHasNotProvenItselfGetsNothingButACookie() async throws {
        let h = ServerHarness()
        let now = await h.now
        let e = Self.envelope(now: now)
        let zero = Bytes16(high: 0, low: 0)
        await h.receive(ServerPacket.drop(cookie: zero, envelope: try e.encoded()).encode(), from: 9)
        await h.receive(ServerPacket.dropFetch(cookie: zero, after: 0, tags: [Self.tag(1)]).encode(), from: 9)
        #expect(await h.take(9) == [.rejected(.unprovenAddress, messageID: nil), .rejected(.unprovenAddress, messageID: nil)])
        // Chunks from it are not reassembled, nor answered.
        let bigEnvelope = try Self.envelope(size: 5_000, now: now).encoded()
        for d in try #require(ServerChunk.datagrams(ServerPacket.drop(cookie: zero, envelope: bigEnvelope).encode(), transferID: 1)) {
            await h.receive(d, from: 9)
        }
        #expect(await h.take(9).isEmpty)
        // A cookie it never got proves nothing.
        await h.receive(ServerPacket.dropHello(cookie: Self.tag(5)).encode(), from: 9)
        guard case let .dropCookie(cookie, false)? = await h.take(9).first else { Issue.record("no cookie"); return }
        // A forged source (another address) bringing that cookie back proves nothing either.
        await h.receive(ServerPacket.dropHello(cookie: cookie).encode(), from: 10)
        guard case .dropCookie(_, false)? = await h.take(10).first else { Issue.record("proven from elsewhere"); return }
        // The control: it brings its cookie back, and the DROP and chunks that carry it are taken.
        await h.receive(ServerPacket.dropHello(cookie: cookie).encode(), from: 9)
        #expect(await h.take(9) == [.dropCookie(cookie: cookie, ready: true)])
        let drop = ServerPacket.drop(cookie: cookie, envelope: try e.encoded()).encode()
        await h.receive(drop, from: 9)
        for d in try #require(ServerChunk.datagrams(ServerPacket.drop(cookie: cookie, envelope: bigEnvelope).encode(), transferID: 2)) {
            await h.receive(d, from: 9)
        }
        #expect(await h.take(9).count == 2)
        #expect(try await h.store.dropCount() == 2)
        // A forger naming the proven address does not know its cookie: its fetch gets nothing sent there but a REJECTED.
        await h.receive(ServerPacket.dropFetch(cookie: Self.tag(7), after: 0, tags: [Self.tag(1)]).encode(), from: 9)
        #expect(await h.take(9) == [.rejected(.unprovenAddress, messageID: nil)])
        // Nor does a forged hello replace the cookie or end the proof: the address's own packets still go through.
        await h.receive(ServerPacket.dropHello(cookie: Self.tag(8)).encode(), from: 9)
        #expect(await h.take(9) == [.dropCookie(cookie: cookie, ready: true)])
        await h.receive(ServerPacket.dropFetch(cookie: cookie, after: 0, tags: [Self.tag(1)]).encode(), from: 9)
        #expect(await h.take(9).last == .dropEnd(count: 2, last: 2, more: false))
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
        // In all, 40: the 41st pushes out the oldest of all (a flood has to go on to keep real drops out).
        let eight = (0..<8).map { i in Self.envelope(tag: UInt8(2 + i), expiresIn: 60_000, now: now) }
        for e in eight { _ = await Self.pump(h, &client, at: 1, client.post(e, now: now)) }
        #expect(try await h.store.dropCount() == 40)
        let cookie = try #require(await Self.cookie(h, at: 1))
        let next = Self.envelope(tag: 20, now: now)
        await h.receive(ServerPacket.drop(cookie: cookie, envelope: try next.encoded()).encode(), from: 1)
        #expect(await h.take(1) == [.dropTaken(dropID: CourierMailbox.dropID(of: next), new: true)])
        #expect(try await h.store.dropCount() == 40)
        #expect(try await h.store.drops(for: [Self.tag(1)], after: 0, notExpiredAt: now, limit: 100).count == 31, "the tag's oldest went")
        // The expired go before anyone else's.
        await h.advance(60_001)
        let after = Self.envelope(tag: 21, now: await h.now)
        await h.receive(ServerPacket.drop(cookie: cookie, envelope: try after.encoded()).encode(), from: 1)
        _ = await h.take(1)
        let heldNow = try await h.store.dropCount(), ofTag1 = try await h.store.drops(for: [Self.tag(1)], after: 0, notExpiredAt: now, limit: 100)
        #expect(heldNow == 33 && ofTag1.count == 31)
        // Expired, or expiring more than a day ahead: 11; not an envelope: 09.
        let later = await h.now
        let expired = Self.envelope(expiresIn: 0, now: later), far = Self.envelope(expiresIn: 2 * 86_400_000, now: later)
        await h.receive(ServerPacket.drop(cookie: cookie, envelope: try expired.encoded()).encode(), from: 1)
        await h.receive(ServerPacket.drop(cookie: cookie, envelope: try far.encoded()).encode(), from: 1)
        await h.receive(ServerPacket.drop(cookie: cookie, envelope: [UInt8](repeating: 0xFF, count: 40)).encode(), from: 1)
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
        let cookie = try #require(await Self.cookie(h, at: 1))
        for e in many.prefix(21) { await h.receive(ServerPacket.drop(cookie: cookie, envelope: try e.encoded()).encode(), from: 1) }
        answers = await h.take(1)
        #expect(answers.filter { if case .dropTaken = $0 { true } else { false } }.count == 20)
        #expect(answers.last == .rejected(.rateLimited, messageID: UserID(CourierMailbox.dropID(of: many[20]))))
        await h.advance(3_000)
        for e in many.suffix(5) { await h.receive(ServerPacket.drop(cookie: cookie, envelope: try e.encoded()).encode(), from: 1) }
        _ = await h.take(1)
        #expect(try await h.store.dropCount() == 26 - 1 - 1 + 1) // 20, then 6 tokens in 3 s: 5 taken; the 21st not
        // A fetch of 25 comes in pages of 10 (DROP_END says more), all of them, in order.
        var reader = CourierMailboxCore()
        let got = await Self.pump(h, &reader, at: 2, reader.follow([Self.tag(3)], now: now + 3_000))
        #expect(got.count == 25)
        #expect(reader.fetched == 25)
    }

    static func fetches(_ outputs: [CourierMailboxCore.Output]) -> [UInt64] {
        outputs.compactMap {
            guard case let .send(b) = $0, case let .dropFetch(_, after, _)? = try? ServerPacket.decode(b, .toServer) else { return nil }
            return after
        }
    }

    /// A client proven by a forged-free exchange, following `tags`, its first fetch (from 0) under way.
    static func provenClient(following tags: [Bytes16]) -> CourierMailboxCore {
        var client = CourierMailboxCore()
        _ = client.tick(now: 0)
        _ = client.follow(tags, now: 0)
        #expect(fetches(client.receive(ServerPacket.dropCookie(cookie: tag(2), ready: true).encode(), now: 1)) == [0])
        return client
    }

    /// The page's drops as the server sends them, at these sequence numbers.
    static func deliver(_ client: inout CourierMailboxCore, _ sequences: [UInt64], tag t: UInt8 = 1, now: UInt64) throws -> Int {
        var got = 0
        for s in sequences {
            got += client.receive(ServerPacket.dropDelivery(sequence: s, envelope: try envelope(tag: t, now: 0).encoded()).encode(), now: now).count
        }
        return got
    }

    /// A server (or a forger) saying "more" without moving the cursor on ends
    /// the round: no endless paging. The control: one that moves on is followed.
    @Test func aFetchPagesOnlyForward() throws {
        var client = Self.provenClient(following: [Self.tag(1)])
        #expect(try Self.deliver(&client, Array(3...12), now: 2) == 10)
        #expect(Self.fetches(client.receive(ServerPacket.dropEnd(count: 10, last: 12, more: true).encode(), now: 2)) == [12])
        #expect(Self.fetches(client.receive(ServerPacket.dropEnd(count: 0, last: 12, more: true).encode(), now: 3)).isEmpty)
        #expect(Self.fetches(client.receive(ServerPacket.dropEnd(count: 0, last: 40, more: true).encode(), now: 4)).isEmpty, "no fetch under way")
        #expect(Self.fetches(client.tick(now: 30_003)) == [12], "the next round from where the last got to")
        #expect(Self.fetches(client.receive(ServerPacket.rejected(.rateLimited, messageID: nil).encode(), now: 30_004)).isEmpty, "refused: the round ends")
        #expect(Self.fetches(client.follow([Self.tag(1), Self.tag(3)], now: 30_005)) == [0], "new tags: from the start")
        // What it did not ask for is not taken: another tag, or behind the page's cursor.
        let other = Self.envelope(tag: 9, now: 0), mine = Self.envelope(tag: 3, now: 0)
        #expect(client.receive(ServerPacket.dropDelivery(sequence: 5, envelope: try other.encoded()).encode(), now: 30_006).isEmpty)
        #expect(client.receive(ServerPacket.dropDelivery(sequence: 6, envelope: try mine.encoded()).encode(), now: 30_006) == [.drop(mine)])
    }

    /// A forged DROP_END (from anyone who can send as the server on the LAN)
    /// naming a far sequence number cannot move the cursor: it only ends the
    /// round, and the next starts where the last whole page got to. So does
    /// a page one of whose drops was lost on the way: it is asked for again.
    /// The control: a whole page moves the cursor.
    @Test func theCursorMovesOnlyPastAWholePage() throws {
        var client = Self.provenClient(following: [Self.tag(1)])
        #expect(try Self.deliver(&client, [4, 5], now: 2) == 2)
        #expect(Self.fetches(client.receive(ServerPacket.dropEnd(count: 2, last: 5, more: true).encode(), now: 2)) == [5], "whole: on from 5")
        // The forgery: no drops, the end of the world.
        #expect(Self.fetches(client.receive(ServerPacket.dropEnd(count: 0, last: .max, more: false).encode(), now: 3)).isEmpty)
        #expect(Self.fetches(client.tick(now: 30_003)) == [5], "the cursor stayed at 5")
        #expect(Self.fetches(client.receive(ServerPacket.dropEnd(count: 0, last: 5, more: false).encode(), now: 30_004)).isEmpty, "nothing new")
        // A real page with a drop lost on the way (7 of 6, 7, 8 missing): asked for again, and then whole.
        #expect(Self.fetches(client.tick(now: 60_005)) == [5])
        #expect(try Self.deliver(&client, [6, 8], now: 60_006) == 2)
        #expect(Self.fetches(client.receive(ServerPacket.dropEnd(count: 3, last: 8, more: false).encode(), now: 60_006)).isEmpty)
        #expect(Self.fetches(client.tick(now: 90_007)) == [5], "asked for again")
        #expect(try Self.deliver(&client, [6, 7, 8], now: 90_008) == 3)
        #expect(Self.fetches(client.receive(ServerPacket.dropEnd(count: 3, last: 8, more: false).encode(), now: 90_008)).isEmpty)
        #expect(Self.fetches(client.tick(now: 120_009)) == [8], "whole: the cursor moved")
        // A page that comes short three times running (a lossy link) is passed as far as its drops came: no stall.
        var now: UInt64 = 120_009
        for time in 1...3 {
            #expect(try Self.deliver(&client, [9], now: now) == 1)
            _ = client.receive(ServerPacket.dropEnd(count: 2, last: 10, more: false).encode(), now: now)
            now += 30_001
            #expect(Self.fetches(client.tick(now: now)) == [time < 3 ? 8 : 9], "short \(time) times")
        }
    }

    /// Tags that change while a page is under way (a new peer next to us): that
    /// page's end moves nothing, and a round from 0 starts at once (the new
    /// peer's drops may be older than the cursor).
    @Test func newTagsDuringAFetchStartAgainFromTheBeginning() throws {
        var client = Self.provenClient(following: [Self.tag(1)])
        #expect(try Self.deliver(&client, [40], now: 2) == 1)
        #expect(Self.fetches(client.receive(ServerPacket.dropEnd(count: 1, last: 40, more: true).encode(), now: 2)) == [40])
        #expect(Self.fetches(client.follow([Self.tag(1), Self.tag(3)], now: 3)).isEmpty, "one fetch at a time")
        #expect(try Self.deliver(&client, [41], now: 4) == 1)
        #expect(Self.fetches(client.receive(ServerPacket.dropEnd(count: 1, last: 41, more: false).encode(), now: 4)) == [0], "from 0, at once")
    }

    /// Every 30 minutes a round starts from 0 again: a server that started
    /// afresh (its numbers from 1) is read again. The control: rounds before
    /// that go on from the cursor.
    @Test func aRoundStartsFromTheBeginningEveryThirtyMinutes() throws {
        var client = Self.provenClient(following: [Self.tag(1)])
        #expect(try Self.deliver(&client, [40], now: 2) == 1)
        _ = client.receive(ServerPacket.dropEnd(count: 1, last: 40, more: false).encode(), now: 2)
        var now: UInt64 = 2
        var afters: [UInt64] = []
        while now < 1_900_000 {
            now += 30_001
            let f = Self.fetches(client.tick(now: now))
            afters += f
            if !f.isEmpty { _ = client.receive(ServerPacket.dropEnd(count: 0, last: f[0], more: false).encode(), now: now) }
        }
        #expect(afters.prefix(59).allSatisfy { $0 == 40 } && afters.contains(0), "\(afters)")
    }

    /// A drop that cannot be encoded (a seal past 16 KiB) is said as not taken; the control, a small one, waits to be sent.
    @Test func aDropThatCannotBeEncodedIsSaidNotDropped() {
        var client = CourierMailboxCore()
        let big = Self.envelope(size: CourierEnvelope.maxCiphertext + 1, now: 0)
        #expect(client.post(big, now: 0) == [.notTaken(CourierMailbox.dropID(of: big), .malformed)] && client.waiting == 0)
        _ = client.post(Self.envelope(now: 0), now: 0)
        #expect(client.waiting == 1)
    }

    /// What a client's outputs hold: drops sent, hellos sent, and everything it said.
    static func count(_ outputs: [CourierMailboxCore.Output]) -> (drops: Int, hellos: Int, said: [CourierMailboxCore.Output]) {
        var drops = 0, hellos = 0
        var said: [CourierMailboxCore.Output] = []
        for o in outputs {
            guard case let .send(bytes) = o else { said.append(o); continue }
            switch try? ServerPacket.decode(bytes, .toServer) {
            case .drop?: drops += 1
            case .dropHello?: hellos += 1
            default: break
            }
        }
        return (drops, hellos, said)
    }

    /// Proven, then the server falls silent with a drop waiting: the drop goes
    /// at 0, 2, 6, 14, 30 and 62 s; at 90 s of silence the server is taken as
    /// lost (said once), the drop waits, and hellos back off to one a minute.
    /// When the server answers again: said once, and the drop goes at once.
    @Test func aServerThatFallsSilentIsSaidLostOnceAndTheDropWaitsForIt() {
        var client = CourierMailboxCore()
        _ = client.tick(now: 0)
        _ = client.receive(ServerPacket.dropCookie(cookie: Self.tag(1), ready: true).encode(), now: 0)
        let e = Self.envelope(now: 0)
        var drops = Self.count(client.post(e, now: 0)).drops, hellos = 0
        var said: [CourierMailboxCore.Output] = [], wakes = 0
        var t: UInt64 = 0
        while t < 600_000 {
            t = max(t + 1, client.nextDeadline() ?? 600_000)
            wakes += 1
            let c = Self.count(client.tick(now: t))
            drops += c.drops
            hellos += c.hellos
            said += c.said
        }
        #expect(drops == 6 && said == [.answering(false)] && client.waiting == 1 && !client.ready, "\(drops) \(said)")
        // Hellos from 90 s: 2, 4, 8, 16, 32 s apart, then a minute: about 13 in the 510 s, not 255.
        #expect((10...15).contains(hellos) && wakes < 30, "\(hellos) hellos, \(wakes) wakes")
        // Back: the cookie answered as proven.
        let back = client.receive(ServerPacket.dropCookie(cookie: Self.tag(2), ready: true).encode(), now: t)
        let c = Self.count(back)
        #expect(c.said == [.answering(true)] && c.drops == 1 && client.ready, "\(back)")
        // A server that answers is never said lost (the control): the drop taken, fetches answered for 10 minutes.
        _ = client.receive(ServerPacket.dropTaken(dropID: CourierMailbox.dropID(of: e), new: true).encode(), now: t)
        _ = client.follow([Self.tag(1)], now: t)
        let start = t
        var later: [CourierMailboxCore.Output] = []
        while t < start + 600_000 {
            t = max(t + 1, client.nextDeadline() ?? start + 600_000)
            for o in client.tick(now: t) {
                if case let .send(bytes) = o, case let .dropFetch(_, after, _)? = try? ServerPacket.decode(bytes, .toServer) {
                    later += client.receive(ServerPacket.dropEnd(count: 0, last: after, more: false).encode(), now: t)
                } else if case .send = o {} else { later.append(o) }
            }
        }
        #expect(later.isEmpty && client.ready && client.waiting == 0, "\(later)")
    }

    /// A server that never answers: said not answering after three hellos,
    /// once; the hellos back off (2 s doubling to a minute). The control: one
    /// that answers the first hello is never said so.
    @Test func aServerThatNeverAnswersIsSaidOnceAndAskedLessAndLess() {
        var client = CourierMailboxCore()
        var hellos = 0, said: [CourierMailboxCore.Output] = []
        var t: UInt64 = 0
        while t < 600_000 {
            let c = Self.count(client.tick(now: t))
            hellos += c.hellos
            said += c.said
            t = max(t + 1, client.nextDeadline() ?? 600_000)
        }
        #expect(said == [.answering(false)] && (12...16).contains(hellos), "\(hellos) \(said)")
        var answered = CourierMailboxCore()
        var out = answered.tick(now: 0)
        out += answered.receive(ServerPacket.dropCookie(cookie: Self.tag(1), ready: true).encode(), now: 0)
        #expect(Self.count(out).said.isEmpty && answered.ready)
    }
}
