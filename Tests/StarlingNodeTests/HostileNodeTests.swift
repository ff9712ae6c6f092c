import Crypto
import Testing
import StarlingCrypto
import StarlingMesh
import StarlingEmbeddedNetwork
import StarlingNodeCore
import StarlingWire

/// A node in a hostile crowd: anyone in radio range (a raw link here) can send
/// any bytes, claim any sender ID, replay and flood. Each test is one attack
/// and asserts the rejection or the bound (docs/MESH.md, "Bounds";
/// docs/PROTOCOL.md, "Authentication and freshness").
extension InProcessNodes {
@Suite struct HostileNodeTests {
    /// alice — victim — carol, and an attacker (mallory) on a raw link to the
    /// victim. Mallory announces herself on it, as anyone nearby can, so the
    /// link stays up and is bound to her.
    struct Scene {
        let net: EmbeddedNetwork
        let alice: Identity
        let mallory = Identity.generate()
        let victim = 1
        let raw: EmbeddedNetwork.RawLink

        init(_ configure: (inout NodeCore.Configuration) -> Void = { _ in }) {
            net = EmbeddedNetwork()
            alice = Identity.generate()
            var a = NodeCore.Configuration(nickname: "alice")
            configure(&a)
            net.addNode(a, identity: alice)
            net.addNode("victim", configure: configure)
            net.addNode("carol", configure: configure)
            net.connect(0, 1)
            net.connect(1, 2)
            raw = net.openRawLink(to: 1)
            net.run(for: 1_000)
            keepAlive()
            net.run(for: 1_000)
        }

        /// Mallory's announce on her link (a link that announces nothing in 15 s is closed).
        func keepAlive() {
            if let p = try? Announcement.make(identity: mallory, nickname: "mallory", timestamp: net.now).encoded() {
                net.inject(p, on: raw)
            }
        }

        /// Moves the clock on while mallory keeps her link.
        func run(for ms: UInt64) {
            var left = ms
            while left > 0 {
                let step = min(left, 10_000)
                net.run(for: step)
                keepAlive()
                left -= step
            }
        }

        var victimCore: NodeCore { net.nodes[victim] }
        func shown(_ node: Int) -> [String] {
            net.events[node].compactMap { if case let .message(_, _, text, _, _, _) = $0 { text } else { nil } }
        }
        func inject(_ packet: Packet) throws { net.inject(try packet.encoded(), on: raw) }
    }

    /// Text DEFLATE cannot shrink much (random base64): a signed packet is
    /// compressed as iOS would re-encode it, so repeated text would shrink to nothing.
    static func noise(_ count: Int, seed: UInt64 = 7) -> String {
        var state = seed
        let b64 = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        return String((0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 // a 64-bit LCG: its top 6 bits pick
            return b64[Int(state >> 58)]
        })
    }

    static func message(_ text: String, from id: PeerID, at time: UInt64, signedBy key: Curve25519.Signing.PrivateKey? = nil,
                        version: UInt8 = 1, compress: Bool = false) throws -> Packet {
        var p = Packet(version: version, type: .message, ttl: 7, timestamp: time, senderID: id, payload: Array(text.utf8),
                       compress: compress)
        if let key { try PacketSigning.sign(&p, with: key) }
        return p
    }

    @Test func aPublicMessageUnderAKnownPeersIDMustBeSignedByItsKey() throws {
        let s = Scene()
        let now = s.net.now
        // Unsigned, and signed by another key: refused, not shown, not relayed.
        try s.inject(Self.message("I am alice (unsigned)", from: s.alice.peerID, at: now))
        try s.inject(Self.message("I am alice (other key)", from: s.alice.peerID, at: now, signedBy: Identity.generate().signingKey))
        s.net.run(for: 500)
        #expect(s.shown(1).isEmpty && s.shown(2).isEmpty)
        #expect(s.victimCore.refusals.forged == 2)
        // Alice's own, signed, is shown under her name everywhere.
        try s.net.on(0) { try $0.sendPublic("really alice", now: $1) }
        s.net.run(for: 500)
        #expect(s.shown(1) == ["really alice"] && s.shown(2) == ["really alice"])
    }

