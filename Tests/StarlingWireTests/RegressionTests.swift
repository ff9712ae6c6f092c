import Foundation
import Testing
@testable import StarlingWire

/// Inputs found by the fuzzers (Fuzz/, scripts/fuzz) are kept in
/// Tests/StarlingWireTests/Regressions/<decoder>/ and replayed here: each must be
/// handled (decoded or rejected with a typed error) without trapping.
@Suite struct RegressionTests {
    /// Replayed by the suites that own their code paths: StarlingCryptoTests'
    /// CryptoRegressionTests (keys) and StarlingMeshTests' HostileInputTests (the router).
    static let replayedElsewhere: Set<String> = ["noise-session", "router"]

    static func inputs() -> [String] {
        guard let root = Bundle.module.url(forResource: "Regressions", withExtension: nil),
              let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { return [] }
        return walker.compactMap { ($0 as? URL)?.path }.filter { !$0.hasSuffix(".keep") && !$0.hasSuffix("README.md") }
            .filter { var d: ObjCBool = false; return FileManager.default.fileExists(atPath: $0, isDirectory: &d) && !d.boolValue }
            .filter { !replayedElsewhere.contains(URL(fileURLWithPath: $0).deletingLastPathComponent().lastPathComponent) }
            .sorted()
    }

    @Test func regressionCorpusIsPresent() {
        #expect(Bundle.module.url(forResource: "Regressions", withExtension: nil) != nil)
        #expect(!Self.inputs().isEmpty, "no regression inputs bundled")
    }

    @Test(arguments: inputs())
    func replay(path: String) throws {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let decoder = URL(fileURLWithPath: path).deletingLastPathComponent().lastPathComponent
        // Each decoder either succeeds and round-trips, or throws its typed error.
        switch decoder {
        case "packet":
            if let p = try? Packet(decoding: bytes) { #expect(try Packet(decoding: p.encoded()) == p) }
        case "announce":
            if let a = try? Announce(decoding: bytes) { #expect(try Announce(decoding: a.encoded()) == a) }
        case "file-transfer":
            if let f = try? FileTransfer(decoding: bytes) { #expect(try FileTransfer(decoding: f.encoded()) == f) }
        case "request-sync":
            if let r = try? RequestSync(decoding: bytes) {
                #expect(r.filter.values().count <= r.filter.data.count * 8)
                #expect(try RequestSync(decoding: r.encoded()) == r) // as the fuzzer checks it
            }
        case "noise-payload":
            if let n = try? NoisePayload(decoding: bytes) { #expect(try NoisePayload(decoding: n.encoded()) == n) }
        case "fragment":
            if let f = try? Fragment(decoding: bytes) { #expect(f.encoded() == bytes) }
        case "reassembler":
            var r = Reassembler()
            var i = 0, now: UInt64 = 0
            while i < bytes.count {
                let n = Int(bytes[i]); i += 1
                let record = Array(bytes[i..<min(i + n, bytes.count)]); i += n
                now += 100
                if let f = try? Fragment(decoding: record) { _ = try? r.receive(f, from: PeerID(rawValue: 7), now: now) }
            }
            #expect(r.inProgressCount <= r.limits.maxInProgress)
        case "noise-session", "router":
            Issue.record("\(path) belongs to another suite (replayedElsewhere)")
        case "wifiset":
            if let f = try? WiFiSet.Frame(decoding: bytes) { #expect(try WiFiSet.Frame(decoding: f.encoded()) == f) }
        case "yaok":
            if let b = try? SealedBody.decode(bytes) { #expect(try b.encode() == bytes) }
            if let m = try? SealedMessageBytes.decode(bytes) { #expect(m.encode() == bytes) }
            if let c = try? ContactCardBytes.decode(bytes) { #expect(try c.encode() == bytes) }
        case "relay":
            for direction in [ServerPacket.Direction.toServer, .toClient] {
                if let p = try? ServerPacket.decode(bytes, direction) { #expect(try ServerPacket.decode(p.encode(), direction) == p) }
            }
        case "state":
            if let s = try? StatePacket(decoding: bytes) { #expect(try StatePacket(decoding: s.encoded()) == s) }
        case "ios-reencode":
            let payload = Array(bytes.prefix(4_096))
            if !payload.isEmpty {
                let p = Packet(type: .message, ttl: 7, timestamp: sampleTime, senderID: aliceID, payload: payload)
                #expect(try p.signingPreimage() == IOSCompressionTests.iosSigningBytes(try Packet(decoding: p.encoded())))
            }
        default:
            Issue.record("unknown regression folder \(decoder)")
        }
    }
}
