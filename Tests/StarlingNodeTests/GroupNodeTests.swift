import Crypto
import Foundation
import Testing
import StarlingCrypto
import StarlingEmbeddedNetwork
import StarlingMesh
import StarlingNodeCore
import StarlingWire

/// Issue 36: private groups (0x25, Noise 0x06 / 0x07) as iOS runs them, on
/// nodes in one process.
extension InProcessNodes {
@Suite struct GroupNodeTests {
    static func messages(_ net: EmbeddedNetwork, _ node: Int) -> [GroupMessage] {
        net.events[node].compactMap { if case let .groupMessage(m) = $0 { m } else { nil } }
    }

    static func changes(_ net: EmbeddedNetwork, _ node: Int) -> [GroupChange] {
        net.events[node].compactMap { if case let .groupChanged(_, c, _) = $0 { c } else { nil } }
    }

    static func groupID(_ s: GroupSummary) throws -> [UInt8] { try [UInt8](hex: s.groupID) }

    /// alice(0) – bob(1) – carol(2) – dave(3), and erin(4) on carol: alice is
    /// 3 hops from dave and erin.
    static func mesh() -> EmbeddedNetwork {
        let net = EmbeddedNetwork()
        for name in ["alice", "bob", "carol", "dave", "erin"] { net.addNode(name) }
        for i in 0..<3 { net.connect(i, i + 1) }
        net.connect(2, 4)
        // Until every node has every other's announce (at most 30 s).
        for _ in 0..<30 where net.nodes.contains(where: { $0.peers.count < 4 }) { net.run(for: 1_000) }
        return net
    }

    /// The issue's case: a group of 5 across 3 hops; a message reaches every
    /// other member once, by the roster's name; a member removed learns it,
    /// and cannot read the next epoch, which the others read.
    @Test func aGroupOfFiveAcrossThreeHopsAndAMemberRemoved() throws {
        let net = Self.mesh()
        let group = try net.on(0) { try $0.createGroup(named: "trail crew", now: $1) }
        let id = try Self.groupID(group)
        // A state carries the key: never queued for whoever answers a handshake under a
        // peer ID, only sent into a session that proved the member's key.
        let first = net.nodes[1].peerID
        try net.on(0) { try $0.inviteToGroup(id, peer: first, now: $1) }
        #expect(net.nodes[0].tableSizes["node.waitingPayloads"] == 0)
        net.run(for: 1_500)
        for n in 2...4 {
            let invitee = net.nodes[n].peerID
            try net.on(0) { try $0.inviteToGroup(id, peer: invitee, now: $1) }
            net.run(for: 1_500)
        }
        net.run(for: 2_000)
        for n in 1...4 {
            let held = try #require(net.nodes[n].groups.first, "node \(n) holds no group: \(net.events[n].suffix(5))")
            #expect(held.name == "trail crew" && held.epoch == 5 && held.members.count == 5, "node \(n): \(held)")
            #expect(Self.changes(net, n).first == .joined, "node \(n): \(Self.changes(net, n))")
        }
        #expect(net.nodes[0].groups.first?.epoch == 5)

        try net.on(3) { try $0.sendToGroup(id, text: "summit at noon", now: $1) }
        net.run(for: 2_000)
        for n in [0, 1, 2, 4] {
            let got = Self.messages(net, n)
            #expect(got.count == 1 && got.first?.text == "summit at noon" && got.first?.nickname == "dave"
                    && got.first?.group.name == "trail crew", "node \(n): \(got)")
        }
        #expect(Self.messages(net, 3).isEmpty, "our own is not shown back to us")