    @Test func bitFlippedCopiesOfASignedMessageAreNeverShown() throws {
        let s = Scene()
        let text = "the genuine text " + Self.noise(160)
        let genuine = try Self.message(text, from: s.alice.peerID, at: s.net.now, signedBy: s.alice.signingKey)
        let bytes = try genuine.encoded()
        var flipped = 0
        for i in 0..<bytes.count * 8 where i / 8 >= 14 { // past the header's fixed fields
            var b = bytes
            b[i / 8] ^= 1 << (i % 8)
            s.net.inject(b, on: s.raw)
            flipped += 1
        }
        s.net.run(for: 500)
        #expect(flipped > 1_000)
        #expect(s.shown(1).isEmpty && s.shown(2).isEmpty)
        // The genuine one still gets through afterwards: no forged copy poisoned the duplicate filter.
        s.net.inject(bytes, on: s.raw)
        s.net.run(for: 500)
        #expect(s.shown(1) == [text] && s.shown(2) == s.shown(1))
    }

    @Test func aMessageFromASenderWithNoVerifiedAnnounceIsNotShownOrRelayed() throws {
        let s = Scene()
        let stranger = Identity.generate()
        try s.inject(Self.message("who am I", from: stranger.peerID, at: s.net.now, signedBy: stranger.signingKey))
        s.run(for: 3_000)
        #expect(s.shown(1).isEmpty && s.shown(2).isEmpty)
        #expect(s.victimCore.refusals.unverifiable == 1)
        // Once it announces, its signed messages are shown.
        s.net.inject(try Announcement.make(identity: stranger, nickname: "stranger", timestamp: s.net.now).encoded(), on: s.raw)
        try s.inject(Self.message("now you know me", from: stranger.peerID, at: s.net.now, signedBy: stranger.signingKey))
        s.net.run(for: 500)
        #expect(s.shown(1) == ["now you know me"] && s.shown(2) == ["now you know me"])
    }

    @Test func aMessageThatOvertakesItsAnnounceWaitsForIt() throws {
        let s = Scene()
        let newcomer = Identity.generate()
        try s.inject(Self.message("hello, I just arrived", from: newcomer.peerID, at: s.net.now, signedBy: newcomer.signingKey))
        s.net.run(for: 300)
        #expect(s.shown(1).isEmpty)
        s.net.inject(try Announcement.make(identity: newcomer, nickname: "newcomer", timestamp: s.net.now).encoded(), on: s.raw)
        s.net.run(for: 500)
        #expect(s.shown(1) == ["hello, I just arrived"] && s.shown(2) == ["hello, I just arrived"])
        #expect(s.victimCore.refusals.unverifiable == 0)
    }

    @Test(arguments: [-86_400_000, -600_000, -121_000, 121_000, 86_400_000] as [Int64])
    func aSignedMessageStampedTooFarFromOurClockIsRefused(offset: Int64) throws {
        let s = Scene()
        let time = UInt64(Int64(s.net.now) + offset)
        try s.inject(Self.message("from another time", from: s.alice.peerID, at: time, signedBy: s.alice.signingKey))
        s.net.run(for: 500)
        #expect(s.shown(1).isEmpty && s.shown(2).isEmpty)
        #expect(s.victimCore.refusals.stale == 1)
    }

    @Test func aReplayIsNeverShownTwice() throws {
        let s = Scene()
        let bytes = try Self.message("once", from: s.alice.peerID, at: s.net.now, signedBy: s.alice.signingKey).encoded()
        s.net.inject(bytes, on: s.raw)
        s.net.run(for: 1_000)
        s.net.inject(bytes, on: s.raw) // within the duplicate window
        s.run(for: 118_000)
        s.net.inject(bytes, on: s.raw) // still fresh
        s.run(for: 200_000)
        s.net.inject(bytes, on: s.raw) // past the duplicate window: stale
        s.net.run(for: 500)
        #expect(s.shown(1) == ["once"] && s.shown(2) == ["once"])
        #expect(s.victimCore.refusals.stale == 1, "\(s.victimCore.refusals), links \(s.victimCore.linkCount)")
    }

