import Foundation
import StarlingTestSupport
import Testing
@testable import StarlingWire

/// bitchat iOS verifies a signed packet by encoding the packet it decoded again
/// (`BitchatPacket.toBinaryDataForSigning()` → `BinaryProtocol.encode`), and its
/// encoder compresses the payload again under its own rule. These tests hold
/// Starling's encoder to that rule with bytes made outside it
/// (Tests/vectors/ios_compression.py: the iOS source's rule through Python's
/// zlib), and with a model of the iOS encoder written here from its source.
@Suite struct IOSCompressionTests {
    struct Vectors: Decodable {
        struct Named: Decodable {
            let name: String
            let text_hex: String
            let deflate_level5_hex: String
            let saving_bytes_level5: Int
            let ios_compresses: Bool
        }
        struct Text: Decodable {
            let text_hex: String
            let deflate_hex: String
            let level6_differs: Bool
        }
        let vectors: [Named]
        let corpus: [Text]
    }

    static let vectors: Vectors = {
        let url = Bundle.module.url(forResource: "ios_compression_vectors", withExtension: "json")!
        return try! JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }()

    /// The iOS encoder's signing bytes for a decoded packet, written from
    /// BitFoundation's BinaryProtocol.encode / CompressionUtil (9b84b361):
    /// `shouldCompress` = count >= 100 and Set(data).count / min(count, 256) < 0.9;
    /// COMPRESSION_ZLIB (raw DEFLATE, zlib level 5) used when shorter than the
    /// payload; the size prefix written after; TTL 0, no signature, no RSR, padded.
    static func iosSigningBytes(_ p: Packet) -> [UInt8] {
        let payload = p.payload
        var body = payload
        var compressed = false
        let distinct = Set(payload).count
        if payload.count >= 100, Double(distinct) / Double(min(payload.count, 256)) < 0.9,
           let d = Compression.deflate(payload, level: 5), d.count < payload.count {
            body = d
            compressed = true
        }
        let lengthBytes = p.version == 2 ? 4 : 2
        var flags: UInt8 = 0
        if p.recipientID != nil { flags |= 0x01 }
        if compressed { flags |= 0x04 }
        if p.route != nil { flags |= 0x08 }
        var out: [UInt8] = [p.version, p.type.rawValue, 0]
        for i in (0..<8).reversed() { out.append(UInt8(truncatingIfNeeded: p.timestamp >> (8 * UInt64(i)))) }
        out.append(flags)
        let length = body.count + (compressed ? lengthBytes : 0)
        for i in (0..<lengthBytes).reversed() { out.append(UInt8(truncatingIfNeeded: length >> (8 * i))) }
        out.append(contentsOf: p.senderID.bytes)
        if let r = p.recipientID { out.append(contentsOf: r.bytes) }
        if let route = p.route {
            out.append(UInt8(route.count))
            for hop in route { out.append(contentsOf: hop.bytes) }
        }
        if compressed {
            for i in (0..<lengthBytes).reversed() { out.append(UInt8(truncatingIfNeeded: payload.count >> (8 * i))) }
        }
        out.append(contentsOf: body)
        // MessagePadding: the smallest of 256/512/1024/2048 with room for 16 more, when 1-255 bytes are needed.
        if let block = [256, 512, 1024, 2048].first(where: { out.count + 16 <= $0 }) {
            let pad = block - out.count
            if pad >= 1, pad <= 255 { out.append(contentsOf: repeatElement(UInt8(pad), count: pad)) }
        }
        return out
    }

    static func message(_ text: [UInt8], version: UInt8 = 1) -> Packet {
        Packet(version: version, type: .message, ttl: 7, timestamp: sampleTime, senderID: aliceID, payload: text)
    }

    @Test func theNamedVectorsAreWhatIOSMakes() throws {
        #expect(Self.vectors.vectors.count >= 14)
        for v in Self.vectors.vectors {
            let text = try [UInt8](hex: v.text_hex)
            for version: UInt8 in [1, 2] {
                let p = Self.message(text, version: version)
                if v.ios_compresses {
                    #expect(p.compressedPayload == (try [UInt8](hex: v.deflate_level5_hex)), "\(v.name) v\(version)")
                } else {
                    #expect(p.compressedPayload == nil, "\(v.name) v\(version): iOS sends it plain")
                }
                #expect(try p.signingPreimage() == Self.iosSigningBytes(p), "\(v.name) v\(version)")
            }
        }
        // The boundary the old rule got wrong, and its controls on each side.
        let byName = Dictionary(uniqueKeysWithValues: Self.vectors.vectors.map { ($0.name, $0) })
        for (name, saving, compressed) in [("key139_saving0", 0, false), ("key139_saving1", 1, true),
                                           ("key139_saving2", 2, true), ("key139_saving3", 3, true),
                                           ("threshold_99", 25, false), ("threshold_100", 26, true)] {
            let v = try #require(byName[name])
            #expect(v.saving_bytes_level5 == saving && v.ios_compresses == compressed, "\(name)")
        }
    }

