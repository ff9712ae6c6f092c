import Foundation
import StarlingMessengerAPI
import StarlingTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 36, courier drops as people meet them: `starling send --to bob`
/// while bob is away leaves the message with the neighbour here, who hands
/// it to bob when they meet; three processes, two of bob's starts on one
/// data directory.
@Suite(.serialized, .usesProcesses) struct CourierProcessTests {
    static func listen(_ name: String, _ dir: String, peers: [UInt16] = []) throws -> LiveProcess {
        try LiveProcess(["listen", "--no-discovery", "--port", "0", "--json", "--name", name, "--duration", "120",
                         "--announce-interval", "1", "--data-dir", dir] + peers.flatMap { ["--peer", "127.0.0.1:\($0)"] })
    }

    static func send(_ dir: String, peer: UInt16, _ extra: [String]) async throws -> StarlingProcess.Result {
        try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--name", "alice", "--announce-interval", "1",
                                       "--data-dir", dir, "--peer", "127.0.0.1:\(peer)"] + extra)
    }

    @Test func aMessageForSomeoneAwayIsCarriedByANeighbourAndReadWhenTheyMeet() async throws {
        let aliceDir = MeshProcessTests.dataDir(), bobDir = MeshProcessTests.dataDir()
        defer { for d in [aliceDir, bobDir] { try? FileManager.default.removeItem(atPath: d) } }
        // alice and bob talk once: alice's store keeps bob's Noise key.
        let bobFirst = try Self.listen("bob", bobDir)
        defer { bobFirst.stop() }
        let bobPort = try await MeshProcessTests.port(of: bobFirst)
        let hello = try await Self.send(aliceDir, peer: bobPort, ["--to", "bob", "hello bob"])
        #expect(hello.status == 0, "\(hello.stdout)\(hello.stderr)")
        #expect(await bobFirst.waitFor { $0["text"] as? String == "hello bob" } != nil, "\(bobFirst.text)")
        bobFirst.stop()
        #expect(await bobFirst.waitForExit(seconds: 15) != nil)

        // bob is away; carol is here.
        let carol = try Self.listen("carol", MeshProcessTests.dataDir())
        defer { carol.stop() }
        let carolPort = try await MeshProcessTests.port(of: carol)
        // The control: someone alice never met is not found (nothing to seal to).
        let stranger = try await Self.send(aliceDir, peer: carolPort, ["--to", "dave", "--wait", "3", "who are you?"])
        #expect(stranger.status == 1 && stranger.stderr.contains("dave not found"), "\(stranger.stdout)\(stranger.stderr)")
        let dropped = try await Self.send(aliceDir, peer: carolPort, ["--to", "bob", "--wait", "3", "--json", "meet at the bridge"])
        #expect(dropped.status == 0, "\(dropped.stdout)\(dropped.stderr)")
        let said = dropped.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(said.contains { $0["event"] as? String == "dropDeposited" && $0["couriers"] as? Int == 1 }, "\(dropped.stdout)")
        // In words, too.
        let words = try await Self.send(aliceDir, peer: carolPort, ["--to", "bob", "--wait", "3", "bring water"])
        #expect(words.status == 0 && words.stdout.contains("bob is away: your message went as a courier drop to 1 neighbour"),
                "\(words.stdout)\(words.stderr)")

        // bob is back beside carol (alice gone): both messages, from alice, through the courier; carol read neither.
        let bob = try Self.listen("bob", bobDir, peers: [carolPort])
        defer { bob.stop() }
        for text in ["meet at the bridge", "bring water"] {
            let got = await bob.waitFor(seconds: 60) { $0["event"] as? String == "privateMessage" && $0["text"] as? String == text }
            #expect(got?["via"] as? String == "courier" && got?["nickname"] as? String == "alice", "\(bob.text)")
        }
        #expect(!carol.text.contains("meet at the bridge") && !carol.text.contains("bring water"))
        #expect(bob.events.filter { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "meet at the bridge" }.count == 1,
                "shown once: \(bob.text)")
    }

    /// Both ways with an independent peer (Tests/interop/courier_peer.py:
    /// `noiseprotocol`, hmac, pynacl, from docs/PROTOCOL.md): its drop sealed to
    /// the node (to its static key, and to a one-time prekey of the bundle the
    /// peer reads from it) is opened and shown as from its key; the node, stopped, then
    /// speaks from its data directory with `send --to pybob` while pybob is
    /// away, and the peer's courier checks the deposit and opens it as pybob.
    @Test func aPythonPeerAndARealNodeExchangeDropsBothWays() async throws {
        let dir = MeshProcessTests.dataDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let node = try Self.listen("node", dir)
        defer { node.stop() }
        let port = try await MeshProcessTests.port(of: node)
        let python = PythonEnvironment.python
        try #require(FileManager.default.isExecutableFile(atPath: python.path), "run scripts/install-deps --test")
        let (bobPort, carolPort) = (try LoopbackPorts.freeUDP(), try LoopbackPorts.freeUDP())
        let script = BitchatPeerInteropTests.root.appendingPathComponent("Tests/interop/courier_peer.py").path
        let peer = Task { try await StarlingProcess.run(executable: python, [script, String(port), String(bobPort), String(carolPort)],
                                                        seconds: 150) }
        let got = await node.waitFor(seconds: 40) { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "drop from python" }
        #expect(got?["via"] as? String == "courier" && got?["nickname"] as? String == "pybob", "\(node.text)")
        // Sealed to one of the node's one-time prekeys, from the bundle the peer read and verified.
        let toPrekey = await node.waitFor(seconds: 40) { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "prekey drop from python" }
        #expect(toPrekey?["via"] as? String == "courier", "\(node.text)")
        kill(node.process.processIdentifier, SIGTERM)
        #expect(await node.waitForExit(seconds: 30) == 0)
        let sent = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--data-dir", dir, "--peer", "127.0.0.1:\(carolPort)",
                                                  "--wait", "3", "--to", "pybob", "drop from starling"])
        #expect(sent.status == 0 && sent.stdout.contains("pybob is away"), "\(sent.stdout)\(sent.stderr)")
        let r = try await peer.value
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        let bobFingerprint = r.stdout.split(separator: "\n").first { $0.hasPrefix("pybob: ") }?.dropFirst(7)
        #expect(bobFingerprint.map { got?["fingerprint"] as? String == String($0) } == true, "the seal proved pybob's key: \(r.stdout)")
        #expect(r.stdout.components(separatedBy: "ok: ").count == 13 && !r.stdout.contains("FAILED"), "\(r.stdout)")
    }

    /// The same through a daemon: `send --to bob` on the daemon's data
    /// directory, bob away (his listen stopped: a signed LEAVE, seen at once),
    /// carol beside the daemon: the daemon's messenger leaves it with carol,
    /// `send` says so and exits 0, and bob back beside carol reads it.
    @Test func aDaemonLeavesAMessageForSomeoneAwayWithANeighbour() async throws {
        let aliceDir = MeshProcessTests.dataDir(), bobDir = MeshProcessTests.dataDir()
        defer { for d in [aliceDir, bobDir] { try? FileManager.default.removeItem(atPath: d) } }
        let bobFirst = try Self.listen("bob", bobDir)
        defer { bobFirst.stop() }
        let bobPort = try await MeshProcessTests.port(of: bobFirst)
        let d = try DaemonProcessTests.daemon(aliceDir, name: "alice", peer: bobPort)
        defer { d.stop() }
        let (url, token, _) = try await DaemonProcessTests.info(aliceDir, d)
        let api = APIClient(host: try #require(url.host), port: try #require(url.port), token: token)
        #expect(await bobFirst.waitFor { $0["event"] as? String == "peer" && $0["nickname"] as? String == "alice" } != nil, "\(bobFirst.text)")
        func peers() async throws -> [String] {
            ((try await api.get("/v1/peers")) as? [[String: Any]] ?? []).compactMap { $0["nickname"] as? String }
        }
        // The daemon has taken bob's announce too (bob seeing alice says nothing of it on a loaded machine).
        var met = false
        for _ in 0..<600 where !met {
            met = try await peers().contains("bob")
            if !met { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(met, "the daemon knows bob")
        // A first message opens a Noise session: on a loaded machine its receipt can take more than the default 10 s
        // (send lingers for the read receipt too, which listen never sends: 30 s keeps it within the 60 s a run may take).
        let hello = try await StarlingProcess.run(["send", "--data-dir", aliceDir, "--to", "bob", "--linger", "30", "hello bob"])
        #expect(hello.status == 0, "\(hello.stdout)\(hello.stderr)")
        kill(bobFirst.process.processIdentifier, SIGTERM)
        #expect(await bobFirst.waitForExit(seconds: 15) == 0)
        // The daemon hears bob go (his LEAVE), then carol come.
        let udp = try #require((try await api.get("/v1/status") as? [String: Any])?["udpPort"] as? Int)
        let carol = try Self.listen("carol", MeshProcessTests.dataDir(), peers: [UInt16(udp)])
        defer { carol.stop() }
        let carolPort = try await MeshProcessTests.port(of: carol)
        var ready = false
        for _ in 0..<600 where !ready {
            let here = try await peers()
            ready = here == ["carol"]
            if !ready { try await Task.sleep(for: .milliseconds(50)) }
        }
        let here = try await peers()
        #expect(ready, "bob gone at once (his LEAVE), carol here: \(here)")
        let dropped = try await StarlingProcess.run(["send", "--data-dir", aliceDir, "--to", "bob", "through the daemon"])
        #expect(dropped.status == 0 && dropped.stdout.contains("bob is away: your message went as a courier drop to 1 neighbour"),
                "\(dropped.stdout)\(dropped.stderr)")
        let bob = try Self.listen("bob", bobDir, peers: [carolPort])
        defer { bob.stop() }
        let got = await bob.waitFor(seconds: 60) { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "through the daemon" }
        #expect(got?["via"] as? String == "courier" && got?["nickname"] as? String == "alice", "\(bob.text)")
    }
}

extension CourierProcessTests {
    /// The courier drop across two meshes that never meet: bob meets alice
    /// in mesh A (through `gateA`, announced as `nameA`), so that she keeps
    /// his Noise key; he leaves; her next line to him becomes a courier drop,
    /// which `stored` must see leave mesh A (`nothingYet` holds before it);
    /// bob then joins mesh B through `gateB` and gets it once, by courier,
    /// gateB only carrying it.
    static func aDropReachesBobInTheOtherMesh(gateA: LiveProcess, nameA: String, gateB: LiveProcess, seconds: Double,
                                              nothingYet: () async throws -> Bool, stored: () async throws -> Bool,
                                              sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let (portA, portB) = (try await MeshProcessTests.port(of: gateA), try await MeshProcessTests.port(of: gateB))
        let aliceDir = MeshProcessTests.dataDir(), bobDir = MeshProcessTests.dataDir()
        defer { for d in [aliceDir, bobDir] { try? FileManager.default.removeItem(atPath: d) } }

        let bobFirst = try listen("bob", bobDir, peers: [portA])
        defer { bobFirst.stop() }
        #expect(await bobFirst.waitFor { $0["event"] as? String == "peer" && $0["nickname"] as? String == nameA } != nil, "\(bobFirst.text)",
                sourceLocation: sourceLocation)
        let hello = try await send(aliceDir, peer: portA, ["--to", "bob", "hello bob"])
        #expect(hello.status == 0, "\(hello.stdout)\(hello.stderr)", sourceLocation: sourceLocation)
        bobFirst.stop()
        #expect(await bobFirst.waitForExit(seconds: 15) != nil, sourceLocation: sourceLocation)
        #expect(try await nothingYet(), "nothing has left mesh A yet", sourceLocation: sourceLocation)

        let dropped = try await send(aliceDir, peer: portA, ["--to", "bob", "--wait", "3", "meet me at the mill"])
        #expect(dropped.status == 0 && dropped.stdout.contains("courier drop"), "\(dropped.stdout)\(dropped.stderr)", sourceLocation: sourceLocation)
        var left = false
        for _ in 0..<120 where !left {
            left = try await stored()
            if !left { try await Task.sleep(for: .milliseconds(500)) }
        }
        #expect(left, "gateA passed the drop on: \(gateA.text)", sourceLocation: sourceLocation)

        let bob = try listen("bob", bobDir, peers: [portB])
        defer { bob.stop() }
        let got = await bob.waitFor(seconds: seconds) { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "meet me at the mill" }
        #expect(got?["via"] as? String == "courier", "\(bob.text)\n\(gateB.text)", sourceLocation: sourceLocation)
        try await Task.sleep(for: .seconds(2))
        #expect(bob.events.filter { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "meet me at the mill" }.count == 1,
                "once: \(bob.text)", sourceLocation: sourceLocation)
        #expect(!gateB.text.contains("meet me at the mill"), "gateB only carried it: \(gateB.text)", sourceLocation: sourceLocation)
    }
}