    @Test func anOldMessageIsTakenOnlyAsAnAnswerToOurOwnSyncRequest() throws {
        let s = Scene()
        // Before the victim asks mallory's link anything, an old message with isRSR is stale.
        var old = try Self.message("history", from: s.alice.peerID, at: s.net.now - 200_000, signedBy: s.alice.signingKey)
        old.isRSR = true
        old.ttl = 0
        try s.inject(old)
        #expect(s.victimCore.refusals.stale == 1)
        // After the victim asks the link for a sync (its first request comes 5 s
        // after a new peer's announce), the same answer within 30 s is taken.
        let link = s.raw.link
        let asked = s.net.run(until: { net in net.nodes[1].router.askedForSync(on: link, within: 1_000, now: net.now) },
                              timeout: 30_000)
        #expect(asked)
        try s.inject(old)
        s.net.run(for: 100)
        #expect(s.shown(1) == ["history"])
    }

    /// A sync answer replays a stored announce: the neighbour that answers is not
    /// its announcer, and TTL 0 says nothing about distance. It makes the peer
    /// known, 2 hops away, and binds nothing (a fresh clone's `/who` once showed
    /// a peer two hops away as "direct", and its neighbour's link bound to it).
    @Test func anAnnounceLearnedFromASyncAnswerIsNotTakenAsANeighbour() throws {
        let s = Scene()
        let link = s.raw.link
        let asked = s.net.run(until: { net in net.nodes[1].router.askedForSync(on: link, within: 1_000, now: net.now) },
                              timeout: 30_000)
        #expect(asked)
        let dave = Identity.generate()
        var replay = try Announcement.make(identity: dave, nickname: "dave", timestamp: s.net.now - 20_000)
        replay.isRSR = true
        replay.ttl = 0
        try s.inject(replay)
        s.net.run(for: 100)
        let known = s.victimCore.peers[dave.peerID]
        #expect(known?.nickname == "dave")
        #expect(known?.hops == 2)
        #expect(s.victimCore.router.neighborhood.peer(on: link) == s.mallory.peerID)
        #expect(!s.victimCore.router.neighborhood.neighborPeers.contains(dave.peerID))
        // Dave's own live announce on a link of his own makes him a neighbour.
        let daves = s.net.openRawLink(to: 1)
        s.net.inject(try Announcement.make(identity: dave, nickname: "dave", timestamp: s.net.now).encoded(), on: daves)
        s.net.run(for: 100)
        #expect(s.victimCore.peers[dave.peerID]?.hops == 1)
        #expect(s.victimCore.router.neighborhood.peer(on: daves.link) == dave.peerID)
        // A replay of an older announce afterwards leaves him where he is.
        var older = try Announcement.make(identity: dave, nickname: "dave", timestamp: s.net.now - 10_000)
        older.isRSR = true
        older.ttl = 0
        try s.inject(older)
        s.net.run(for: 100)
        #expect(s.victimCore.peers[dave.peerID]?.hops == 1)
        #expect(s.victimCore.router.neighborhood.peer(on: link) == s.mallory.peerID)
        #expect(s.victimCore.refusals.outdatedAnnounce == 1)
    }

    /// A captured announce sent again live (TTL 7) under a newer one changes
    /// nothing: not the peer's name, its neighbours, nor which link is its.
    @Test func anOlderAnnounceSentAgainChangesNothing() throws {
        let s = Scene()
        let dave = Identity.generate()
        let daves = s.net.openRawLink(to: 1)
        let old = try Announcement.make(identity: dave, nickname: "dave (old name)", timestamp: s.net.now - 30_000,
                                        directNeighbors: [s.mallory.peerID])
        s.net.inject(try Announcement.make(identity: dave, nickname: "dave", timestamp: s.net.now).encoded(), on: daves)
        s.net.run(for: 100)
        #expect(s.victimCore.peers[dave.peerID]?.nickname == "dave")
        #expect(s.victimCore.router.neighborhood.peer(on: daves.link) == dave.peerID)
        // Mallory sends the older one on her link, as if dave were there.
        try s.inject(old)
        s.net.run(for: 100)
        #expect(s.victimCore.peers[dave.peerID]?.nickname == "dave")
        #expect(s.victimCore.router.neighborhood.peer(on: s.raw.link) == s.mallory.peerID)
        #expect(s.victimCore.refusals.outdatedAnnounce == 1)
        // Dave's next one is taken.
        s.net.inject(try Announcement.make(identity: dave, nickname: "dave 2", timestamp: s.net.now).encoded(), on: daves)
        s.net.run(for: 100)
        #expect(s.victimCore.peers[dave.peerID]?.nickname == "dave 2")
    }

