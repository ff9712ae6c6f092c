import Crypto
import StarlingWire
import StarlingYaOKServerCore
import Testing

/// Issue 39: what a client written from the documents alone could not know.
@Suite struct OutsideClientTests {
    func msg(_ from: ServerUser, to: ServerUser, _ text: String, id: UserID = .random(), token: ServerToken?) throws -> [UInt8] {
        ServerPacket.message(sender: from.id, recipient: to.id, payload: try from.seal(text, to: to, id: id), token: token).encode()
    }

    /// A POLL answer ends with POLL_END: the IDs sent and whether more wait.
    /// Over a link that loses two of ten MSGs, the client knows the answer is
    /// incomplete and polls again at once; whole and with nothing more, it
    /// waits for its interval.
    @Test func aPollAnswerIsKnownCompleteOrIncompleteOverALossyLink() async throws {
        let h = ServerHarness()
        let alice = ServerUser(), bob = ServerUser()
        let aliceToken = try await h.register(alice, from: 1)
        _ = try await h.register(bob, from: 9) // bob is known to the server; his client registers below
        var ids: [UserID] = []
        for i in 0..<12 {
            let id = UserID.random()
            ids.append(id)
            await h.receive(try msg(alice, to: bob, "m\(i)", id: id, token: aliceToken), from: 1)
        }
        #expect(await h.take(1).count == 12)
        // Bob's client, registered through the server core.
        var client = YaOKClientCore(userID: bob.id, signingKey: bob.identity.signingKey)
        func toServer(_ steps: [YaOKClientCore.Step]) async -> Int {
            var polls = 0
            for case let .send(bytes) in steps {
                if case .poll? = try? ServerPacket.decode(bytes, .toServer) { polls += 1 }
                await h.receive(bytes, from: 2)
            }
            return polls
        }
        var t = await h.now + 1
        _ = await toServer(client.start(now: t))
        for p in await h.take(2) { _ = client.receive(p.encode(), now: t) } // REGISTERED (and its first POLL)
        #expect(client.isRegistered)
        _ = await h.take(2)

        // A POLL: ten MSGs, then POLL_END listing them, more waiting; two MSGs lost.
        _ = await toServer(client.poll(now: t))
        let answer = await h.take(2)
        guard case let .pollEnd(listed, more)? = answer.last else { Issue.record("no POLL_END: \(answer)"); return }
        #expect(answer.count == 11 && listed == Array(ids.prefix(10)) && more)
        var repoll = 0
        for (i, p) in answer.enumerated() where i != 2 && i != 6 {
            let steps = client.receive(p.encode(), now: t)
            repoll += await toServer(steps)
            for case let .event(.message(_, payload)) in steps {
                _ = await toServer(client.acknowledge(try SealedMessageBytes.decode(payload).messageID, now: t))
            }
        }
        #expect(repoll == 1, "polled again at once after POLL_END")
        #expect(client.answersIncomplete == 1)
        // The second answer: the two lost and the two behind, then POLL_END with nothing more.
        let second = await h.take(2)
        guard case let .pollEnd(listed2, more2)? = second.last else { Issue.record("no POLL_END: \(second)"); return }
        #expect(Set(listed2) == Set([ids[2], ids[6], ids[10], ids[11]]) && !more2)
        repoll = 0
        for p in second { repoll += await toServer(client.receive(p.encode(), now: t)) }
        #expect(repoll == 0, "whole and nothing more: the next POLL at its interval")
        #expect(client.answersIncomplete == 1)
        #expect(client.nextDeadline >= t + 1_000)

        // Whole but for one, nothing more: a POLL 250 ms later.
        let lateID = UserID.random()
        await h.receive(try msg(alice, to: bob, "late", id: lateID, token: aliceToken), from: 1)
        _ = await h.take(2) // pushed at once (bob is online): lost on the way
        t += 1_000
        _ = await toServer(client.poll(now: t))
        let third = await h.take(2)
        #expect(third.count == 2 + 4, "the 4 unacknowledged of the second answer, the new one, POLL_END: \(third.count)")
        for p in third where !p.isMessage(lateID) { _ = client.receive(p.encode(), now: t) }
        #expect(client.answersIncomplete == 2)
        #expect(client.nextDeadline <= t + 250)
    }

    /// REGISTER's rate is per address (IP and port, as the runtime's
    /// UDPAddress is): seven new users from seven ports are all registered;
    /// from one port, the sixth in a burst gets 08.
    @Test func registrationsAreLimitedPerAddress() async throws {
        let h = ServerHarness()
        for port in 0..<7 {
            await h.receive(try ServerUser().registration(at: await h.now), from: 100 + port)
            guard case .registered? = await h.take(100 + port).last else { Issue.record("port \(port) refused"); return }
        }
        var answers: [ServerPacket] = []
        for _ in 0..<6 {
            await h.receive(try ServerUser().registration(at: await h.now), from: 200)
            answers += await h.take(200)
        }
        #expect(answers.prefix(5).allSatisfy { if case .registered = $0 { true } else { false } })
        #expect(answers.last == .rejected(.rateLimited, messageID: nil))
        // Answered REJECTED 08: a rejection, not a drop (`_dropped_total` counts what got no answer).
        let counters = await h.core.counters
        #expect(counters.rejections[.rateLimited] == 1 && counters.rateLimited == 0, "\(counters)")
    }

