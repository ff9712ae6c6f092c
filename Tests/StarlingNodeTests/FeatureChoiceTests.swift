import Testing
import StarlingCrypto
import StarlingEmbeddedNetwork
import StarlingMesh
import StarlingNodeCore
import StarlingWire

/// Issue 55: a feature can be left out at construction. A node built for chat
/// alone holds none of the board's or groups' state, says neither in its
/// announce, still talks to a node that has them, and relays their packets
/// unread between two that do.
extension InProcessNodes {
@Suite struct FeatureChoiceTests {
    @Test func aNodeWithoutBoardAndGroupsTalksToOneWithThemAndRelaysTheirPackets() throws {
        let net = EmbeddedNetwork()
        let alice = net.addNode("alice")
        let plain = net.addNode("plain") { $0.board = nil; $0.groups = nil }
        let carol = net.addNode("carol")
        net.connect(alice, plain)
        net.connect(plain, carol)
        for _ in 0..<30 where net.nodes.contains(where: { $0.peers.count < 2 }) { net.run(for: 1_000) }
        #expect(net.nodes.allSatisfy { $0.peers.count == 2 }, "\(net.nodes.map(\.peers.count))")

        // What it announces: no board, no groups; the full nodes say both (the control).
        let plainCaps = net.nodes[alice].peers[net.nodes[plain].peerID]?.capabilities
        let carolCaps = net.nodes[alice].peers[net.nodes[carol].peerID]?.capabilities
        #expect(plainCaps?.contains(.board) == false && plainCaps?.contains(.groups) == false, "\(String(describing: plainCaps))")
        #expect(carolCaps?.contains(.board) == true && carolCaps?.contains(.groups) == true, "\(String(describing: carolCaps))")

        // Chat both ways between the plain node and alice.
        try net.on(alice) { try $0.sendPublic("hello all", now: $1) }
        let aliceID = net.nodes[alice].peerID
        _ = try net.on(plain) { try $0.sendPrivate("hi alice", to: aliceID, now: $1) }
        net.run(for: 3_000)
        #expect(net.events[plain].contains { if case let .message(_, _, text, _, _, _) = $0 { text == "hello all" } else { false } })
        #expect(net.events[alice].contains { if case let .privateMessage(_, _, text, _, _, _) = $0 { text == "hi alice" } else { false } })

        // A board post and a group message from alice reach carol through the plain node, which keeps neither.
        try net.on(alice) { try $0.postToBoard("water at gate 2", now: $1) }
        let group = try net.on(alice) { try $0.createGroup(named: "crew", now: $1) }
        let id = try [UInt8](hex: group.groupID)
        let carolID = net.nodes[carol].peerID
        try net.on(alice) { try $0.inviteToGroup(id, peer: carolID, now: $1) }
        net.run(for: 3_000)
        try net.on(alice) { _ = try $0.sendToGroup(id, text: "meet at noon", now: $1) }
        net.run(for: 3_000)
        #expect(net.events[carol].contains { if case let .boardPost(e, _, hops) = $0 { e.post.content == "water at gate 2" && hops == 2 } else { false } })
        #expect(net.events[carol].contains { if case let .groupMessage(m) = $0 { m.text == "meet at noon" } else { false } })
        #expect(!net.events[plain].contains { if case .boardPost = $0 { true } else if case .groupMessage = $0 { true } else { false } })
        #expect(net.nodes[plain].board == nil && net.nodes[plain].groups.isEmpty)
        #expect(net.nodes[plain].tableSizes["node.boardPosts"] == nil && net.nodes[plain].tableSizes["node.groups"] == nil)
        #expect(net.nodes[carol].tableSizes["node.boardPosts"] == 1 && net.nodes[carol].tableSizes["node.groups"] == 1)
        // Its commands say it keeps none.
        #expect(throws: NodeCore.BoardError.off) { try net.on(plain) { try $0.postToBoard("x", now: $1) } }
        #expect(throws: NodeCore.GroupError.off) { try net.on(plain) { try $0.createGroup(named: "x", now: $1) } }
    }
}
}
