import Foundation
import StarlingTestSupport
import StarlingCrypto
import StarlingWire
import Testing

/// A flood at a real `starling listen` over UDP on loopback: forged public
/// messages under a known peer's ID and Noise first messages from made-up IDs,
/// while an honest `starling send` speaks. The honest message is shown, the
/// forged ones never, and the node lives on (the in-process tests hold each
/// bound; this one holds the process and its UDP input path).
@Suite(.usesProcesses) struct HostileProcessTests {
    @Test func aFloodOfForgeriesAndHandshakesDoesNotDrownAnHonestPeer() async throws {
        // Listening for 10 minutes (stopped at the end): in CI the test itself can take longer than the 60 s
        // default (every test starts at once), and a node that ended by its own duration is not one that fell over.
        let victim = try MeshProcessTests.node("victim", duration: 600)
        defer { victim.stop() }
        let started = try #require(await victim.waitFor { $0["event"] as? String == "started" })
        let port = UInt16(try #require(started["port"] as? Int))
        let victimHex = try #require(started["peerID"] as? String)
        let victimID = try #require(PeerID(hex: victimHex))
        // Alice's identity, made ahead, so that the attacker can claim her ID.
        let alice = try await MeshProcessTests.identity()
        let aliceID = try #require(PeerID(hex: String(alice.fingerprint.prefix(16))))
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        var flood: [[UInt8]] = []
        for i in 0..<3_000 {
            flood.append(try Packet(type: .message, ttl: 7, timestamp: now, senderID: aliceID, payload: Array("forged \(i)".utf8)).encoded())
        }
        var hs = try HandshakeState(protocol: .bitchat, initiator: true, localStatic: Identity.generate().noiseKey)
        let m1 = try hs.writeMessage()
        for i in 0..<3_000 {
            flood.append(try NoisePackets.handshake(m1, from: PeerID(rawValue: UInt64(i) + 1), to: victimID, timestamp: now).encoded())
        }
        flood.shuffle()
        let sprayer = Task.detached {
            for chunk in stride(from: 0, to: flood.count, by: 500) {
                MeshProcessTests.spray(Array(flood[chunk..<min(chunk + 500, flood.count)]), to: port)
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        let send = try LiveProcess(["send", "--no-discovery", "--port", "0", "--json", "--name", "alice", "--data-dir", alice.dataDir,
                                    "--peer", "127.0.0.1:\(port)", "--wait", "20", "--linger", "1", "the honest one"])
        defer { send.stop() }
        let got = await victim.waitFor(seconds: 30) { $0["event"] as? String == "message" && $0["text"] as? String == "the honest one" }
        #expect(got?["nickname"] as? String == "alice", "\(victim.text.suffix(3_000))")
        await sprayer.value
        try await Task.sleep(for: .milliseconds(500))
        #expect(!victim.text.contains("forged"))
        #expect(victim.process.isRunning, "the victim ended (status \(victim.process.isRunning ? 0 : victim.process.terminationStatus)): \(victim.text.suffix(2_000))")
        // The victim answered few of the 3,000 handshakes (30 a minute from strangers).
        #expect(await send.waitForExit(seconds: 30) == 0, "\(send.text)")
    }
}
