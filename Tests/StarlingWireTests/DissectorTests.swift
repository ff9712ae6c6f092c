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
        #expect(a["tlv_0x7f"]?.value == .bytes([0xAB, 0xCD]))
        #expect(d["signature"]?.value == .bytes(repeated(1, 64)))
        #expect(d["packetID"] != nil)
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