        // erin is removed: told so, the group gone from her node; the others hold epoch 6.
        let erin = net.nodes[4].identity.fingerprint
        try net.on(0) { try $0.removeFromGroup(id, member: erin, now: $1) }
        net.run(for: 2_000)
        #expect(net.nodes[4].groups.isEmpty && Self.changes(net, 4).last == .removed, "\(Self.changes(net, 4))")
        for n in 0...3 { #expect(net.nodes[n].groups.first?.epoch == 6 && net.nodes[n].groups.first?.members.count == 4, "node \(n)") }

        try net.on(1) { try $0.sendToGroup(id, text: "erin is not here", now: $1) }
        net.run(for: 2_000)
        for n in [0, 2, 3] { #expect(Self.messages(net, n).map(\.text).contains("erin is not here"), "node \(n)") }
        #expect(!Self.messages(net, 4).map(\.text).contains("erin is not here"))
        // The packet reached erin's node (carol relays it there, and it is kept for sync): unreadable to her.
        #expect(net.nodes[4].tableSizes["node.groupPackets"] == 2)
        #expect(net.nodes[0].announcedCapabilities.contains(.groups))
    }

    /// A member who was away while a key update went out is sent the group's
    /// state when they are here again (Android's repair; iOS has none), and
    /// reads the new epoch; what was said while they were away comes by the
    /// group's sync round (type bit 10).
    @Test func aMemberAwayCatchesUpOnTheirReturn() throws {
        let net = Self.mesh()
        let id = try Self.groupID(try net.on(0) { try $0.createGroup(named: "crew", now: $1) })
        let (bob, dave, carol) = (net.nodes[1].peerID, net.nodes[3].peerID, net.nodes[2].peerID)
        try net.on(0) { try $0.inviteToGroup(id, peer: bob, now: $1) }
        try net.on(0) { try $0.inviteToGroup(id, peer: dave, now: $1) }
        net.run(for: 3_000)
        #expect(net.nodes[3].groups.first?.epoch == 3)
        net.disconnect(2, 3) // dave is away
        net.run(for: 70_000) // long enough for his announce to age out
        try net.on(0) { try $0.inviteToGroup(id, peer: carol, now: $1) }
        net.run(for: 2_000)
        try net.on(1) { try $0.sendToGroup(id, text: "while dave was away", now: $1) }
        net.run(for: 2_000)
        #expect(net.nodes[3].groups.first?.epoch == 3, "dave missed the update")
        #expect(Self.messages(net, 2).map(\.text) == ["while dave was away"])
        net.connect(2, 3)
        net.run(for: 45_000)
        #expect(net.nodes[3].groups.first?.epoch == 4 && net.nodes[3].groups.first?.members.count == 4)
        let got = Self.messages(net, 3)
        #expect(got.map(\.text) == ["while dave was away"] && got.first?.history == true, "\(got)")
    }

    /// Before its trust decisions are loaded, a node takes no group state
    /// (a blocked creator's must not be): it waits, and is taken once they are.
    @Test func aGroupStateWaitsForTheTrustDecisions() throws {
        let net = NodeCoreTests.line()
        net.restart(2) { $0.trustKnown = false }
        for _ in 0..<30 where net.nodes[0].peers.count < 2 || net.nodes[2].peers.count < 2 { net.run(for: 1_000) }
        let id = try Self.groupID(try net.on(0) { try $0.createGroup(named: "crew", now: $1) })
        let carol = net.nodes[2].peerID
        try net.on(0) { try $0.inviteToGroup(id, peer: carol, now: $1) }
        net.run(for: 3_000)
        #expect(net.nodes[2].groups.isEmpty, "waiting for the blocks")
        net.on(2) { core, now in core.trustDecided(now: now) }
        net.run(for: 100)
        #expect(net.nodes[2].groups.first?.name == "crew")
    }

    /// Group message packets are kept for sync whoever can read them, within
    /// their bounds: 200 in all, 50 from one sender ID, the oldest going.
    @Test func theGroupPacketStoreStaysWithinItsBounds() throws {
        let net = EmbeddedNetwork()
        let victim = net.addNode("victim")
        let raw = net.openRawLink(to: victim)
        net.run(for: 100)
        func junk(_ sender: UInt64, _ i: Int) throws -> [UInt8] {
            let env = GroupEnvelope(groupID: [UInt8](repeating: UInt8(i & 0xFF), count: 16), epoch: 1, nonce: [UInt8](repeating: 0, count: 12),
                                    ciphertext: [UInt8](repeating: UInt8(i >> 8), count: 40) + [UInt8(i & 0xFF)])
            return try Packet(type: .groupMessage, ttl: 7, timestamp: net.now, senderID: PeerID(rawValue: sender), payload: env.encoded(),
                              compress: false).encoded()
        }
        // From the future (it would never age out), or not an envelope: not kept.
        net.inject(try Packet(type: .groupMessage, ttl: 7, timestamp: net.now + 86_400_000, senderID: PeerID(rawValue: 0xBB),
                              payload: GroupEnvelope(groupID: [UInt8](repeating: 1, count: 16), epoch: 1, nonce: [UInt8](repeating: 0, count: 12),
                                                     ciphertext: [UInt8](repeating: 2, count: 40)).encoded(), compress: false).encoded(), on: raw)
        net.inject(try Packet(type: .groupMessage, ttl: 7, timestamp: net.now, senderID: PeerID(rawValue: 0xBC), payload: [1, 2, 3],
                              compress: false).encoded(), on: raw)
        net.run(for: 100)
        #expect(net.nodes[victim].tableSizes["node.groupPackets"] == 0)
        for i in 0..<120 { net.inject(try junk(0xAA, i), on: raw) } // one flooder
        net.run(for: 100)
        #expect(net.nodes[victim].tableSizes["node.groupPackets"] == 50)
        for i in 0..<400 { net.inject(try junk(UInt64(0x1000 + i), i), on: raw) } // many sender IDs
        net.run(for: 100)
        #expect(net.nodes[victim].tableSizes["node.groupPackets"] == 200)
        #expect(net.nodes[victim].refusals.groups == 1, "only the bytes that are no envelope: an unreadable envelope is not ours, not refused")
    }
}
}

/// The group rules as a plain value (bitchat ChatGroupCoordinator.swift).
@Suite struct GroupTableTests {
    struct Person {
        let identity = Identity.generate()
        let nickname: String
        var member: GroupMember {
            GroupMember(fingerprint: identity.fingerprint.bytes, signingKey: identity.signingPublicKey, nickname: nickname)
        }
    }

