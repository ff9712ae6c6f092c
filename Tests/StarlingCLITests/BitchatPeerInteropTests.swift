import Foundation
import StarlingTestSupport
import Testing

/// An independent bitchat peer (Tests/interop/bitchat_peer.py: pynacl and
/// hashlib, written from docs/PROTOCOL.md) against a real `starling listen`
/// over UDP: the 2026 announce TLVs (capabilities, bridge geohash), ping and
/// pong, and REQUEST_SYNC's options in both numberings.
@Suite(.usesProcesses) struct BitchatPeerInteropTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func aPythonPeerAndARealNodeAgreeOnThe2026Additions() async throws {
        let node = try MeshProcessTests.node("node", duration: 60)
        defer { node.stop() }
        let port = try await MeshProcessTests.port(of: node)
        let python = Self.root.appendingPathComponent(".venv/bin/python")
        try #require(FileManager.default.isExecutableFile(atPath: python.path), "run scripts/install-deps --test")
        let r = try await StarlingProcess.run(executable: python,
                                              [Self.root.appendingPathComponent("Tests/interop/bitchat_peer.py").path, String(port)])
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stdout.components(separatedBy: "ok: ").count == 10, "\(r.stdout)")
        #expect(!r.stdout.contains("FAILED"))
        // Its signed public message is shown under the nickname its announce gave.
        let shown = await node.waitFor { $0["event"] as? String == "message" && $0["text"] as? String == "from python" }
        #expect(shown?["nickname"] as? String == "python")
        // The node read the capabilities its announce gave (0x40 0x01: bits 6 and 8).
        let caps = await node.waitFor { $0["event"] as? String == "capabilities" && ($0["bits"] as? Int) != nil }
        #expect(caps?["capabilities"] as? [String] == ["meshDiagnostics", "privateMedia"], "\(node.text)")
        #expect(caps?["bits"] as? Int == 0x140)
    }
}
