import Crypto
import Foundation
import Testing
import StarlingCrypto
import StarlingEmbeddedNetwork
import StarlingMesh
import StarlingNodeCore
import StarlingWire

/// Issue 36: courier drops carried, as iOS carries them, on nodes in one process.
extension InProcessNodes {
@Suite struct CourierNodeTests {
    static func privateTexts(_ net: EmbeddedNetwork, _ n: Int) -> [(String, String?)] {
        net.events[n].compactMap {
            switch $0 {
            case let .privateMessage(_, _, text, _, _, via): (text, via)
            case let .dropOpened(_, _, _, _, text, _, _): (text, "courier")
            default: nil
            }
        }
    }

    /// The issue's case: alice – bob – carol; carol goes away; alice's drop
    /// for her waits with bob, and reaches carol when she comes back an hour
    /// later (virtual time). bob cannot read it.
    @Test func aDropCarriedByANeighbourReachesAPeerBackAnHourLater() throws {
        let net = NodeCoreTests.line()
        net.run(for: 3_000)
        let carol = net.nodes[2].identity.fingerprint
        net.disconnect(1, 2)
        net.run(for: 70_000) // carol's announce ages out: she is away
        #expect(net.nodes[0].peers.values.contains { $0.fingerprint == carol } == false)
        // A blocked neighbour carries nothing of ours (the control: unblocked, it takes the drop below).
        let bobKey = net.nodes[1].identity.fingerprint
        net.on(0) { c, _ in c.block(bobKey) }
        #expect(try net.on(0) { try $0.sendDrop("not through bob", to: carol, now: $1) } == 0)
        net.on(0) { c, _ in c.unblock(bobKey) }
        net.run(for: 3_000)
        let couriers = try net.on(0) { try $0.sendDrop("meet at the bridge at noon", to: carol, now: $1) }
        net.run(for: 1_000)
        #expect(couriers == 1 && net.nodes[1].tableSizes["node.courierHeld"] == 1)
        #expect(Self.privateTexts(net, 1).isEmpty, "the courier reads nothing")
        net.run(for: 3_600_000)
        #expect(net.nodes[1].tableSizes["node.courierHeld"] == 1, "still carried an hour later")
        net.connect(1, 2)
        net.run(for: 5_000)
        let got = Self.privateTexts(net, 2)
        #expect(got.count == 1 && got.first?.0 == "meet at the bridge at noon" && got.first?.1 == "courier", "\(got)")
        // The seal proves the sender: alice's key and fingerprint, though she is not here.
        let alice = net.nodes[0].identity
        #expect(net.events[2].contains { if case let .dropOpened(_, f, key, _, _, _, _) = $0 { f == alice.fingerprint.hex && key == alice.noisePublicKey } else { false } })
        // The sender heard how many took it.
        #expect(net.events[0].contains { if case .dropDeposited(_, carol.peerID, 1) = $0 { true } else { false } })
        #expect(net.nodes[1].tableSizes["node.courierHeld"] == 0, "handed over, no longer carried")

        // carol reads the courier's copy before alice sends it directly (if she ever
        // does): her read receipt counts, once, and only hers (the control: bob's
        // receipt for the same ID counts for nothing).
        let id = try #require(net.events[2].lazy.compactMap { if case let .dropOpened(_, _, _, _, _, id, _) = $0 { id } else { nil } }.first)
        let aliceID = alice.peerID
        try net.on(1) { try $0.sendReadReceipt(id, to: aliceID, now: $1) }
        net.run(for: 5_000)
        func reads() -> [PeerID] { net.events[0].compactMap { if case let .read(m, by) = $0, m == id { by } else { nil } } }
        #expect(reads().isEmpty, "a receipt from someone else counts for nothing")
        try net.on(2) { try $0.sendReadReceipt(id, to: aliceID, now: $1) }
        net.run(for: 5_000)
        #expect(reads() == [carol.peerID], "\(net.events[0])")
        try net.on(2) { try $0.sendReadReceipt(id, to: aliceID, now: $1) }
        net.run(for: 5_000)
        #expect(reads() == [carol.peerID], "once")
    }

