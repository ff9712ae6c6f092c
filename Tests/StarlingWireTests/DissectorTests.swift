import Testing
@testable import StarlingWire

@Suite struct DissectorTests {
    @Test func announcePacketIsDissectedWithNestedFields() throws {
        let packet = Packet(type: .announce, ttl: 7, timestamp: sampleTime, senderID: aliceID,
                            payload: GoldenVectorTests.announcePayload, compress: false,
                            signature: Signature(bytes: repeated(1, 64)))
        let d = try Dissector.packet(try packet.encoded())
        #expect(d["type"]?.note == "announce")
        #expect(d["timestamp"]?.note == "2025-11-22T08:26:40.000Z")
        #expect(d["flags"]?.value == .list(["hasSignature"]))
        let a = try #require(d["announce"])
        #expect(a["nickname"]?.value == .text("alice"))
        #expect(a["bridgeGeohash"]?.value == .text("u4pr"))
        #expect(a["capabilities"]?.value == .number(3) && a["capabilities"]?.note == "prekeys, wifiBulk")
        #expect(a["tlv_0x7f"]?.value == .bytes([0xAB, 0xCD]))
        #expect(d["signature"]?.value == .bytes(repeated(1, 64)))
        #expect(d["packetID"] != nil)
    }

    /// As Wireshark does: the header, addresses, route and signature are shown
    /// even when the payload inside is malformed, and the payload is marked.
    @Test func outerLayersAreShownWhenAnInnerOneIsMalformed() throws {
        // A routed v2 0x11 whose 4-byte frame is too short for a Noise frame (nonce 4 + tag 16).
        let routed = Dissector.dissect(GoldenVectorTests.routedV2)
        let f = try #require(routed.field)
        #expect(routed.error != nil)
        #expect(f["senderID"]?.value == .text("a1b2c3d4e5f60718"))
        #expect(f["recipientID"]?.value == .text("0102030405060708"))
        #expect(f["route"]?.value == .list(["1111111111111111", "2222222222222222"]))
        #expect(f["flags"]?.value == .list(["hasRecipient", "hasRoute", "isRSR"]))
        #expect(f["payload"]?.note == "malformed")
        #expect(f["payload"]?["error"] != nil)
        #expect(f["packetID"] != nil)
        // A valid v1 public message whose payload is not UTF-8 text, signed.
        var notText = Packet(type: .message, ttl: 7, timestamp: sampleTime, senderID: aliceID, payload: [0x68, 0xFF, 0xFE],
                             compress: false)
        notText.signature = Signature(bytes: [UInt8](repeating: 0x5A, count: 64))!
        let bytes = try notText.encoded()
        let d = Dissector.dissect(bytes)
        let g = try #require(d.field)
        #expect(d.error != nil)
        #expect(g["type"]?.note == "message" && g["ttl"]?.value == .number(7))
        #expect(g["signature"]?.value == .bytes([UInt8](repeating: 0x5A, count: 64)))
        #expect(g["payload"]?.value == .bytes([0x68, 0xFF, 0xFE]))
        // The throwing form still throws the inner error.
        #expect(throws: WireError.self) { try Dissector.packet(bytes) }
        // A header that does not decode has nothing to show.
        let broken = Dissector.dissect([0x01, 0x02])
        #expect(broken.field == nil && broken.error != nil)
    }

    @Test func nestedErrorsPointIntoThePacket() throws {
        // An announce whose Noise key TLV claims 33 bytes: offset is packet-relative.
        var payload = GoldenVectorTests.announcePayload
        payload[8] = 0x21
        let packet = Packet(type: .announce, ttl: 7, timestamp: sampleTime, senderID: aliceID, payload: payload, compress: false)
        let e = #expect(throws: WireError.self) { try Dissector.packet(try packet.encoded()) }
        #expect(e?.field == "announce.noisePublicKey")
        #expect(e?.offset == 22 + 9)
    }

    @Test func fragmentRequestSyncFileAndNoiseFrames() throws {
        let single = Packet(type: .message, ttl: 7, timestamp: sampleTime, senderID: aliceID, payload: Array("hi".utf8))
        let frag = try Fragmenter.fragment(single, chunkSize: 469, fragmentID: 1)[0]
        let d = try Dissector.packet(try frag.encoded())
        #expect(d["fragment"]?["total"]?.value == .number(1))
        #expect(d["fragment"]?["packet"]?["message"]?.value == .text("hi"))

        let sync = Packet(type: .requestSync, ttl: 0, timestamp: sampleTime, senderID: aliceID,
                          payload: try RequestSync(filter: GCSFilter(ids: [PacketID(high: 1, low: 2)])).encoded())
        #expect(try Dissector.packet(sync.encoded())["requestSync"]?["elements"]?.value == .number(1))

        let noise = Packet(type: .noiseEncrypted, ttl: 7, timestamp: sampleTime, senderID: aliceID, recipientID: bobID,
                           payload: h("00000005") + repeated(9, 30))
        let n = try Dissector.packet(try noise.encoded(padded: true))
        #expect(n["noiseEncrypted"]?["nonce"]?.value == .number(5))
        #expect(n["padding"] != nil)

        let pm = try Dissector.noisePlaintext(h("01 00 04 6d2d3031 01 02 6869"))
        #expect(pm["content"]?.value == .text("hi"))
        #expect(pm["type"]?.note == "privateMessage")
    }

