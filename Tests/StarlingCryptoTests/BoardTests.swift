import Crypto
import Foundation
import StarlingCrypto
import StarlingTestSupport
import StarlingWire
import Testing

/// Issue 36, the mesh board (0x23): the document's examples are what Starling
/// builds, Python's `cryptography` builds the same bytes from the iOS rules,
/// and the decoder refuses what iOS refuses and takes what it takes.
@Suite struct BoardTests {
    static let key = try! Curve25519.Signing.PrivateKey(rawRepresentation: Array(0..<32) as [UInt8])
    static let postID = Array(1...16) as [UInt8]
    static let created: UInt64 = 1_700_000_000_000

    static func post(_ geohash: String = "u33dc1", _ content: String = "notice", flags: UInt8 = 0,
                     expires: UInt64 = created + 86_400_000) throws -> BoardPost {
        var p = BoardPost(postID: postID, geohash: geohash, content: content, authorKey: [], nickname: "alice",
                          createdAt: created, expiresAt: expires, flags: flags)
        try BoardSigning.sign(&p, with: key)
        return p
    }

    static func tombstone() throws -> BoardTombstone {
        var t = BoardTombstone(postID: postID, authorKey: [], deletedAt: 1_700_000_100_000)
        try BoardSigning.sign(&t, with: key)
        return t
    }

    @Test func theDocumentsExamplesAreWhatStarlingBuildsAndVerifies() throws {
        let built: [(String, BoardPacket)] = [("board-post", .post(try Self.post())),
                                              ("board-post-urgent", .post(try Self.post("", "water at gate 2", flags: 1))),
                                              ("board-tombstone", .tombstone(try Self.tombstone()))]
        for (name, packet) in built {
            let doc = try CryptoDocumentationExampleTests.example(name)
            #expect(packet.encoded() == doc, "\(name): \(packet.encoded().map { String(format: "%02x", $0) }.joined())")
            let read = try BoardPacket(decoding: doc[...])
            #expect(read == packet && BoardSigning.isValid(read), "\(name)")
        }
        if case let .post(p) = try BoardPacket(decoding: try CryptoDocumentationExampleTests.example("board-post-urgent")[...]) {
            #expect(p.isUrgent && p.geohash.isEmpty)
        } else {
            Issue.record("the urgent example is not a post")
        }
    }

    @Test func aForgedOrAlteredPostDoesNotVerify() throws {
        let good = try Self.post()
        #expect(BoardSigning.isValid(.post(good)), "the control")
        var altered = good
        altered.content = "notice!"
        #expect(!BoardSigning.isValid(.post(altered)))
        var otherKey = good
        otherKey.authorKey = Array(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation)
        #expect(!BoardSigning.isValid(.post(otherKey)))
        var urgent = good
        urgent.flags = 1 // the flags are signed
        #expect(!BoardSigning.isValid(.post(urgent)))
        // A tombstone signed by someone else, for this post: valid under its own key, and another author's.
        var foreign = BoardTombstone(postID: Self.postID, authorKey: [], deletedAt: 1)
        try BoardSigning.sign(&foreign, with: Curve25519.Signing.PrivateKey())
        #expect(BoardSigning.isValid(.tombstone(foreign)) && foreign.authorKey != good.authorKey)
    }

    @Test func theDecoderReadsAsIOSReads() throws {
        let bytes = BoardPacket.post(try Self.post()).encoded()
        let control = try BoardPacket(decoding: bytes[...])
        // Taken: an unknown TLV, one or two stray bytes at the end, exactly 7 days.
        #expect(try BoardPacket(decoding: (bytes + [0x7F, 0x00, 0x02, 0xDE, 0xAD])[...]) == control)
        #expect(try BoardPacket(decoding: (bytes + [0x00, 0x01])[...]) == control)
        let week = try Self.post(expires: Self.created + BoardPacket.maxLifetime)
        #expect(try BoardPacket(decoding: BoardPacket.post(week).encoded()[...]) == .post(week))
        // A repeated TLV: its last copy counts (the signature then fails, as on iOS).
        let repeated = bytes + [0x04, 0x00, 0x03] + Array("hey".utf8)
        if case let .post(p) = try BoardPacket(decoding: repeated[...]) { #expect(p.content == "hey") }
        #expect(!BoardSigning.isValid(try BoardPacket(decoding: repeated[...])))
        // Refused.
        var refused: [(String, [UInt8])] = [
            ("cut by a byte", Array(bytes.dropLast())),
            ("7 days and 1 ms", BoardPacket.post(try Self.post(expires: Self.created + BoardPacket.maxLifetime + 1)).encoded()),
            ("expires as made", BoardPacket.post(try Self.post(expires: Self.created)).encoded()),
            ("a capital in the geohash", BoardPacket.post(try Self.post("9q8yA")).encoded()),
            ("an empty post", BoardPacket.post(try Self.post("u33dc1", "")).encoded()),
            ("513 bytes of content", BoardPacket.post(try Self.post("u33dc1", String(repeating: "x", count: 513))).encoded()),
            ("kind 3", [0x01, 0x00, 0x01, 0x03] + Array(bytes.dropFirst(4))),
            ("no signature", BoardPost(postID: Self.postID, geohash: "", content: "x", authorKey: Array(repeating: 1, count: 32),
                                       nickname: "", createdAt: 1, expiresAt: 2).encoded()),
        ]
        // A time of the wrong size: absent, so the post is incomplete.
        var shortTime = bytes
        if let at = (0..<shortTime.count - 3).first(where: { shortTime[$0] == 0x07 && shortTime[$0 + 1] == 0 && shortTime[$0 + 2] == 8 }) {
            shortTime.replaceSubrange(at..<at + 11, with: [0x07, 0x00, 0x04, 0, 0, 0, 1])
            refused.append(("a 4-byte createdAt", shortTime))
        }
        #expect(refused.count == 9)
        for (why, bad) in refused {
            #expect(throws: WireError.self, "\(why)") { try BoardPacket(decoding: bad[...]) }
        }
        // Any bytes: an answer or an error, never a trap.
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            var mutated = bytes
            for _ in 0..<3 { mutated[Int.random(in: 0..<mutated.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng) }
            _ = try? BoardPacket(decoding: mutated.prefix(Int.random(in: 0...mutated.count, using: &rng)))
        }
    }
}

/// The same examples from Python's `cryptography`, written from the iOS rules:
/// an independent implementation agrees byte for byte.
@Suite(.usesProcesses) struct BoardInteropTests {
    @Test func pythonsCryptographyBuildsTheSameBoardPackets() async throws {
        let out = try await PythonEnvironment.run("board_vectors.py")
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: String], "\(out)")
        #expect(parsed["publicKey"] == Array(BoardTests.key.publicKey.rawRepresentation).map { String(format: "%02x", $0) }.joined())
        for name in ["board-post", "board-post-urgent", "board-tombstone", "prekey-bundle"] {
            let theirs = try #require(parsed[name], "no \(name) in \(out)")
            #expect(theirs == (try CryptoDocumentationExampleTests.example(name)).map { String(format: "%02x", $0) }.joined(), "\(name)")
        }
        // The post docs/PROTOCOL.md's bridge-board carries (flags 03: urgent, may cross; StarlingNodeTests ties it to that example).
        let crossing = BoardPacket.post(try BoardTests.post("", "water at gate 2", flags: 3)).encoded()
        #expect(parsed["board-post-crossing"] == crossing.map { String(format: "%02x", $0) }.joined())
    }
}
