import Testing
@testable import StarlingWire

/// Byte vectors written by hand from docs/PROTOCOL.md: encoding must give exactly
/// these bytes, and decoding must give exactly these fields.
@Suite struct GoldenVectorTests {
    // docs/PROTOCOL.md, "Example: public message (v1)"
    static let publicMessage = h("""
        01 02 07 \(sampleTimeHex) 00 0005
        a1b2c3d4e5f60718
        68656c6c6f
        """)

    @Test func publicMessageV1() throws {
        let p = try Packet(decoding: Self.publicMessage)
        #expect(p.version == 1)
        #expect(p.type == .message)
        #expect(p.ttl == 7)
        #expect(p.timestamp == sampleTime)
        #expect(p.flags == [])
        #expect(p.senderID == aliceID)
        #expect(p.recipientID == nil)
        #expect(p.isBroadcast)
        #expect(p.payload == Array("hello".utf8))
        #expect(p.signature == nil)
        let built = Packet(type: .message, ttl: 7, timestamp: sampleTime, senderID: aliceID, payload: Array("hello".utf8))
        #expect(try built.encoded() == Self.publicMessage)
        #expect(built == p)
    }

    // docs/PROTOCOL.md, "Example: signed message to the broadcast recipient"
    static let signedBroadcast = h("""
        01 02 07 \(sampleTimeHex) 03 0002
        a1b2c3d4e5f60718 ffffffffffffffff
        6869
        """) + repeated(0x5A, 64)

    @Test func signedMessageWithBroadcastRecipient() throws {
        let p = try Packet(decoding: Self.signedBroadcast)
        #expect(p.flags == [.hasRecipient, .hasSignature])
        #expect(p.recipientID == .broadcast)
        #expect(p.isBroadcast)
        #expect(p.signature?.bytes == repeated(0x5A, 64))
        #expect(p.payload == [0x68, 0x69])
        #expect(try p.encoded() == Self.signedBroadcast)
    }

    // docs/PROTOCOL.md, "Example: signing preimage"
    @Test func signingPreimageClearsTTLSignatureAndRSRAndPads() throws {
        var p = try Packet(decoding: Self.signedBroadcast)
        p.isRSR = true
        p.ttl = 3
        let expected = h("""
            01 02 00 \(sampleTimeHex) 01 0002
            a1b2c3d4e5f60718 ffffffffffffffff
            6869
            """) + repeated(0xE0, 224)
        #expect(try p.signingPreimage() == expected)
        #expect(expected.count == 256)
    }

    // docs/PROTOCOL.md, "Example: v2 with source route and isRSR"
    static let routedV2 = h("""
        02 11 03 \(sampleTimeHex) 19 00000004
        a1b2c3d4e5f60718 0102030405060708
        02 1111111111111111 2222222222222222
        deadbeef
        """)

    @Test func v2WithRouteAndRSR() throws {
        let p = try Packet(decoding: Self.routedV2)
        #expect(p.version == 2)
        #expect(p.type == .noiseEncrypted)
        #expect(p.flags == [.hasRecipient, .hasRoute, .isRSR])
        #expect(p.recipientID == bobID)
        #expect(p.route == [PeerID(rawValue: 0x1111_1111_1111_1111), PeerID(rawValue: 0x2222_2222_2222_2222)])
        #expect(p.isRSR)
        #expect(p.payloadLengthField == 4) // the route is not counted
        #expect(p.payload == h("deadbeef"))
        #expect(try p.encoded() == Self.routedV2)
    }

    // docs/PROTOCOL.md, "Example: compressed payload"
    static let bitchatText = Array(String(repeating: "bitchat ", count: 20).utf8)
    static let compressedV1 = h("""
        01 02 07 \(sampleTimeHex) 04 000f
        a1b2c3d4e5f60718
        00a0 4bca2c49ce482c51481aa43400
        """)

