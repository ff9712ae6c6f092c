import Crypto
import Testing
import StarlingCrypto
import StarlingMesh
import StarlingNostr
@testable import StarlingNodeCore
import StarlingWire

/// Issue 55: each feature is a value that can be driven alone, with the
/// node's facts handed in and its effects read back, no node around it.
@Suite struct NodeFeatureTests {
    static let me = Identity.generate()

    static func context(now: Millis = 1_000, wall: Millis = 1_750_000_000_000) -> NodeContext {
        NodeContext(now: now, wall: wall, identity: me, peerID: me.peerID, nickname: "me", trustKnown: true, blocked: [], favorites: [], verified: [],
                    pins: [:], noiseKeys: [:], present: PeerTable(), sessions: SessionManager(identity: me))
    }

    static func post(by id: Identity, content: String, created: UInt64) throws -> Packet {
        var p = BoardPost(postID: (0..<16).map { _ in UInt8.random(in: 0...255) }, geohash: "", content: content, authorKey: [],
                          nickname: "x", createdAt: created, expiresAt: created + 86_400_000)
        try BoardSigning.sign(&p, with: id.signingKey)
        return Packet(type: .boardPost, ttl: 7, timestamp: created, senderID: id.peerID, payload: BoardPacket.post(p).encoded())
    }

    static func refusals(_ c: NodeContext) -> Int { c.effects.filter { if case .refused = $0 { true } else { false } }.count }
    static func provided(_ c: NodeContext, _ type: MessageType) -> [Int] {
        c.effects.compactMap { if case let .provide(t, packets) = $0, t == type { packets.count } else { nil } }
    }

    @Test func theBoardTakesASignedPostAndRefusesOneWhoseSignatureFails() throws {
        var board = BoardFeature(configuration: BoardStore.Configuration())
        var c = Self.context()
        let alice = Identity.generate()
        let good = try Self.post(by: alice, content: "water at gate 2", created: c.wall)
        #expect(board.takes(good, context: &c))
        #expect(board.version == 1 && board.store.postCount == 1 && board.tableSizes["node.boardPosts"] == 1)
        #expect(Self.provided(c, .boardPost) == [1] && Self.refusals(c) == 0)
        // Shown once, when the router delivers it; a second delivery shows nothing.
        #expect(board.delivered(good, context: &c) != nil)
        #expect(board.delivered(good, context: &c) == nil)
        // A bit flipped in the content: refused, counted, not kept.
        let signed = try Self.post(by: alice, content: "water at gate 3", created: c.wall)
        var payload = signed.payload
        payload[payload.count - 70] ^= 0x01
        let bad = Packet(type: .boardPost, ttl: 7, timestamp: signed.timestamp, senderID: alice.peerID, payload: payload)
        var c2 = Self.context()
        #expect(!board.takes(bad, context: &c2))
        #expect(Self.refusals(c2) == 1 && board.store.postCount == 1 && board.version == 1)
    }

    @Test func groupsMakeAGroupAndSendToItThroughTheContext() throws {
        var groups = GroupsFeature(configuration: GroupTable.Configuration())
        var c = Self.context()
        let g = try groups.create(named: "crew", context: &c)
        #expect(c.effects.contains { if case let .event(.groupChanged(s, change, _)) = $0 { s.name == "crew" && change == .created } else { false } })
        let id = try [UInt8](hex: g.groupID)
        var c2 = Self.context()
        try groups.send(id, text: "meet at noon", messageID: "M1", context: &c2)
        let sent = c2.effects.compactMap { if case let .originate(p) = $0 { p } else { nil } }
        #expect(sent.count == 1 && sent.first?.type == .groupMessage && Self.provided(c2, .groupMessage) == [1])
        // The control: a group it is not in is refused, and nothing goes out.
        var c3 = Self.context()
        #expect(throws: NodeCore.GroupError.unknownGroup) { try groups.send([UInt8](repeating: 7, count: 16), text: "x", messageID: "M2", context: &c3) }
        #expect(c3.effects.isEmpty)
    }

    @Test func voiceRefusesABurstThatDoesNotDecodeAndTakesNothing() {
        var voice = VoiceFeature()
        var c = Self.context()
        voice.take([0xFF, 0x00, 0x01], from: Identity.generate().peerID, isPrivate: false, context: &c)
        #expect(Self.refusals(c) == 1 && voice.tableSizes["node.voiceBursts"] == 0 && voice.nextDeadline == nil)
    }

    @Test func aGatewayThatIsNoneTakesNoDownlinkAndOneThatIsKeepsIt() throws {
        var plain = GatewayFeature(serves: false, limits: GatewayCore.Limits())
        var c = Self.context()
        var event = NostrEvent(pubkey: "", createdAt: Int64(c.wall / 1_000), kind: 20_000, tags: [["g", "u4pruy"]], content: "hi")
        try event.sign(with: .random())
        #expect(!plain.downlink(event, geohash: "u4pruy", context: &c))
        #expect(c.effects.isEmpty && plain.nextDeadline == nil)
        var gateway = GatewayFeature(serves: true, limits: GatewayCore.Limits())
        #expect(gateway.downlink(event, geohash: "u4pruy", context: &c))
    }
}
