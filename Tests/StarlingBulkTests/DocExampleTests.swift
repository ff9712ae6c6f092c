import Foundation
import StarlingBulk
import StarlingTestSupport
import StarlingWire
import Testing

let bulkRepoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A hex block of docs/PROTOCOL.md after `<!-- example: NAME -->`, without spaces and line breaks.
func bulkDocumentHex(_ name: String) throws -> String {
    let doc = try String(contentsOf: bulkRepoRoot.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
    let marker = try #require(doc.range(of: "<!-- example: \(name) -->"), "no example \(name) in PROTOCOL.md")
    let open = try #require(doc[marker.upperBound...].range(of: "```hex\n"))
    let close = try #require(doc[open.upperBound...].range(of: "```"))
    return String(doc[open.upperBound..<close.lowerBound]).filter { !$0.isWhitespace }.lowercased()
}

extension Array where Element == UInt8 {
    var hexText: String { map { String(format: "%02x", $0) }.joined() }
}

/// docs/PROTOCOL.md, "Bulk transfer": its examples are what the code builds.
@Suite struct BulkDocumentTests {
    static let offer = BulkOffer(transferID: Array(0..<16), name: "map.pdf", size: 100_000_000, sha256: [UInt8](repeating: 0xAB, count: 32),
                                 mimeType: "application/pdf", key: [UInt8](repeating: 0x07, count: 32),
                                 addresses: ["192.168.1.20:47400"], chunkSize: 65_536)

    @Test func theDocumentedExamples() throws {
        let offer = try Self.offer.encoded()
        #expect(offer.hexText == (try bulkDocumentHex("bulk-offer")), "computed: \(offer.hexText)")
        let (hello, seal) = BulkSeal.hello(offer: Self.offer, from: 0, nonce: [UInt8](repeating: 0x01, count: 32))
        #expect(hello.encoded().hexText == (try bulkDocumentHex("bulk-hello")), "computed: \(hello.encoded().hexText)")
        let ack = seal.ack(0).encoded()
        #expect(ack.hexText == (try bulkDocumentHex("bulk-ack")), "computed: \(ack.hexText)")
        let chunk = seal.chunk(0, Array("hi".utf8)).encoded()
        #expect(chunk.hexText == (try bulkDocumentHex("bulk-chunk")), "computed: \(chunk.hexText)")
    }
}

/// The same examples from Python's `cryptography` (HKDF, ChaCha20Poly1305),
/// written from the document alone: an independent implementation agrees.
@Suite(.usesProcesses) struct BulkInteropTests {
    @Test func pythonsCryptographyBuildsTheSameTagsAndChunk() async throws {
        let out = try await PythonEnvironment.run("bulk_vectors.py")
        let parsed = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: String]
        let json = try #require(parsed, "\(out)")
        let (hello, seal) = BulkSeal.hello(offer: BulkDocumentTests.offer, from: 0, nonce: [UInt8](repeating: 0x01, count: 32))
        guard case let .hello(_, _, _, tag) = hello, case let .chunk(_, sealed) = seal.chunk(0, Array("hi".utf8)),
              case let .ack(_, ackTag) = seal.ack(0) else { Issue.record("frames"); return }
        #expect(json["helloTag"] == tag.hexText && json["chunk"] == sealed.hexText && json["ackTag"] == ackTag.hexText, "\(json)")
        #expect(try bulkDocumentHex("bulk-hello").hasSuffix(try #require(json["helloTag"])))
    }
}
