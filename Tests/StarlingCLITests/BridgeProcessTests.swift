import Foundation
import StarlingCrypto
import StarlingNostr
import StarlingTestSupport
import StarlingWire
import Testing

/// Issue 41's "Done when", as processes: two meshes on UDP loopback that
/// never meet, a bridge in each, one nostr-relay between them reached only
/// through microsocks.
@Suite(.serialized, .usesProcesses) struct BridgeProcessTests {
    /// A carrier as a datagram: broadcast, unsigned, from a sender nobody knows.
    static func carrierDatagram(_ e: NostrEvent, cell: String) throws -> [UInt8] {
        let c = try NostrCarrier(direction: .fromBridge, geohash: cell, eventJSON: Array(e.json.utf8))
        return try Packet(type: .nostrCarrier, ttl: 7, timestamp: UInt64(Date().timeIntervalSince1970 * 1_000),
                          senderID: PeerID(rawValue: UInt64.random(in: 1..<UInt64.max)), payload: c.encoded()).encoded()
    }

    /// A bridge on `cell`, its Nostr through the proxy.
    static func bridge(_ name: String, _ cell: String, _ relayPort: UInt16, _ proxyPort: UInt16, dataDir: String? = nil,
                       extra: [String] = []) throws -> LiveProcess {
        try LiveProcess(["listen", "--json", "--port", "0", "--name", name, "--duration", "120", "--data-dir",
                         dataDir ?? ContactCommandTests.temporaryDirectory(name), "--bridge", cell]
                        + NostrProcessTests.nostr(relayPort: relayPort, proxyPort: proxyPort) + extra)
    }

