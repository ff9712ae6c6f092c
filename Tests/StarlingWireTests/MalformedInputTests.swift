import Testing
@testable import StarlingWire

/// Bad input is rejected with a typed error that names the field and offset;
/// nothing traps and no length field allocates more than the input holds.
@Suite struct MalformedInputTests {
    static let valid: [[UInt8]] = [
        GoldenVectorTests.publicMessage,
        GoldenVectorTests.signedBroadcast,
        GoldenVectorTests.routedV2,
        GoldenVectorTests.compressedV1,
    ]

    @Test(arguments: valid)
    func everyTruncationIsRejected(bytes: [UInt8]) {
        for n in 0..<bytes.count {
            #expect(throws: WireError.self, "prefix of \(n) bytes") {
                try Packet(decoding: Array(bytes.prefix(n)))
            }
        }
    }

    @Test func truncationNamesFieldAndOffset() {
        let e = #expect(throws: WireError.self) { try Packet(decoding: Array(GoldenVectorTests.publicMessage.prefix(17))) }
        #expect(e?.field == "senderID")
        #expect(e?.offset == 14)
        #expect(e?.reason == .truncated(needed: 8, available: 3))
        #expect(e?.description == "senderID at byte 14: truncated: needs 8 bytes, 3 available")
    }

    @Test(arguments: [UInt8(0), 3, 4, 0x7F, 0xFF])
    func badVersionsAreRejected(version: UInt8) {
        var bytes = GoldenVectorTests.publicMessage
        bytes[0] = version
        let e = #expect(throws: WireError.self) { try Packet(decoding: bytes) }
        #expect(e?.reason == .unsupportedVersion(version))
        #expect(e?.offset == 0)
    }

    @Test func undefinedFlagBitsAndRouteInV1AreRejected() {
        for bit: UInt8 in [0x20, 0x40, 0x80, 0x08] { // 0x08 (hasRoute) is v2 only
            var bytes = GoldenVectorTests.publicMessage
            bytes[11] |= bit
            let e = #expect(throws: WireError.self) { try Packet(decoding: bytes) }
            #expect(e?.field == "flags")
            #expect(e?.offset == 11)
        }
    }

    @Test func everyFlagCombinationEitherDecodesConsistentlyOrFailsTyped() throws {
        for flags in 0...UInt8.max {
            for base in Self.valid {
                var bytes = base
                bytes[11] = flags
                do {
                    let p = try Packet(decoding: bytes)
                    #expect(p.flags.rawValue == flags)
                    #expect(try p.encoded() == Array(bytes.prefix(p.encodedSize)))
                } catch {
                    // Typed errors only: anything else fails the test.
                }
            }
        }
    }

    @Test func hugeLengthFailsBeforeAllocating() {
        // A v2 header declaring a 4 GiB payload on a 30-byte input.
        let bytes = h("02 02 07 \(sampleTimeHex) 00 ffffffff a1b2c3d4e5f60718 0000 0000 0000")
        #expect(bytes.count == 30)
        let e = #expect(throws: WireError.self) { try Packet(decoding: bytes) }
        #expect(e?.field == "payloadLength")
        // A public message may carry 128 KiB at most (the type's limit, docs/PROTOCOL.md).
        #expect(e?.reason == .lengthOutOfRange(declared: 0xFFFF_FFFF, limit: 131_072))
        // Under the limit (a file transfer's: 1 MiB) but beyond the input: truncated, not allocated.
        let small = h("02 22 07 \(sampleTimeHex) 00 000fffff a1b2c3d4e5f60718 0000")
        let e2 = #expect(throws: WireError.self) { try Packet(decoding: small) }
        #expect(e2?.reason == .truncated(needed: 0xFFFFF, available: 2))
    }

    @Test func payloadLengthOneOffIsRejected() {
        var bytes = GoldenVectorTests.publicMessage
        bytes[13] = 6 // claims 6, has 5
        #expect(throws: WireError.self) { try Packet(decoding: bytes) }
        bytes[13] = 4 // claims 4: one byte left over that is not padding
        let e = #expect(throws: WireError.self) { try Packet(decoding: bytes) }
        #expect(e?.reason == .trailingBytes(count: 1))
    }

    @Test func trailingBytesMustBeVerifiedPadding() throws {
        let p = GoldenVectorTests.publicMessage
        #expect(try Packet(decoding: p + [1]).payload == Array("hello".utf8)) // one pad byte of 0x01
        #expect(try Packet(decoding: p + [3, 3, 3]).payload == Array("hello".utf8))
        #expect(throws: WireError.self) { try Packet(decoding: p + [3, 3]) }
        #expect(throws: WireError.self) { try Packet(decoding: p + [2, 3, 3]) }
        #expect(throws: WireError.self) { try Packet(decoding: p + [0]) }
    }

    @Test func compressionBombsAndCorruptStreamsAreRejected() {
        // 8 bytes of DEFLATE claiming 65,535 bytes of output: ratio 8191:1 is allowed
        // by the ratio rule, but the stream does not inflate to that size.
        let corrupt = h("01 02 07 \(sampleTimeHex) 04 000a a1b2c3d4e5f60718 ffff 4b4c1c1800000000")
        let e = #expect(throws: WireError.self) { try Packet(decoding: corrupt) }
        #expect(e?.reason == .decompressionFailed)
        // v2: 1 byte of data claiming 1 MiB: over 50,000:1 (a file transfer may be 1 MiB).
        let bomb = h("02 22 07 \(sampleTimeHex) 04 00000005 a1b2c3d4e5f60718 00100000 4b")
        let e2 = #expect(throws: WireError.self) { try Packet(decoding: bomb) }
        #expect(e2?.reason == .compressionRatioTooHigh(originalSize: 1 << 20, compressedSize: 1))
        // A public message claiming to inflate to 1 MiB is refused on its declared size, before inflating.
        let messageBomb = h("02 02 07 \(sampleTimeHex) 04 00000005 a1b2c3d4e5f60718 00100000 4b")
        let e3 = #expect(throws: WireError.self) { try Packet(decoding: messageBomb) }
        #expect(e3?.field == "originalSize")
        #expect(e3?.reason == .lengthOutOfRange(declared: 1 << 20, limit: 131_072))
        // Compressed flag with nothing after the size prefix.
        let empty = h("01 02 07 \(sampleTimeHex) 04 0002 a1b2c3d4e5f60718 0005")
        #expect(throws: WireError.self) { try Packet(decoding: empty) }
        // Trailing bytes after the end of the DEFLATE stream.
        let trailing = h("01 02 07 \(sampleTimeHex) 04 0009 a1b2c3d4e5f60718 0078 4b4c1c180000 ff")
        #expect(throws: WireError.self) { try Packet(decoding: trailing) }
    }

    @Test func routeCountBeyondInputIsRejected() {
        let bytes = h("02 11 03 \(sampleTimeHex) 08 00000000 a1b2c3d4e5f60718 ff 0102")
        let e = #expect(throws: WireError.self) { try Packet(decoding: bytes) }
        #expect(e?.field == "route.hops")
        #expect(e?.reason == .truncated(needed: 255 * 8, available: 2))
    }

    @Test func announceTLVErrors() {
        let good = GoldenVectorTests.announcePayload
        // Cuts between TLVs after the three required ones leave a valid announce;
        // every other cut fails.
        let boundaries: Set = [75, 93, 96, 102]
        for n in 0..<good.count {
            let prefix = Array(good.prefix(n))
            if boundaries.contains(n) {
                #expect(throws: Never.self) { try Announce(decoding: prefix) }
            } else {
                #expect(throws: WireError.self, "prefix \(n)") { try Announce(decoding: prefix) }
            }
        }
        // Key of 31 bytes.
        let shortKey = h("01 01 61 02 1f") + repeated(1, 31) + h("03 20") + repeated(2, 32)
        let e = #expect(throws: WireError.self) { try Announce(decoding: shortKey) }
        #expect(e?.field == "announce.noisePublicKey")
        #expect(e?.offset == 5)
        // Missing signing key.
        let missing = h("01 01 61 02 20") + repeated(1, 32)
        #expect((#expect(throws: WireError.self) { try Announce(decoding: missing) })?.reason == .missingField)
        // Neighbours not a multiple of 8, and more than 10.
        let base = h("01 01 61 02 20") + repeated(1, 32) + h("03 20") + repeated(2, 32)
        #expect(throws: WireError.self) { try Announce(decoding: base + h("04 07") + repeated(0, 7)) }
        #expect(throws: WireError.self) { try Announce(decoding: base + h("04 58") + repeated(0, 88)) }
        // Capabilities of 9 bytes, empty capabilities, geohash of 13 bytes.
        #expect(throws: WireError.self) { try Announce(decoding: base + h("05 09") + repeated(0, 9)) }
        #expect(throws: WireError.self) { try Announce(decoding: base + h("05 00")) }
        #expect(throws: WireError.self) { try Announce(decoding: base + h("06 0d") + repeated(0x61, 13)) }
        // Invalid UTF-8 nickname and a duplicate nickname.
        #expect((#expect(throws: WireError.self) { try Announce(decoding: h("01 02 c328") + base.dropFirst(3)) })?.reason == .invalidUTF8)
        #expect((#expect(throws: WireError.self) { try Announce(decoding: base + h("01 01 62")) })?.reason == .duplicateField)
    }

    @Test func fragmentErrors() {
        #expect(throws: WireError.self) { try Fragment(decoding: h("0102030405060708 0000 0000 02")) } // total 0
        #expect(throws: WireError.self) { try Fragment(decoding: h("0102030405060708 0003 0003 02")) } // index = total
        for n in 0..<13 {
            #expect(throws: WireError.self) { try Fragment(decoding: Array(h("0102030405060708 0000 0001 02").prefix(n))) }
        }
    }

    @Test func fileTransferErrors() {
        let good = GoldenVectorTests.filePayload
        // Every truncation inside a TLV fails; cuts between TLVs lose the content.
        for n in 0..<good.count {
            #expect(throws: WireError.self, "prefix \(n)") { try FileTransfer(decoding: Array(good.prefix(n))) }
        }
        // Content length (u32) of 4 GiB − 1 on a tiny input.
        let huge = h("04 ffffffff 00")
        #expect((#expect(throws: WireError.self) { try FileTransfer(decoding: huge) })?.reason == .truncated(needed: 0xFFFF_FFFF, available: 1))
        // Size that disagrees with the content, and size of 3 bytes.
        #expect(throws: WireError.self) { try FileTransfer(decoding: h("02 0004 00000009 04 00000001 41")) }
        #expect(throws: WireError.self) { try FileTransfer(decoding: h("02 0003 000001 04 00000001 41")) }
    }

    @Test func requestSyncErrors() {
        let good = h("01 0001 07 02 0004 00000a00 03 0003 c0ffee")
        for n in 0..<good.count {
            #expect(throws: WireError.self, "prefix \(n)") { try RequestSync(decoding: Array(good.prefix(n))) }
        }
        #expect(throws: WireError.self) { try RequestSync(decoding: h("01 0002 0707 02 0004 00000a00 03 0000")) } // P of 2 bytes
        #expect(throws: WireError.self) { try RequestSync(decoding: h("01 0001 00 02 0004 00000a00 03 0000")) }   // P = 0
        #expect(throws: WireError.self) { try RequestSync(decoding: h("01 0001 07 02 0003 000a00 03 0000")) }     // M of 3 bytes
        let big = h("01 0001 07 02 0004 00000a00 03 0401") + repeated(0, 1025)
        #expect((#expect(throws: WireError.self) { try RequestSync(decoding: big) })?.reason == .lengthOutOfRange(declared: 1025, limit: 1024))
    }

    @Test func innerPayloadErrors() {
        #expect(throws: WireError.self) { try NoisePayload(decoding: []) }
        #expect(throws: WireError.self) { try NoisePayload(decoding: h("01 00 04 6d2d30")) }        // truncated TLV
        #expect(throws: WireError.self) { try NoisePayload(decoding: h("01 00 02 6869")) }           // no content
        #expect(throws: WireError.self) { try NoisePayload(decoding: h("01 01 02 6869")) }           // no ID
        #expect(throws: WireError.self) { try NoisePayload(decoding: h("02 ff")) }                   // bad UTF-8
        #expect(throws: WireError.self) { try VersionNegotiation.decodeHello(h("03 01 02")) }
        #expect(throws: WireError.self) { try VersionNegotiation.decodeAck(h("01 02")) }
    }

    @Test func encodersRefuseValuesTheWireCannotCarry() {
        let long = String(repeating: "x", count: 256)
        #expect(throws: EncodingError.self) { try PrivateMessage(messageID: "1", content: long).encoded() }
        #expect(throws: EncodingError.self) {
            try Announce(nickname: long, noisePublicKey: repeated(0, 32), signingPublicKey: repeated(0, 32)).encoded()
        }
        #expect(throws: EncodingError.self) {
            try Packet(version: 1, type: .message, ttl: 1, timestamp: 0, senderID: aliceID,
                       route: [bobID], payload: []).encoded()
        }
        #expect(throws: EncodingError.self) {
            try Packet(version: 1, type: .message, ttl: 1, timestamp: 0, senderID: aliceID,
                       payload: repeated(1, 70_000), compress: false).encoded()
        }
    }
}
