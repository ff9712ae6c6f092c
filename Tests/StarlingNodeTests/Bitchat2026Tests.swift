import Crypto
import StarlingTestSupport
import Testing
import StarlingCrypto
import StarlingMesh
import StarlingEmbeddedNetwork
import StarlingNodeCore
import StarlingWire

/// What the apps added by 2026 that a node acts on: ping/pong, capabilities,
/// the signing key pinned to the Noise key (docs/PROTOCOL.md).
extension InProcessNodes {
@Suite struct Bitchat2026Tests {
    @Test func aPingIsAnsweredWithAPongAcrossTwoHops() throws {
        let net = NodeCoreTests.line()
        net.run(for: 1_000)
        let carol = net.nodes[2].peerID
        net.on(0) { $0.ping(carol, now: $1) }
        net.run(for: 500)
        let pong = net.events[0].compactMap { if case let .pong(from, rtt, hops) = $0 { (from, rtt, hops) } else { nil } }
        #expect(pong.count == 1)
        #expect(pong.first?.0 == carol && pong.first?.2 == 2)
        #expect((pong.first?.1 ?? 0) >= 20) // four 5 ms links and back, at least
    }

    @Test func pingsAreAnsweredFiveTimesInTenSecondsPerLink() throws {
        let net = EmbeddedNetwork()
        let victim = net.addNode("victim")
        let raw = net.openRawLink(to: victim)
        let victimID = net.nodes[victim].peerID
        let prober = Identity.generate()
        net.inject(try Announcement.make(identity: prober, nickname: "prober", timestamp: net.now).encoded(), on: raw)
        let before = net.rawReceived[raw]?.count ?? 0
        for i in 0..<20 {
            let ping = Packet(type: .ping, ttl: 7, timestamp: net.now, senderID: prober.peerID, recipientID: victimID,
                              payload: [UInt8](repeating: UInt8(i), count: 8) + [7])
            net.inject(try ping.encoded(), on: raw)
        }
        let pongs = (net.rawReceived[raw] ?? []).dropFirst(before).compactMap { try? Packet(decoding: $0) }.filter { $0.type == .pong }
        #expect(pongs.count == 5)
        #expect(pongs.first?.payload == [UInt8](repeating: 0, count: 8) + [7]) // the ping's payload, as Android answers
        #expect(pongs.first?.recipientID == prober.peerID)
        #expect(net.nodes[victim].refusals.pings == 15)
    }

    @Test func ourAnnouncesSayWeAnswerPingsAndOthersCapabilitiesAreKept() throws {
        let net = NodeCoreTests.line()
        net.run(for: 1_000)
        #expect(net.nodes[0].peers[net.nodes[2].peerID]?.capabilities == [.meshDiagnostics, .privateMedia, .board, .groups])
        // Told once when first heard, not again with each announce that says the same.
        let told = net.events[0].filter { if case let .capabilities(id, caps) = $0 { id == net.nodes[2].peerID && caps == [.meshDiagnostics, .privateMedia, .board, .groups] } else { false } }
        #expect(told.count == 1)
        #expect(Capabilities(rawValue: 0x8140).names == ["meshDiagnostics", "privateMedia", "bit 15"])
    }

