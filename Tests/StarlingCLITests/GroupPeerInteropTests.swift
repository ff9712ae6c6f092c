import Foundation
import StarlingTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 36: an independent group creator (Tests/interop/group_peer.py:
/// `noiseprotocol`, `cryptography`, pynacl, written from docs/PROTOCOL.md)
/// against a real node over UDP: it completes a Noise XX handshake, invites the
/// node into its group (0x06) and sends it a sealed group message (0x25), which
/// the node shows; the node, stopped, then speaks from its data directory with
/// `starling send --to-group` (the group read back from its store), and the
/// peer opens and verifies that message with its own code.
@Suite(.usesProcesses) struct GroupPeerInteropTests {
    /// A UDP port free on 127.0.0.1 now (bound, read and closed).
    @Test func aPythonCreatorAndARealNodeShareAGroupBothWays() async throws {
        let dir = MeshProcessTests.dataDir()
        let node = try LiveProcess(["listen", "--no-discovery", "--port", "0", "--json", "--name", "node", "--duration", "90",
                                    "--announce-interval", "1", "--data-dir", dir])
        defer { node.stop() }
        let port = try await MeshProcessTests.port(of: node)
        let python = PythonEnvironment.python
        try #require(FileManager.default.isExecutableFile(atPath: python.path), "run scripts/install-deps --test")
        let peerPort = try LoopbackPorts.freeUDP()
        let script = BitchatPeerInteropTests.root.appendingPathComponent("Tests/interop/group_peer.py").path
        let peer = Task { try await StarlingProcess.run(executable: python, [script, String(port), String(peerPort)]) }
        let joined = await node.waitFor(seconds: 40) { $0["event"] as? String == "group" && $0["change"] as? String == "joined" }
        #expect(joined?["group"] as? String == "py crew" && joined?["by"] as? String == "python", "\(node.text)")
        let said = await node.waitFor(seconds: 40) { $0["event"] as? String == "groupMessage" }
        #expect(said?["text"] as? String == "group from python" && said?["nickname"] as? String == "python"
                && said?["group"] as? String == "py crew", "\(node.text)")
        kill(node.process.processIdentifier, SIGTERM)
        #expect(await node.waitForExit(seconds: 30) == 0)
        let sent = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--data-dir", dir, "--peer", "127.0.0.1:\(peerPort)",
                                                  "--wait", "15", "--linger", "2", "--to-group", "py crew", "group from starling"])
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        let r = try await peer.value
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stdout.components(separatedBy: "ok: ").count == 9 && !r.stdout.contains("FAILED"), "\(r.stdout)")
    }
}
