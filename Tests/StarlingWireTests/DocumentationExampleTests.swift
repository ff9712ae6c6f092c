import Crypto
import Foundation
import Testing
@testable import StarlingWire

/// Holds docs/PROTOCOL.md to the code: every block marked `<!-- example: NAME -->`
/// must equal, byte for byte, what the codec produces for that example.
@Suite struct DocumentationExampleTests {
    static let document: String = {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/PROTOCOL.md")
        return (try? String(contentsOf: url, encoding: .utf8)) ?? ""
    }()

    /// NAME → the hex block that follows its marker.
    static let examples: [String: [UInt8]] = {
        var out: [String: [UInt8]] = [:]
        var rest = document[...]
        while let marker = rest.range(of: "<!-- example: ") {
            let nameEnd = rest[marker.upperBound...].range(of: " -->")!
            let name = String(rest[marker.upperBound..<nameEnd.lowerBound])
            // The example is the first fenced block after its marker; only hex
            // blocks are bytes (a ```text example is checked where it is made).
            let fence = rest[nameEnd.upperBound...].range(of: "```")!
            let close = rest[fence.upperBound...].range(of: "```")!
            let block = rest[fence.upperBound..<close.lowerBound]
            if block.hasPrefix("hex\n") { out[name] = try! [UInt8](hex: block.dropFirst(4)) }
            rest = rest[close.upperBound...]
        }
        return out
    }()

    static func expected() throws -> [String: [UInt8]] {
        let frame = Packet(type: .noiseEncrypted, ttl: 7, timestamp: sampleTime, senderID: aliceID,
                           recipientID: bobID, payload: repeated(0xAB, 40))
        var preimageSource = try Packet(decoding: GoldenVectorTests.signedBroadcast)
        preimageSource.ttl = 3
        preimageSource.isRSR = true
        let gcsIDs = (0..<20).map { i in
            PacketID(bytes: Array(SHA256.hash(data: Array("starling-gcs-\(i)".utf8))).prefix(16))!
        }
        return [
            "public-message": GoldenVectorTests.publicMessage,
            "signed-broadcast": GoldenVectorTests.signedBroadcast,
            "routed-v2": GoldenVectorTests.routedV2,
            "compressed-v1": try Packet(type: .message, ttl: 7, timestamp: sampleTime, senderID: aliceID,
                                        payload: GoldenVectorTests.bitchatText).encoded(),
            "compressed-ios-rule": try Packet(type: .message, ttl: 7, timestamp: sampleTime, senderID: aliceID,
                                              payload: IOSCompressionTests.vectors.vectors.first { $0.name == "key139_saving2" }
                                                  .map { try [UInt8](hex: $0.text_hex) } ?? []).encoded(),
            "padded-noise-frame": try frame.encoded(padded: true),
            "signing-preimage": try preimageSource.signingPreimage(),
            "packet-id": PacketID(try Packet(decoding: GoldenVectorTests.publicMessage)).bytes,
            "announce": try Announce(decoding: GoldenVectorTests.announcePayload).encoded(),
            "private-message": try NoisePayload.privateMessage(PrivateMessage(messageID: "m-01", content: "hi")).encoded(),
            "delivered": try NoisePayload.delivered(messageID: "m-01").encoded(),
            "fragment": Fragment(fragmentID: 0x0102_0304_0506_0708, index: 1, total: 3, originalType: .message,
                                 data: [0xCA, 0xFE]).encoded(),
            "file-transfer": try FileTransfer(name: "note.txt", mimeType: "text/plain", content: Array("hello".utf8)).encoded(),
            "request-sync": try RequestSync(filter: GCSFilter(ids: gcsIDs)).encoded(),
            "voice-start": VoiceBurst(burstID: [1, 2, 3, 4, 5, 6, 7, 8], sequence: 0, kind: .start(codec: 1)).encoded(),
            "voice-audio": VoiceBurst(burstID: [1, 2, 3, 4, 5, 6, 7, 8], sequence: 1, kind: .audio([[0xDE, 0xAD, 0xBE]])).encoded(),
            "voice-end": VoiceBurst(burstID: [1, 2, 3, 4, 5, 6, 7, 8], sequence: 42, kind: .end(audioPackets: 41, durationMillis: 2_688)).encoded(),
            "voice-cancelled": VoiceBurst(burstID: [1, 2, 3, 4, 5, 6, 7, 8], sequence: 3, kind: .cancelled).encoded(),
            "voice-adts": VoiceBurst.adts([0xDE, 0xAD, 0xBE]),
            "request-sync-board": try RequestSync(filter: GCSFilter(ids: []), types: SyncTypes([.boardPost])).encoded(),
            "version-hello": try VersionNegotiation.encodeHello([1, 2]),
            "wifiset-network-entry": try WiFiSet.Frame(sequence: 5, .networkEntry(.init(ssid: "MyNetwork2.4", rssi: -56,
                                                                                         security: .wpaPSK, channel: 6))).encoded(),
            "ping": try Packet(type: .ping, ttl: 7, timestamp: sampleTime, senderID: aliceID, recipientID: bobID,
                               payload: [1, 2, 3, 4, 5, 6, 7, 8, 7], compress: false).encoded(),
            // Hand-built: no encoder writes a size its body does not inflate to.
            "message-bomb": h("02 02 07 \(sampleTimeHex) 04 00000005 a1b2c3d4e5f60718 00100000 4b"),
            "nostr-carrier-bridge": try NostrCarrier(direction: .toBridge, geohash: "u4pruy", eventJSON: Array("{}".utf8)).encoded(),
            "wifiset-credential-write": try WiFiSet.Frame(sequence: 1, .credentialWrite(ssid: "MyNetwork2.4", password: "mypassword123")).encoded(),
            "wifiset-status-response": try WiFiSet.Frame(sequence: 10, .statusResponse(.init(state: .connected, rssi: -56, ip: [192, 168, 1, 100],
                                                                                              ssid: "MyNetwork2.4"))).encoded(),
        ]
    }

