import Crypto
import Foundation
import Testing
@testable import StarlingCrypto

/// The crypto-… examples of docs/PROTOCOL.md, against the code.
@Suite struct CryptoDocumentationExampleTests {
    static func example(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/PROTOCOL.md")
        let doc = try String(contentsOf: url, encoding: .utf8)
        let marker = try #require(doc.range(of: "<!-- example: \(name) -->"))
        let open = try #require(doc[marker.upperBound...].range(of: "```hex\n"))
        let close = try #require(doc[open.upperBound...].range(of: "```"))
        return h(String(doc[open.upperBound..<close.lowerBound]))
    }

    @Test func noiseFrame() throws {
        // A transport whose sending key is 00…1f, advanced to counter 5.
        let key = (0..<32).map { UInt8($0) }
        var transport = NoiseTransport(sending: CipherState(key: key), receiving: CipherState(key: key))
        let plaintext = h("01 00046d2d3031 01026869")
        for _ in 0..<5 { _ = try transport.seal([]) }
        let frame = try transport.seal(plaintext)
        #expect(frame == (try Self.example("crypto-noise-frame")))
        #expect(try transport.open(frame) == plaintext)
    }

    @Test func keyFile() throws {
        let identity = Identity(noiseKey: try .init(rawRepresentation: [UInt8](repeating: 1, count: 32)),
                                signingKey: try .init(rawRepresentation: [UInt8](repeating: 2, count: 32)))
        #expect(try KeyFile.encode(identity) == (try Self.example("crypto-key-file")))
    }
}
