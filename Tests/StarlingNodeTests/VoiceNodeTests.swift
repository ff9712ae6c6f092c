import Crypto
import Foundation
import Testing
import StarlingCrypto
import StarlingEmbeddedNetwork
import StarlingMesh
import StarlingNodeCore
import StarlingWire

/// Issue 36: live voice bursts (0x29 public, Noise 0x08 private) received,
/// put back in order and kept as a playable file, as the apps do.
extension InProcessNodes {
@Suite struct VoiceNodeTests {
    static let burstID: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]

    /// A frame of `n` bytes whose first byte says which one it is.
    static func frame(_ i: Int, _ n: Int = 120) -> [UInt8] { [UInt8(i)] + [UInt8](repeating: 0x42, count: n - 1) }

    /// A burst of `count` audio packets, one frame each: START, audio 1…count, END.
    static func burst(_ count: Int, id: [UInt8] = burstID) -> [VoiceBurst] {
        [VoiceBurst(burstID: id, sequence: 0, kind: .start(codec: 1))]
            + (1...count).map { VoiceBurst(burstID: id, sequence: UInt16($0), kind: .audio([frame($0)])) }
            + [VoiceBurst(burstID: id, sequence: UInt16(count + 1), kind: .end(audioPackets: UInt16(count), durationMillis: UInt32(count * 64)))]
    }

    @Test func aPublicBurstCrossesTwoHopsAndIsKeptInOrder() throws {
        let net = NodeCoreTests.line()
        net.run(for: 2_000)
        for b in Self.burst(20) {
            try net.on(0) { try $0.sendVoice(b, now: $1) }
            net.run(for: 64) // as a speaker sends them, a frame every 64 ms
        }
        net.run(for: 500)
        for n in [1, 2] {
            let notes = net.savedVoice[n]
            #expect(notes.count == 1, "node \(n): \(notes.count)")
            #expect(notes.first?.frames.map { Int($0[0]) } == Array(1...20))
            #expect(notes.first?.durationMillis == 1_280 && notes.first?.isPrivate == false && notes.first?.from == net.nodes[0].peerID)
        }
        let shown = net.events[2].compactMap { if case let .voiceNote(from, _, ms, p, _, _) = $0 { (from, ms, p) } else { nil } }
        #expect(shown.count == 1 && shown.first?.1 == 1_280)
        // The file: one ADTS header before each frame.
        let adts = try #require(net.savedVoice[2].first?.adts)
        #expect(adts.count == 20 * (120 + 7) && Array(adts.prefix(7)) == [0xFF, 0xF1, 0x60, 0x40, 0x0F, 0xFF, 0xFC])
    }

    @Test func aPrivateBurstGoesInTheSessionAndOthersHearNothing() throws {
        let net = NodeCoreTests.line()
        net.run(for: 2_000)
        let carol = net.nodes[2].peerID
        for b in Self.burst(5) {
            try net.on(0) { try $0.sendVoice(b, to: carol, now: $1) }
            net.run(for: 64)
        }
        net.run(for: 2_000)
        #expect(net.savedVoice[2].count == 1 && net.savedVoice[2].first?.isPrivate == true)
        #expect(net.savedVoice[2].first?.frames.count == 5)
        #expect(net.savedVoice[1].isEmpty, "the relay in the middle hears nothing")
    }

