import Testing
@testable import StarlingWire

/// Property tests: random valid values encode, decode and compare equal, over a
/// fixed set of seeds so that a failure replays exactly.
@Suite struct RoundTripTests {
    static let seeds: [UInt64] = Array(1...8)

    static func randomPacket(_ rng: inout SeededRandom) -> Packet {
        let version: UInt8 = Bool.random(using: &rng) ? 1 : 2
        let types: [MessageType] = MessageType.known + [MessageType(rawValue: 0x7F)]
        let payloadSize = [0, 1, 20, 99, 100, 255, 600, 3000].randomElement(using: &rng)!
        var payload: [UInt8]
        if Bool.random(using: &rng) {
            payload = rng.bytes(payloadSize) // incompressible
        } else {
            let text = Array("mesh relay mesh relay offline ".utf8)
            payload = (0..<payloadSize).map { text[$0 % text.count] } // compressible
        }
        let recipient: PeerID? = [nil, .broadcast, PeerID(rawValue: rng.next())].randomElement(using: &rng)!
        let route: [PeerID]? = version == 2 && Bool.random(using: &rng)
            ? (0..<Int.random(in: 0...4, using: &rng)).map { _ in PeerID(rawValue: rng.next()) } : nil
        let signature: Signature? = Bool.random(using: &rng) ? Signature(bytes: rng.bytes(64)) : nil
        return Packet(version: version, type: types.randomElement(using: &rng)!,
                      ttl: UInt8.random(in: 0...7, using: &rng), timestamp: rng.next() >> 20,
                      senderID: PeerID(rawValue: rng.next()), recipientID: recipient, route: route,
                      isRSR: Bool.random(using: &rng), payload: payload,
                      compress: Bool.random(using: &rng), signature: signature)
    }

    @Test(arguments: seeds)
    func packets(seed: UInt64) throws {
        var rng = SeededRandom(seed: seed)
        for _ in 0..<200 {
            let p = Self.randomPacket(&rng)
            let bytes = try p.encoded()
            #expect(bytes.count == p.encodedSize)
            let back = try Packet(decoding: bytes)
            #expect(back == p)
            // Padded, the packet still decodes to the same value.
            let padded = try p.encoded(padded: true)
            #expect(try Packet(decoding: padded) == p)
            // A relay re-encoding with a lower TTL keeps the originator's bytes
            // and therefore the signing preimage.
            var relayed = back
            relayed.ttl = relayed.ttl > 0 ? relayed.ttl - 1 : 0
            #expect(try relayed.signingPreimage() == p.signingPreimage())
            #expect(PacketID(relayed) == PacketID(p))
        }
    }

    @Test(arguments: seeds)
    func announces(seed: UInt64) throws {
        var rng = SeededRandom(seed: seed)
        for _ in 0..<200 {
            let a = Announce(
                nickname: rng.text(maxBytes: 255),
                noisePublicKey: rng.bytes(32), signingPublicKey: rng.bytes(32),
                directNeighbors: Bool.random(using: &rng)
                    ? (0..<Int.random(in: 0...10, using: &rng)).map { _ in PeerID(rawValue: rng.next()) } : nil,
                capabilities: Bool.random(using: &rng) ? rng.next() >> UInt64.random(in: 0...63, using: &rng) : nil,
                bridgeGeohash: Bool.random(using: &rng) ? String("0123456789bcdefghjkmnpqrstuvwxyz".shuffled(using: &rng).prefix(Int.random(in: 0...12, using: &rng))) : nil,
                unknown: Bool.random(using: &rng) ? [UnknownTLV(type: 0x40, value: rng.bytes(Int.random(in: 0...255, using: &rng)))] : [])
            #expect(try Announce(decoding: a.encoded()) == a)
        }
    }

    @Test(arguments: seeds)
    func innerPayloadsAndFiles(seed: UInt64) throws {
        var rng = SeededRandom(seed: seed)
        for _ in 0..<200 {
            let file = FileTransfer(name: Bool.random(using: &rng) ? rng.text(maxBytes: 60) : nil,
                                    mimeType: Bool.random(using: &rng) ? "image/jpeg" : nil,
                                    content: rng.bytes(Int.random(in: 0...2000, using: &rng)))
            let payloads: [NoisePayload] = [
                .privateMessage(PrivateMessage(messageID: rng.text(maxBytes: 40), content: rng.text(maxBytes: 255))),
                .readReceipt(messageID: rng.text(maxBytes: 40)),
                .delivered(messageID: rng.text(maxBytes: 40)),
                .verifyChallenge(rng.bytes(32)),
                .verifyResponse(rng.bytes(64)),
                .privateFile(file),
                .unknown(type: 0x55, body: rng.bytes(10)),
            ]
            for p in payloads { #expect(try NoisePayload(decoding: p.encoded()) == p) }
            #expect(try FileTransfer(decoding: file.encoded()) == file)
            let f = Fragment(fragmentID: rng.next(), index: 2, total: 5, originalType: .fileTransfer, data: rng.bytes(100))
            #expect(try Fragment(decoding: f.encoded()) == f)
        }
    }

    @Test(arguments: seeds)
    func requestSyncWithFilters(seed: UInt64) throws {
        var rng = SeededRandom(seed: seed)
        let ids = (0..<Int.random(in: 0...600, using: &rng)).map { _ in PacketID(high: rng.next(), low: rng.next()) }
        let rs = RequestSync(filter: GCSFilter(ids: ids))
        let back = try RequestSync(decoding: rs.encoded())
        #expect(back == rs)
        #expect(back.filter.values() == rs.filter.values())
    }
}
