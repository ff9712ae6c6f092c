import Foundation
import StarlingTestSupport
import Testing

/// An independent bitchat peer (Tests/interop/bitchat_peer.py: pynacl and
/// hashlib, written from docs/PROTOCOL.md) against a real `starling listen`
/// over UDP: the 2026 announce TLVs (capabilities, bridge geohash), ping and
/// pong, REQUEST_SYNC's options in both numberings, and the board both ways
/// (its post shown by the node; the node's posts, one made by `starling send
/// --board`, handed to it by the board's sync and verified there).
@Suite(.usesProcesses) struct BitchatPeerInteropTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func aPythonPeerAndARealNodeAgreeOnThe2026Additions() async throws {
        let node = try MeshProcessTests.node("node", duration: 60)
        defer { node.stop() }
        let port = try await MeshProcessTests.port(of: node)
        let posted = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--name", "starling", "--data-dir",
                                                    MeshProcessTests.dataDir(), "--peer", "127.0.0.1:\(port)", "--wait", "8", "--linger", "1",
                                                    "--board", "from starling"])
        #expect(posted.status == 0, "\(posted.stdout)\(posted.stderr)")
        #expect(await node.waitFor { $0["event"] as? String == "board" && $0["text"] as? String == "from starling" } != nil, "\(node.text)")
        let python = Self.root.appendingPathComponent(".venv/bin/python")
        try #require(FileManager.default.isExecutableFile(atPath: python.path), "run scripts/install-deps --test")
        let r = try await StarlingProcess.run(executable: python,
                                              [Self.root.appendingPathComponent("Tests/interop/bitchat_peer.py").path, String(port)])
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stdout.components(separatedBy: "ok: ").count == 12, "\(r.stdout)")
        #expect(!r.stdout.contains("FAILED"))
        // Its signed public message is shown under the nickname its announce gave.
        let shown = await node.waitFor { $0["event"] as? String == "message" && $0["text"] as? String == "from python" }
        #expect(shown?["nickname"] as? String == "python")
        let board = await node.waitFor { $0["event"] as? String == "board" && $0["text"] as? String == "board from python" }
        #expect(board?["nickname"] as? String == "python" && board?["urgent"] as? Bool == false, "\(node.text)")
        #expect(board?["author"] as? String == "python", "the Python peer's announce carries the post's key: \(node.text)")
        // The node read the capabilities its announce gave (0x40 0x01: bits 6 and 8).
        let pythonID = await node.waitFor { $0["event"] as? String == "peer" && $0["nickname"] as? String == "python" }?["peerID"] as? String
        let caps = await node.waitFor { $0["event"] as? String == "capabilities" && $0["peerID"] as? String == pythonID && ($0["bits"] as? Int) != nil }
        #expect(caps?["capabilities"] as? [String] == ["meshDiagnostics", "privateMedia"], "\(node.text)")
        #expect(caps?["bits"] as? Int == 0x140)
    }

    /// Voice: an independent speaker (Tests/interop/voice_peer.py: FFmpeg's AAC
    /// encoder through PyAV) sends 2 s of a 440 Hz tone as a signed public burst;
    /// the node says `voice from …` and saves a file FFmpeg's decoder plays back
    /// as 2 s of 16 kHz mono audio, still at 440 Hz.
    @Test func aVoiceBurstFromAnIndependentSpeakerIsSavedAsAudioThatPlays() async throws {
        let node = try MeshProcessTests.node("node", duration: 60)
        defer { node.stop() }
        let port = try await MeshProcessTests.port(of: node)
        let python = Self.root.appendingPathComponent(".venv/bin/python")
        try #require(FileManager.default.isExecutableFile(atPath: python.path), "run scripts/install-deps --test")
        let script = Self.root.appendingPathComponent("Tests/interop/voice_peer.py").path
        let spoke = try await StarlingProcess.run(executable: python, [script, "send", String(port)])
        #expect(spoke.status == 0, "\(spoke.stdout)\n\(spoke.stderr)")
        let heard = try #require(await node.waitFor(seconds: 30) { $0["event"] as? String == "voice" }, "\(node.text)")
        let path = try #require(heard["path"] as? String)
        #expect(heard["private"] as? Bool == false && (heard["text"] as? String)?.hasPrefix("voice from ") == true)
        #expect(path.hasSuffix("_mesh.aac") && path.contains("/files/incoming/voice_"), "\(path)")
        let ms = heard["durationMillis"] as? Int ?? 0
        #expect((1_900...2_400).contains(ms), "\(ms) ms")
        let played = try await StarlingProcess.run(executable: python, [script, "check", path])
        #expect(played.status == 0, "\(played.stdout)\n\(played.stderr)")
        #expect(played.stdout.components(separatedBy: "ok: ").count == 5 && !played.stdout.contains("FAILED"), "\(played.stdout)")
    }

    /// A private voice note from the same independent speaker (in a Noise
    /// session of `noiseprotocol`'s) reaches `starling chat`, which shows it and
    /// keeps it in the conversation's history: `/history speaker` says it is a
    /// voice note of about 2 s and where it was saved.
    @Test func aPrivateVoiceNoteIsInTheTerminalsHistory() async throws {
        let port = try LoopbackPorts.freeUDP()
        let chat = try LiveProcess(["chat", "--plain", "--no-discovery", "--port", String(port), "--name", "carol", "--announce-interval", "1",
                                    "--data-dir", MeshProcessTests.dataDir()])
        defer { chat.stop() }
        #expect(await chat.waitForText("carol"), "\(chat.text)")
        let python = Self.root.appendingPathComponent(".venv/bin/python")
        try #require(FileManager.default.isExecutableFile(atPath: python.path), "run scripts/install-deps --test")
        let spoke = try await StarlingProcess.run(executable: python, [Self.root.appendingPathComponent("Tests/interop/voice_peer.py").path,
                                                                       "send-private", String(port)])
        #expect(spoke.status == 0, "\(spoke.stdout)\n\(spoke.stderr)")
        #expect(await chat.waitForText("voice from speaker", seconds: 30), "\(chat.text)")
        chat.type("/history speaker")
        #expect(await chat.waitForText("<speaker → you> voice note (2", seconds: 30), "\(chat.text)") // 2 s, or 2.1 s with the encoder's flush
        #expect(chat.text.contains(" s) saved to ") && chat.text.contains("_dm.aac"), "\(chat.text)")
    }
}