    @Test func dateFormatting() {
        #expect(Dissector.iso8601(millis: 0) == "1970-01-01T00:00:00.000Z")
        #expect(Dissector.iso8601(millis: 951_782_400_123) == "2000-02-29T00:00:00.123Z")
        #expect(Dissector.iso8601(millis: sampleTime) == "2025-11-22T08:26:40.000Z")
    }
}

/// The apps' 2026 types, dissected from their own golden vectors
/// (bitchat-android app/src/test/.../model/*Test.kt; docs/research/bitchat-2026.md §9).
@Suite struct Dissector2026Tests {
    static func wrap(_ type: MessageType, _ payload: [UInt8], to recipient: PeerID? = nil) throws -> [UInt8] {
        try Packet(type: type, ttl: 7, timestamp: sampleTime, senderID: aliceID, recipientID: recipient, payload: payload,
                   compress: false).encoded()
    }

    @Test func courierEnvelopeFromAndroidsContractTest() throws {
        // model/CourierEnvelopeTest.kt
        let envelope = h("010010000102030405060708090a0b0c0d0e0f 0200080102030405060708 030003aabbcc 04000104 05000411223344")
        let f = try Dissector.packet(try Self.wrap(.courierEnvelope, envelope, to: bobID))
        #expect(f["type"]?.note == "courierEnvelope")
        let c = try #require(f["courierEnvelope"])
        #expect(c["recipientTag"]?.value == .bytes(Array(0...15)))
        #expect(c["expiry"]?.value == .bytes([1, 2, 3, 4, 5, 6, 7, 8]))
        #expect(c["ciphertext"]?.value == .bytes([0xAA, 0xBB, 0xCC]))
        #expect(c["copies"]?.value == .bytes([4]))
        #expect(c["prekeyID"]?.value == .bytes([0x11, 0x22, 0x33, 0x44]))
    }

    @Test func nostrCarrierFromAndroidsInteropTest() throws {
        // model/BridgeProtocolInteropTest.kt
        let carrier = h("010001030200067534707275790300027b7d")
        let c = try #require(try Dissector.packet(try Self.wrap(.nostrCarrier, carrier))["nostrCarrier"])
        #expect(c["direction"]?.value == .bytes([3]))
        #expect(c["geohash"]?.value == .text("u4pruy"))
        #expect(c["eventJSON"]?.value == .text("{}"))
    }

    @Test func boardPostsAreBrokenDownFieldByField() throws {
        // docs/PROTOCOL.md's board-post example (a post in u33dc1 by alice).
        let post = h("""
            010001010200100102030405060708090a0b0c0d0e0f10030006753333646331
            0400066e6f7469636505002003a107bff3ce10be1d70dd18e74bc09967e4d630
            9ba50d5f1ddc8664125531b8060005616c6963650700080000018bcfe5680008
            00080000018bd50bc400090001000a00400e9018b595c193c787ff9186337ec3
            1f0a7b00e5c9ce717cba1bedbb1e6fff14da27e90c0fdfa7a06ebe95f8989b3b
            e952980cfcb616ab4889c57d696650a803
            """)
        let b = try #require(try Dissector.packet(try Self.wrap(.boardPost, post))["boardPost"])
        #expect(b["kind"]?.note == "post")
        #expect(b["geohash"]?.value == .text("u33dc1") && b["content"]?.value == .text("notice"))
        #expect(b["nickname"]?.value == .text("alice"))
        #expect(b["createdAt"]?.value == .number(1_700_000_000_000))
        #expect(b["expiresAt"]?.value == .number(1_700_086_400_000))
        #expect(b["flags"]?.value == .number(0) && b["flags"]?.note == nil)
        #expect(b["signature"]?.value == .bytes(Array(post.suffix(64))))
        // A tombstone, and a kind the apps do not know (refused, as they refuse it).
        let tomb = BoardTombstone(postID: Array(1...16), authorKey: Array(repeating: 3, count: 32), deletedAt: 5,
                                  signature: Array(repeating: 9, count: 64))
        let t = try #require(try Dissector.packet(try Self.wrap(.boardPost, tomb.encoded()))["boardPost"])
        #expect(t["kind"]?.note == "tombstone" && t["deletedAt"]?.value == .number(5))
        var bad = post
        bad[3] = 7
        #expect(Dissector.dissect(try Self.wrap(.boardPost, bad)).error != nil)
    }

