import Crypto
import Foundation
import StarlingCrypto
import StarlingWire
@testable import StarlingYaOK
import Testing

@Suite struct SealedMessageTests {
    let alice = ContactCardTests.alice, bob = ContactCardTests.bob
    let aliceID = ContactCardTests.aliceID, bobID = ContactCardTests.bobID

    func seal(_ body: SealedBody, id: UserID = .random(), timestamp: UInt64 = 1_795_000_000_000) throws -> [UInt8] {
        try SealedMessage.seal(body, id: id, timestamp: timestamp, from: alice, senderID: aliceID, to: bobID,
                               recipientAgreementKey: bob.noisePublicKey)
    }

    @Test func bobOpensWhatAliceSealed() throws {
        let id = UserID.random()
        for body in [SealedBody.text("hello bob"), .text(""), .text(String(repeating: "ж", count: 5_120)), .delivered(id), .read(id)] {
            let bytes = try seal(body, id: id)
            #expect((bytes.count - SealedMessageBytes.headerByteCount - 64 - 16) % 32 == 0, "padded to 32")
            let (header, opened) = try SealedMessage.open(bytes, as: bobID, with: bob, senderSigningKey: alice.signingPublicKey)
            #expect(opened == body)
            #expect(header.messageID == id)
            #expect(header.sender == aliceID)
            #expect(header.timestamp == 1_795_000_000_000)
        }
    }

    /// What a relay reads (IDs only, nothing copied) agrees with the full
    /// decoding, and refuses what it refuses.
    @Test func aRelayReadsTheSameIDsAsTheFullDecoding() throws {
        let id = UserID.random()
        let bytes = try seal(.text("route me"), id: id)
        let whole = try SealedMessageBytes.decode(bytes)
        let route = try SealedMessageBytes.route(bytes)
        #expect(route.messageID == id && route.sender == aliceID && route.recipient == bobID)
        #expect(route.messageID == whole.messageID && route.sender == whole.sender && route.recipient == whole.recipient)
        var badLength = bytes
        badLength[SealedMessageBytes.headerByteCount - 1] ^= 1
        for bad in [Array(bytes.dropLast()), bytes + [0], [2] + bytes.dropFirst(), badLength, [], Array(bytes.prefix(40))] {
            #expect(throws: WireError.self) { try SealedMessageBytes.decode(bad) }
            #expect(throws: WireError.self) { try SealedMessageBytes.route(bad) }
        }
    }

    /// A body's padding is exactly what `encode` writes: the fewest zero bytes
    /// that reach a multiple of 32. More (or non-zero) padding is refused, so
    /// that every accepted body re-encodes to its own bytes (the fuzzer found
    /// a 64-byte empty text once accepted).
    @Test func bodyPaddingIsExact() throws {
        let empty = try SealedBody.text("").encode()
        #expect(empty == [1, 0, 0] + [UInt8](repeating: 0, count: 29))
        #expect(try SealedBody.decode(empty) == .text(""))
        for bad in [empty + [UInt8](repeating: 0, count: 32), Array(empty.dropLast()), [1, 0, 0],
                    Array(empty.dropLast()) + [1]] {
            #expect(throws: WireError.self, "\(bad.count) bytes") { try SealedBody.decode(bad) }
        }
        let full = try SealedBody.text(String(repeating: "a", count: 29)).encode()
        #expect(full.count == 32)
        #expect(try SealedBody.decode(full) == .text(String(repeating: "a", count: 29)))
        #expect(try SealedBody.text(String(repeating: "a", count: 30)).encode().count == 64)
    }

    /// Two seals of one message share nothing but the clear header fields:
    /// fresh ephemeral keys and nonces.
    @Test func everySealIsFresh() throws {
        let id = UserID.random()
        let a = try SealedMessage.peek(try seal(.text("same"), id: id))
        let b = try SealedMessage.peek(try seal(.text("same"), id: id))
        #expect(a.ephemeralKey != b.ephemeralKey)
        #expect(a.nonce != b.nonce)
        #expect(a.sealed != b.sealed)
    }

