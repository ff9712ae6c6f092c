import Crypto
import Foundation
import StarlingCrypto
import StarlingTestSupport
import StarlingWire
import Testing

/// Issue 36, groups: docs/PROTOCOL.md's examples are what Starling builds,
/// opens and verifies (Python's `cryptography` builds the same bytes:
/// GroupInteropTests), and what iOS refuses is refused.
@Suite struct GroupTests {
    static let aliceSigning = try! Curve25519.Signing.PrivateKey(rawRepresentation: Array(0..<32).map { UInt8($0) })
    static let bobSigning = try! Curve25519.Signing.PrivateKey(rawRepresentation: Array(32..<64).map { UInt8($0) })
    static func fingerprint(_ byte: UInt8) throws -> [UInt8] {
        let key = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: byte, count: 32))
        return Fingerprint(noiseStaticKey: Array(key.publicKey.rawRepresentation)).bytes
    }
    static func alice() throws -> GroupMember {
        GroupMember(fingerprint: try fingerprint(0x11), signingKey: Array(aliceSigning.publicKey.rawRepresentation), nickname: "alice")
    }
    static func bob() throws -> GroupMember {
        GroupMember(fingerprint: try fingerprint(0x22), signingKey: Array(bobSigning.publicKey.rawRepresentation), nickname: "bob")
    }
    static let groupID = Array(0..<16).map { UInt8($0) }

    static func state(epoch: UInt32, members: [GroupMember], key: [UInt8]) throws -> GroupState {
        var s = GroupState(groupID: groupID, name: "trail crew", key: key, epoch: epoch, members: members,
                           creatorFingerprint: try fingerprint(0x11))
        try GroupSealing.sign(&s, with: aliceSigning)
        return s
    }

    @Test func theDocumentsStatesAreWhatStarlingBuildsAndVerifies() throws {
        let invite = try Self.state(epoch: 2, members: [try Self.alice(), try Self.bob()], key: [UInt8](repeating: 0x42, count: 32))
        let doc = try CryptoDocumentationExampleTests.example("group-state")
        #expect(invite.encoded() == doc)
        let read = try GroupState(decoding: doc[...])
        #expect(read == invite && GroupSealing.isValid(read))
        let removal = try Self.state(epoch: 3, members: [try Self.alice()], key: [UInt8](repeating: 0, count: 32))
        #expect(removal.encoded() == (try CryptoDocumentationExampleTests.example("group-removal")))
        // Each field is signed: change one and it no longer verifies (the control above does).
        for change in [{ (s: inout GroupState) in s.epoch = 9 }, { $0.key[0] ^= 1 }, { $0.name = "trail crew!" }, { $0.members[1].nickname = "eve" }] {
            var altered = read
            change(&altered)
            #expect(!GroupSealing.isValid(altered))
        }
        // Signed by a member, not the creator: refused; a roster without its creator never verifies.
        var byBob = read
        byBob.signature = Array(try Self.bobSigning.signature(for: byBob.signingBytes))
        #expect(!GroupSealing.isValid(byBob))
        var noCreator = GroupState(groupID: Self.groupID, name: "x", key: read.key, epoch: 2, members: [try Self.bob()],
                                   creatorFingerprint: try Self.fingerprint(0x11))
        try GroupSealing.sign(&noCreator, with: Self.aliceSigning)
        #expect(!GroupSealing.isValid(noCreator))
    }

    @Test func theDocumentsMessageIsWhatStarlingSealsAndOpens() throws {
        let doc = try CryptoDocumentationExampleTests.example("group-message")
        let body = GroupMessageBody(messageID: "6F9619FF-8B86-4011-B42D-00C04FC964FF", senderSigningKey: [], senderNickname: "bob",
                                    timestamp: 1_750_000_000_000, content: "summit at noon")
        let key = [UInt8](repeating: 0x42, count: 32)
        let envelope = try GroupSealing.seal(body, groupID: Self.groupID, epoch: 2, key: key, sender: Self.bobSigning,
                                             nonce: Array(0xA0...0xAB))
        let bobID = PeerID(bytes: try Self.fingerprint(0x22).prefix(8))!
        let packet = Packet(type: .groupMessage, ttl: 7, timestamp: 1_750_000_000_000, senderID: bobID, payload: envelope.encoded(), compress: false)
        #expect(try packet.encoded() == doc)
        let read = try GroupEnvelope(decoding: try Packet(decoding: doc).payload[...])
        let opened = try GroupSealing.open(read, key: key)
        #expect(opened.content == "summit at noon" && opened.senderSigningKey == Array(Self.bobSigning.publicKey.rawRepresentation))
        // The epoch relabelled, another key, a flipped bit: none opens.
        var relabelled = read
        relabelled.epoch = 3
        #expect(throws: GroupSealing.Failure.decryptionFailed) { try GroupSealing.open(relabelled, key: key) }
        #expect(throws: GroupSealing.Failure.decryptionFailed) { try GroupSealing.open(read, key: [UInt8](repeating: 0x43, count: 32)) }
        var flipped = read
        flipped.ciphertext[5] ^= 1
        #expect(throws: GroupSealing.Failure.decryptionFailed) { try GroupSealing.open(flipped, key: key) }
        // Sealed with the key, but the signature is not over what it says: refused.
        var forged = body
        forged.senderSigningKey = Array(Self.bobSigning.publicKey.rawRepresentation)
        forged.signature = [UInt8](repeating: 1, count: 64)
        let box = try ChaChaPoly.seal(try forged.encoded(), using: SymmetricKey(data: key), authenticating: read.aad)
        let bad = GroupEnvelope(groupID: Self.groupID, epoch: 2, nonce: Array(box.nonce), ciphertext: Array(box.ciphertext) + Array(box.tag))
        #expect(throws: GroupSealing.Failure.badSignature) { try GroupSealing.open(bad, key: key) }
    }

    @Test func whatIOSRefusesIsRefused() throws {
        for bad: [UInt8] in [[], [0x01, 0x00], [0xFF, 0x00, 0x01]] {
            #expect(throws: WireError.self) { try GroupEnvelope(decoding: bad[...]) }
        }
        // A roster of 17, trailing bytes, bad UTF-8: refused; 16 is the control.
        func roster(_ n: Int, nick: [UInt8] = Array("m".utf8)) -> [UInt8] {
            [UInt8(n)] + (0..<n).flatMap { i in [UInt8](repeating: UInt8(i), count: 64) + [UInt8(nick.count)] + nick }
        }
        #expect(try GroupRoster.decode(roster(16)[...]).count == 16)
        #expect(throws: WireError.self) { try GroupRoster.decode(roster(17)[...]) }
        #expect(throws: WireError.self) { try GroupRoster.decode((roster(2) + [0])[...]) }
        #expect(throws: WireError.self) { try GroupRoster.decode(roster(1, nick: [0xC3, 0x28])[...]) }
        // A nickname is trimmed to 64 bytes between characters: 40 × "€" (3 bytes) keeps 21.
        let long = GroupMember(fingerprint: [UInt8](repeating: 1, count: 32), signingKey: [UInt8](repeating: 2, count: 32),
                               nickname: String(repeating: "€", count: 40))
        #expect(long.trimmedNickname == String(repeating: "€", count: 21))
        #expect(try GroupRoster.decode(GroupRoster.encoded([long])[...]).first?.nickname.utf8.count == 63)
        // A state with a wrong-size key misses its key: refused.
        let good = try Self.state(epoch: 2, members: [try Self.alice()], key: [UInt8](repeating: 0x42, count: 32)).encoded()
        var shortKey = good
        let at = try #require((0..<good.count - 3).first { good[$0] == 0x03 && good[$0 + 1] == 0 && good[$0 + 2] == 32 })
        shortKey.replaceSubrange(at..<(at + 35), with: [0x03, 0x00, 0x01, 0x42])
        #expect(throws: WireError.self) { try GroupState(decoding: shortKey[...]) }
        #expect(try GroupState(decoding: good[...]).epoch == 2) // the control
    }
}

/// The same examples from Python's `cryptography`, written from the iOS rules.
@Suite(.usesProcesses) struct GroupInteropTests {
    @Test func pythonsCryptographyBuildsTheSameGroupBytes() async throws {
        let out = try await PythonEnvironment.run("group_vectors.py")
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: String], "\(out)")
        for name in ["group-state", "group-message", "group-removal"] {
            let theirs = try #require(parsed[name], "no \(name) in \(out)")
            #expect(theirs == (try CryptoDocumentationExampleTests.example(name)).map { String(format: "%02x", $0) }.joined(), "\(name)")
        }
    }
}