    @Test func compressionBombsAreRefusedBeforeTheyInflate() throws {
        let s = Scene()
        // ~1 KB on the air that claims to inflate to 1 MiB (v2: a 32-bit size), within 50,000:1.
        var bomb = Packet(version: 2, type: .message, ttl: 7, timestamp: s.net.now, senderID: s.alice.peerID,
                          payload: [UInt8](repeating: 0x61, count: 1 << 20))
        try PacketSigning.sign(&bomb, with: s.alice.signingKey)
        let bytes = try bomb.encoded()
        #expect(bytes.count < 2_000)
        #expect(throws: WireError.self) { try Packet(decoding: bytes) }
        // Sent in fragments (it is larger than a frame), refused whole.
        for _ in 0..<50 { s.net.inject(bytes, on: s.raw) }
        s.net.run(for: 500)
        #expect(s.shown(1).isEmpty)
        // At the type's limit (128 KiB) the message is taken, kept for sync within the store's bytes.
        for i in 0..<60 {
            var big = Packet(version: 2, type: .message, ttl: 7, timestamp: s.net.now, senderID: s.alice.peerID,
                             payload: Array("\(i) ".utf8) + [UInt8](repeating: 0x62, count: 120_000))
            try PacketSigning.sign(&big, with: s.alice.signingKey)
            let b = try big.encoded()
            if b.count <= 512 { s.net.inject(b, on: s.raw) }
        }
        s.net.run(for: 500)
        let store = s.victimCore.router.gossipBytes
        #expect(store <= GossipStore.Configuration().maxBytes, "\(store) bytes kept for sync")
        #expect(s.victimCore.refusals.tooLong >= 1) // 120 KB is relayed but not shown (iOS shows ≤ 65,535)
    }

    // Found by review: ways around the rules, each closed.

    @Test func aForgeryInsideAFragmentIsScreenedWhenItIsWhole() throws {
        let s = Scene()
        let forged = try Packet(type: .message, ttl: 7, timestamp: s.net.now, senderID: s.alice.peerID,
                                payload: Array("in one piece".utf8)).encoded()
        // A fragment set of one, from alice's ID: the whole is unsigned.
        let f = Fragment(fragmentID: 7, index: 0, total: 1, originalType: .message, data: forged)
        s.net.inject(try Packet(type: .fragment, ttl: 7, timestamp: s.net.now, senderID: s.alice.peerID, payload: f.encoded(),
                                compress: false).encoded(), on: s.raw)
        // Mallory's fragment carrying alice's signed packet: a fragment cannot carry someone else's packet.
        let signed = try Self.message("not yours to carry", from: s.alice.peerID, at: s.net.now, signedBy: s.alice.signingKey).encoded()
        let g = Fragment(fragmentID: 8, index: 0, total: 1, originalType: .message, data: signed)
        s.net.inject(try Packet(type: .fragment, ttl: 7, timestamp: s.net.now, senderID: s.mallory.peerID, payload: g.encoded(),
                                compress: false).encoded(), on: s.raw)
        s.net.run(for: 500)
        #expect(s.shown(1).isEmpty)
        #expect(s.victimCore.refusals.forged == 1)
    }

    @Test func directedMessagesAndLeavesMustBeSignedToo() throws {
        let s = Scene()
        let victim = s.victimCore.peerID
        try s.inject(Packet(type: .message, ttl: 7, timestamp: s.net.now, senderID: s.alice.peerID, recipientID: victim,
                            payload: Array("just for you".utf8)))
        try s.inject(Packet(type: .leave, ttl: 7, timestamp: s.net.now, senderID: s.alice.peerID, recipientID: victim, payload: []))
        s.net.run(for: 500)
        #expect(s.shown(1).isEmpty)
        #expect(s.victimCore.peers[s.alice.peerID] != nil)
        #expect(s.victimCore.refusals.forged == 2)
    }

