import Crypto
import Testing
import StarlingWire
@testable import StarlingCrypto

@Suite struct SigningTests {
    static let now: UInt64 = 1_763_800_000_000

    static func signedMessage(_ identity: Identity) throws -> Packet {
        let text = Array(String(repeating: "signed and sealed ", count: 8).utf8) // compressible
        let p = Packet(version: 2, type: .message, ttl: 7, timestamp: now, senderID: identity.peerID,
                       recipientID: .broadcast, route: [PeerID(rawValue: 9)], payload: text)
        #expect(p.compressedPayload != nil)
        return try PacketSigning.signed(p, with: identity.signingKey)
    }

    @Test func everyByteAndBitIsCovered() throws {
        let id = Identity.generate()
        let packet = try Self.signedMessage(id)
        let bytes = try packet.encoded()
        #expect(PacketSigning.isValid(try Packet(decoding: bytes), publicKey: id.signingPublicKey))
        func verifies(_ b: [UInt8]) -> Bool {
            guard let p = try? Packet(decoding: b) else { return false }
            return PacketSigning.isValid(p, publicKey: id.signingPublicKey)
        }
        // TTL (offset 2) and the isRSR bit change on the way by design and are not signed.
        for i in bytes.indices {
            var flipped = bytes
            flipped[i] ^= 0xFF
            #expect(verifies(flipped) == (i == 2), "byte \(i)")
            for bit in 0..<8 {
                var one = bytes
                one[i] ^= 1 << bit
                let unsignedField = i == 2 || (i == 11 && bit == 4)
                #expect(verifies(one) == unsignedField, "byte \(i) bit \(bit)")
            }
        }
    }

    @Test func relayChangesKeepTheSignature() throws {
        let id = Identity.generate()
        var p = try Packet(decoding: try Self.signedMessage(id).encoded())
        p.ttl = 2
        p.isRSR = true
        #expect(PacketSigning.isValid(try Packet(decoding: p.encoded()), publicKey: id.signingPublicKey))
        #expect(!PacketSigning.isValid(p, publicKey: Identity.generate().signingPublicKey))
    }

    @Test func announceBuildAndVerify() throws {
        let id = Identity.generate()
        let packet = try Announcement.make(identity: id, nickname: "alice", timestamp: Self.now,
                                           directNeighbors: [PeerID(rawValue: 1)], capabilities: 1)
        let decoded = try Packet(decoding: packet.encoded())
        let a = try Announcement.verify(decoded, now: Self.now + 899_000)
        #expect(a.nickname == "alice")
        #expect(a.noisePublicKey == id.noisePublicKey)
        #expect(throws: AnnounceError.stale(ageMillis: 900_001)) { try Announcement.verify(decoded, now: Self.now + 900_001) }
        var forged = decoded
        forged.senderID = Identity.generate().peerID
        #expect(throws: AnnounceError.self) { try Announcement.verify(forged, now: Self.now) }
        // Someone else's keys under alice's signature.
        var swapped = try Announce(decoding: decoded.payload)
        swapped.signingPublicKey = Identity.generate().signingPublicKey
        var resigned = decoded
        resigned.setPayload(try swapped.encoded())
        #expect(throws: AnnounceError.badSignature) { try Announcement.verify(resigned, now: Self.now) }
        var unsigned = decoded
        unsigned.signature = nil
        #expect(throws: AnnounceError.unsigned) { try Announcement.verify(unsigned, now: Self.now) }
    }

    @Test func identityFingerprintAndPeerID() throws {
        let id = Identity.generate()
        let digest = Array(SHA256.hash(data: id.noisePublicKey))
        #expect(id.fingerprint.bytes == digest)
        #expect(id.fingerprint.hex.count == 64 && id.fingerprint.hex == id.fingerprint.hex.lowercased())
        #expect(id.peerID.bytes == Array(digest.prefix(8)))
        #expect(id.fingerprint.grouped.split(separator: "\n").count == 4)
        #expect(id.fingerprint.grouped.replacingOccurrences(of: " ", with: "").replacingOccurrences(of: "\n", with: "") == id.fingerprint.hex)
    }

    @Test func keyFileClearAndSealed() throws {
        let id = Identity.generate()
        let clear = try KeyFile.encode(id)
        #expect(clear.count == 70 && !KeyFile.isSealed(clear))
        #expect(try KeyFile.decode(clear).fingerprint == id.fingerprint)
        let cheap = KeyFile.ScryptCost(logN: 10, r: 8, p: 1)
        let sealed = try KeyFile.encode(id, passphrase: "correct horse", cost: cheap)
        #expect(KeyFile.isSealed(sealed) && sealed.count == 105)
        #expect(!sealed.contains(subsequence: Array(id.noiseKey.rawRepresentation)))
        let back = try KeyFile.decode(sealed, passphrase: "correct horse")
        #expect(back.fingerprint == id.fingerprint)
        #expect(back.signingPublicKey == id.signingPublicKey)
        #expect(throws: KeyFile.Error.wrongPassphrase) { try KeyFile.decode(sealed, passphrase: "wrong") }
        #expect(throws: KeyFile.Error.passphraseRequired) { try KeyFile.decode(sealed) }
        var altered = sealed
        altered[7] ^= 1 // the cost is authenticated too
        #expect(throws: KeyFile.Error.self) { try KeyFile.decode(altered, passphrase: "correct horse") }
        #expect(throws: KeyFile.Error.notAKeyFile) { try KeyFile.decode(Array("hello".utf8)) }
    }
}

extension Array where Element == UInt8 {
    func contains(subsequence s: [UInt8]) -> Bool {
        guard s.count <= count else { return false }
        return (0...(count - s.count)).contains { Array(self[$0..<$0 + s.count]) == s }
    }
}