    /// With prekeys published (bit 0), a drop is sealed to one of the
    /// recipient's one-time prekeys: it opens, the prekey is used up (kept so,
    /// across a restart) and a new bundle goes out without it.
    @Test func aDropSealedToAOneTimePrekeyOpensAndUsesItUp() throws {
        let net = NodeCoreTests.line { $0.publishesPrekeys = true }
        net.run(for: 5_000)
        let carol = net.nodes[2].identity.fingerprint
        #expect(net.nodes[2].announcedCapabilities.contains(.prekeys))
        #expect(net.nodes[0].tableSizes["node.prekeyBundles"] ?? 0 >= 2, "bob's and carol's bundles reached alice")
        #expect(net.savedPrekeys[2]?.unused.count == 8)
        net.disconnect(1, 2)
        net.run(for: 70_000)
        try net.on(0) { try $0.sendDrop("sealed to a prekey", to: carol, now: $1) }
        #expect(net.nodes[0].tableSizes["node.prekeysUsed"] == 1, "sealed to one of carol's prekeys")
        net.run(for: 1_000)
        net.connect(1, 2)
        net.run(for: 5_000)
        let got = Self.privateTexts(net, 2)
        #expect(got.map(\.0) == ["sealed to a prekey"] && got.first?.1 == "courier", "\(got)")
        #expect(net.nodes[2].localPrekeys?.unused.count == 7)
        #expect(net.savedPrekeys[2]?.records.filter { $0.consumedAt != nil }.count == 1, "its use is kept")
        net.restart(2)
        #expect(net.nodes[2].localPrekeys == net.savedPrekeys[2], "the same prekeys after a restart")
    }

    /// Deposits are taken only signed by their depositor's announced key,
    /// within the quotas (2 from one depositor who is not a favourite), and
    /// leave at their expiry.
    @Test func depositsKeepToTheirQuotasAndExpire() throws {
        let net = EmbeddedNetwork()
        let bob = net.addNode("bob")
        let raw = net.openRawLink(to: bob)
        let depositor = Identity.generate(), carol = Identity.generate()
        net.inject(try Announcement.make(identity: depositor, nickname: "dan", timestamp: net.now).encoded(), on: raw)
        net.run(for: 100)
        func deposit(_ i: Int, signed: Bool = true) throws -> [UInt8] {
            let sealed = try CourierSeal.seal(Array("drop \(i)".utf8), from: depositor.noiseKey, to: carol.noisePublicKey)
            let e = CourierEnvelope(recipientTag: CourierSeal.recipientTag(noiseKey: carol.noisePublicKey, day: CourierSeal.epochDay(unixSeconds: net.now / 1_000)),
                                    expiry: net.now + 5_000, ciphertext: sealed)
            var p = Packet(type: .courierEnvelope, ttl: 7, timestamp: net.now, senderID: depositor.peerID, recipientID: net.nodes[bob].peerID,
                           payload: try e.encoded(), compress: false)
            if signed { try PacketSigning.sign(&p, with: depositor.signingKey) }
            return try p.encoded()
        }
        net.inject(try deposit(0, signed: false), on: raw)
        net.run(for: 100)
        #expect(net.nodes[bob].tableSizes["node.courierHeld"] == 0 && net.nodes[bob].refusals.courier == 1, "unsigned: refused")
        for i in 1...3 { net.inject(try deposit(i), on: raw) }
        net.run(for: 100)
        #expect(net.nodes[bob].tableSizes["node.courierHeld"] == 2 && net.nodes[bob].refusals.courier == 2, "2 a depositor")
        net.run(for: 6_000)
        #expect(net.nodes[bob].tableSizes["node.courierHeld"] == 0, "gone at their expiry")
    }