    static let alice = Person(nickname: "alice"), bob = Person(nickname: "bob"), mallory = Person(nickname: "mallory")

    static func state(epoch: UInt32, members: [Person], signer: Person = alice, key: [UInt8] = [UInt8](repeating: 0x42, count: 32)) throws -> GroupState {
        var s = GroupState(groupID: Array(0..<16), name: "trail crew", key: key, epoch: epoch, members: members.map(\.member),
                           creatorFingerprint: alice.identity.fingerprint.bytes)
        s.signature = Array(try signer.identity.signingKey.signature(for: s.signingBytes))
        return s
    }

    @Test func statesAreTakenFromTheirCreatorOnlyAndNeverGoBack() throws {
        var t = GroupTable()
        let me = Self.bob.identity.fingerprint, creator = Self.alice.identity.fingerprint
        // Not from the creator's session, or not the creator's signature: refused.
        guard case .refused = t.take(try Self.state(epoch: 2, members: [Self.alice, Self.bob]), invite: true, from: Self.mallory.identity.fingerprint, me: me)
        else { Issue.record("from mallory's session"); return }
        guard case .refused = t.take(try Self.state(epoch: 2, members: [Self.alice, Self.bob], signer: Self.mallory), invite: true, from: creator, me: me)
        else { Issue.record("signed by mallory"); return }
        // The control: alice's, from alice.
        guard case .joined = t.take(try Self.state(epoch: 2, members: [Self.alice, Self.bob]), invite: true, from: creator, me: me)
        else { Issue.record("alice's own"); return }
        #expect(t.take(try Self.state(epoch: 2, members: [Self.alice, Self.bob]), invite: false, from: creator, me: me) == .unchanged)
        guard case .refused = t.take(try Self.state(epoch: 1, members: [Self.alice, Self.bob]), invite: false, from: creator, me: me)
        else { Issue.record("an older epoch"); return }
        guard case .updated = t.take(try Self.state(epoch: 3, members: [Self.alice, Self.bob, Self.mallory]), invite: false, from: creator, me: me)
        else { Issue.record("a newer epoch"); return }
        // Removed: the group and its key are gone.
        guard case .removed = t.take(try Self.state(epoch: 4, members: [Self.alice], key: [UInt8](repeating: 0, count: 32)), invite: false,
                                     from: creator, me: me)
        else { Issue.record("removal"); return }
        #expect(t.groups.isEmpty && t.departed.count == 1)
        // Gone: a stale key update does not bring it back; a new invite does.
        guard case .refused = t.take(try Self.state(epoch: 5, members: [Self.alice, Self.bob]), invite: false, from: creator, me: me)
        else { Issue.record("a key update after leaving"); return }
        guard case .joined = t.take(try Self.state(epoch: 6, members: [Self.alice, Self.bob]), invite: true, from: creator, me: me)
        else { Issue.record("a new invite"); return }
    }

