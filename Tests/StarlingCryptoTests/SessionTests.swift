import Crypto
import Testing
import StarlingWire
@testable import StarlingCrypto

@Suite struct ReplayWindowTests {
    @Test func acceptsOutOfOrderRefusesReplaysAndOldNonces() {
        var w = ReplayWindow()
        for n: UInt64 in [5, 3, 4, 0, 1000, 2] {
            #expect(w.check(n) == .fresh, "\(n)")
            w.record(n)
        }
        for n: UInt64 in [5, 3, 4, 0, 1000, 2] { #expect(w.check(n) == .replayed, "\(n)") }
        #expect(w.check(1) == .fresh)
        w.record(2000)
        #expect(w.check(976) == .tooOld)   // 2000 − 976 = 1024: outside
        #expect(w.check(977) == .fresh)    // 1023 behind: inside
        #expect(w.check(1000) == .replayed)
        w.record(5000)                      // a jump larger than the window clears it
        #expect(w.check(4000) == .fresh)
        #expect(w.check(3976) == .tooOld)
    }

    @Test func matchesASetModelOverRandomTraffic() {
        var rng = SystemRandomNumberGenerator()
        var w = ReplayWindow()
        var seen = Set<UInt64>()
        var highest: UInt64 = 0
        for _ in 0..<20_000 {
            let n = UInt64.random(in: highest.saturatingSub(1100)...highest + 50, using: &rng)
            let expected: ReplayWindow.Verdict = seen.isEmpty ? .fresh
                : n + 1024 <= highest ? .tooOld : seen.contains(n) ? .replayed : .fresh
            #expect(w.check(n) == expected)
            if expected == .fresh { w.record(n); seen.insert(n); highest = max(highest, n) }
        }
    }
}

extension UInt64 {
    func saturatingSub(_ v: UInt64) -> UInt64 { self > v ? self - v : 0 }
}

/// Two session managers talking through handshake messages and frames.
struct Pair {
    var a: SessionManager
    var b: SessionManager
    let alice = Identity.generate()
    let bob = Identity.generate()

    init(_ config: SessionManager.Configuration = .init()) {
        a = SessionManager(identity: alice, configuration: config)
        b = SessionManager(identity: bob, configuration: config)
    }

    /// A starts; messages go back and forth until both are established.
    mutating func handshake(now: UInt64 = 0) throws {
        let m1 = try a.initiateHandshake(with: bob.peerID, now: now)
        #expect(m1.count == 32)
        let s1 = try b.receiveHandshake(m1, from: alice.peerID, now: now)
        #expect(s1.reply?.count == 96)
        let s2 = try a.receiveHandshake(s1.reply!, from: bob.peerID, now: now)
        #expect(s2.reply?.count == 64)
        #expect(s2.established == bob.fingerprint)
        let s3 = try b.receiveHandshake(s2.reply!, from: alice.peerID, now: now)
        #expect(s3.reply == nil)
        #expect(s3.established == alice.fingerprint)
    }
}

@Suite struct SessionManagerTests {
    @Test func handshakeAndBothDirections() throws {
        var p = Pair()
        try p.handshake()
        #expect(p.a.hasSession(with: p.bob.peerID) && p.b.hasSession(with: p.alice.peerID))
        #expect(p.a.remoteStaticKey(of: p.bob.peerID) == p.bob.noisePublicKey)
        let frame = try p.a.seal(Array("hi bob".utf8), for: p.bob.peerID)
        #expect(frame.count == 4 + 6 + 16)
        #expect(Array(frame.prefix(4)) == [0, 0, 0, 0])
        #expect(try p.b.open(frame, from: p.alice.peerID, now: 1) == .plaintext(Array("hi bob".utf8)))
        let back = try p.b.seal(Array("hi alice".utf8), for: p.alice.peerID)
        #expect(try p.a.open(back, from: p.bob.peerID, now: 1) == .plaintext(Array("hi alice".utf8)))
    }

    @Test func outOfOrderFramesOpenAndReplaysAreRefused() throws {
        var p = Pair()
        try p.handshake()
        let frames = try (0..<50).map { try p.a.seal([UInt8($0)], for: p.bob.peerID) }
        for i in [3, 1, 0, 2] + Array(4..<50).reversed() {
            #expect(try p.b.open(frames[i], from: p.alice.peerID, now: 0) == .plaintext([UInt8(i)]))
        }
        #expect(throws: SessionError.replayed(nonce: 7)) { try p.b.open(frames[7], from: p.alice.peerID, now: 0) }
        var tampered = frames[10]
        tampered[tampered.count - 1] ^= 1
        #expect(throws: SessionError.self) { try p.b.open(tampered, from: p.alice.peerID, now: 0) }
        #expect(throws: SessionError.frameTooShort(19)) { try p.b.open(Array(repeating: 0, count: 19), from: p.alice.peerID, now: 0) }
    }