    @Test func compressedPayloadV1() throws {
        let p = try Packet(decoding: Self.compressedV1)
        #expect(p.flags == [.isCompressed])
        #expect(p.payload == Self.bitchatText)
        #expect(p.compressedPayload == h("4bca2c49ce482c51481aa43400"))
        #expect(try p.encoded() == Self.compressedV1)
        let built = Packet(type: .message, ttl: 7, timestamp: sampleTime, senderID: aliceID, payload: Self.bitchatText)
        #expect(try built.encoded() == Self.compressedV1)
    }

    @Test func compressedPayloadV2HasFourByteSizePrefix() throws {
        let built = Packet(version: 2, type: .message, ttl: 7, timestamp: sampleTime, senderID: aliceID, payload: Self.bitchatText)
        let expected = h("""
            02 02 07 \(sampleTimeHex) 04 00000011
            a1b2c3d4e5f60718
            000000a0 4bca2c49ce482c51481aa43400
            """)
        #expect(try built.encoded() == expected)
        #expect(try Packet(decoding: expected).payload == Self.bitchatText)
    }

    // docs/PROTOCOL.md, "Example: padding"
    @Test func paddedNoiseFrame() throws {
        let frame = Packet(type: .noiseEncrypted, ttl: 7, timestamp: sampleTime, senderID: aliceID,
                           recipientID: bobID, payload: repeated(0xAB, 40))
        let bytes = try frame.encoded(padded: true)
        let unpadded = h("01 11 07 \(sampleTimeHex) 01 0028 a1b2c3d4e5f60718 0102030405060708") + repeated(0xAB, 40)
        #expect(bytes == unpadded + repeated(0xBA, 0xBA))
        #expect(bytes.count == 256)
        #expect(try Packet(decoding: bytes) == frame)
    }

    // docs/PROTOCOL.md, "Example: announce"
    static let announcePayload = h("""
        01 05 616c696365
        02 20 \(String(repeating: "11", count: 32))
        03 20 \(String(repeating: "22", count: 32))
        04 10 0102030405060708 1111111111111111
        05 01 03
        06 04 75347072
        7f 02 abcd
        """)

    @Test func announceTLVs() throws {
        let a = try Announce(decoding: Self.announcePayload)
        #expect(a.nickname == "alice")
        #expect(a.noisePublicKey == repeated(0x11, 32))
        #expect(a.signingPublicKey == repeated(0x22, 32))
        #expect(a.directNeighbors == [bobID, PeerID(rawValue: 0x1111_1111_1111_1111)])
        #expect(a.capabilities == 3)
        #expect(a.bridgeGeohash == "u4pr")
        #expect(a.unknown == [UnknownTLV(type: 0x7F, value: [0xAB, 0xCD])])
        #expect(try a.encoded() == Self.announcePayload)
    }

    @Test func capabilitiesAreLittleEndianWithoutTrailingZeros() throws {
        #expect(Announce.capabilityBytes(0) == [0x00])
        #expect(Announce.capabilityBytes(0x0102) == [0x02, 0x01])
        #expect(Announce.capabilityBytes(0x0100_0000_0000_0000) == [0, 0, 0, 0, 0, 0, 0, 1])
        var a = try Announce(decoding: Self.announcePayload)
        a.capabilities = 0x0000_0000_0001_0000
        let back = try Announce(decoding: try a.encoded())
        #expect(back.capabilities == 0x10000)
    }

    // docs/PROTOCOL.md, "Example: fragment"
    @Test func fragmentPayload() throws {
        let bytes = h("0102030405060708 0001 0003 02 cafe")
        let f = try Fragment(decoding: bytes)
        #expect(f.fragmentID == 0x0102_0304_0506_0708)
        #expect(f.index == 1)
        #expect(f.total == 3)
        #expect(f.originalType == .message)
        #expect(f.data == [0xCA, 0xFE])
        #expect(f.encoded() == bytes)
    }

