import Testing
@testable import StarlingWire

/// Issue 36: voice burst packets read as iOS reads them (bitchat
/// VoiceBurstPacketTests.swift; the bytes are Android's LIVE_VOICE_V1.md vectors).
@Suite struct VoiceBurstTests {
    let id: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]

    @Test func theAppsVectorsDecodeAndRoundTrip() throws {
        let cases: [(String, VoiceBurst.Kind, UInt16)] = [
            ("0102030405060708 0000 01 01", .start(codec: 1), 0),
            ("0102030405060708 0001 00 0003 DEADBE", .audio([[0xDE, 0xAD, 0xBE]]), 1),
            ("0102030405060708 002A 02 0029 00000A80", .end(audioPackets: 41, durationMillis: 2_688), 42),
            ("0102030405060708 0003 04", .cancelled, 3),
        ]
        for (hex, kind, seq) in cases {
            let b = try VoiceBurst(decoding: h(hex)[...])
            #expect(b == VoiceBurst(burstID: id, sequence: seq, kind: kind))
            #expect(b.encoded() == h(hex))
        }
        // iOS's round trips: two frames, one of 130 bytes.
        let two = VoiceBurst(burstID: id, sequence: 7, kind: .audio([[0xDE, 0xAD], [UInt8](repeating: 0x42, count: 130)]))
        #expect(try VoiceBurst(decoding: two.encoded()[...]) == two)
    }

    @Test func whatIOSRefusesIsRefusedAndTrailingBytesAreIgnored() throws {
        for hex in ["", "00000000000000000000", "0102030405060708 0001 FF", "0102030405060708 0001 00",
                    "0102030405060708 0001 00 0010 AB", "0102030405060708 0000 01 7F", "0102030405060708 0000 01",
                    "0102030405060708 0001 02 0000 0000", "0102030405060708 0001 00 0000", "0102030405060708 0001 03"] {
            #expect(throws: WireError.self, "\(hex)") { try VoiceBurst(decoding: h(hex)[...]) }
        }
        // Nine frames: more than a packet holds.
        let nine = id + [0, 1, 0] + (0..<9).flatMap { _ in [0, 1, 0xAA] as [UInt8] }
        #expect(throws: WireError.self) { try VoiceBurst(decoding: nine[...]) }
        // The controls: eight frames are taken; a start, end and cancel with bytes after them are read.
        let eight = id + [0, 1, 0] + (0..<8).flatMap { _ in [0, 1, 0xAA] as [UInt8] }
        #expect(try VoiceBurst(decoding: eight[...]).kind == .audio(Array(repeating: [0xAA], count: 8)))
        #expect(try VoiceBurst(decoding: h("0102030405060708 0000 01 01 FFFF")[...]).kind == .start(codec: 1))
        #expect(try VoiceBurst(decoding: h("0102030405060708 0009 02 0008 00000200 77")[...]).kind == .end(audioPackets: 8, durationMillis: 512))
        #expect(try VoiceBurst(decoding: h("0102030405060708 0003 04 99")[...]).kind == .cancelled)
    }

    /// ADTS as iOS's test states it: 100 bytes of frame, a 107-byte ADTS frame.
    @Test func adtsHeadersAreTheAppsOnes() {
        let framed = VoiceBurst.adts([UInt8](repeating: 0, count: 100))
        #expect(framed.count == 107 && Array(framed.prefix(7)) == [0xFF, 0xF1, 0x60, 0x40, 0x0D, 0x7F, 0xFC])
        // The length spans 13 bits: a 2,000-byte frame.
        let long = VoiceBurst.adts([UInt8](repeating: 0, count: 2_000))
        let n = Int(long[3] & 0x03) << 11 | Int(long[4]) << 3 | Int(long[5] >> 5)
        #expect(n == 2_007)
    }

    @Test func noInputCrashesTheDecoder() throws {
        var rng = SystemRandomNumberGenerator()
        var decoded = 0
        for _ in 0..<5_000 {
            var b = id + [0, 1, UInt8.random(in: 0...5, using: &rng)] + (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if Bool.random(using: &rng), b.count > 11 { b[11] = 0 }
            if let v = try? VoiceBurst(decoding: b[...]) {
                decoded += 1
                #expect(try VoiceBurst(decoding: v.encoded()[...]) == v)
            }
        }
        #expect(decoded > 0)
    }
}
