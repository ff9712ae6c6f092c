import Crypto
import Foundation
import StarlingCrypto
import StarlingWire
import Testing

func h(_ text: String) -> [UInt8] { try! [UInt8](hex: text) }

let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// A block of docs/PROTOCOL.md after `<!-- example: NAME -->`: its text.
func documentExample(_ name: String, fence: String = "hex") throws -> String {
    let doc = try String(contentsOf: repoRoot.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
    let marker = try #require(doc.range(of: "<!-- example: \(name) -->"), "no example \(name) in PROTOCOL.md")
    let open = try #require(doc[marker.upperBound...].range(of: "```\(fence)\n"))
    let close = try #require(doc[open.upperBound...].range(of: "```"))
    return String(doc[open.upperBound..<close.lowerBound])
}

/// A hex example of docs/PROTOCOL.md, without its spaces and line breaks.
func documentHex(_ name: String) throws -> String {
    try documentExample(name).filter { !$0.isWhitespace }.lowercased()
}

/// The identities of the documentation's examples: private keys of one
/// repeated byte.
func exampleIdentity(_ noise: UInt8, _ signing: UInt8) -> Identity {
    Identity(noiseKey: try! .init(rawRepresentation: [UInt8](repeating: noise, count: 32)),
             signingKey: try! .init(rawRepresentation: [UInt8](repeating: signing, count: 32)))
}

/// A fresh directory under the system's temporary directory.
func temporaryDirectory(_ label: String) -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("starling-\(label)-\(UUID().uuidString)")
    try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