    @Test func aSigningKeyIsPinnedToItsNoiseKeyOnFirstUse() throws {
        let net = EmbeddedNetwork()
        let victim = net.addNode("victim")
        let raw = net.openRawLink(to: victim)
        let alice = Identity.generate()
        net.inject(try Announcement.make(identity: alice, nickname: "alice", timestamp: net.now).encoded(), on: raw)
        #expect(net.nodes[victim].peers[alice.peerID]?.nickname == "alice")
        // Mallory announces alice's Noise key (so the sender ID binds) with her own signing key.
        let mallory = Identity.generate()
        let impostor = Identity(noiseKey: alice.noiseKey, signingKey: mallory.signingKey)
        net.run(for: 1_000)
        net.inject(try Announcement.make(identity: impostor, nickname: "alice (really)", timestamp: net.now).encoded(), on: raw)
        #expect(net.nodes[victim].refusals.pinMismatch == 1)
        #expect(net.nodes[victim].peers[alice.peerID]?.nickname == "alice")
        #expect(net.events[victim].contains {
            if case let .rejected(r) = $0 { r.kind == .badAnnounce && r.detail.contains("signing key") } else { false }
        })
        // Her messages, signed by mallory's key, are forgeries.
        var m = Packet(type: .message, ttl: 7, timestamp: net.now, senderID: alice.peerID, payload: Array("hi".utf8))
        try PacketSigning.sign(&m, with: mallory.signingKey)
        net.inject(try m.encoded(), on: raw)
        #expect(net.nodes[victim].refusals.forged == 1)
    }

    /// A first-use pin is announced to the application (to keep it), and a
    /// pin handed in (a kept one, or a contact card's) holds from the first
    /// announce on: the impostor never gets a first use.
    @Test func pinsAreReportedAndCanBeHandedIn() throws {
        let net = EmbeddedNetwork()
        let victim = net.addNode("victim")
        let raw = net.openRawLink(to: victim)
        let alice = Identity.generate(), mallory = Identity.generate()
        net.inject(try Announcement.make(identity: alice, nickname: "alice", timestamp: net.now).encoded(), on: raw)
        #expect(net.events[victim].contains {
            if case let .pinned(f, key) = $0 { f == alice.fingerprint && key == alice.signingPublicKey } else { false }
        })

        // A fresh node told alice's pin (as a chat restarting with its store is)
        // refuses mallory's announce with alice's Noise key even as the first it hears.
        let restarted = net.addNode("restarted")
        net.on(restarted) { core, _ in core.pinSigningKey(alice.signingPublicKey, for: alice.fingerprint) }
        #expect(net.nodes[restarted].pinnedSigningKey(for: alice.fingerprint) == alice.signingPublicKey)
        let raw2 = net.openRawLink(to: restarted)
        let impostor = Identity(noiseKey: alice.noiseKey, signingKey: mallory.signingKey)
        net.inject(try Announcement.make(identity: impostor, nickname: "alice", timestamp: net.now).encoded(), on: raw2)
        #expect(net.nodes[restarted].refusals.pinMismatch == 1)
        #expect(net.nodes[restarted].peers[alice.peerID] == nil)
        net.inject(try Announcement.make(identity: alice, nickname: "alice", timestamp: net.now + 1).encoded(), on: raw2)
        #expect(net.nodes[restarted].peers[alice.peerID]?.nickname == "alice")
        #expect(!net.events[restarted].contains { if case .pinned = $0 { true } else { false } }, "handed in, not first use")
    }

    /// The apps keep public messages six hours for sync: a node that joins two
    /// hours later gets one as an answer to its first request, and shows it.
    @Test(.computesHeavily) func aPublicMessageIsKeptSixHoursForSync() throws {
        let net = EmbeddedNetwork()
        let a = net.addNode("alice"), b = net.addNode("bob")
        net.connect(a, b)
        net.run(for: 1_000)
        try net.on(a) { try $0.sendPublic("said two hours ago", now: $1) }
        net.run(for: 2 * 3_600_000)
        let dave = net.addNode("dave")
        net.connect(b, dave)
        net.run(for: 20_000)
        #expect(NodeCoreTests.messages(net, dave) == ["said two hours ago"])
    }

    @Test func aFavouriteNotificationIsANoticeNotText() throws {
        let net = NodeCoreTests.line()
        net.run(for: 1_000)
        let carol = net.nodes[2].peerID
        let npub = "npub1" + String(repeating: "q", count: 58)
        try net.on(0) { try $0.sendPrivate("[FAVORITED]:" + npub, to: carol, now: $1) }
        try net.on(0) { try $0.sendPrivate("[UNFAVORITED]:", to: carol, now: $1) }
        try net.on(0) { try $0.sendPrivate("[FAVORITED] is just text", to: carol, now: $1) }
        net.run(for: 2_000)
        let notices = net.events[2].compactMap { if case let .favorited(by, nick, on, key) = $0 { (by, nick, on, key) } else { nil } }
        #expect(notices.count == 2)
        #expect(notices.first.map { $0.0 == net.nodes[0].peerID && $0.1 == "alice" && $0.2 && $0.3 == npub } == true)
        #expect(notices.last.map { !$0.2 && $0.3 == nil } == true)
        #expect(NodeCoreTests.privateMessages(net, 2).map(\.text) == ["[FAVORITED] is just text"])
        #expect(NodeCoreTests.count(net, 0, "delivered") == 3) // acknowledged like any message
    }

    @Test func packetsOfThe2026TypesAreRelayedByTheSameRules() throws {
        let net = NodeCoreTests.line()
        net.run(for: 1_000)
        // A broadcast group message from alice reaches carol through bob, who cannot read it.
        let group = Packet(type: .groupMessage, ttl: 7, timestamp: net.now, senderID: net.nodes[0].peerID,
                           payload: [0x01, 0x00, 0x02, 0xAB, 0xCD])
        let raw = net.openRawLink(to: 1)
        net.inject(try group.encoded(), on: raw)
        net.run(for: 500)
        #expect(net.nodes[2].router.hasSeen(group))
    }
}
}

