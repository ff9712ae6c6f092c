import Foundation
import Testing

/// docs/PROTOCOL.md's byte-exact examples, for the tests that hold them.
public enum ProtocolDocument {
    public static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/PROTOCOL.md")

    /// The hex block after `<!-- example: NAME -->`, as bytes.
    public static func example(_ name: String) throws -> [UInt8] {
        let doc = try String(contentsOf: url, encoding: .utf8)
        let marker = try #require(doc.range(of: "<!-- example: \(name) -->"), "no example \(name) in PROTOCOL.md")
        let open = try #require(doc[marker.upperBound...].range(of: "```hex\n"))
        let close = try #require(doc[open.upperBound...].range(of: "```"))
        let hex = doc[open.upperBound..<close.lowerBound].filter { $0.isHexDigit }
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex, let j = hex.index(i, offsetBy: 2, limitedBy: hex.endIndex) {
            out.append(try #require(UInt8(hex[i..<j], radix: 16)))
            i = j
        }
        return out
    }
}