    /// Lost and late packets: out of order is put right; a hole is waited
    /// for 0.5 s then skipped; a burst whose END never comes ends after 3 s
    /// of quiet; a cancelled one leaves nothing; past 8 at once, refused.
    @Test func holesAreSkippedQuietBurstsEndAndCancelledOnesLeaveNothing() throws {
        let peer = PeerID(hex: "0102030405060708")!
        var a = VoiceAssembler()
        var now: Millis = 1_000
        func take(_ b: VoiceBurst) -> [VoiceAssembler.Note] { a.take(b, from: peer, isPrivate: false, bytes: b.encoded().count, now: now) }
        let packets = Self.burst(6)
        // 0, 2, 1 (late), 4 (3 lost), 5, 6, END: 1 and 2 in order; 4… wait for the hole.
        for i in [0, 2, 1, 4, 5, 6, 7] { #expect(take(packets[i]).isEmpty); now += 10 }
        #expect(a.count == 1)
        // The hole (3) showed when 4 came, at 1,030.
        #expect(a.nextDeadline == 1_530)
        #expect(a.tick(now: 1_529).isEmpty, "not yet: 0.5 s for the hole")
        let done = a.tick(now: 1_530)
        #expect(done.first?.frames.map { Int($0[0]) } == [1, 2, 4, 5, 6], "3 skipped, no silence put in")
        #expect(a.count == 0)
        // No END: ends after 3 s of quiet.
        let quiet = Self.burst(3, id: [9, 9, 9, 9, 9, 9, 9, 9])
        for b in quiet.dropLast() { _ = take(b) }
        #expect(a.tick(now: now + 2_999).isEmpty)
        #expect(a.tick(now: now + 3_000).first?.frames.count == 3)
        // Cancelled: nothing.
        let cancelled = Self.burst(2, id: [7, 7, 7, 7, 7, 7, 7, 7])
        _ = take(cancelled[0]); _ = take(cancelled[1])
        #expect(take(VoiceBurst(burstID: cancelled[0].burstID, sequence: 2, kind: .cancelled)).isEmpty)
        #expect(a.count == 0 && a.tick(now: now + 10_000).isEmpty)
        // 8 at once, then refused (the control: the 8th was taken).
        for i in 0..<10 { _ = take(VoiceBurst(burstID: [UInt8](repeating: UInt8(100 + i), count: 8), sequence: 0, kind: .start(codec: 1))) }
        #expect(a.count == 8 && a.refused == 2)
        // A flood within one burst: ended at 384 KiB (or 6,000 bytes a second), not grown.
        var flood = VoiceAssembler()
        let big = VoiceBurst(burstID: Self.burstID, sequence: 1, kind: .audio([[UInt8](repeating: 1, count: 8_000)]))
        var ended = 0
        for s in 1...100 {
            var b = big
            b.sequence = UInt16(s)
            ended += flood.take(b, from: peer, isPrivate: false, bytes: 8_002 + 11, now: 1_000).count
        }
        #expect(ended >= 1 && flood.count <= 1)
    }

    /// Unsigned public voice (anyone can claim a sender ID) is not kept or relayed;
    /// a signed copy is (the control); over 30 s old, neither.
    @Test func unsignedOrOldPublicVoiceGoesNowhere() throws {
        let net = EmbeddedNetwork()
        let victim = net.addNode("victim")
        let raw = net.openRawLink(to: victim), watcher = net.openRawLink(to: victim)
        let speaker = Identity.generate()
        net.inject(try Announcement.make(identity: speaker, nickname: "speaker", timestamp: net.now).encoded(), on: raw)
        // A listener behind the victim, on the other link (a relay has someone to relay to).
        net.inject(try Announcement.make(identity: .generate(), nickname: "listener", timestamp: net.now).encoded(), on: watcher)
        net.run(for: 100)
        func packet(_ b: VoiceBurst, signed: Bool, at: UInt64? = nil) throws -> Packet {
            var p = Packet(type: .voiceFrame, ttl: 7, timestamp: at ?? net.now, senderID: speaker.peerID, payload: b.encoded(), compress: false)
            if signed { try PacketSigning.sign(&p, with: speaker.signingKey) }
            return p
        }
        let relayedBefore = net.rawReceived[watcher]?.count ?? 0
        for b in Self.burst(3, id: [5, 5, 5, 5, 5, 5, 5, 5]) { net.inject(try packet(b, signed: false).encoded(), on: raw) }
        for b in Self.burst(3, id: [6, 6, 6, 6, 6, 6, 6, 6]) { net.inject(try packet(b, signed: true, at: net.now - 31_000).encoded(), on: raw) }
        net.run(for: 4_000)
        #expect(net.savedVoice[victim].isEmpty)
        let relayed = (net.rawReceived[watcher] ?? []).dropFirst(relayedBefore).compactMap { try? Packet(decoding: $0) }.filter { $0.type == .voiceFrame }
        #expect(relayed.isEmpty)
        for b in Self.burst(3) { net.inject(try packet(b, signed: true).encoded(), on: raw) }
        net.run(for: 1_000)
        #expect(net.savedVoice[victim].count == 1, "the control: signed and fresh")
        let relayedNow = (net.rawReceived[watcher] ?? []).compactMap { try? Packet(decoding: $0) }.filter { $0.type == .voiceFrame }
        #expect(relayedNow.count == 5)
    }

    /// A signed public burst packet that does not decode is counted, not kept;
    /// the control (the same speaker's decodable packet) is kept and not counted.
    @Test func undecodableVoiceIsCounted() throws {
        let net = EmbeddedNetwork()
        let victim = net.addNode("victim")
        let raw = net.openRawLink(to: victim)
        let speaker = Identity.generate()
        net.inject(try Announcement.make(identity: speaker, nickname: "speaker", timestamp: net.now).encoded(), on: raw)
        net.run(for: 100)
        func packet(_ payload: [UInt8]) throws -> [UInt8] {
            var p = Packet(type: .voiceFrame, ttl: 7, timestamp: net.now, senderID: speaker.peerID, payload: payload, compress: false)
            try PacketSigning.sign(&p, with: speaker.signingKey)
            return try p.encoded()
        }
        net.inject(try packet([0xFF, 0x00, 0x01]), on: raw)
        net.run(for: 100)
        #expect(net.nodes[victim].refusals.voice == 1)
        for b in Self.burst(2) { net.inject(try packet(b.encoded()), on: raw) }
        net.run(for: 1_000)
        #expect(net.nodes[victim].refusals.voice == 1 && net.savedVoice[victim].count == 1)
    }
}
}
