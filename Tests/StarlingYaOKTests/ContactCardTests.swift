import Crypto
import Foundation
import StarlingCrypto
import StarlingWire
@testable import StarlingYaOK
import Testing

@Suite struct ContactCardTests {
    static let alice = exampleIdentity(0x01, 0x02)
    static let bob = exampleIdentity(0x03, 0x04)
    static let aliceID = UserID(string: "6f1c2a3b-4d5e-4f60-8172-8394a5b6c7d8")!
    static let bobID = UserID(string: "0a1b2c3d-4e5f-4061-8273-8495a6b7c8d9")!

    @Test func roundTripThroughTheURI() throws {
        let card = try ContactCard(identity: Self.alice, userID: Self.aliceID, displayName: "Alice ☀️")
        #expect(card.uri.hasPrefix("yaok://contact?v=1&d="))
        #expect(!card.uri.contains("=="), "no padding")
        let read = try ContactCard(uri: card.uri)
        #expect(read == card)
        #expect(read.agreementKey == Self.alice.noisePublicKey)
        #expect(read.signingKey == Self.alice.signingPublicKey)
        #expect(read.displayName == "Alice ☀️")
        #expect(read.fingerprint == BLAKE3.hash(Self.alice.noisePublicKey + Self.alice.signingPublicKey))
        #expect(read.meshFingerprint == Self.alice.fingerprint)
        // 1 + 16 + 1 + name + 32 + 32 + 64.
        #expect(card.bytes.count == 146 + Array("Alice ☀️".utf8).count)
    }

    /// The hand-built example in docs/PROTOCOL.md: the bytes, the URI, and
    /// that both read back as the card.
    @Test func documentationExample() throws {
        let card = try ContactCard(identity: Self.alice, userID: Self.aliceID, displayName: "alice")
        #expect(card.bytes.hexString == (try documentHex("yaok-contact-card")), "computed: \(card.bytes.hexString)")
        let bytes = card.bytes
        let uri = try documentExample("yaok-contact-uri", fence: "text").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(card.uri == uri, "computed: \(card.uri)")
        #expect(try ContactCard(uri: uri) == card)
        #expect(try ContactCard(bytes: bytes) == card)
    }

    /// Standard base64, padded or not, and stray whitespace from a scanner.
    @Test func acceptsStandardBase64() throws {
        let card = try ContactCard(identity: Self.bob, userID: Self.bobID, displayName: "bob")
        let standard = Data(card.bytes).base64EncodedString()
        #expect(try ContactCard(uri: "yaok://contact?v=1&d=\(standard)\n") == card)
        let unpadded = standard.replacingOccurrences(of: "=", with: "")
        #expect(try ContactCard(uri: " yaok://contact?d=\(unpadded)&v=1") == card)
    }