    // docs/PROTOCOL.md, "Example: file transfer"
    static let filePayload = h("""
        01 0008 6e6f74652e747874
        02 0004 00000005
        03 000a 746578742f706c61696e
        04 00000005 68656c6c6f
        """)

    @Test func fileTransferTLVs() throws {
        let f = try FileTransfer(decoding: Self.filePayload)
        #expect(f.name == "note.txt")
        #expect(f.declaredSize == 5)
        #expect(f.mimeType == "text/plain")
        #expect(f.content == Array("hello".utf8))
        #expect(try f.encoded() == Self.filePayload)
        let eightByteSize = h("02 0008 0000000000000005 04 00000005 68656c6c6f")
        #expect(try FileTransfer(decoding: eightByteSize).declaredSize == 5)
    }

    // docs/PROTOCOL.md, "Example: request-sync"
    @Test func requestSyncTLVs() throws {
        let bytes = h("01 0001 07  02 0004 00000a00  03 0003 c0ffee  7e 0001 99")
        let rs = try RequestSync(decoding: bytes)
        #expect(rs.filter.p == 7)
        #expect(rs.filter.m == 2560)
        #expect(rs.filter.data == h("c0ffee"))
        #expect(rs.unknown == [UnknownTLV(type: 0x7E, value: [0x99])])
        #expect(try rs.encoded() == bytes)
    }

    // docs/PROTOCOL.md, "Example: private message"
    @Test func privateMessageInsideNoise() throws {
        let bytes = h("01  00 04 6d2d3031  01 02 6869")
        let p = try NoisePayload(decoding: bytes)
        #expect(p == .privateMessage(PrivateMessage(messageID: "m-01", content: "hi")))
        #expect(try p.encoded() == bytes)
    }

    @Test func receipts() throws {
        #expect(try NoisePayload(decoding: h("02 6d2d3031")) == .readReceipt(messageID: "m-01"))
        #expect(try NoisePayload(decoding: h("03 6d2d3031")) == .delivered(messageID: "m-01"))
        #expect(try NoisePayload.delivered(messageID: "m-01").encoded() == h("03 6d2d3031"))
        // 0x09 is the old private-file code, accepted on decode and re-encoded as 0x20.
        let legacy = try NoisePayload(decoding: [0x09] + Self.filePayload)
        #expect(try legacy.encoded() == [0x20] + Self.filePayload)
    }

    // docs/PROTOCOL.md, "Example: version negotiation"
    @Test func versionNegotiation() throws {
        #expect(try VersionNegotiation.encodeHello([1, 2]) == h("02 01 02"))
        #expect(try VersionNegotiation.decodeHello(h("02 01 02")) == [1, 2])
        #expect(VersionNegotiation.encodeAck(2) == [2])
        #expect(try VersionNegotiation.decodeAck([0]) == nil)
        #expect(VersionNegotiation.agree(local: [1, 2], remote: [1]) == 1)
        #expect(VersionNegotiation.agree(local: [2], remote: [1]) == nil)
        #expect(MessageType.versionHello.rawValue == 0x2D && MessageType.versionAck.rawValue == 0x2E)
    }

    // docs/PROTOCOL.md, "Packet ID"
    @Test func packetIDIsTruncatedSHA256() throws {
        let p = try Packet(decoding: Self.publicMessage)
        #expect(PacketID(p).description == "edc627a8bb30fbc405e2f403f7b946ce")
        // TTL, signature, recipient and compression do not change it.
        var relayed = p
        relayed.ttl = 1
        relayed.recipientID = .broadcast
        #expect(PacketID(relayed) == PacketID(p))
        let compressed = try Packet(decoding: Self.compressedV1)
        let plain = Packet(type: .message, ttl: 7, timestamp: sampleTime, senderID: aliceID,
                           payload: Self.bitchatText, compress: false)
        #expect(PacketID(compressed) == PacketID(plain))
    }
}
