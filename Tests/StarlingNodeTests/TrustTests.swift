import Testing
import StarlingCrypto
import StarlingMesh
import StarlingEmbeddedNetwork
import StarlingNodeCore
import StarlingWire

/// Blocks hold whatever arrives first: a Noise session and a private message
/// before the sender's announce (a retry into a freshly started node), and
/// while the application has not loaded its trust decisions yet.
extension InProcessNodes {
@Suite struct TrustTests {
    /// Someone in radio range with a real identity, speaking on a raw link: a
    /// handshake, then a private message, and never an announce.
    struct Speaker {
        let identity = Identity.generate()
        var sessions: SessionManager
        init() { sessions = SessionManager(identity: identity) }

        mutating func say(_ text: String, id: String, to node: Int, on raw: EmbeddedNetwork.RawLink, in net: EmbeddedNetwork) throws {
            let target = net.nodes[node].peerID
            if !sessions.hasSession(with: target) {
                let m1 = try sessions.initiateHandshake(with: target, now: net.now)
                let before = net.rawReceived[raw]?.count ?? 0
                net.inject(try NoisePackets.handshake(m1, from: identity.peerID, to: target, timestamp: net.now).encoded(), on: raw)
                let answers = (net.rawReceived[raw] ?? []).dropFirst(before).compactMap { try? Packet(decoding: $0) }
                // No answer is a failure of the test's setup, never a silent "nothing was shown".
                let m2 = try #require(answers.first { $0.type == .noiseHandshake && $0.recipientID == identity.peerID },
                                      "the node did not answer the handshake")
                let step = try sessions.receiveHandshake(m2.payload, from: target, now: net.now)
                if let m3 = step.reply {
                    net.inject(try NoisePackets.handshake(m3, from: identity.peerID, to: target, timestamp: net.now).encoded(), on: raw)
                }
            }
            let frame = try sessions.seal(try NoisePayload.privateMessage(PrivateMessage(messageID: id, content: text)).encoded(), for: target)
            net.inject(try NoisePackets.encrypted(frame, from: identity.peerID, to: target, timestamp: net.now).encoded(), on: raw)
        }

        /// Whether a delivered receipt for `id` came back on the raw link.
        mutating func acknowledged(_ id: String, by node: Int, on raw: EmbeddedNetwork.RawLink, in net: EmbeddedNetwork) -> Bool {
            let target = net.nodes[node].peerID
            for bytes in net.rawReceived[raw] ?? [] {
                guard let p = try? Packet(decoding: bytes), p.type == .noiseEncrypted, p.recipientID == identity.peerID,
                      case let .plaintext(plain)? = try? sessions.open(p.payload, from: target, now: net.now),
                      case let .delivered(got)? = try? NoisePayload(decoding: plain), got == id else { continue }
                return true
            }
            return false
        }
    }

    static func shown(_ net: EmbeddedNetwork, _ node: Int) -> [String] {
        net.events[node].compactMap { if case let .privateMessage(_, _, text, _, _, _) = $0 { text } else { nil } }
    }

    @Test func aBlockHoldsForASessionThatComesBeforeTheAnnounce() throws {
        let net = EmbeddedNetwork()
        let alice = net.addNode("alice")
        var xb = Speaker()
        net.on(alice) { c, _ in c.block(xb.identity.fingerprint) }
        let raw = net.openRawLink(to: alice)
        try xb.say("hello while blocked", id: "A-1", to: alice, on: raw, in: net)
        net.run(for: 100)
        #expect(!Self.shown(net, alice).contains("hello while blocked"))
        let ack1 = xb.acknowledged("A-1", by: alice, on: raw, in: net); #expect(!ack1)
        #expect(!net.events[alice].contains { $0.name == "session" })
        // Positive control: the same speaker, unblocked, is heard and acknowledged.
        net.on(alice) { c, _ in c.unblock(xb.identity.fingerprint) }
        var other = Speaker()
        try other.say("hello", id: "B-1", to: alice, on: raw, in: net)
        net.run(for: 100)
        #expect(Self.shown(net, alice) == ["hello"])
        let ack2 = other.acknowledged("B-1", by: alice, on: raw, in: net); #expect(ack2)
    }

    @Test func aBlockHoldsAcrossARestartWhenTheRetryComesFirst() throws {
        let net = EmbeddedNetwork()
        let alice = net.addNode("alice"), xb = net.addNode("xb")
        net.connect(alice, xb)
        net.run(for: 1_000)
        let xbKey = net.nodes[xb].identity.fingerprint, aliceID = net.nodes[alice].peerID
        net.on(alice) { c, _ in c.block(xbKey) }
        let id = try net.on(xb) { try $0.sendPrivate("hello while blocked", to: aliceID, now: $1) }
        net.run(for: 3_000)
        // Alice starts again; her store gives the block back before anything arrives.
        net.restart(alice)
        net.on(alice) { c, _ in c.block(xbKey) }
        net.run(for: 120_000) // xb's retries, handshakes and announces
        #expect(!Self.shown(net, alice).contains("hello while blocked"))
        #expect(!net.events[xb].contains { if case .delivered(id, _) = $0 { true } else { false } })
        // Positive control: unblocked, xb's next retry is shown and acknowledged.
        net.on(alice) { c, _ in c.unblock(xbKey) }
        net.run(for: 120_000)
        #expect(Self.shown(net, alice).contains("hello while blocked"))
        #expect(net.events[xb].contains { if case .delivered(id, _) = $0 { true } else { false } })
    }

    @Test func privateMessagesWaitUnacknowledgedUntilTrustIsKnown() throws {
        let net = EmbeddedNetwork()
        let alice = net.addNode("alice") { $0.trustKnown = false }
        let raw = net.openRawLink(to: alice)
        var xb = Speaker(), bob = Speaker()
        try xb.say("from xb", id: "X-1", to: alice, on: raw, in: net)
        try bob.say("from bob", id: "B-1", to: alice, on: raw, in: net)
        net.run(for: 100)
        #expect(Self.shown(net, alice).isEmpty)
        #expect(net.nodes[alice].awaitingTrustCount == 2)
        let ack3 = xb.acknowledged("X-1", by: alice, on: raw, in: net); #expect(!ack3)
        // The store opens: xb is blocked; bob is not.
        net.on(alice) { c, _ in c.block(xb.identity.fingerprint) }
        net.on(alice) { $0.trustDecided(now: $1) }
        #expect(Self.shown(net, alice) == ["from bob"])
        let ack4 = bob.acknowledged("B-1", by: alice, on: raw, in: net); #expect(ack4)
        let ack5 = xb.acknowledged("X-1", by: alice, on: raw, in: net); #expect(!ack5)
        #expect(net.nodes[alice].awaitingTrustCount == 0)
    }
}
}