    /// A broadcast file transfer (0x22) is what a person sees as sent by its
    /// sender: unsigned, or signed by another key, it is refused and goes no
    /// further; signed by the sender's announced key, it is relayed.
    @Test func broadcastFileTransfersMustBeSigned() throws {
        let s = Scene()
        let file = try FileTransfer(name: "map.png", mimeType: "image/png", content: [1, 2, 3]).encoded()
        func transfer(_ name: UInt8, signedBy key: Curve25519.Signing.PrivateKey?) throws -> Packet {
            var p = Packet(type: .fileTransfer, ttl: 7, timestamp: s.net.now + UInt64(name), senderID: s.alice.peerID, payload: file)
            if let key { try PacketSigning.sign(&p, with: key) }
            return p
        }
        let unsigned = try transfer(1, signedBy: nil), otherKey = try transfer(2, signedBy: s.mallory.signingKey)
        let signed = try transfer(3, signedBy: s.alice.signingKey)
        try s.inject(unsigned)
        try s.inject(otherKey)
        s.net.run(for: 500)
        #expect(s.victimCore.refusals.forged == 2)
        #expect(!s.net.nodes[2].router.hasSeen(unsigned) && !s.net.nodes[2].router.hasSeen(otherKey)) // not relayed
        try s.inject(signed)
        s.net.run(for: 500)
        #expect(s.victimCore.refusals.forged == 2)
        #expect(s.net.nodes[2].router.hasSeen(signed))
    }

    @Test func aCapturedLeaveCannotBeReplayedAsASyncAnswer() throws {
        let s = Scene()
        var leave = Packet(type: .leave, ttl: 7, timestamp: s.net.now - 300_000, senderID: s.alice.peerID, payload: [])
        try PacketSigning.sign(&leave, with: s.alice.signingKey)
        leave.isRSR = true // not covered by the signature: anyone can set it
        leave.ttl = 0
        _ = s.net.run(until: { net in net.nodes[1].router.askedForSync(on: s.raw.link, within: 1_000, now: net.now) }, timeout: 30_000)
        try s.inject(leave)
        #expect(s.victimCore.refusals.stale == 1)
        #expect(s.victimCore.peers[s.alice.peerID] != nil)
    }

    @Test func anImpostorsAnnounceBindsNothing() throws {
        let s = Scene()
        let impostor = Identity(noiseKey: s.alice.noiseKey, signingKey: s.mallory.signingKey)
        let raw2 = s.net.openRawLink(to: 1)
        s.net.inject(try Announcement.make(identity: impostor, nickname: "alice", timestamp: s.net.now).encoded(), on: raw2)
        #expect(s.victimCore.refusals.pinMismatch == 1)
        #expect(s.victimCore.router.neighborhood.peer(on: raw2.link) != s.alice.peerID)
        // Not relayed to carol either.
        s.net.run(for: 500)
        #expect(s.net.nodes[2].refusals.pinMismatch == 0)
    }

    @Test func largeFirstHandshakeMessagesAreBudgetedToo() throws {
        let s = Scene()
        let victimID = s.victimCore.peerID
        var answered = 0
        for i in 0..<200 {
            var hs = try HandshakeState(protocol: .bitchat, initiator: true, localStatic: Identity.generate().noiseKey)
            let m1 = try hs.writeMessage(payload: [UInt8](repeating: 7, count: 100))
            let before = s.net.rawReceived[s.raw]?.count ?? 0
            s.net.inject(try NoisePackets.handshake(m1, from: PeerID(rawValue: UInt64(i) + 1), to: victimID, timestamp: s.net.now).encoded(),
                         on: s.raw)
            if (s.net.rawReceived[s.raw]?.count ?? 0) > before { answered += 1 }
        }
        #expect(answered <= 31, "\(answered) of 200")
        // Controls: within the budget a large first message is answered, and what
        // stopped the rest was the budget, not the parser.
        #expect(answered >= 1, "no large first message was answered at all")
        #expect(s.victimCore.refusals.handshakeBudget >= 200 - 31, "\(s.victimCore.refusals.handshakeBudget) refused by the budget")
    }