    @Test func rekeyAfterTenThousandMessagesLosesNothing() throws {
        var p = Pair()
        try p.handshake()
        var inFlightToB: [[UInt8]] = [], inFlightToA: [[UInt8]] = []
        var deliveredToB = Set<Int>(), deliveredToA = Set<Int>()
        func deliver(_ opened: SessionManager.Opened, into set: inout Set<Int>) {
            if case let .plaintext(p) = opened { set.insert(Int(p[0]) << 16 | Int(p[1]) << 8 | Int(p[2])) }
        }
        var m1: [UInt8]?
        for i in 0..<10_050 {
            let payload = [UInt8(i >> 16 & 0xFF), UInt8(i >> 8 & 0xFF), UInt8(i & 0xFF)]
            inFlightToB.append(try p.a.seal(payload, for: p.bob.peerID))
            inFlightToA.append(try p.b.seal(payload, for: p.alice.peerID))
            if m1 == nil, p.a.needsRekey(p.bob.peerID, now: 0) {
                #expect(i == 9_999)
                m1 = try p.a.initiateHandshake(with: p.bob.peerID, now: 0)
            }
            // Deliver with a lag of 3 frames, so frames cross the key switch.
            if inFlightToB.count > 3 { deliver(try p.b.open(inFlightToB.removeFirst(), from: p.alice.peerID, now: 1), into: &deliveredToB) }
            if inFlightToA.count > 3 { deliver(try p.a.open(inFlightToA.removeFirst(), from: p.bob.peerID, now: 1), into: &deliveredToA) }
            if i == 10_010, let first = m1 {
                let s1 = try p.b.receiveHandshake(first, from: p.alice.peerID, now: 2)
                let s2 = try p.a.receiveHandshake(s1.reply!, from: p.bob.peerID, now: 2)
                s2.released.map(\.plaintext).forEach { deliveredToA.insert(Int($0[0]) << 16 | Int($0[1]) << 8 | Int($0[2])) }
                // A now seals with the new keys; B gets message 3 only after a few of those frames.
                for k in 0..<2 {
                    let j = 20_000 + k
                    inFlightToB.append(try p.a.seal([UInt8(j >> 16), UInt8(j >> 8 & 0xFF), UInt8(j & 0xFF)], for: p.bob.peerID))
                    let opened = try p.b.open(inFlightToB.removeLast(), from: p.alice.peerID, now: 3, note: 40 + k)
                    #expect(opened == .held)
                }
                let s3 = try p.b.receiveHandshake(s2.reply!, from: p.alice.peerID, now: 3)
                #expect(s3.established == p.alice.fingerprint)
                #expect(s3.released.count == 2)
                #expect(s3.released.map(\.note) == [40, 41]) // each frame keeps its own note
                s3.released.map(\.plaintext).forEach { deliveredToB.insert(Int($0[0]) << 16 | Int($0[1]) << 8 | Int($0[2])) }
            }
        }
        for f in inFlightToB { deliver(try p.b.open(f, from: p.alice.peerID, now: 4), into: &deliveredToB) }
        for f in inFlightToA { deliver(try p.a.open(f, from: p.bob.peerID, now: 4), into: &deliveredToA) }
        #expect(deliveredToA == Set(0..<10_050))
        #expect(deliveredToB.count == 10_052)
        #expect(Set(0..<10_050).isSubset(of: deliveredToB))
        #expect(!p.a.needsRekey(p.bob.peerID, now: 5))
    }

    @Test func rekeyAfterAnHour() throws {
        var p = Pair()
        try p.handshake(now: 1_000)
        #expect(!p.a.needsRekey(p.bob.peerID, now: 1_000 + 3_599_999))
        #expect(p.a.needsRekey(p.bob.peerID, now: 1_000 + 3_600_000))
    }

    @Test func atMostTenHandshakesPerMinute() throws {
        var p = Pair()
        for i in 0..<10 { _ = try p.a.initiateHandshake(with: p.bob.peerID, now: UInt64(i)) }
        #expect(throws: SessionError.rateLimited(p.bob.peerID)) { try p.a.initiateHandshake(with: p.bob.peerID, now: 59_999) }
        _ = try p.a.initiateHandshake(with: p.bob.peerID, now: 60_000)
        // Incoming first messages count too.
        var b = SessionManager(identity: Identity.generate())
        var spam = try HandshakeState(protocol: .bitchat, initiator: true)
        let m1 = try spam.writeMessage()
        for i in 0..<10 { _ = try b.receiveHandshake(m1, from: p.alice.peerID, now: UInt64(i)) }
        #expect(throws: SessionError.rateLimited(p.alice.peerID)) { try b.receiveHandshake(m1, from: p.alice.peerID, now: 10) }
    }

