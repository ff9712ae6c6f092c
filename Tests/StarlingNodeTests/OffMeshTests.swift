import Testing
import StarlingCrypto
import StarlingMesh
import StarlingEmbeddedNetwork
import StarlingNodeCore
import StarlingWire

/// Off-mesh transports (Nostr) in the node core, on the virtual clock: the mesh
/// first, always; off the mesh only for a peer with no mesh route that the
/// application made reachable; receipts back the same way; a failed hand-off
/// tried again at the next retry.
extension InProcessNodes {
@Suite struct OffMeshTests {
    /// Alice and bob, linked, each other's favourites, reachable off the mesh.
    static func pair() -> (EmbeddedNetwork, PeerID, PeerID) {
        let net = EmbeddedNetwork()
        let a = net.addNode("alice"), b = net.addNode("bob")
        net.connect(a, b)
        let alice = net.nodes[a].peerID, bob = net.nodes[b].peerID
        net.on(a) { $0.setOffMeshRoute(bob, via: "nostr", now: $1) }
        net.on(b) { $0.setOffMeshRoute(alice, via: "nostr", now: $1) }
        net.run(for: 1_000)
        return (net, alice, bob)
    }

    @Test func aPeerOnTheMeshIsReachedOverTheMeshEvenWithAMailbox() throws {
        let (net, _, bob) = Self.pair()
        let id = try net.on(0) { try $0.sendPrivate("over the mesh", to: bob, now: $1) }
        net.run(for: 2_000)
        #expect(net.offMeshCarried.isEmpty)
        #expect(net.events[1].contains { if case .privateMessage(_, _, "over the mesh", _, _, nil) = $0 { true } else { false } })
        #expect(net.events[0].contains { if case .delivered(id, _) = $0 { true } else { false } })
    }

    @Test func aPeerGoneFromTheMeshIsReachedThroughTheMailboxWithBothReceipts() throws {
        let (net, alice, bob) = Self.pair()
        net.disconnect(0, 1)
        net.run(for: 65_000) // no announce for a minute: bob has left alice's mesh
        #expect(net.nodes[0].peers[bob] == nil)
        let id = try net.on(0) { try $0.sendPrivate("across the city", to: bob, now: $1) }
        net.run(for: 2_000)
        #expect(net.events[1].contains { if case .privateMessage(alice, _, "across the city", id, 0, "nostr") = $0 { true } else { false } })
        #expect(net.events[0].contains { if case .sentOffMesh(id, bob, "nostr") = $0 { true } else { false } })
        #expect(net.events[0].contains { if case .delivered(id, bob) = $0 { true } else { false } })
        try net.on(1) { try $0.sendReadReceipt(id, to: alice, now: $1) }
        net.run(for: 2_000)
        #expect(net.events[0].contains { if case .read(id, bob) = $0 { true } else { false } })
        // Retries do not send it again that way: one message, one delivered receipt, one read receipt.
        net.run(for: 60_000)
        #expect(net.offMeshCarried.count == 3)
        #expect(net.events[1].filter { $0.name == "privateMessage" }.count == 1)
    }

    @Test func aPeerNotMadeReachableWaitsAsBeforeAndFilesNeverGoOffTheMesh() throws {
        let (net, _, bob) = Self.pair()
        net.disconnect(0, 1)
        net.run(for: 65_000)
        net.on(0) { $0.setOffMeshRoute(bob, via: nil, now: $1) }
        _ = try net.on(0) { try $0.sendPrivate("waits", to: bob, now: $1) }
        net.on(0) { $0.setOffMeshRoute(bob, via: "nostr", now: $1) }
        _ = try net.on(0) { try $0.sendFile(name: "a.txt", mimeType: nil, content: [1, 2, 3], to: bob, now: $1) }
        net.run(for: 3_000)
        // Made reachable again: the waiting message went (the route's return is a return); the file did not.
        #expect(net.offMeshCarried.filter { if case .privateMessage = $0.payload { true } else { false } }.count == 1)
        #expect(!net.offMeshCarried.contains { if case .privateFile = $0.payload { true } else { false } })
    }

    @Test func aFailedHandOffIsTriedAgainAtTheNextRetryAndTheUserIsTold() throws {
        let (net, _, bob) = Self.pair()
        net.disconnect(0, 1)
        net.run(for: 65_000)
        net.offMeshUp = false
        let id = try net.on(0) { try $0.sendPrivate("when the proxy is back", to: bob, now: $1) }
        net.run(for: 500)
        #expect(net.events[0].contains { if case let .rejected(r) = $0 { r.kind == .transport && r.detail.contains("not sent yet") } else { false } })
        #expect(net.offMeshCarried.isEmpty)
        net.offMeshUp = true
        net.run(for: 10_000)
        #expect(net.events[0].contains { if case .delivered(id, bob) = $0 { true } else { false } })
        #expect(net.offMeshCarried.filter { if case .privateMessage = $0.payload { true } else { false } }.count == 1)
    }

    @Test func aBlockedPeerIsNotHeardOffTheMeshEither() throws {
        let (net, _, bob) = Self.pair()
        let bobFingerprint = net.nodes[1].identity.fingerprint
        func heard(_ text: String) -> Bool {
            net.events[0].contains { if case .privateMessage(bob, _, text, _, _, "nostr") = $0 { true } else { false } }
        }
        // Control: not blocked, the same off-mesh payload is shown.
        net.on(0) { $0.receiveOffMesh(.privateMessage(PrivateMessage(messageID: "A", content: "before the block")), from: bob, via: "nostr", now: $1) }
        net.run(for: 100)
        #expect(heard("before the block"), "\(net.events[0])")
        net.on(0) { c, _ in c.block(bobFingerprint) }
        net.on(0) { $0.receiveOffMesh(.privateMessage(PrivateMessage(messageID: "B", content: "let me in")), from: bob, via: "nostr", now: $1) }
        net.run(for: 100)
        #expect(!heard("let me in"))
        #expect(net.events[0].filter { $0.name == "privateMessage" }.count == 1)
    }
}
}
