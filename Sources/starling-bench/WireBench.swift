import Foundation
import StarlingMesh
import StarlingWire

extension SeededGenerator {
    mutating func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8(truncatingIfNeeded: next()) } }
}

/// `starling-bench wire`: the bitchat codec.
enum WireBench {
    static func run() {
        var rng = SeededGenerator(seed: 0x5EED)
        let sender = PeerID(rawValue: 0xA1B2_C3D4_E5F6_0718)
        let now: UInt64 = 1_763_800_000_000
        print("starling-bench wire (release build; one core; median of 5 rounds)")

        // 1. A signed public message of exactly 256 bytes on the wire: 14-byte header,
        // 8-byte sender, 170-byte payload that does not compress, 64-byte signature.
        let signed = Packet(type: .message, ttl: 7, timestamp: now, senderID: sender,
                            payload: rng.bytes(170), signature: Signature(bytes: rng.bytes(64)))
        let signedBytes = try! signed.encoded()
        precondition(signedBytes.count == 256 && signed.compressedPayload == nil)
        print("\n256-byte signed public message")
        let enc = Timer.measure("encode") { blackHole(try! signed.encoded()) }
        let dec = Timer.measure("decode") { blackHole(try! Packet(decoding: signedBytes)) }
        let pre = Timer.measure("signing preimage (padded)") { blackHole(try! signed.signingPreimage()) }
        let pid = Timer.measure("packet ID (SHA-256)") { blackHole(PacketID(signed)) }
        let baseEnc = Timer.measure("baseline encode (Data, byte appends)") { blackHole(BaselineCodec.encode(signed)) }
        let signedData = Data(signedBytes)
        let baseDec = Timer.measure("baseline decode (Data, byte reads)") { blackHole(BaselineCodec.decode(signedData)) }
        let copy = Timer.measure("floor: copy 256 bytes into a new array") { blackHole(Array(signedBytes[...])) }
        [enc, dec, pre, pid, baseEnc, baseDec, copy].forEach(Timer.report)
        Timer.ratio("encode vs baseline", baseline: baseEnc, ours: enc)
        Timer.ratio("decode vs baseline", baseline: baseDec, ours: dec)
        Timer.ratio("encode vs 256-byte copy", baseline: enc, ours: copy)

        // 1b. The same size of compressible text: building includes the DEFLATE attempt.
        let text = Array(String(repeating: "meet at the north gate at dawn, bring water. ", count: 4).prefix(170).utf8)
        print("\n170-byte text message (compressible)")
        let build = Timer.measure("build (compression decision + deflate)") {
            blackHole(Packet(type: .message, ttl: 7, timestamp: now, senderID: sender, payload: text))
        }
        let textPacket = Packet(type: .message, ttl: 7, timestamp: now, senderID: sender, payload: text)
        let textBytes = try! textPacket.encoded()
        let textDec = Timer.measure("decode (inflate)") { blackHole(try! Packet(decoding: textBytes)) }
        [build, textDec].forEach(Timer.report)
        print("  wire size \(textBytes.count) bytes for \(text.count) bytes of text")

        // 2. An announce.
        let announce = Announce(nickname: "alice", noisePublicKey: rng.bytes(32), signingPublicKey: rng.bytes(32),
                                directNeighbors: (0..<4).map { _ in PeerID(rawValue: rng.next()) }, capabilities: 0x3)
        let announcePacket = Packet(type: .announce, ttl: 7, timestamp: now, senderID: sender,
                                    payload: try! announce.encoded(), signature: Signature(bytes: rng.bytes(64)))
        let announceBytes = try! announcePacket.encoded()
        print("\nannounce (\(announceBytes.count) bytes)")
        let aEnc = Timer.measure("encode (TLVs + packet)") {
            var p = announcePacket
            p.setPayload(try! announce.encoded(), compress: false)
            blackHole(try! p.encoded())
        }
        let aDec = Timer.measure("decode (packet + TLVs)") {
            let p = try! Packet(decoding: announceBytes)
            blackHole(try! Announce(decoding: p.payload))
        }
        [aEnc, aDec].forEach(Timer.report)

        // 3. A padded Noise transport frame.
        let frame = Packet(type: .noiseEncrypted, ttl: 7, timestamp: now, senderID: sender,
                           recipientID: PeerID(rawValue: 0x0102_0304_0506_0708), payload: rng.bytes(120))
        let frameBytes = try! frame.encoded(padded: true)
        print("\npadded Noise frame (120-byte frame, \(frameBytes.count) bytes on the wire)")
        let fEnc = Timer.measure("encode + pad") { blackHole(try! frame.encoded(padded: true)) }
        let fDec = Timer.measure("decode + verify padding") { blackHole(try! Packet(decoding: frameBytes)) }
        [fEnc, fDec].forEach(Timer.report)

        // 4. Fragmenting and reassembling a 64 KiB file.
        let file = FileTransfer(name: "photo.jpg", mimeType: "image/jpeg", content: rng.bytes(64 * 1024))
        let filePacket = Packet(version: 2, type: .fileTransfer, ttl: 7, timestamp: now, senderID: sender,
                                payload: try! file.encoded(), signature: Signature(bytes: rng.bytes(64)))
        let pieces = try! Fragmenter.fragment(filePacket, chunkSize: Fragmenter.defaultChunkSize, fragmentID: 1)
        let wirePieces = pieces.map { try! $0.encoded() }
        print("\n64 KiB file (\(pieces.count) fragments of \(Fragmenter.defaultChunkSize) bytes)")
        let frag = Timer.measure("fragment (into encoded packets)") {
            let ps = try! Fragmenter.fragment(filePacket, chunkSize: Fragmenter.defaultChunkSize, fragmentID: 1)
            for p in ps { blackHole(try! p.encoded()) }
        }
        let reasm = Timer.measure("reassemble (decode all + file TLVs)") {
            var r = Reassembler()
            for (i, bytes) in wirePieces.enumerated() {
                let p = try! Packet(decoding: bytes)
                if case let .complete(whole) = try! r.receive(try! Fragment(decoding: p.payload), from: sender, now: UInt64(i)) {
                    blackHole(try! FileTransfer(decoding: try! Packet(decoding: whole).payload))
                }
            }
        }
        [frag, reasm].forEach(Timer.report)
        let mb = Double(64 * 1024) / 1_048_576
        print("  throughput: fragment \(format1(mb / (frag.nanosPerOp / 1e9))) MiB/s, reassemble \(format1(mb / (reasm.nanosPerOp / 1e9))) MiB/s")

        // 5. GCS filter: 400-byte budget over 1,000 packet IDs.
        let ids = (0..<1000).map { _ in PacketID(high: rng.next(), low: rng.next()) }
        let filter = GCSFilter(ids: ids, budget: 400)
        print("\nGCS filter over 1,000 IDs, 400-byte budget (P=\(filter.p), \(Int(filter.m) >> Int(filter.p)) IDs kept, \(filter.data.count) bytes)")
        let gBuild = Timer.measure("build") { blackHole(GCSFilter(ids: ids, budget: 400)) }
        let gQuery = Timer.measure("query 1,000 IDs (decode once + search)", opsPerCall: 1000) {
            let values = filter.values()
            var hits = 0
            for id in ids where GCSFilter.contains(sortedValues: values, id, m: filter.m) { hits += 1 }
            blackHole(hits)
        }
        let hashes = Timer.measure("floor: SHA-256 of 355 packet IDs") {
            for id in ids.prefix(355) { blackHole(GCSFilter.hash(id)) }
        }
        [gBuild, gQuery, hashes].forEach(Timer.report)
        Timer.ratio("build vs hashing alone", baseline: gBuild, ours: hashes)

        print("\ngoals: encode and decode of the 256-byte signed packet ≤ 300 ns; GCS build < 1 ms")
        print("  encode \(format1(enc.nanosPerOp)) ns \(enc.nanosPerOp <= 300 ? "✓" : "✗"), decode \(format1(dec.nanosPerOp)) ns \(dec.nanosPerOp <= 300 ? "✓" : "✗"), GCS build \(format1(gBuild.nanosPerOp / 1000)) µs \(gBuild.nanosPerOp < 1_000_000 ? "✓" : "✗")")
    }
}