    @Test func aSenderCannotFillTheScreenWithText() throws {
        let s = Scene()
        // 40 signed 60 KB messages, each compressed into a small datagram.
        for i in 0..<40 {
            let p = try Self.message("\(i) " + String(repeating: "x", count: 60_000), from: s.mallory.peerID, at: s.net.now,
                                     signedBy: s.mallory.signingKey, compress: true)
            let bytes = try p.encoded()
            #expect(bytes.count < 512)
            s.net.inject(bytes, on: s.raw)
        }
        s.net.run(for: 100)
        #expect(s.shown(1).count == 4) // 256 KiB of text at once
        #expect(s.victimCore.refusals.flooding == 36)
        // Others are not affected, and the budget refills (64 KiB a second).
        try s.net.on(0) { try $0.sendPublic("alice is fine", now: $1) }
        s.net.run(for: 2_000)
        #expect(s.shown(1).last == "alice is fine")
        let later = try Self.message("later " + String(repeating: "y", count: 60_000), from: s.mallory.peerID, at: s.net.now,
                                     signedBy: s.mallory.signingKey, compress: true)
        s.net.inject(try later.encoded(), on: s.raw)
        #expect(s.shown(1).count == 6)
    }

    @Test func aFloodOfNoiseFirstMessagesFromStrangersIsBudgetedAndForgotten() throws {
        let s = Scene()
        let victimID = s.victimCore.peerID
        var answered = 0
        for i in 0..<2_000 {
            let fake = PeerID(rawValue: UInt64(i) + 1)
            var hs = try HandshakeState(protocol: .bitchat, initiator: true, localStatic: Identity.generate().noiseKey)
            let m1 = try hs.writeMessage()
            let before = s.net.rawReceived[s.raw]?.count ?? 0
            s.net.inject(try NoisePackets.handshake(m1, from: fake, to: victimID, timestamp: s.net.now).encoded(), on: s.raw)
            if (s.net.rawReceived[s.raw]?.count ?? 0) > before { answered += 1 }
            #expect(s.victimCore.pendingHandshakeCount <= 128)
            if i % 200 == 0 { s.net.run(for: 10) }
        }
        #expect(answered <= 35, "\(answered) of 2,000 answered")
        #expect(s.victimCore.refusals.handshakeBudget >= 1_900)
        // Pending handshakes go after 20 s.
        s.net.run(for: 22_000)
        #expect(s.victimCore.pendingHandshakeCount == 0)
        // Alice (known) still gets a session and a message through.
        try s.net.on(0) { try $0.sendPrivate("still here", to: victimID, now: $1) }
        s.net.run(for: 2_000)
        #expect(s.net.events[1].contains { if case .privateMessage(_, _, "still here", _, _, _) = $0 { true } else { false } })
    }

    @Test func aFloodOfAnnouncesWithChangingNeighboursCostsBoundedWorkAndPeers() throws {
        let s = Scene { $0.maxPeers = 300 }
        let fakes = (0..<500).map { _ in Identity.generate() }
        // Two rounds: the second time each fake is known, its changed neighbour
        // list changes the topology, and its announce (a broadcast to relay)
        // would need a fresh plan.
        var sent = 0
        for round in 0..<2 {
            for (i, id) in fakes.enumerated() {
                let neighbours = (0..<10).map { _ in PeerID(rawValue: .random(in: 1...UInt64.max)) }
                let p = try Announcement.make(identity: id, nickname: "fake\(i)", timestamp: s.net.now + UInt64(round),
                                              directNeighbors: neighbours)
                s.net.inject(try p.encoded(), on: s.raw)
                sent += 1
                if sent % 100 == 0 { s.net.run(for: 500) }
                #expect(s.victimCore.peers.count <= 300)
            }
        }
        s.net.run(for: 1_000)
        #expect(s.victimCore.peers.count == 300)
        // The peers who were here before the flood are still known.
        #expect(s.victimCore.peers[s.alice.peerID] != nil && s.victimCore.peers[s.net.nodes[2].peerID] != nil)
        // Plans are worked out at most 4 times a second (the flood took ~5 s of clock).
        let policy = try #require(s.victimCore.configuration.policy as? PlannedPolicy)
        #expect(policy.plans.overBudget > 0)
        #expect(policy.plans.computations <= 4 * 8, "\(policy.plans.computations) plans")
        // Honest traffic still flows.
        try s.net.on(0) { try $0.sendPublic("through the flood", now: $1) }
        s.net.run(for: 500)
        #expect(s.shown(2).contains("through the flood"))
    }