    @Test(.computesHeavily) func theCorpusIsWhatIOSMakes() throws {
        let corpus = Self.vectors.corpus
        #expect(corpus.count >= 500)
        #expect(corpus.filter(\.level6_differs).count >= 50, "the corpus must hold texts where levels 5 and 6 differ")
        #expect(corpus.filter { !$0.deflate_hex.isEmpty }.count > 100 && corpus.filter { $0.deflate_hex.isEmpty }.count > 100)
        for (i, t) in corpus.enumerated() {
            let text = try [UInt8](hex: t.text_hex)
            let p = Self.message(text)
            let want: [UInt8]? = t.deflate_hex.isEmpty ? nil : try [UInt8](hex: t.deflate_hex)
            #expect(p.compressedPayload == want, "corpus text \(i) (\(text.count) bytes)")
        }
        // Positive control: level 6, the old setting, misses these.
        let differing = try corpus.filter(\.level6_differs).map { try [UInt8](hex: $0.text_hex) }
        #expect(differing.allSatisfy { Compression.deflate($0, level: 6) != Message.compressed($0) })
    }

    /// Sign, send, decode, and re-encode as an iPhone does: the bytes it checks
    /// the signature against are the bytes we signed, for texts of 1-400 bytes.
    /// (On a thread of its own: 100,000 texts take seconds of CPU, and the
    /// suite's cooperative threads — two on CI — are shared with process tests.)
    @Test(.computesHeavily) func everySignedTextSurvivesTheIPhonesReencoding() async throws {
        let failure: String? = try await withCheckedThrowingContinuation { c in
            Thread { c.resume(with: Result { try Self.reencodeRandomTexts() }) }.start()
        }
        #expect(failure == nil, "\(failure ?? "")")
    }

    /// The property over random texts: nil, or the first text that fails.
    static func reencodeRandomTexts() throws -> String? {
        let count = ProcessInfo.processInfo.environment["STARLING_IOS_PROPERTY_COUNT"].flatMap(Int.init) ?? 100_000
        var rng = SeededRandom(seed: 0x1_05C0)
        let words = "the mesh is up meet at the north gate my new key is ask me for the key ok lol".split(separator: " ")
        let b64 = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var compressedCount = 0, growing = 0
        for i in 0..<count {
            let length = Int.random(in: 1...400, using: &rng)
            var text: [UInt8]
            switch i % 4 {
            case 0: text = (0..<length).map { _ in b64.randomElement(using: &rng)! }
            case 1:
                text = []
                while text.count < length { text += Array(words.randomElement(using: &rng)!.utf8) + [0x20] }
            case 2: text = Array(rng.text(maxBytes: length).utf8)
            default:
                let token = (0..<Int.random(in: 4...60, using: &rng)).map { _ in b64.randomElement(using: &rng)! }
                text = Array("my new key is ".utf8) + token + Array(" (ask me for the key) ".utf8)
                while text.count < length { text += token }
            }
            text = Array(text.prefix(length))
            guard !text.isEmpty else { continue }
            let sent = Self.message(text, version: i % 8 == 7 ? 2 : 1)
            let received = try Packet(decoding: try sent.encoded())
            let mine = try sent.signingPreimage()
            let theirs = Self.iosSigningBytes(received)
            if mine != theirs {
                return "text \(i) (\(text.count) bytes, v\(sent.version)): \(text.hexString) signs differently from the iPhone's re-encoding"
            }
            if let c = sent.compressedPayload {
                compressedCount += 1
                if c.count + (sent.version == 2 ? 4 : 2) >= text.count { growing += 1 }
            }
        }
        // The property saw both forms, and the boundary the old rule got wrong.
        if count >= 10_000 {
            if compressedCount <= count / 10 { return "only \(compressedCount) of \(count) texts were compressed" }
            if growing == 0 { return "no text where DEFLATE saves fewer bytes than the size prefix" }
        }
        return nil
    }

    /// The old rule (the prefix counted) fails the model: the test can fail.
    @Test func theModelCatchesTheOldRule() throws {
        let v = try #require(Self.vectors.vectors.first { $0.name == "key139_saving2" })
        let text = try [UInt8](hex: v.text_hex)
        let plain = Packet(type: .message, ttl: 7, timestamp: sampleTime, senderID: aliceID, payload: text, compress: false)
        #expect(try plain.signingPreimage() != Self.iosSigningBytes(plain))
        #expect(try Self.message(text).signingPreimage() == Self.iosSigningBytes(plain))
    }
}

private enum Message {
    static func compressed(_ text: [UInt8]) -> [UInt8]? {
        Packet(type: .message, ttl: 7, timestamp: 0, senderID: aliceID, payload: text).compressedPayload
    }
}
