import Crypto
import Foundation
import StarlingCrypto
import StarlingWire
@testable import StarlingYaOKServerCore
import Testing

let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A hex block of docs/PROTOCOL.md after `<!-- example: NAME -->`, without spaces.
func documentHex(_ name: String) throws -> String {
    let doc = try String(contentsOf: repoRoot.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
    let marker = try #require(doc.range(of: "<!-- example: \(name) -->"), "no example \(name) in PROTOCOL.md")
    let open = try #require(doc[marker.upperBound...].range(of: "```hex\n"))
    let close = try #require(doc[open.upperBound...].range(of: "```"))
    return String(doc[open.upperBound..<close.lowerBound]).filter { !$0.isWhitespace }.lowercased()
}

@Suite struct ServerPacketTests {
    /// The documentation's alice: private keys of repeated bytes 1 (X25519) and 2 (Ed25519).
    static let alice = Identity(noiseKey: try! .init(rawRepresentation: [UInt8](repeating: 1, count: 32)),
                                signingKey: try! .init(rawRepresentation: [UInt8](repeating: 2, count: 32)))
    static let aliceID = UserID(string: "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa")!
    static let bobID = UserID(string: "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb")!
    static let messageID = UserID(string: "11111111-2222-4333-8444-555555555555")!
    static let token = ServerToken(bytes: (0x10...0x1F).map { UInt8($0) })!

    @Test func theDocumentsExamples() throws {
        var r = ServerRegistration(userID: Self.aliceID, timestamp: 1_795_000_000_000, signature: [], publicKey: Self.alice.signingPublicKey)
        r.signature = Array(try Self.alice.signingKey.signature(for: r.signedBytes())) // Ed25519 is deterministic
        let register = ServerPacket.register(r).encode()
        #expect(register.count == 126)
        #expect(register.hexString == (try documentHex("yaok-relay-register")), "computed: \(register.hexString)")
        #expect(try ServerPacket.decode(register, .toServer) == .register(r))
        #expect(YaOKServerCore<Int>.check(r, pinned: nil, now: 1_795_000_000_000, window: 120_000) == .success(Self.alice.signingPublicKey))

        let registered = ServerPacket.registered(token: Self.token, serverTime: 1_795_000_000_250).encode()
        #expect(registered.hexString == (try documentHex("yaok-relay-registered")), "computed: \(registered.hexString)")
        let poll = ServerPacket.poll(token: Self.token).encode()
        #expect(poll.hexString == (try documentHex("yaok-relay-poll")), "computed: \(poll.hexString)")
        let ack = ServerPacket.ack(token: Self.token, messageID: Self.messageID).encode()
        #expect(ack.hexString == (try documentHex("yaok-relay-ack")), "computed: \(ack.hexString)")
        let queued = ServerPacket.queued(messageID: Self.messageID, online: false).encode()
        #expect(queued.hexString == (try documentHex("yaok-relay-queued")), "computed: \(queued.hexString)")
        let rejected = ServerPacket.rejected(.recipientQueueFull, messageID: Self.messageID).encode()
        #expect(rejected.hexString == (try documentHex("yaok-relay-rejected")), "computed: \(rejected.hexString)")
        let reused = ServerPacket.rejected(.messageIDReused, messageID: Self.messageID).encode()
        #expect(reused.hexString == (try documentHex("yaok-relay-rejected-reused")), "computed: \(reused.hexString)")
        let end = ServerPacket.pollEnd(messageIDs: [Self.messageID, UserID(string: "66666666-7777-4888-8999-aaaaaaaaaaaa")!], more: true).encode()
        #expect(end.hexString == (try documentHex("yaok-relay-poll-end")), "computed: \(end.hexString)")
        #expect(try ServerPacket.decode(end, .toClient) == .pollEnd(messageIDs: [Self.messageID, UserID(string: "66666666-7777-4888-8999-aaaaaaaaaaaa")!], more: true))
        let receipt = ServerPacket.relayReceipt(messageID: Self.messageID, by: Self.bobID).encode()
        #expect(receipt.hexString == (try documentHex("yaok-relay-receipt")), "computed: \(receipt.hexString)")
        // A MSG to the server: the seed's 42-byte header, the sealed message, the token.
        let payload = [UInt8](repeating: 0xEE, count: 4)
        let msg = ServerPacket.message(sender: Self.aliceID, recipient: Self.bobID, payload: payload, token: Self.token).encode()
        #expect(msg.hexString == (try documentHex("yaok-relay-msg")), "computed: \(msg.hexString)")
        #expect(try ServerPacket.decode(msg, .toServer) == .message(sender: Self.aliceID, recipient: Self.bobID, payload: payload, token: Self.token))
        #expect(try ServerPacket.decode(Array(msg.dropLast(16)), .toClient) == .message(sender: Self.aliceID, recipient: Self.bobID,
                                                                                       payload: payload, token: nil))
        // The first CHUNK of a 3,000-byte packet.
        let big = [UInt8](repeating: 0x42, count: 3_000)
        let chunks = try #require(ServerChunk.datagrams(big, transferID: 0x0102_0304))
        #expect(chunks.count == 3 && chunks.map(\.count) == [1_472, 1_472, 3_000 - 2 * 1_458 + 14])
        #expect(chunks[0].prefix(14).hexString == (try documentHex("yaok-relay-chunk-header")), "computed: \(chunks[0].prefix(14).hexString)")
    }

    /// The courier mailbox's examples in docs/PROTOCOL.md ("The courier mailbox").
    @Test func theCourierMailboxExamples() throws {
        let tag = Array(0..<16).map { UInt8($0) }
        let envelope = CourierEnvelope(recipientTag: tag, expiry: 0x0102_0304_0506_0708, ciphertext: [0xAA, 0xBB, 0xCC])
        let bytes = try envelope.encoded()
        let cookie = Bytes16((0x10...0x1F).map { UInt8($0) })!
        let examples: [(String, ServerPacket, ServerPacket.Direction)] = [
            ("mailbox-hello", .dropHello(cookie: Bytes16(high: 0, low: 0)), .toServer),
            ("mailbox-cookie", .dropCookie(cookie: cookie, ready: true), .toClient),
            ("mailbox-drop", .drop(cookie: cookie, envelope: bytes), .toServer),
            ("mailbox-taken", .dropTaken(dropID: CourierMailbox.dropID(of: envelope), new: true), .toClient),
            ("mailbox-fetch", .dropFetch(cookie: cookie, after: 0, tags: [Bytes16(tag)!]), .toServer),
            ("mailbox-delivery", .dropDelivery(sequence: 7, envelope: bytes), .toClient),
            ("mailbox-end", .dropEnd(count: 1, last: 7, more: false), .toClient),
        ]
        for (name, packet, direction) in examples {
            let encoded = packet.encode()
            #expect(encoded.hexString == (try documentHex(name)), "\(name) computed: \(encoded.hexString)")
            #expect(try ServerPacket.decode(encoded, direction) == packet, "\(name)")
            // Of a fixed size, except DROP (its envelope runs to the end); DROP_HELLO and DROP_FETCH are only the server's, the rest only a client's.
            if !name.hasPrefix("mailbox-d") { #expect(throws: WireError.self) { try ServerPacket.decode(encoded + [0], direction) } }
            if !["mailbox-drop", "mailbox-delivery"].contains(name) {
                #expect(throws: WireError.self) { try ServerPacket.decode(encoded, direction == .toServer ? .toClient : .toServer) }
            }
        }
        // DROP_HELLO is larger than its answer (no amplification by a forged source).
        #expect(ServerPacket.dropHello(cookie: cookie).encode().count > ServerPacket.dropCookie(cookie: cookie, ready: false).encode().count)
        // Strict: a DROP_FETCH of no tags or 52, an envelope past the largest, flags other than 0 or 1.
        var none = ServerPacket.dropFetch(cookie: cookie, after: 0, tags: [Bytes16(tag)!]).encode()
        none[30] = 0
        #expect(throws: WireError.self) { try ServerPacket.decode(Array(none.prefix(31)), .toServer) }
        var many = ServerPacket.dropFetch(cookie: cookie, after: 0, tags: [Bytes16(tag)!]).encode()
        many[30] = 52
        #expect(throws: WireError.self) { try ServerPacket.decode(many + [UInt8](repeating: 0, count: 51 * 16), .toServer) }
        let largest = [UInt8](repeating: 1, count: ServerPacket.maxDropEnvelope)
        #expect(try ServerPacket.decode(ServerPacket.drop(cookie: cookie, envelope: largest).encode(), .toServer) == .drop(cookie: cookie, envelope: largest))
        #expect(throws: WireError.self) { try ServerPacket.decode(ServerPacket.drop(cookie: cookie, envelope: largest + [1]).encode(), .toServer) }
        // The smallest envelope is 34 bytes: a DROP is never smaller than the REJECTED it may get (no amplification).
        let smallest = [UInt8](repeating: 1, count: ServerPacket.minDropEnvelope)
        #expect(try ServerPacket.decode(ServerPacket.drop(cookie: cookie, envelope: smallest).encode(), .toServer) == .drop(cookie: cookie, envelope: smallest))
        #expect(throws: WireError.self) { try ServerPacket.decode(ServerPacket.drop(cookie: cookie, envelope: Array(smallest.dropLast())).encode(), .toServer) }
        #expect(ServerPacket.drop(cookie: cookie, envelope: smallest).encode().count > ServerPacket.rejected(.unprovenAddress, messageID: nil).encode().count)
        #expect(ServerPacket.minDropEnvelope == (try CourierEnvelope(recipientTag: tag, expiry: 1, ciphertext: [1]).encoded().count))
        var ready = ServerPacket.dropCookie(cookie: cookie, ready: true).encode()
        ready[22] = 2
        #expect(throws: WireError.self) { try ServerPacket.decode(ready, .toClient) }
        // The largest envelope an envelope can be is what DROP admits.
        let biggest = CourierEnvelope(recipientTag: tag, expiry: 1, ciphertext: [UInt8](repeating: 7, count: CourierEnvelope.maxCiphertext),
                                      copies: 2, prekeyID: 9)
        #expect(try biggest.encoded().count == ServerPacket.maxDropEnvelope)
    }

    @Test func everyPacketRoundTripsAndDecodingIsStrict() throws {
        let id = UserID.random(), t = ServerToken.random()
        let toServer: [ServerPacket] = [
            .message(sender: id, recipient: id, payload: [1, 2, 3], token: t), .ack(token: t, messageID: id),
            .register(ServerRegistration(userID: id, timestamp: 7, signature: [UInt8](repeating: 9, count: 64), publicKey: nil)),
            .poll(token: t), .ping(token: t), .bye(token: t),
        ]
        let toClient: [ServerPacket] = [
            .message(sender: id, recipient: id, payload: [1], token: nil), .relayReceipt(messageID: id, by: id),
            .registered(token: t, serverTime: 9), .noMessages, .pong, .queued(messageID: id, online: true),
            .rejected(.serverFull, messageID: nil), .rejected(.rateLimited, messageID: id), .rejected(.messageIDReused, messageID: id),
            .pollEnd(messageIDs: [id], more: false), .pollEnd(messageIDs: (0..<10).map { _ in .random() }, more: true),
        ]
        for p in toServer {
            let bytes = p.encode()
            #expect(try ServerPacket.decode(bytes, .toServer) == p)
            #expect(throws: WireError.self) { try ServerPacket.decode(bytes + [0], .toServer) }
            for n in 0..<bytes.count { #expect(throws: WireError.self) { try ServerPacket.decode(Array(bytes.prefix(n)), .toServer) } }
        }
        for p in toClient {
            let bytes = p.encode()
            #expect(try ServerPacket.decode(bytes, .toClient) == p)
            #expect(throws: WireError.self) { try ServerPacket.decode(bytes + [0], .toClient) }
        }
        // A server never takes what only a server sends, and the other way round.
        #expect(throws: WireError.self) { try ServerPacket.decode(ServerPacket.pong.encode(), .toServer) }
        #expect(throws: WireError.self) { try ServerPacket.decode(ServerPacket.poll(token: t).encode(), .toClient) }
        // Magic, version, lengths.
        var bad = ServerPacket.pong.encode()
        bad[0] = 0x58
        #expect(throws: WireError.self) { try ServerPacket.decode(bad, .toClient) }
        bad = ServerPacket.pong.encode()
        bad[4] = 2
        #expect(throws: WireError(.unsupportedVersion(2), field: "version", offset: 4)) { try ServerPacket.decode(bad, .toClient) }
        let oversized = ServerPacket.message(sender: id, recipient: id, payload: [UInt8](repeating: 0, count: ServerPacket.maxPayload + 1), token: nil)
        #expect(throws: WireError.self) { try ServerPacket.decode(oversized.encode(), .toClient) }
    }

    /// The reassembler's bounds: per source, in all, and in time.
    @Test func chunksReassembleInAnyOrderWithinBounds() throws {
        var r = ServerReassembler<Int>()
        let packet = (0..<5_000).map { UInt8(truncatingIfNeeded: $0) }
        let pieces = try #require(ServerChunk.datagrams(packet, transferID: 1)).map { d -> ServerChunk in
            guard case let .chunk(c) = try ServerPacket.decode(d, .toServer) else { throw ServerTestError.notRegistered }
            return c
        }
        #expect(pieces.count == 4)
        for c in pieces.dropFirst().reversed() { #expect(r.add(c, from: 1, now: 0) == nil) }
        #expect(r.add(pieces[0], from: 1, now: 1) == packet)
        // A flood of first chunks from one source keeps 8; from many, 256 in all; 10 s later, none.
        for i in 0..<1_000 { _ = r.add(ServerChunk(transferID: UInt32(i), index: 0, total: 16, data: [1]), from: 7, now: 100) }
        #expect(r.inProgress == 8)
        for i in 0..<1_000 { _ = r.add(ServerChunk(transferID: 1, index: 0, total: 16, data: [1]), from: 1_000 + i, now: 100) }
        #expect(r.inProgress == 256)
        r.expire(now: 10_100)
        #expect(r.inProgress == 0)
        // More than 16 chunks is not a packet.
        #expect(ServerChunk.datagrams([UInt8](repeating: 0, count: 16 * 1_458 + 1), transferID: 1) == nil)
    }
}