    /// The group's ID is in the clear: a state from another "creator" of a
    /// group we hold is a takeover, refused (the control: its creator's own).
    @Test func anotherCreatorCannotTakeAGroupOver() throws {
        var t = GroupTable()
        let me = Self.bob.identity.fingerprint
        guard case .joined = t.take(try Self.state(epoch: 2, members: [Self.alice, Self.bob]), invite: true,
                                    from: Self.alice.identity.fingerprint, me: me) else { Issue.record("alice's invite"); return }
        var forged = GroupState(groupID: Array(0..<16), name: "trail crew", key: [UInt8](repeating: 7, count: 32), epoch: 9,
                                members: [Self.mallory.member, Self.bob.member], creatorFingerprint: Self.mallory.identity.fingerprint.bytes)
        forged.signature = Array(try Self.mallory.identity.signingKey.signature(for: forged.signingBytes))
        guard case .refused = t.take(forged, invite: false, from: Self.mallory.identity.fingerprint, me: me) else { Issue.record("mallory took it"); return }
        #expect(t.groups.first?.value.epoch == 2)
        guard case .updated = t.take(try Self.state(epoch: 3, members: [Self.alice, Self.bob]), invite: false,
                                     from: Self.alice.identity.fingerprint, me: me) else { Issue.record("alice's update"); return }
    }

    /// The per-sender share is keyed on a claimed, unsigned sender ID: junk
    /// under bob's ID pushes out its own kind first, never bob's message that
    /// opened for us (the control: one we never read goes).
    @Test func junkUnderAClaimedSenderCannotPushOutAMessageWeRead() throws {
        let state = try Self.state(epoch: 2, members: [Self.alice, Self.bob])
        let now: UInt64 = 1_750_000_000_000
        let bob = Self.bob.identity.peerID
        func real() throws -> Packet {
            let e = try GroupSealing.seal(GroupMessageBody(messageID: "m", senderSigningKey: [], senderNickname: "bob", timestamp: now, content: "hi"),
                                          groupID: state.groupID, epoch: 2, key: state.key, sender: Self.bob.identity.signingKey)
            return Packet(type: .groupMessage, ttl: 7, timestamp: now, senderID: bob, payload: e.encoded(), compress: false)
        }
        func junk(_ i: Int) -> Packet {
            Packet(type: .groupMessage, ttl: 7, timestamp: now + UInt64(i) + 1, senderID: bob,
                   payload: GroupEnvelope(groupID: state.groupID, epoch: 2, nonce: [UInt8](repeating: 0, count: 12),
                                          ciphertext: [UInt8](repeating: UInt8(i & 0xFF), count: 40) + [UInt8(i >> 8)]).encoded(), compress: false)
        }
        for markRead in [true, false] {
            var t = GroupTable()
            let r = try real()
            let kept = t.keep(r, now: now)
            #expect(kept)
            if markRead { t.markRead(PacketID(r)) }
            for i in 0..<60 { _ = t.keep(junk(i), now: now) }
            #expect(t.packetCount == 50)
            #expect(t.packets(of: state.groupID, epoch: 2).contains(r) == markRead, markRead ? "read: kept" : "the control: never read, it went")
        }
    }

