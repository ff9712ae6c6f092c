import Testing
@testable import StarlingWire

@Suite struct PaddingTests {
    @Test func blockSelection() {
        #expect(Padding.paddedSize(for: 0) == nil)     // 256 pad bytes do not fit one byte
        #expect(Padding.paddedSize(for: 1) == 256)
        #expect(Padding.paddedSize(for: 240) == 256)   // 240 + 16 = 256
        #expect(Padding.paddedSize(for: 241) == nil)   // block 512 would need 271 pad bytes
        #expect(Padding.paddedSize(for: 300) == 512)   // 212 pad bytes
        #expect(Padding.paddedSize(for: 900) == 1024)
        #expect(Padding.paddedSize(for: 1000) == 1024) // 24 pad bytes
        #expect(Padding.paddedSize(for: 1009) == nil)  // 1025 > 1024, and 2048 needs 1039
        #expect(Padding.paddedSize(for: 2032) == 2048)
        #expect(Padding.paddedSize(for: 2033) == nil)
        #expect(Padding.paddedSize(for: 5000) == nil)
    }

    @Test func padAndVerify() {
        for count in [0, 1, 17, 100, 240, 241, 300, 700, 1800, 2100] {
            let data = repeated(0x42, count)
            let padded = Padding.padded(data)
            if let size = Padding.paddedSize(for: count) {
                #expect(padded.count == size)
                let n = size - count
                #expect(padded.suffix(n).allSatisfy { $0 == UInt8(n) })
                #expect(Padding.unpadded(padded) == data)
            } else {
                #expect(padded == data)
            }
        }
        #expect(Padding.verifiedPadLength(h("0102 03 03")[...]) == nil)
        #expect(Padding.verifiedPadLength(h("01 03 03 03")[...]) == 3)
        #expect(Padding.verifiedPadLength(h("00")[...]) == nil)
        #expect(Padding.verifiedPadLength([][...]) == nil)
        #expect(Padding.verifiedPadLength(h("05 05")[...]) == nil)
    }
}

@Suite struct CompressionTests {
    @Test func rulesOfTheDeployedApps() {
        #expect(!Compression.isWorthTrying(repeated(0x61, 99)))           // under 100 bytes
        #expect(Compression.isWorthTrying(repeated(0x61, 100)))
        let allBytes = (0..<256).map { UInt8($0) }
        #expect(!Compression.isWorthTrying(allBytes))                     // ratio 1.0
        #expect(!Compression.isWorthTrying(Array(allBytes.prefix(231)) + repeated(0, 25))) // 231/256 ≥ 0.9
        #expect(Compression.isWorthTrying(Array(allBytes.prefix(230)) + repeated(0, 26)))  // 230/256 < 0.9
        // 150 bytes, 135 distinct: 0.9 → not tried; 134 distinct → tried.
        #expect(!Compression.isWorthTrying(Array(allBytes.prefix(135)) + repeated(0, 15)))
        #expect(Compression.isWorthTrying(Array(allBytes.prefix(134)) + repeated(0, 16)))
    }

    @Test func keptOnlyWhenSmaller() {
        var rng = SeededRandom(seed: 9)
        // Random bytes over a small alphabet pass the variety rule but barely shrink.
        let noisy = (0..<120).map { _ in UInt8.random(in: 0...200, using: &rng) }
        let packet = Packet(type: .message, ttl: 7, timestamp: 1, senderID: aliceID, payload: noisy)
        if let c = packet.compressedPayload { #expect(c.count + 2 < noisy.count) }
        #expect(packet.encodedSize <= 22 + noisy.count)
        let text = Array(String(repeating: "abc ", count: 100).utf8)
        let compressed = Packet(type: .message, ttl: 7, timestamp: 1, senderID: aliceID, payload: text)
        #expect(compressed.compressedPayload != nil)
        #expect(compressed.encodedSize < 100)
    }

    @Test func inflateChecksSizeExactly() throws {
        let deflated = Compression.deflate(repeated(0x61, 120))!
        #expect(try Compression.inflate(deflated[...], originalSize: 120, field: "p", offset: 0) == repeated(0x61, 120))
        #expect(throws: WireError.self) { try Compression.inflate(deflated[...], originalSize: 119, field: "p", offset: 0) }
        #expect(throws: WireError.self) { try Compression.inflate(deflated[...], originalSize: 121, field: "p", offset: 0) }
    }

    @Test func relaysKeepTheOriginatorsCompressedBytes() throws {
        // A stream deflated differently (stored block, as another zlib level might
        // produce) must be forwarded as it came, not re-compressed.
        let text = Array(String(repeating: "relay ", count: 20).utf8) // 120 bytes
        var stored: [UInt8] = [0x01, 0x78, 0x00, 0x87, 0xFF] + text   // BFINAL=1, BTYPE=00, LEN=120
        stored = h("01 02 07 \(sampleTimeHex) 04") + [0x00, UInt8(2 + stored.count)] + aliceID.bytes + [0x00, 0x78] + stored
        let p = try Packet(decoding: stored)
        #expect(p.payload == text)
        #expect(try p.encoded() == stored)
        var relayed = p
        relayed.ttl = 6
        #expect(Array(try relayed.encoded().dropFirst(3)) == Array(stored.dropFirst(3)))
    }
}
