import Testing
import StarlingCrypto
import StarlingMesh
import StarlingMessenger
import StarlingMessengerCore
import StarlingNodeCore
import StarlingWire
import StarlingStore

/// Issue 36: a group is a conversation the messenger keeps: its state and key
/// live in the store (so a restart reads the group again), its messages in
/// the group's conversation.
@Suite struct GroupMessengerTests {
    static func groupTexts(_ m: MessengerNetwork, _ i: Int) -> [String] {
        m.events[i].compactMap { if case let .node(.groupMessage(g)) = $0 { g.text } else { nil } }
    }

    @Test func aGroupAndItsKeyOutliveARestartInTheStoreOnly() throws {
        let m = MessengerNetwork()
        for name in ["alice", "bob", "carol"] { m.add(name) }
        m.net.connect(0, 1)
        m.net.connect(1, 2)
        for i in 0..<3 { m.open(i) }
        m.run(12_000)
        let (bob, carol) = (m.net.nodes[1].peerID, m.net.nodes[2].peerID)
        let group = try m.net.on(0) { try $0.createGroup(named: "trail crew", now: $1) }
        let id = try [UInt8](hex: group.groupID)
        try m.net.on(0) { try $0.inviteToGroup(id, peer: bob, now: $1) }
        try m.net.on(0) { try $0.inviteToGroup(id, peer: carol, now: $1) }
        m.run(3_000)
        // Kept in bob's store: the state with its key.
        let kept = try #require(m.stores[1].groups.first?.state.flatMap { try? GroupState(decoding: $0[...]) })
        #expect(kept.epoch == 3 && kept.key.count == 32 && m.stores[1].groups.count == 1)

        try m.net.on(2) { try $0.sendToGroup(id, text: "before the restart", now: $1) }
        m.run(2_000)
        #expect(Self.groupTexts(m, 1) == ["before the restart"])
        let conversation = MessengerCore.conversationID(forGroup: group.groupID)
        #expect(m.stores[1].messages[conversation]?.map(\.text) == ["before the restart"])
        #expect(m.stores[1].messages[conversation]?.map(\.author) == ["carol"], "each stored group message keeps its author")

        // Restarted with the store locked: the node holds no group and reads nothing (the control).
        m.restart(1, open: false)
        #expect(m.net.nodes[1].groups.isEmpty)
        try m.net.on(2) { try $0.sendToGroup(id, text: "while locked", now: $1) }
        m.run(2_000)
        #expect(!Self.groupTexts(m, 1).contains("while locked"))
        // The store opens: the group comes back from it, and the next message is read.
        m.open(1)
        m.pump()
        #expect(m.net.nodes[1].groups.first?.epoch == 3)
        try m.net.on(2) { try $0.sendToGroup(id, text: "after the restart", now: $1) }
        m.run(2_000)
        #expect(Self.groupTexts(m, 1).contains("after the restart"))

        // Removed: the store keeps no key, only the epoch left at; a restart does not bring it back.
        let bobKey = m.net.nodes[1].identity.fingerprint
        try m.net.on(0) { try $0.removeFromGroup(id, member: bobKey, now: $1) }
        m.run(3_000)
        #expect(m.stores[1].groups.map(\.state) == [nil] && m.stores[1].groups.first?.leftAtEpoch == 4)
        m.restart(1)
        m.pump()
        #expect(m.net.nodes[1].groups.isEmpty && m.net.nodes[1].groupsLeft.count == 1)
    }
}