    /// A flood: 100 depositors who are not favourites, 3 drops each, on one
    /// link: at most 20 of theirs are carried (2 a depositor), the rest
    /// refused and counted; a favourite's drops still find room (the 20
    /// bound only the others), up to its 5; the table never passes 40.
    @Test func aFloodOfDepositorsStaysWithinTheQuotas() throws {
        let net = EmbeddedNetwork()
        let bob = net.addNode("bob")
        let raw = net.openRawLink(to: bob)
        let recipient = Identity.generate()
        func deposit(from d: Identity, _ i: Int) throws -> [UInt8] {
            let sealed = try CourierSeal.seal(Array("drop \(i)".utf8), from: d.noiseKey, to: recipient.noisePublicKey)
            let e = CourierEnvelope(recipientTag: CourierSeal.recipientTag(noiseKey: recipient.noisePublicKey, day: CourierSeal.epochDay(unixSeconds: net.now / 1_000)),
                                    expiry: net.now + 3_600_000, ciphertext: sealed)
            var p = Packet(type: .courierEnvelope, ttl: 7, timestamp: net.now, senderID: d.peerID, recipientID: net.nodes[bob].peerID,
                           payload: try e.encoded(), compress: false)
            try PacketSigning.sign(&p, with: d.signingKey)
            return try p.encoded()
        }
        func held() -> Int { net.nodes[bob].tableSizes["node.courierHeld"] ?? -1 }
        for n in 0..<100 {
            let d = Identity.generate()
            net.inject(try Announcement.make(identity: d, nickname: "d\(n)", timestamp: net.now).encoded(), on: raw)
            for i in 0..<3 { net.inject(try deposit(from: d, i), on: raw) }
            net.run(for: 20)
            #expect(held() <= 20)
        }
        #expect(held() == 20 && net.nodes[bob].refusals.courier == 280, "\(held()) held, \(net.nodes[bob].refusals.courier) refused")
        // A favourite: its 5 are kept beside the 20; its sixth is refused.
        let friend = Identity.generate()
        net.on(bob) { c, _ in c.setFavorite(friend.fingerprint, true) }
        net.inject(try Announcement.make(identity: friend, nickname: "friend", timestamp: net.now).encoded(), on: raw)
        for i in 0..<6 { net.inject(try deposit(from: friend, i), on: raw) }
        net.run(for: 100)
        #expect(held() == 25 && net.nodes[bob].refusals.courier == 281, "\(held()) held")
        #expect(held() <= 40)
    }

    /// The store as a value: a favourite's deposit pushes out the oldest other;
    /// copies split in half on each spray, never to whom they came from.
    @Test func theStoreSplitsCopiesAndMakesRoomForFavourites() {
        var s = CourierStore()
        s.limits.maxEnvelopes = 3
        s.limits.maxVerifiedEnvelopes = 3
        let now: UInt64 = 1_750_000_000_000
        func env(_ i: UInt8, copies: UInt8 = 1) -> CourierEnvelope {
            CourierEnvelope(recipientTag: [UInt8](repeating: i, count: 16), expiry: now + 3_600_000, ciphertext: [i, i], copies: copies)
        }
        let (a, b, c, fav) = ([UInt8](repeating: 1, count: 32), [UInt8](repeating: 2, count: 32), [UInt8](repeating: 3, count: 32), [UInt8](repeating: 9, count: 32))
        #expect(s.deposit(env(1, copies: 4), from: a, favorite: false, now: now) == .kept)
        #expect(s.deposit(env(1, copies: 4), from: b, favorite: false, now: now) == .duplicate)
        #expect(s.deposit(env(2), from: b, favorite: false, now: now + 1) == .kept)
        #expect(s.deposit(env(3), from: c, favorite: false, now: now + 2) == .kept)
        guard case .refused = s.deposit(env(4), from: c, favorite: false, now: now + 3) else { Issue.record("full: refused"); return }
        #expect(s.deposit(env(5), from: fav, favorite: true, now: now + 4) == .kept)
        #expect(s.count == 3 && !s.held.contains { $0.envelope.recipientTag[0] == 1 }, "the oldest non-favourite went")
        var t = CourierStore()
        _ = t.deposit(env(7, copies: 4), from: a, favorite: false, now: now)
        #expect(t.spray(to: b, now: now).map(\.copies) == [2])
        #expect(t.spray(to: b, now: now).isEmpty, "once to each courier")
        #expect(t.spray(to: a, now: now).isEmpty, "never back to its depositor")
        #expect(t.spray(to: c, now: now).map(\.copies) == [1])
        #expect(t.held.first?.envelope.copies == 1 && t.spray(to: fav, now: now).isEmpty, "carry-only now")
        #expect(t.deposit(env(7, copies: 8), from: c, favorite: false, now: now) == .duplicate && t.held.first?.envelope.copies == 1,
                "a replay never refills spent copies")
        // Handed over: no longer carried; one that could not be sent is carried again, once.
        let tag7 = env(7).recipientTag
        var u = CourierStore()
        _ = u.deposit(env(7), from: a, favorite: false, now: now)
        let recipient = [UInt8](repeating: 0x42, count: 32)
        let dayTag = CourierSeal.recipientTag(noiseKey: recipient, day: CourierSeal.epochDay(unixSeconds: now / 1_000))
        _ = u.deposit(CourierEnvelope(recipientTag: dayTag, expiry: now + 3_600_000, ciphertext: [9]), from: a, favorite: false, now: now)
        let out = u.handOver(to: recipient, now: now)
        #expect(out.count == 1 && u.count == 1 && u.held.first?.envelope.recipientTag == tag7, "the control stays")
        u.readmit(out[0])
        u.readmit(out[0])
        #expect(u.count == 2)
    }
}
}