    @Test func refusals() throws {
        let bytes = try seal(.text("for bob only"))
        // Not for us.
        #expect(throws: SealedMessage.Error.wrongRecipient(bobID)) {
            try SealedMessage.open(bytes, as: aliceID, with: alice, senderSigningKey: alice.signingPublicKey)
        }
        // The wrong sender key.
        #expect(throws: SealedMessage.Error.badSignature) {
            try SealedMessage.open(bytes, as: bobID, with: bob, senderSigningKey: bob.signingPublicKey)
        }
        // Any flipped byte: the signature fails (before any decryption work).
        for index in stride(from: 0, to: bytes.count, by: 7) {
            var bad = bytes
            bad[index] ^= 0x20
            #expect(throws: SealedMessage.Error.self, "byte \(index)") {
                try SealedMessage.open(bad, as: bobID, with: bob, senderSigningKey: alice.signingPublicKey)
            }
        }
        // Signed correctly but sealed to another key: it does not decrypt.
        let misdirected = try SealedMessage.seal(.text("x"), id: .random(), timestamp: 1, from: alice, senderID: aliceID,
                                                 to: bobID, recipientAgreementKey: alice.noisePublicKey)
        #expect(throws: SealedMessage.Error.decryptionFailed) {
            try SealedMessage.open(misdirected, as: bobID, with: bob, senderSigningKey: alice.signingPublicKey)
        }
        // A low-order recipient key is refused at sealing.
        #expect(throws: SealedMessage.Error.badKey) {
            try SealedMessage.seal(.text("x"), id: .random(), timestamp: 1, from: alice, senderID: aliceID, to: bobID,
                                   recipientAgreementKey: [UInt8](repeating: 0, count: 32))
        }
        // Text over 10,240 bytes is refused, not cut.
        #expect(throws: SealedMessage.Error.self) { try seal(.text(String(repeating: "a", count: 10_241))) }
        // Truncations at every length give a format error naming a field.
        for n in stride(from: 0, to: bytes.count, by: 13) {
            #expect(throws: SealedMessage.Error.self) { try SealedMessage.peek(Array(bytes.prefix(n))) }
        }
    }

    /// The example in docs/PROTOCOL.md, with a fixed ephemeral key and nonce.
    @Test func documentationExample() throws {
        let ephemeral = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 0x05, count: 32))
        let bytes = try SealedMessage.seal(.text("hi"), id: UserID(string: "11111111-2222-4333-8444-555555555555")!,
                                           timestamp: 1_795_000_000_000, from: alice, senderID: aliceID, to: bobID,
                                           recipientAgreementKey: bob.noisePublicKey, ephemeral: ephemeral,
                                           nonce: (0..<24).map { UInt8($0) })
        #expect(bytes.hexString == (try documentHex("yaok-sealed-message")), "computed: \(bytes.hexString)")
        let (_, body) = try SealedMessage.open(bytes, as: bobID, with: bob, senderSigningKey: alice.signingPublicKey)
        #expect(body == .text("hi"))
    }
}

@Suite struct MessageStateTests {
    @Test func theSeedsPath() throws {
        var p = MessageProgress(at: 0)
        try p.move(to: .encrypting, at: 1)
        try p.move(to: .routing, at: 2)
        try p.attempt(on: 0, at: 3)
        try p.move(to: .sent, at: 4)
        p.receipt(.delivered, at: 5)
        p.receipt(.read, at: 6)
        #expect(p.state == .read)
        #expect(p.history.map(\.state) == [.composing, .encrypting, .routing, .sending, .sent, .delivered, .read])
        // Late and duplicate receipts change nothing.
        p.receipt(.delivered, at: 7)
        #expect(p.state == .read)
        #expect(throws: MessageProgress.Error.illegalMove(from: .read, to: .sending)) { try p.move(to: .sending, at: 8) }
    }

    /// Attempt 1 at once, then 2 s and 4 s; then the next transport; after
    /// the last, failed; the user's retry starts over.
    @Test func retriesThenFallbackThenFailure() throws {
        #expect((1...5).map { RetryPolicy.seed.delay(beforeAttempt: $0) } == [0, 2, 4, nil, nil])
        let long = RetryPolicy(maxAttempts: 10)
        #expect((1...9).compactMap { long.delay(beforeAttempt: $0) } == [0, 2, 4, 8, 16, 32, 60, 60, 60])

        var p = MessageProgress(at: 0)
        try p.move(to: .encrypting, at: 0)
        try p.move(to: .routing, at: 0)
        var now = 0.0
        var attemptsOnTransport = [0, 0]
        while p.state != .failed, now < 1_000 {
            try p.attempt(on: p.transport, at: now)
            attemptsOnTransport[p.transport] += 1
            try p.attemptFailed(at: now, policy: .seed, transportCount: 2)
            if let next = p.nextAttemptAt { now = next }
        }
        #expect(attemptsOnTransport == [3, 3])
        #expect(p.state == .failed)
        #expect(p.nextAttemptAt == nil)
        try p.retryByUser(at: 100)
        #expect(p.state == .retrying)
        #expect(p.transport == 0)
        #expect(p.nextAttemptAt == 100)
        // A receipt for a message believed failed: it did arrive.
        var lost = p
        lost.receipt(.delivered, at: 101)
        #expect(lost.state == .delivered)
    }

    @Test func everyMoveFollowsTheDiagram() {
        for from in MessageState.allCases {
            for to in MessageState.allCases where from.canMove(to: to) {
                #expect(from != to, "\(from) → itself")
                if to == .delivered || to == .read { #expect(from < to) }
            }
        }
        #expect(!MessageState.composing.canMove(to: .delivered))
        #expect(!MessageState.sent.canMove(to: .retrying))
    }
}

@Suite struct IncidentCounterTests {
    /// More than 3 from one sender within 24 h alerts; older ones age out;
    /// a flood from many senders stays within the cap.
    @Test func thresholdWindowAndBounds() {
        var counter = IncidentCounter()
        let sender = [UInt8](repeating: 7, count: 16)
        let results = [0.0, 10, 20, 30].map { counter.record(sender: sender, at: $0) }
        #expect(results == [false, false, false, true])
        #expect(counter.count(sender: sender, at: 30 + 24 * 3600) == 0)
        let later = counter.record(sender: sender, at: 40 + 24 * 3600)
        #expect(!later)
        for i in 0..<5_000 { _ = counter.record(sender: withUnsafeBytes(of: UInt32(i)) { Array($0) }, at: Double(i)) }
        #expect(counter.senderCount == 1_024)
    }
}