    @Test func aDatagramLargerThanTheLinkCarriesIsRefusedUnparsed() throws {
        let s = Scene()
        var big = try Self.message(Self.noise(64_000), from: s.alice.peerID, at: s.net.now,
                                   signedBy: s.alice.signingKey)
        big.ttl = 7
        let before = s.net.framesDelivered
        s.net.inject(try big.encoded(), on: s.raw)
        s.net.run(for: 500)
        #expect(s.victimCore.refusals.oversized == 1)
        #expect(s.shown(1).isEmpty && s.shown(2).isEmpty)
        #expect(s.net.framesDelivered - before < 10) // nothing was fanned out as ~126 fragments per link
    }

    @Test func aPacketClaimingOurOwnIDIsNeitherShownNorRelayed() throws {
        let s = Scene()
        let victim = s.victimCore.peerID
        try s.inject(Self.message("it is me, the victim", from: victim, at: s.net.now))
        s.net.run(for: 500)
        #expect(s.shown(1).isEmpty && s.shown(2).isEmpty)
        #expect(s.victimCore.refusals.ownID == 1)
        // Our own broadcasts echoed back by neighbours are still duplicates, not refusals.
        try s.net.on(1) { try $0.sendPublic("mine", now: $1) }
        s.net.run(for: 1_000)
        #expect(s.shown(0) == ["mine"])
        #expect(s.victimCore.refusals.ownID == 1)
    }

    @Test func reassembliesStayWithinTheirCaps() throws {
        let s = Scene()
        // 300 fragment sets of 200 pieces, 300 bytes a piece: 18 MB if kept.
        for set in 0..<300 {
            for index in 0..<2 {
                let f = Fragment(fragmentID: UInt64(set + 1), index: UInt16(index), total: 200, originalType: .message,
                                 data: [UInt8](repeating: UInt8(index), count: 300))
                let p = Packet(type: .fragment, ttl: 7, timestamp: s.net.now, senderID: s.alice.peerID, payload: f.encoded(),
                               compress: false)
                s.net.inject(try p.encoded(), on: s.raw)
            }
        }
        s.net.run(for: 100)
        let limits = Reassembler.Limits.default, held = s.victimCore.router.reassemblyBytes
        #expect(held > 0, "no fragment was held: the flood never reached the reassembler")
        #expect(held <= limits.maxInProgress * 2 * 300, "\(held) B: more than \(limits.maxInProgress) sets in progress")
        #expect(held <= limits.maxTotalBytes)
        // Control: a whole, signed message still reassembles (the oldest set gives way for it).
        let before = s.victimCore.router.statistics.messagesReassembled
        let whole = try Self.message("after the flood", from: s.alice.peerID, at: s.net.now, signedBy: s.alice.signingKey).encoded()
        let cut = whole.count / 2
        for (i, part) in [Array(whole[..<cut]), Array(whole[cut...])].enumerated() {
            let f = Fragment(fragmentID: 10_000, index: UInt16(i), total: 2, originalType: .message, data: part)
            s.net.inject(try Packet(type: .fragment, ttl: 7, timestamp: s.net.now, senderID: s.alice.peerID,
                                    payload: f.encoded(), compress: false).encoded(), on: s.raw)
        }
        s.net.run(for: 500)
        #expect(s.victimCore.router.statistics.messagesReassembled == before + 1)
        #expect(s.shown(1).contains("after the flood"))
    }
}
}