    /// Every REJECTED of a MSG names the message when its ID could be read,
    /// with the reason the document gives for each check.
    @Test func eachRejectionOfAMessageNamesIt() async throws {
        var config = YaOKServerCore<Int>.Configuration()
        config.limits.perUser = 1
        let h = ServerHarness(configuration: config)
        let alice = ServerUser(), bob = ServerUser(), carol = ServerUser(), stranger = ServerUser()
        let aliceToken = try await h.register(alice, from: 1)
        let carolToken = try await h.register(carol, from: 3)
        _ = try await h.register(bob, from: 2)
        func answer(_ bytes: [UInt8], from address: Int) async -> ServerPacket? {
            await h.receive(bytes, from: address)
            return await h.take(address).last
        }
        // 05: no such session.
        var id = UserID.random()
        #expect(await answer(try msg(alice, to: bob, "a", id: id, token: .random()), from: 1) == .rejected(.unknownSession, messageID: id))
        // 0E: a session, but not the MSG's sender.
        id = .random()
        #expect(await answer(try msg(alice, to: bob, "b", id: id, token: carolToken), from: 3) == .rejected(.senderMismatch, messageID: id))
        // 09: the sealed message's own header says another recipient.
        id = .random()
        let sealedForCarol = try alice.seal("c", to: carol, id: id)
        #expect(await answer(ServerPacket.message(sender: alice.id, recipient: bob.id, payload: sealedForCarol, token: aliceToken).encode(), from: 1)
                == .rejected(.malformed, messageID: id))
        // 09 without an ID: a payload shorter than a sealed message.
        #expect(await answer(ServerPacket.message(sender: alice.id, recipient: bob.id, payload: [1, 2, 3], token: aliceToken).encode(), from: 1)
                == .rejected(.malformed, messageID: nil))
        // 0A: a recipient who never registered.
        id = .random()
        #expect(await answer(try msg(alice, to: stranger, "d", id: id, token: aliceToken), from: 1) == .rejected(.unknownRecipient, messageID: id))
        // QUEUED, then 06: bob's queue (1 here) is full.
        let first = UserID.random()
        let firstBytes = try alice.seal("e", to: bob, id: first)
        #expect(await answer(ServerPacket.message(sender: alice.id, recipient: bob.id, payload: firstBytes, token: aliceToken).encode(), from: 1)
                == .queued(messageID: first, online: true))
        _ = await h.take(2)
        id = .random()
        #expect(await answer(try msg(alice, to: bob, "f", id: id, token: aliceToken), from: 1) == .rejected(.recipientQueueFull, messageID: id))
        // The same sender and ID with the same bytes: QUEUED again, stored once.
        #expect(await answer(ServerPacket.message(sender: alice.id, recipient: bob.id, payload: firstBytes, token: aliceToken).encode(), from: 1)
                == .queued(messageID: first, online: true))
        // 0F: the same sender and ID with other bytes; the first is kept.
        #expect(await answer(try msg(alice, to: bob, "other words", id: first, token: aliceToken), from: 1)
                == .rejected(.messageIDReused, messageID: first))
        // 0D: another sender under that ID.
        #expect(await answer(try msg(carol, to: bob, "g", id: first, token: carolToken), from: 3) == .rejected(.messageIDTaken, messageID: first))
        #expect(try await h.store.counts().queued == 1)
        let held = try await h.store.fetch(bob.id, limit: 10)
        #expect(held.map(\.payload) == [firstBytes], "the first bytes are what bob gets")
    }

    /// A session whose client is gone (a one-shot sender that never said BYE)
    /// stops being pushed to: 75 s after a push with no packet from it, the
    /// session ends, and the next MSG is QUEUED for a POLL, not pushed. The
    /// control: a client that PINGs keeps its session.
    @Test func aPushNobodyAnswersEndsTheSession() async throws {
        let h = ServerHarness()
        let alice = ServerUser(), bob = ServerUser(), carol = ServerUser()
        let aliceToken = try await h.register(alice, from: 1)
        let bobToken = try await h.register(bob, from: 2)
        let carolToken = try await h.register(carol, from: 3)
        await h.receive(try msg(alice, to: bob, "to a gone client", token: aliceToken), from: 1)
        await h.receive(try msg(alice, to: carol, "to a live one", token: aliceToken), from: 1)
        #expect(await h.take(1).allSatisfy { $0 == .queued(messageID: $0.queuedID!, online: true) })
        await h.advance(60_000)
        await h.receive(ServerPacket.ping(token: carolToken).encode(), from: 3) // carol lives
        await h.receive(ServerPacket.ping(token: aliceToken).encode(), from: 1)
        await h.advance(16_000)
        var core = await h.core
        core.tick(now: await h.now)
        #expect(core.user(of: bobToken) == nil, "bob's session ended")
        #expect(core.user(of: carolToken) == carol.id && core.user(of: aliceToken) == alice.id)
        #expect(core.counters.deadPushes == 1)
        await h.setCore(core)
        _ = await h.take(1)
        let id = UserID.random()
        await h.receive(try msg(alice, to: bob, "later", id: id, token: aliceToken), from: 1)
        #expect(await h.take(1) == [.queued(messageID: id, online: false)])
        #expect(try await h.store.counts().queued == 3, "nothing pushed was lost: both of bob's wait for his POLL")
    }
}

extension ServerPacket {
    var queuedID: UserID? { if case let .queued(id, _) = self { id } else { nil } }
    func isMessage(_ id: UserID) -> Bool {
        guard case let .message(_, _, payload, _) = self else { return false }
        return (try? SealedMessageBytes.decode(payload).messageID) == id
    }
}