    /// Any change to a signed byte is refused with `badSignature`, a change
    /// to the structure with the field it breaks.
    @Test func tamperedCardsAreRefused() throws {
        let card = try ContactCard(identity: Self.alice, userID: Self.aliceID, displayName: "alice")
        let bytes = card.bytes
        // Every signed byte but the version and the name length, flipped.
        for index in 0..<(bytes.count - 64) where index != 0 && index != 17 {
            var bad = bytes
            bad[index] ^= 0x01
            #expect(throws: ContactCard.Error.self, "byte \(index)") { try ContactCard(bytes: bad) }
            if index >= 23 || index < 17 {
                #expect(throws: ContactCard.Error.badSignature, "byte \(index)") { try ContactCard(bytes: bad) }
            }
        }
        // A card re-signed by another key (a substituted identity) verifies
        // only with that key: the keys in the card are the ones it carries.
        var forged = card.wire
        forged.displayName = "alice"
        forged.signingKey = Self.bob.signingPublicKey
        #expect(throws: ContactCard.Error.badSignature) { try ContactCard(bytes: try forged.encode()) }

        func field(_ bytes: [UInt8]) -> String? {
            do { _ = try ContactCard(bytes: bytes); return nil } catch let ContactCard.Error.format(e) { return e.field } catch { return "\(error)" }
        }
        #expect(field([0x02] + bytes.dropFirst()) == "version")
        #expect(field(Array(bytes.prefix(10))) == "userID")
        #expect(field(Array(bytes.prefix(30))) == "x25519Key")
        #expect(field(Array(bytes.dropLast(1))) == "signature")
        #expect(field(bytes + [0]) == "signature")
        var noName = bytes
        noName[17] = 0
        #expect(field(noName) == "name")
        var control = bytes
        control[18] = 0x07
        #expect(field(control) == "name")
        #expect(throws: ContactCard.Error.self) { try ContactCard(uri: "https://example.invalid/?v=1&d=AAAA") }
        #expect(throws: ContactCard.Error.self) { try ContactCard(uri: "yaok://contact?v=2&d=AAAA") }
        #expect(throws: ContactCard.Error.self) { try ContactCard(uri: "yaok://contact?v=1&d=!!!") }
        #expect(throws: ContactCard.Error.self) { try ContactCard(uri: "yaok://contact?v=1") }
        #expect(throws: ContactCard.Error.self) {
            try ContactCard(uri: "yaok://contact?v=1&d=" + String(repeating: "A", count: 3000))
        }
    }

    @Test func namesArePersonReadable() throws {
        #expect(throws: ContactCard.Error.self) { try ContactCard(identity: Self.alice, userID: Self.aliceID, displayName: "") }
        #expect(throws: ContactCard.Error.self) {
            try ContactCard(identity: Self.alice, userID: Self.aliceID, displayName: String(repeating: "a", count: 65))
        }
        #expect(throws: ContactCard.Error.self) {
            try ContactCard(identity: Self.alice, userID: Self.aliceID, displayName: "ali\u{202E}ecb")
        }
        // 64 characters of 4 bytes each do not fit the length byte.
        #expect(throws: ContactCard.Error.self) {
            try ContactCard(identity: Self.alice, userID: Self.aliceID, displayName: String(repeating: "😀", count: 64))
        }
        _ = try ContactCard(identity: Self.alice, userID: Self.aliceID, displayName: String(repeating: "é", count: 64))
    }

    @Test func userIDs() {
        let id = UserID.random()
        #expect(id.bytes[6] >> 4 == 4, "version 4")
        #expect(id.bytes[8] >> 6 == 0b10, "RFC 4122 variant")
        #expect(UserID(string: id.description) == id)
        #expect(UUID(uuidString: id.description) != nil)
        #expect(UserID(string: "not-a-uuid") == nil)
        // Exactly 8-4-4-4-12 hex digits: prefixes and separators a hex reader
        // might skip are refused (they would make IDs of 15 or 14 bytes).
        #expect(UserID(string: "0x1c2a3b-4d5e-4f60-8172-8394a5b6c7d8") == nil)
        #expect(UserID(string: "6f1c2a3b-4d5e-4f60-8172-8394a5b6::::") == nil)
        #expect(UserID(string: "6f1c2a3b 4d5e-4f60-8172-8394a5b6c7d8") == nil)
        #expect(UserID(string: "6F1C2A3B-4D5E-4F60-8172-8394A5B6C7D8")?.description == "6f1c2a3b-4d5e-4f60-8172-8394a5b6c7d8")
        #expect(UserID.random() != id)
        // Equal IDs hash alike (the hash takes the 16 bytes at once).
        #expect(Set([id, UserID(string: id.description)!, UserID(bytes: id.bytes)!]).count == 1)
        #expect(id.hashValue == UserID(bytes: id.bytes)!.hashValue)
        // Held as two big-endian words: the bytes come back in order, from an
        // array, a slice or a non-contiguous collection alike, and IDs order as their bytes do.
        let fixed = (0..<16).map { UInt8($0 * 17) }
        let fromArray = UserID(bytes: fixed)!
        #expect(fromArray.bytes == fixed)
        #expect(fromArray.value.high == 0x0011_2233_4455_6677 && fromArray.value.low == 0x8899_AABB_CCDD_EEFF)
        #expect(UserID(bytes: ([0] + fixed)[1...]) == fromArray)
        #expect(UserID(bytes: fixed.lazy.map { $0 }) == fromArray)
        #expect(fromArray.withUnsafeBytes { Array($0) } == fixed)
        #expect(UserID(bytes: fixed.dropLast()) == nil && UserID(bytes: fixed + [0]) == nil)
        let ids = (0..<200).map { _ in UserID.random() }
        #expect(ids.sorted().map(\.bytes) == ids.map(\.bytes).sorted { $0.lexicographicallyPrecedes($1) })
        #expect(Set((0..<1_000).map { _ in UserID.random() }).count == 1_000)
    }

    /// Our base64 against Foundation's, every length to 100.
    @Test func base64MatchesFoundation() {
        var rng = SystemRandomNumberGenerator()
        for n in 0...100 {
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let standard = Data(bytes).base64EncodedString()
            #expect(Base64.encode(bytes, url: false, padded: true) == standard)
            let url = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64.encode(bytes, url: true, padded: false) == url)
            #expect(Base64.decode(url) == bytes)
            #expect(Base64.decode(standard) == bytes)
        }
        #expect(Base64.decode("A") == nil)
        #expect(Base64.decode("AB+_") == nil, "mixed alphabets")
        #expect(Base64.decode("AB=C") == nil)
        #expect(Base64.decode("AR") == nil, "non-zero leftover bits")
    }
}

@Suite struct SafetyNumberTests {
    @Test func bothSidesComputeTheSameNumber() throws {
        let alice = try ContactCard(identity: ContactCardTests.alice, userID: ContactCardTests.aliceID, displayName: "alice")
        let bob = try ContactCard(identity: ContactCardTests.bob, userID: ContactCardTests.bobID, displayName: "bob")
        let onAlice = SafetyNumber(alice, bob)
        let onBob = SafetyNumber(bob, alice)
        #expect(onAlice == onBob)
        #expect(onAlice.groups.count == 16)
        #expect(onAlice.groups.allSatisfy { $0.count == 4 && $0 == $0.uppercased() })
        // A is the party whose X25519 key is smaller.
        let (a, b) = alice.agreementKey.lexicographicallyPrecedes(bob.agreementKey) ? (alice, bob) : (bob, alice)
        #expect(onAlice.bytes == BLAKE3.hash(a.agreementKey + b.agreementKey + a.signingKey + b.signingKey))
        let documented = try documentExample("yaok-safety-number", fence: "text").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(onAlice.description == documented, "computed:\n\(onAlice)")
        // Another key on either side changes the number.
        let mallory = try ContactCard(identity: exampleIdentity(0x05, 0x04), userID: ContactCardTests.bobID, displayName: "bob")
        #expect(SafetyNumber(alice, mallory) != onAlice)
        let signingSwap = try ContactCard(identity: exampleIdentity(0x03, 0x06), userID: ContactCardTests.bobID, displayName: "bob")
        #expect(SafetyNumber(alice, signingSwap) != onAlice)
    }
}