    @Test func lowOrderEphemeralIsRejected() throws {
        var b = SessionManager(identity: Identity.generate())
        // A small-order point (order 8) in place of the initiator's ephemeral key.
        let lowOrder = h("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800")
        // Message 1 has no DH; the responder's `ee` with the low-order key must fail.
        #expect(throws: SessionError.handshakeFailed(.invalidKey("low-order public key"))) {
            try b.receiveHandshake(lowOrder, from: PeerID(rawValue: 1), now: 0)
        }
        #expect(!b.isHandshaking(with: PeerID(rawValue: 1)))
    }

    @Test func sessionFollowsPeerIDRotationAndWipes() throws {
        var p = Pair()
        try p.handshake()
        let rotated = PeerID(rawValue: 0xDEAD_BEEF)
        p.b.rebind(rotated, to: p.alice.fingerprint)
        let frame = try p.a.seal([42], for: p.bob.peerID)
        #expect(try p.b.open(frame, from: rotated, now: 0) == .plaintext([42]))
        p.b.wipe(rotated)
        #expect(!p.b.hasSession(with: rotated) && !p.b.hasSession(with: p.alice.peerID))
        #expect(throws: SessionError.noSession(p.alice.peerID)) { try p.b.seal([1], for: p.alice.peerID) }
        p.a.wipeAll()
        #expect(p.a.sessionCount == 0)
    }

    @Test func simultaneousInitiationResolvesToOneSession() throws {
        var p = Pair()
        let fromA = try p.a.initiateHandshake(with: p.bob.peerID, now: 0)
        let fromB = try p.b.initiateHandshake(with: p.alice.peerID, now: 0)
        let atB = try p.b.receiveHandshake(fromA, from: p.alice.peerID, now: 0)
        let atA = try p.a.receiveHandshake(fromB, from: p.bob.peerID, now: 0)
        // Exactly one side answers; the lower peer ID stays initiator.
        let lowerIsA = p.alice.peerID < p.bob.peerID
        #expect((atB.reply != nil) == lowerIsA)
        #expect((atA.reply != nil) == !lowerIsA)
        var (initiator, responder) = lowerIsA ? (p.a, p.b) : (p.b, p.a)
        let (iID, rID) = lowerIsA ? (p.alice.peerID, p.bob.peerID) : (p.bob.peerID, p.alice.peerID)
        let m2 = (lowerIsA ? atB : atA).reply!
        let s = try initiator.receiveHandshake(m2, from: rID, now: 0)
        let done = try responder.receiveHandshake(s.reply!, from: iID, now: 0)
        #expect(done.established != nil && s.established != nil)
    }
}

@Suite struct TransportEdgeTests {
    @Test func counterExhaustionStopsSealing() throws {
        let key = [UInt8](repeating: 7, count: 32)
        var t = NoiseTransport(sending: CipherState(key: key), receiving: CipherState(key: key), sent: NoiseTransport.maxCounter - 1)
        let last = try t.seal([1])
        #expect(Array(last.prefix(4)) == [0xFF, 0xFF, 0xFF, 0xFE])
        #expect(throws: SessionError.counterExhausted) { try t.seal([2]) }
        #expect(try t.open(last) == [1])
    }

    @Test func handshakeAndFramePacketsAreAddressedUnsignedAndPadded() throws {
        let a = Identity.generate(), b = Identity.generate()
        var hs = try HandshakeState(protocol: .bitchat, initiator: true, localStatic: a.noiseKey)
        let m1 = try hs.writeMessage()
        let packet = NoisePackets.handshake(m1, from: a.peerID, to: b.peerID, timestamp: 1)
        let bytes = try packet.encoded(padded: true)
        #expect(bytes.count == 256)
        let back = try Packet(decoding: bytes)
        #expect(back.type == .noiseHandshake && back.recipientID == b.peerID && back.signature == nil)
        #expect(back.payload == m1 && back.compressedPayload == nil)
        let frame = NoisePackets.encrypted([0, 0, 0, 0] + [UInt8](repeating: 0x61, count: 200), from: a.peerID, to: b.peerID, timestamp: 1)
        #expect(frame.compressedPayload == nil) // frames are never compressed, however repetitive
        #expect(try Packet(decoding: frame.encoded(padded: true)).type == .noiseEncrypted)
    }
}