    /// Events of kind 20000 the relay stored, their contents (its own database, read with Python's sqlite3).
    static func storedMessages(_ db: String) async throws -> [String] {
        let python = NostrProcessTests.root.appendingPathComponent(".venv/bin/python")
        let r = try await StarlingProcess.run(executable: python, ["-c", """
            import json, sqlite3, sys
            for (c,) in sqlite3.connect(sys.argv[1]).execute("select content from events where kind = 20000"): print(json.dumps(c))
            """, db])
        return r.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8), options: .fragmentsAllowed) as? String }
    }

    /// Mesh A: alice (a chat that lets her lines cross) and carol (one that
    /// does not: the control), both linked to gateA, a bridge on u4pruy.
    /// Mesh B: gateB, a bridge on a cell of u4pruy's ring, and bob and dave
    /// behind it. Alice's line appears once at bob and dave through the two
    /// bridges, never carol's; nothing comes back to mesh A. Forged carriers
    /// (the content changed, another author's key) are dropped at bob, where
    /// an honest one (the control) is shown. With the proxy down nothing
    /// leaves gateA; when it is back, what waited goes, once.
    @Test func aPublicMessageCrossesBetweenTwoMeshesOnce() async throws {
        let (relay, relayPort, db) = try await NostrProcessTests.relay()
        defer { relay.stop() }
        let socks = try await NostrProcessTests.socks()
        var proxy = socks.0
        let proxyPort = socks.port
        defer { proxy.stop() }
        let cellB = try #require(Geohash.neighbours(of: "u4pruy").first)
        let gateBDir = ContactCommandTests.temporaryDirectory("gateB")
        let gateA = try Self.bridge("gateA", "u4pruy", relayPort, proxyPort), gateB = try Self.bridge("gateB", cellB, relayPort, proxyPort, dataDir: gateBDir)
        defer { gateA.stop(); gateB.stop() }
        let (portA, portB) = (try await MeshProcessTests.port(of: gateA), try await MeshProcessTests.port(of: gateB))
        func listener(_ name: String, peer: UInt16) throws -> LiveProcess {
            try LiveProcess(["listen", "--json", "--port", "0", "--name", name, "--duration", "120", "--no-discovery", "--announce-interval", "1",
                             "--data-dir", ContactCommandTests.temporaryDirectory(name), "--peer", "127.0.0.1:\(peer)"])
        }
        let bob = try listener("bob", peer: portB)
        defer { bob.stop() }
        let dave = try listener("dave", peer: try await MeshProcessTests.port(of: bob))
        defer { dave.stop() }
        func chat(_ name: String, crosses: Bool) throws -> LiveProcess {
            try LiveProcess(["chat", "--plain", "--no-discovery", "--port", "0", "--name", name, "--announce-interval", "1",
                             "--data-dir", ContactCommandTests.temporaryDirectory(name), "--peer", "127.0.0.1:\(portA)"] + (crosses ? ["--cross-bridges"] : []))
        }
        let alice = try chat("alice", crosses: true), carol = try chat("carol", crosses: false)
        defer { alice.stop(); carol.stop() }
        // gateA announces the bridge bit and its cell.
        let caps = await bob.waitFor { $0["event"] as? String == "capabilities" && ($0["capabilities"] as? [String])?.contains("bridge") == true }
        #expect(caps != nil, "gateB announces bit 7: \(bob.text)")
        for c in [alice, carol] { #expect(await c.waitForText("gateA joined"), "\(c.text)") }
        #expect(await dave.waitFor { $0["event"] as? String == "peer" && $0["nickname"] as? String == "gateB" } != nil, "\(dave.text)")

        alice.type("hello from mesh A")
        carol.type("carol stays home")
        let crossed = await bob.waitFor(seconds: 30) { $0["event"] as? String == "bridgedMessage" }
        #expect(crossed?["text"] as? String == "hello from mesh A" && crossed?["nickname"] as? String == "alice", "\(bob.text)\n\(gateB.text)\n\(gateA.text)")
        #expect(crossed?["cell"] as? String == "u4pruy" && crossed?["hops"] as? Int == 1, "\(String(describing: crossed))")
        let id = try #require(crossed?["eventID"] as? String)
        #expect(await dave.waitFor(seconds: 15) { $0["event"] as? String == "bridgedMessage" && $0["eventID"] as? String == id } != nil, "\(dave.text)")
        #expect(await gateB.waitFor(seconds: 5) { $0["event"] as? String == "bridgedMessage" && $0["eventID"] as? String == id } != nil, "\(gateB.text)")
        // Once, and carol's line never: it did not leave mesh A.
        try await Task.sleep(for: .seconds(3))
        for n in [bob, dave, gateB] {
            #expect(n.events.filter { $0["eventID"] as? String == id }.count == 1, "\(n.text)")
            #expect(!n.text.contains("carol stays home"), "\(n.text)")
        }
        #expect(try await Self.storedMessages(db).filter { $0 == "carol stays home" }.isEmpty)
        #expect(try await Self.storedMessages(db).filter { $0 == "hello from mesh A" }.count == 1)
        // Nothing came back into mesh A.
        #expect(!gateA.text.contains("bridgedMessage") && !alice.text.contains("across a bridge") && !carol.text.contains("across a bridge"),
                "\(gateA.text)\n\(alice.text)")

        // gateB restarts: the relay sends the last 15 minutes again, and gateB remembers what it took (its data
        // directory's bridge): alice's line is not shown or carried again; one said while it was away is (the control).
        gateB.stop()
        #expect(await gateB.waitForExit(seconds: 30) != nil)
        alice.type("while gateB was away")
        try await Task.sleep(for: .seconds(2))
        let gateB2 = try Self.bridge("gateB", cellB, relayPort, proxyPort, dataDir: gateBDir, extra: ["--peer", "127.0.0.1:\(try await MeshProcessTests.port(of: bob))"])
        defer { gateB2.stop() }
        let away = await bob.waitFor(seconds: 60) { $0["event"] as? String == "bridgedMessage" && $0["text"] as? String == "while gateB was away" }
        #expect(away != nil, "\(bob.text)\n\(gateB2.text)")
        #expect(await gateB2.waitFor(seconds: 10) { $0["event"] as? String == "bridgedMessage" && $0["text"] as? String == "while gateB was away" } != nil)
        try await Task.sleep(for: .seconds(3))
        #expect(!gateB2.text.contains("hello from mesh A"), "shown again after the restart: \(gateB2.text)")
        #expect(bob.events.filter { $0["eventID"] as? String == id }.count == 1, "\(bob.text)")

        // Forged carriers at bob; an honest one beside them (the control).
        let key = Secp256k1.PrivateKey.random()
        func event(_ text: String) throws -> NostrEvent {
            try #require(MeshBridge.message(text, nickname: "mallory", cell: cellB, senderIDHex: "0102030405060708",
                                            timestampMs: UInt64(Date().timeIntervalSince1970 * 1_000), key: key, now: Int64(Date().timeIntervalSince1970)))
        }
        var tampered = try event("a real line")
        tampered.content = "a changed line"
        var otherAuthor = try event("signed by mallory")
        otherAuthor.pubkey = Secp256k1.PrivateKey.random().publicKey.hexString
        let honest = try event("an honest carrier")
        let bobPort = try await MeshProcessTests.port(of: bob)
        MeshProcessTests.spray([try Self.carrierDatagram(tampered, cell: cellB), try Self.carrierDatagram(otherAuthor, cell: cellB)], to: bobPort)
        MeshProcessTests.spray([try Self.carrierDatagram(honest, cell: cellB)], to: bobPort)
        #expect(await bob.waitFor(seconds: 15) { $0["event"] as? String == "bridgedMessage" && $0["text"] as? String == "an honest carrier" } != nil,
                "\(bob.text)")
        #expect(!bob.text.contains("a changed line") && !bob.text.contains("signed by mallory"), "\(bob.text)")

        // The proxy down: nothing leaves gateA. Back up: what waited goes, once.
        proxy.stop()
        try await Task.sleep(for: .seconds(2))
        alice.type("while the proxy is down")
        try await Task.sleep(for: .seconds(5))
        #expect(try await Self.storedMessages(db).filter { $0 == "while the proxy is down" }.isEmpty)
        #expect(!bob.text.contains("while the proxy is down"))
        proxy = LiveProcess.unstarted(["/usr/bin/microsocks", "-i", "127.0.0.1", "-p", String(proxyPort)])
        try proxy.start()
        try await NostrProcessTests.waitForPort(proxyPort, proxy)
        let late = await bob.waitFor(seconds: 60) { $0["event"] as? String == "bridgedMessage" && $0["text"] as? String == "while the proxy is down" }
        #expect(late != nil, "\(bob.text)\n\(gateA.text)")
        #expect(try await Self.storedMessages(db).filter { $0 == "while the proxy is down" }.count == 1)
    }

    /// Kinds of the events the relay stored.
    static func storedKinds(_ db: String) async throws -> [Int] {
        let python = NostrProcessTests.root.appendingPathComponent(".venv/bin/python")
        let r = try await StarlingProcess.run(executable: python, ["-c", """
            import sqlite3, sys
            for (k,) in sqlite3.connect(sys.argv[1]).execute("select kind from events"): print(k)
            """, db])
        return r.stdout.split(separator: "\n").compactMap { Int($0) }
    }

    /// Alice and bob meet once on mesh A; bob goes. Alice's message for him
    /// leaves as a courier drop with gateA, a bridge, which posts it to the
    /// relay (kind 1401, through microsocks). Bob then starts on mesh B,
    /// beside gateB only: gateB follows his recipient tags, fetches the drop
    /// and hands it over, and bob reads it as from alice, once.
    @Test func aCourierDropPostedInOneMeshReachesAPeerWhoLaterJoinsAnother() async throws {
        let (relay, relayPort, db) = try await NostrProcessTests.relay()
        defer { relay.stop() }
        let (proxy, proxyPort) = try await NostrProcessTests.socks()
        defer { proxy.stop() }
        let cellB = try #require(Geohash.neighbours(of: "u4pruy").last)
        let gateA = try Self.bridge("dropGateA", "u4pruy", relayPort, proxyPort), gateB = try Self.bridge("dropGateB", cellB, relayPort, proxyPort)
        defer { gateA.stop(); gateB.stop() }
        try await CourierProcessTests.aDropReachesBobInTheOtherMesh(gateA: gateA, nameA: "dropGateA", gateB: gateB, seconds: 60,
                                                                    nothingYet: { try await !Self.storedKinds(db).contains(1_401) },
                                                                    stored: { try await Self.storedKinds(db).contains(1_401) })
    }

    /// Board notices cross too, and stay on the relays for the days they
    /// live: alice (who lets her lines cross) and carol (the control) post on
    /// mesh A's board; gateA publishes alice's only (kind 1402). gateB comes
    /// up afterwards, finds it on the relay, and puts it on mesh B's board,
    /// where bob reads it; gateB says it crossed. Nothing comes back.
    @Test func aBoardNoticeCrossesToAMeshWhoseBridgeComesUpLater() async throws {
        let (relay, relayPort, db) = try await NostrProcessTests.relay()
        defer { relay.stop() }
        let (proxy, proxyPort) = try await NostrProcessTests.socks()
        defer { proxy.stop() }
        let gateA = try Self.bridge("boardGateA", "u4pruy", relayPort, proxyPort)
        defer { gateA.stop() }
        let portA = try await MeshProcessTests.port(of: gateA)
        func chat(_ name: String, crosses: Bool) throws -> LiveProcess {
            try LiveProcess(["chat", "--plain", "--no-discovery", "--port", "0", "--name", name, "--announce-interval", "1",
                             "--data-dir", ContactCommandTests.temporaryDirectory(name), "--peer", "127.0.0.1:\(portA)"] + (crosses ? ["--cross-bridges"] : []))
        }
        let alice = try chat("alice", crosses: true), carol = try chat("carol", crosses: false)
        defer { alice.stop(); carol.stop() }
        for c in [alice, carol] { #expect(await c.waitForText("boardGateA joined"), "\(c.text)") }
        alice.type("/board post water at the school")
        carol.type("/board post carol's notice stays home")
        var kinds: [Int] = []
        for _ in 0..<60 where !kinds.contains(1_402) {
            kinds = try await Self.storedKinds(db)
            if !kinds.contains(1_402) { try await Task.sleep(for: .milliseconds(500)) }
        }
        #expect(kinds.contains(1_402), "gateA published alice's notice: \(gateA.text)\n\(alice.text)")
        #expect(await gateA.waitFor(seconds: 15) { $0["event"] as? String == "board" && $0["text"] as? String == "carol's notice stays home" } != nil)
        try await Task.sleep(for: .seconds(2))
        #expect(try await Self.storedKinds(db).filter { $0 == 1_402 }.count == 1, "carol's stays on mesh A")

        // Mesh B's bridge comes up only now, with bob behind it.
        let cellB = try #require(Geohash.neighbours(of: "u4pruy").dropFirst(2).first)
        let gateB = try Self.bridge("boardGateB", cellB, relayPort, proxyPort)
        defer { gateB.stop() }
        let bob = try LiveProcess(["listen", "--json", "--port", "0", "--name", "bob", "--duration", "120", "--no-discovery", "--announce-interval", "1",
                                   "--data-dir", ContactCommandTests.temporaryDirectory("boardBob"), "--peer", "127.0.0.1:\(try await MeshProcessTests.port(of: gateB))"])
        defer { bob.stop() }
        let atB = await gateB.waitFor(seconds: 60) { $0["event"] as? String == "board" && $0["text"] as? String == "water at the school" }
        #expect(atB?["crossed"] as? Bool == true && (atB?["shownName"] as? String)?.hasPrefix("alice? ") == true, "\(gateB.text)")
        let atBob = await bob.waitFor(seconds: 60) { $0["event"] as? String == "board" && $0["text"] as? String == "water at the school" }
        #expect(atBob != nil, "\(bob.text)\n\(gateB.text)")
        try await Task.sleep(for: .seconds(3))
        #expect(!bob.text.contains("carol's notice") && !gateB.text.contains("carol's notice"))
        #expect(bob.text.components(separatedBy: "\"water at the school\"").count == 2, "once: \(bob.text)")
        // Nothing came back: gateA saw alice's notice once (from her), and mesh B published nothing of it.
        #expect(gateA.text.components(separatedBy: "\"water at the school\"").count == 2, "\(gateA.text)")
        #expect(try await Self.storedKinds(db).filter { $0 == 1_402 }.count == 1)
    }
}