    @Test func requestSyncShowsItsTypesSinceAndFragmentIDs() throws {
        let asked = RequestSync(filter: GCSFilter(ids: []), types: SyncTypes([.boardPost, .fragment]), since: 1_700_000_000_000,
                                fragmentIDs: [0x0102_0304_0506_0708])
        let r = try #require(try Dissector.packet(try Self.wrap(.requestSync, asked.encoded()))["requestSync"])
        #expect(r["types"]?.value == .number(0x120) && r["types"]?.note == "fragment, boardPost")
        #expect(r["since"]?.value == .number(1_700_000_000_000))
        #expect(r["fragmentIDs"]?.value == .list(["0102030405060708"]))
        // Without the TLV: what the apps then send back; a bit nobody names is shown by number.
        let plain = try #require(try Dissector.packet(try Self.wrap(.requestSync, RequestSync(filter: GCSFilter(ids: [])).encoded()))["requestSync"])
        #expect(plain["types"]?.note == "absent: announce, message")
        let odd = RequestSync(filter: GCSFilter(ids: []), types: SyncTypes(rawValue: 1 << 20 | 1))
        #expect(try Dissector.packet(try Self.wrap(.requestSync, odd.encoded()))["requestSync"]?["types"]?.note == "announce, bit 20")
    }

    @Test func announceV2ShowsEpochTagsAndCapabilities() throws {
        let tags = (0..<64).map { UInt8($0) }
        let a = AnnounceV2(epoch: 494_000, tagBlock: tags, capabilities: 0x01, bridgeGeohash: "u4pruy")
        let f = try #require(try Dissector.packet(try Self.wrap(.announceV2, a.encoded()))["announceV2"])
        #expect(f["epoch"]?.value == .number(494_000))
        #expect(f["tags"]?.value == .list((0..<8).map { Array(tags[$0 * 8..<$0 * 8 + 8]).hexString }))
        #expect(f["capabilities"]?.value == .number(1))
        #expect(f["bridgeGeohash"]?.value == .text("u4pruy"))
        #expect(Dissector.dissect(try Self.wrap(.announceV2, [0x01, 0x04, 0, 0, 0, 1])).error != nil, "no tag block: refused")
    }

    @Test func pingAndPongShowTheirNonceAndHops() throws {
        let ping = try Dissector.packet(try Self.wrap(.ping, h("010203040506070807"), to: bobID))
        #expect(ping["type"]?.note == "ping")
        #expect(ping["ping"]?["nonce"]?.value == .bytes([1, 2, 3, 4, 5, 6, 7, 8]))
        #expect(ping["ping"]?["originTTL"]?.note == "hops 1")
        let short = Dissector.dissect(try Self.wrap(.pong, [1, 2, 3]))
        #expect(short.error?.field == "pong.nonce" && short.field?["type"]?.note == "pong")
    }

    @Test func voiceFramesFromTheAppsBurstLayout() throws {
        // features/voice/VoiceBurstPacketTest.kt (the layout iOS uses too)
        let start = try Dissector.packet(try Self.wrap(.voiceFrame, h("010203040506070800000101")))
        #expect(start["voiceFrame"]?["flags"]?.note == "start")
        let end = try Dissector.packet(try Self.wrap(.voiceFrame, h("0102030405060708002a02002900000a80")))
        #expect(end["voiceFrame"]?["sequence"]?.value == .number(42))
        #expect(end["voiceFrame"]?["flags"]?.note == "end")
    }

    /// The apps' 2026 Noise payload codes (iOS BitchatProtocol.swift's
    /// NoisePayloadType): named, their bodies shown as bytes.
    @Test func everyNewNoisePayloadHasItsName() throws {
        let names = [(0x06, "groupInvite"), (0x07, "groupKeyUpdate"), (0x08, "voiceFrame"), (0x12, "vouch"),
                     (0x21, "authenticatedPeerState")]
        for (code, name) in names {
            let f = try Dissector.noisePlaintext([UInt8(code), 0xAB, 0xCD])
            #expect(f["type"]?.note == name)
            #expect(f["body"]?.value == .bytes([0xAB, 0xCD]))
            #expect(try NoisePayload(decoding: [UInt8(code), 0xAB, 0xCD]) == .unknown(type: UInt8(code), body: [0xAB, 0xCD]))
        }
        #expect(try Dissector.noisePlaintext([0x09] + (try FileTransfer(name: "a", mimeType: "text/plain", content: [1]).encoded()))["type"]?.note
                == "privateFile (prerelease 0x09)")
        #expect(try Dissector.noisePlaintext([0x7E])["type"]?.note == "unknown")
    }

    @Test func everyNewTypeHasItsName() {
        let names = [(0x04, "courierEnvelope"), (0x23, "boardPost"), (0x24, "prekeyBundle"), (0x25, "groupMessage"), (0x26, "ping"),
                     (0x27, "pong"), (0x28, "nostrCarrier"), (0x29, "voiceFrame"), (0x2C, "announceV2")]
        for (code, name) in names { #expect(MessageType(rawValue: UInt8(code)).name == name) }
    }
}
