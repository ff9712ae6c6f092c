import Foundation
import StarlingWire
import Testing

// README example: begin
func readmeCodecExample() throws -> (bytes: [UInt8], back: Packet, toSign: [UInt8]) {
let packet = Packet(type: .message, ttl: 7, timestamp: 1_763_800_000_000,
                    senderID: PeerID(hex: "a1b2c3d4e5f60718")!, payload: Array("hello".utf8))
let bytes = try packet.encoded()            // 27 bytes on the wire
let back = try Packet(decoding: bytes)      // throws WireError(field:offset:) on bad input
let toSign = try packet.signingPreimage()   // TTL 0, no signature, isRSR cleared, padded
// README example: end
return (bytes, back, toSign)
}

/// README's "Use the codec from Swift", compiled and run as README shows it
/// (issue 52: the README as a test), with what its comments claim.
@Suite struct ReadmeCodecExampleTests {
    @Test func theREADMEShowsTheCodeThatRunsAndItDoesWhatItSays() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        func between(_ text: String, _ start: String, _ end: String) -> String? {
            guard let a = text.range(of: start), let b = text.range(of: end, range: a.upperBound..<text.endIndex) else { return nil }
            return String(text[a.upperBound..<b.lowerBound])
        }
        let inReadme = try #require(between(readme, "```swift\nimport StarlingWire\n\n", "```"))
        let inSource = try #require(between(source, "throws -> (bytes: [UInt8], back: Packet, toSign: [UInt8]) {\n", "// README example: end"))
        #expect(inReadme == inSource, "README:\n\(inReadme)\nsource:\n\(inSource)")
        let (bytes, back, toSign) = try readmeCodecExample()
        #expect(bytes.count == 27)
        #expect(bytes.map { String(format: "%02x", $0) }.joined() == "0102070000019aaaac2600000005a1b2c3d4e5f6071868656c6c6f")
        #expect(back.payload == Array("hello".utf8) && back.ttl == 7)
        #expect(toSign.count > bytes.count && toSign[2] == 0, "TTL 0 and padded: \(toSign.count) bytes")
        #expect(throws: WireError.self) { try Packet(decoding: Array(bytes.prefix(16))) }
    }
}