extension InProcessNodes {
@Suite struct StalledStreamTests {
    /// A broadcast that arrives in fragments, one of them lost: after 5 s
    /// without progress the node asks its links for the stream by ID, at most
    /// every 10 s, as the apps do.
    @Test func aStalledBroadcastReassemblyAsksForItsStream() throws {
        let net = EmbeddedNetwork()
        let victim = net.addNode("victim")
        let raw = net.openRawLink(to: victim, maxFrame: 512)
        let alice = Identity.generate()
        net.inject(try Announcement.make(identity: alice, nickname: "alice", timestamp: net.now).encoded(), on: raw)
        // Two of three fragments of a broadcast.
        for index in 0..<2 {
            let f = Fragment(fragmentID: 0xABCD, index: UInt16(index), total: 3, originalType: .message, data: [UInt8](repeating: 1, count: 100))
            net.inject(try Packet(type: .fragment, ttl: 7, timestamp: net.now, senderID: alice.peerID, payload: f.encoded(),
                                  compress: false).encoded(), on: raw)
        }
        func requests() throws -> [RequestSync] {
            try (net.rawReceived[raw] ?? []).compactMap { try? Packet(decoding: $0) }
                .filter { $0.type == .requestSync }.map { try RequestSync(decoding: $0.payload) }.filter { $0.fragmentIDs != nil }
        }
        net.run(for: 4_000)
        #expect(try requests().isEmpty)
        net.run(for: 2_000)
        let asked = try requests()
        #expect(asked.count == 1)
        #expect(asked.first?.fragmentIDs == [0xABCD] && asked.first?.types == SyncTypes([.fragment]))
        net.run(for: 5_000)
        #expect(try requests().count == 1) // not again within 10 s
        net.run(for: 6_000)
        #expect(try requests().count == 2)
    }

    /// A neighbour that holds the whole stream answers the stalled request
    /// with the fragment missing (and only that one): the message is shown.
    @Test func aStalledStreamIsRepairedByANeighbourThatHoldsIt() throws {
        let net = EmbeddedNetwork()
        let victim = net.addNode("victim"), holder = net.addNode("holder")
        net.connect(victim, holder)
        let toVictim = net.openRawLink(to: victim, maxFrame: 512), toHolder = net.openRawLink(to: holder, maxFrame: 512)
        let alice = Identity.generate()
        for raw in [toVictim, toHolder] {
            net.inject(try Announcement.make(identity: alice, nickname: "alice", timestamp: net.now).encoded(), on: raw)
        }
        net.run(for: 1_000)
        let text = String(repeating: "the bridge on the east road is out; ", count: 12)
        var message = Packet(type: .message, ttl: 7, timestamp: net.now, senderID: alice.peerID, payload: Array(text.utf8))
        try PacketSigning.sign(&message, with: alice.signingKey) // compressed, as an iPhone would re-encode it
        // TTL 0: nobody relays them, so each node has only what it was given. Three pieces, whatever DEFLATE made of it.
        let chunk = (try message.encoded().count + 2) / 3
        let fragments = try Fragmenter.fragment(message, chunkSize: chunk, fragmentID: 0x5EED, maxFragments: 16).map { f -> [UInt8] in
            var f = f
            f.ttl = 0
            return try f.encoded()
        }
        #expect(fragments.count == 3)
        for f in fragments { net.inject(f, on: toHolder) }
        for f in fragments.prefix(2) { net.inject(f, on: toVictim) }
        net.run(for: 1_000)
        #expect(NodeCoreTests.messages(net, victim).isEmpty)
        let repliesBefore = net.nodes[holder].router.statistics.syncRepliesSent
        net.run(for: 6_000) // stalled for 5 s: the victim asks, the holder answers
        #expect(NodeCoreTests.messages(net, victim) == [text])
        #expect(net.nodes[holder].router.statistics.syncRepliesSent - repliesBefore <= 2) // the missing fragment, not all three
    }
}
}