    @Test func everyExampleMatchesTheCode() throws {
        let expected = try Self.expected()
        #expect(!Self.examples.isEmpty, "docs/PROTOCOL.md not found or has no examples")
        // Examples named crypto-… are checked by StarlingCryptoTests, hello by StarlingTransportTests,
        // stately-… by StarlingStatelyTests, yaok-… by StarlingYaOKTests (they need keys),
        // bulk-… by StarlingBulkTests (the sealing), board-…, prekey-… and group-… by StarlingCryptoTests (signed),
        // nostr-carrier by StarlingNodeTests' GatewayTests and bridge-… by its BridgeTests (signed Nostr events),
        // mailbox-… by StarlingYaOKServerTests' ServerPacketTests.
        for (name, bytes) in Self.examples where !name.hasPrefix("crypto-") && !name.hasPrefix("stately-")
            && !name.hasPrefix("yaok-") && !name.hasPrefix("bulk-") && !name.hasPrefix("board-") && !name.hasPrefix("prekey-")
            && !name.hasPrefix("group-") && name != "announce-v2" && name != "vouch-batch"
            && !name.hasPrefix("courier-") && name != "hello" && name != "nostr-carrier"
            && !name.hasPrefix("bridge-") && !name.hasPrefix("mailbox-") {
            let want = try #require(expected[name], "example \(name) in docs/PROTOCOL.md has no check")
            #expect(bytes == want, "example \(name): doc \(bytes.hexString) ≠ code \(want.hexString)")
        }
        for name in expected.keys {
            #expect(Self.examples[name] != nil, "example \(name) is missing from docs/PROTOCOL.md")
        }
    }

    @Test func theMessageBombExampleIsRefusedAsTheDocumentSays() throws {
        let bytes = try #require(Self.examples["message-bomb"])
        let error = try #require(#expect(throws: WireError.self) { try Packet(decoding: bytes) })
        #expect(Self.document.contains("refused with `\(error)`"), "docs/PROTOCOL.md should quote: \(error)")
    }

    @Test func packetExamplesDecode() throws {
        for name in ["public-message", "signed-broadcast", "routed-v2", "compressed-v1", "compressed-ios-rule", "padded-noise-frame", "signing-preimage"] {
            let bytes = try #require(Self.examples[name])
            #expect(throws: Never.self, "\(name)") { try Packet(decoding: bytes) }
        }
    }
}