    /// One creator fills at most 4 of our 64 groups (the control: another creator's still joins).
    @Test func oneCreatorCannotFillEveryGroup() throws {
        var t = GroupTable()
        let me = Self.bob.identity.fingerprint
        for i in 0..<5 {
            var g = GroupState(groupID: [UInt8](repeating: UInt8(i), count: 16), name: "spam \(i)", key: [UInt8](repeating: 7, count: 32), epoch: 1,
                               members: [Self.mallory.member, Self.bob.member], creatorFingerprint: Self.mallory.identity.fingerprint.bytes)
            g.signature = Array(try Self.mallory.identity.signingKey.signature(for: g.signingBytes))
            let outcome = t.take(g, invite: true, from: Self.mallory.identity.fingerprint, me: me)
            if i < 4 { guard case .joined = outcome else { Issue.record("group \(i)"); return } } else { guard case .refused = outcome else { Issue.record("the fifth"); return } }
        }
        guard case .joined = t.take(try Self.state(epoch: 2, members: [Self.alice, Self.bob]), invite: true, from: Self.alice.identity.fingerprint, me: me)
        else { Issue.record("alice's"); return }
    }

    /// What the store kept never moves a group back: an older epoch or a
    /// group left since is not restored (the control: an empty table takes it).
    @Test func aRestoreNeverMovesAGroupBack() throws {
        var t = GroupTable()
        t.restore([try Self.state(epoch: 2, members: [Self.alice, Self.bob])], departed: [])
        #expect(t.groups.first?.value.epoch == 2)
        t.set(try Self.state(epoch: 3, members: [Self.alice, Self.bob]))
        t.restore([try Self.state(epoch: 2, members: [Self.alice, Self.bob])], departed: [])
        #expect(t.groups.first?.value.epoch == 3)
        t.leave(Array(0..<16))
        t.restore([try Self.state(epoch: 3, members: [Self.alice, Self.bob])], departed: [])
        #expect(t.groups.isEmpty, "left at epoch 3: not brought back")
    }

    @Test func aMessageOpensOnlyForTheEpochHeldAndFromAMember() throws {
        var t = GroupTable()
        let state = try Self.state(epoch: 2, members: [Self.alice, Self.bob])
        t.set(state)
        func sealed(by p: Person, epoch: UInt32 = 2, key: [UInt8] = state.key, id: String) throws -> GroupEnvelope {
            try GroupSealing.seal(GroupMessageBody(messageID: id, senderSigningKey: [], senderNickname: p.nickname, timestamp: 1, content: "hi"),
                                  groupID: state.groupID, epoch: epoch, key: key, sender: p.identity.signingKey)
        }
        let mine = Self.alice.identity.signingPublicKey
        guard case let .message(_, body, member) = t.open(try sealed(by: Self.bob, id: "m1"), mySigningKey: mine) else {
            Issue.record("the control: bob's message")
            return
        }
        #expect(body.content == "hi" && member.nickname == "bob")
        #expect(t.open(try sealed(by: Self.bob, id: "m1"), mySigningKey: mine) == .duplicate)
        // The group's key, a signer not in the roster: "key possession alone is not authorship".
        guard case .refused = t.open(try sealed(by: Self.mallory, id: "m2"), mySigningKey: mine) else { Issue.record("mallory"); return }
        #expect(t.open(try sealed(by: Self.bob, epoch: 3, id: "m3"), mySigningKey: mine) == .notOurs)
        guard case .refused = t.open(try sealed(by: Self.bob, key: [UInt8](repeating: 7, count: 32), id: "m4"), mySigningKey: mine) else {
            Issue.record("another key")
            return
        }
        #expect(t.open(try sealed(by: Self.alice, id: "m5"), mySigningKey: mine) == .duplicate, "our own echo")
    }
}
