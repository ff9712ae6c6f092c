import Foundation
import StarlingMessengerAPI
import StarlingTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `starling daemon` as its clients meet it: the API answers only with the
/// token of api.json (0600), on 127.0.0.1 and its socket (0600), never to a
/// page of another origin or host; `send` and `listen` on the same data
/// directory go through it; SIGTERM ends it within 5 s.
@Suite(.serialized, .usesProcesses) struct DaemonProcessTests {
    static func daemon(_ dir: String, name: String, peer: UInt16? = nil) throws -> LiveProcess {
        try LiveProcess(["daemon", "--no-discovery", "--port", "0", "--name", name, "--announce-interval", "1", "--data-dir", dir]
                        + (peer.map { ["--peer", "127.0.0.1:\($0)"] } ?? []))
    }

    /// What api.json says, once the daemon has written it.
    static func info(_ dir: String, _ p: LiveProcess) async throws -> (url: URL, token: String, socket: String) {
        #expect(await p.waitForText("daemon: "), "\(p.text)")
        let data = try #require(FileManager.default.contents(atPath: dir + "/api.json"), "no api.json: \(p.text)")
        let o = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return (try #require((o["url"] as? String).flatMap(URL.init(string:))), try #require(o["token"] as? String),
                try #require(o["socket"] as? String))
    }

    static func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) & 0o777
    }

    /// A page's link stays good across a restart: the same token and, when it
    /// is free, the same port (seen in a person's pass: `web` came back on
    /// another port and the open page went dead). The control: a port taken
    /// meanwhile gives way to a free one, and the daemon starts.
    @Test func aRestartKeepsThePortWhenItIsFree() async throws {
        let dir = ContactCommandTests.temporaryDirectory("daemon-port")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var d = try Self.daemon(dir, name: "alice")
        let first = try await Self.info(dir, d)
        d.stop()
        d = try Self.daemon(dir, name: "alice")
        let second = try await Self.info(dir, d)
        #expect(second.url == first.url && second.token == first.token, "\(first.url) then \(second.url)")
        d.stop()
        // Taken by someone else now.
        let port = try #require(first.url.port)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(bound == 0 && listen(fd, 1) == 0)
        d = try Self.daemon(dir, name: "alice")
        defer { d.stop() }
        let third = try await Self.info(dir, d)
        #expect(third.url.port != port && third.token == first.token, "\(third.url)")
        let status = try await APIClient(host: "127.0.0.1", port: try #require(third.url.port), token: third.token).get("/v1/status") as? [String: Any]
        #expect(status?["nickname"] as? String == "alice")
    }

    @Test func theAPIAnswersOnlyItsOwnerAndTheDaemonStopsOnTime() async throws {
        let dir = ContactCommandTests.temporaryDirectory("daemon")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let d = try Self.daemon(dir, name: "alice")
        defer { d.stop() }
        let (url, token, socket) = try await Self.info(dir, d)
        #expect(url.host == "127.0.0.1")
        #expect(try Self.mode(dir + "/api.json") == 0o600)
        #expect(try Self.mode(socket) == 0o600)
        let host = try #require(url.host), port = try #require(url.port)
        // The control: with the token, an answer.
        let owner = APIClient(host: host, port: port, token: token)
        let status = try #require(try await owner.get("/v1/status") as? [String: Any])
        #expect(status["nickname"] as? String == "alice" && status["storeOpen"] as? Bool == true, "\(status)")
        // Issue 52, item 7: our npub, the one `starling id` shows for the same data directory.
        let npub = try #require(status["npub"] as? String, "\(status)")
        #expect(npub.hasPrefix("npub1"))
        let id = try ContactCommandTests.json(try await StarlingProcess.run(["id", "--data-dir", dir, "--json"]).stdout)
        #expect(id["npub"] as? String == npub)
        // Without it, or with another, 401 before any routing (a path that does not exist too).
        for client in [APIClient(host: host, port: port, token: ""), APIClient(host: host, port: port, token: String(repeating: "0", count: 64))] {
            #expect(try await client.raw(.GET, "/v1/status").status == 401)
            #expect(try await client.raw(.GET, "/no/such/path").status == 401)
        }
        // A page of another site (its Origin), or a rebinding name (its Host): 403.
        var page = owner
        page.extraHeaders = [("Origin", "http://evil.example")]
        #expect(try await page.raw(.GET, "/v1/status").status == 403)
        // The socket: the token there too.
        let local = APIClient(socketPath: socket, token: token)
        #expect(try await local.raw(.GET, "/v1/peers").status == 200)
        #expect(try await APIClient(socketPath: socket, token: "").raw(.GET, "/v1/peers").status == 401)
        // SIGTERM: ended within 5 s, its files gone.
        let start = Date()
        kill(d.process.processIdentifier, SIGTERM)
        let exit = await d.waitForExit(seconds: 10)
        #expect(exit == 0, "\(d.text)")
        #expect(Date().timeIntervalSince(start) < 5, "\(Date().timeIntervalSince(start)) s")
        #expect(!FileManager.default.fileExists(atPath: dir + "/api.json") && !FileManager.default.fileExists(atPath: socket))
        // Started again: the same token (a page or script keeps its link), kept 0600; one others could read is replaced.
        #expect(try Self.mode(dir + "/api-token") == 0o600)
        let again = try Self.daemon(dir, name: "alice")
        let (_, sameToken, _) = try await Self.info(dir, again)
        again.stop()
        #expect(sameToken == token)
        chmod(dir + "/api-token", 0o644)
        let third = try Self.daemon(dir, name: "alice")
        defer { third.stop() }
        let (_, newToken, _) = try await Self.info(dir, third)
        #expect(newToken != token && newToken.count == 64)
        #expect(try Self.mode(dir + "/api-token") == 0o600)
    }

    @Test func sendAndListenGoThroughTheDaemonAndItOutlivesThem() async throws {
        let bob = try MeshProcessTests.node("bob", markRead: true)
        defer { bob.stop() }
        let bobPort = try await MeshProcessTests.port(of: bob)
        let dir = ContactCommandTests.temporaryDirectory("daemon-alice")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let d = try Self.daemon(dir, name: "alice", peer: bobPort)
        defer { d.stop() }
        let (url, token, _) = try await Self.info(dir, d)
        #expect(await bob.waitFor { $0["event"] as? String == "peer" && $0["nickname"] as? String == "alice" } != nil, "\(bob.text)")
        // A listener through the daemon, beside a sender through it.
        let listener = try LiveProcess(["listen", "--json", "--data-dir", dir, "--duration", "30"])
        defer { listener.stop() }
        #expect(await listener.waitFor { $0["event"] as? String == "started" && $0["nickname"] as? String == "alice" } != nil,
                "the daemon's events from the start: \(listener.text)")
        let sent = try await StarlingProcess.run(["send", "--json", "--data-dir", dir, "--to", "bob", "--linger", "15", "through the daemon"])
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        #expect(sent.stdout.contains("\"event\":\"delivered\""), "\(sent.stdout)")
        let got = await bob.waitFor { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "through the daemon" }
        #expect(got?["nickname"] as? String == "alice", "\(bob.text)")
        #expect(await listener.waitFor { $0["event"] as? String == "progress" && ($0["message"] as? [String: Any])?["state"] as? String == "read" } != nil,
                "\(listener.text)")
        // A name nobody has: said, exit 1; the daemon is still there for the next client.
        let nobody = try await StarlingProcess.run(["send", "--data-dir", dir, "--to", "nobody", "psst"])
        #expect(nobody.status == 1 && nobody.stderr.contains("no contact or peer called nobody"), "\(nobody.stderr)")
        listener.stop()
        let api = APIClient(host: try #require(url.host), port: try #require(url.port), token: token)
        let conversations = try #require(try await api.get("/v1/conversations") as? [[String: Any]])
        #expect(conversations.contains { $0["name"] as? String == "bob" && (($0["last"] as? [String: Any])?["state"] as? String) == "read" },
                "\(conversations)")
    }

    /// Issue 52, item 6: a file is part of the conversation's history, on both
    /// sides, after a restart too (before, `/history` and the page lost it).
    @Test func filesAreInTheHistoryOnBothSidesAcrossARestart() async throws {
        let (a, b) = (ContactCommandTests.temporaryDirectory("history-alice"), ContactCommandTests.temporaryDirectory("history-bob"))
        defer { for d in [a, b] { try? FileManager.default.removeItem(atPath: d) } }
        var bobDaemon = try Self.daemon(b, name: "bob")
        defer { bobDaemon.stop() }
        let (bobURL, bobToken, _) = try await Self.info(b, bobDaemon)
        var bob = APIClient(host: try #require(bobURL.host), port: try #require(bobURL.port), token: bobToken)
        let bobUDP = UInt16(try #require((try await bob.get("/v1/status") as? [String: Any])?["udpPort"] as? Int))
        try FileManager.default.createDirectory(atPath: a, withIntermediateDirectories: true)
        let file = a + "/notes.txt"
        try Data(repeating: 0x41, count: 50_000).write(to: URL(fileURLWithPath: file))
        let sent = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--name", "alice", "--data-dir", a,
                                                  "--peer", "127.0.0.1:\(bobUDP)", "--announce-interval", "1", "--to", "bob", "--file", file])
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        func fileEntries(_ client: APIClient) async throws -> [[String: Any]] {
            var out: [[String: Any]] = []
            for c in try #require(try await client.get("/v1/conversations") as? [[String: Any]]) {
                let id = try #require(c["id"] as? String)
                let messages = try #require(try await client.get("/v1/conversations/\(id)/messages") as? [[String: Any]])
                out += messages.filter { $0["file"] != nil }
            }
            return out
        }
        let received = try await fileEntries(bob)
        #expect(received.count == 1, "\(received)")
        let f = try #require(received.first?["file"] as? [String: Any])
        #expect(f["name"] as? String == "notes.txt" && f["size"] as? Int == 50_000 && (f["path"] as? String)?.hasSuffix("notes.txt") == true)
        #expect(received.first?["outgoing"] as? Bool == false)
        // Bob's daemon again: still there.
        bobDaemon.stop()
        _ = await bobDaemon.waitForExit(seconds: 30)
        bobDaemon = try Self.daemon(b, name: "bob")
        let (url2, token2, _) = try await Self.info(b, bobDaemon)
        bob = APIClient(host: try #require(url2.host), port: try #require(url2.port), token: token2)
        #expect(try await fileEntries(bob).count == 1, "after a restart")
        // Alice's side (her store, read through a daemon of hers): sent and delivered.
        let aliceDaemon = try Self.daemon(a, name: "alice")
        defer { aliceDaemon.stop() }
        let (aURL, aToken, _) = try await Self.info(a, aliceDaemon)
        let alice = APIClient(host: try #require(aURL.host), port: try #require(aURL.port), token: aToken)
        let ours = try await fileEntries(alice)
        #expect(ours.count == 1 && ours.first?["outgoing"] as? Bool == true, "\(ours)")
        #expect(ours.first?["state"] as? String == "delivered", "\(ours)")
        // The control: text messages are no files.
        #expect(ours.allSatisfy { ($0["file"] as? [String: Any])?["transferID"] as? String != nil })
    }

    /// `kill -9` of a daemon while hundreds of private messages arrive: after a
    /// restart its store opens (the integrity check runs at every open) and holds
    /// every message whose receipt went out before the kill (a receipt goes only
    /// once the message is stored); the sender's retries bring the rest; none is
    /// kept twice.
    @Test func aKillDashNineLosesNoMessageThatWasAcknowledged() async throws {
        let (a, b) = (ContactCommandTests.temporaryDirectory("kill-alice"), ContactCommandTests.temporaryDirectory("kill-bob"))
        defer { for d in [a, b] { try? FileManager.default.removeItem(atPath: d) } }
        let bobDaemon = try Self.daemon(b, name: "bob")
        defer { bobDaemon.stop() }
        let (bobURL, bobToken, _) = try await Self.info(b, bobDaemon)
        let bob = APIClient(host: try #require(bobURL.host), port: try #require(bobURL.port), token: bobToken)
        let bobUDP = UInt16(try #require((try await bob.get("/v1/status") as? [String: Any])?["udpPort"] as? Int))
        var alice = try Self.daemon(a, name: "alice", peer: bobUDP)
        defer { alice.stop() }
        _ = try await Self.info(a, alice)
        var here = false
        for _ in 0..<300 where !here {
            here = (try await bob.get("/v1/peers") as? [[String: Any]])?.contains { $0["nickname"] as? String == "alice" } == true
            if !here { try await Task.sleep(for: .milliseconds(100)) }
        }
        try #require(here, "alice never appeared: \(bobDaemon.text)")
        let first = try #require(try await bob.post("/v1/messages", ["to": "alice", "text": "m000"]) as? [String: Any])
        let conversation = try #require(first["conversation"] as? String)
        func delivered() async throws -> Set<String> {
            let list = try #require(try await bob.get("/v1/conversations/\(conversation)/messages?limit=1000") as? [[String: Any]])
            return Set(list.filter { ["delivered", "read"].contains($0["state"] as? String ?? "") }.compactMap { $0["text"] as? String })
        }
        let total = 300
        let sending = Task {
            for i in 1..<total { _ = try await bob.post("/v1/messages", ["to": conversation, "text": String(format: "m%03d", i)]) }
        }
        // Killed mid-stream: some acknowledged, more on their way.
        var before: Set<String> = []
        let deadline = ContinuousClock.now + .seconds(120)
        while before.count < 60, ContinuousClock.now < deadline {
            before = try await delivered()
            if before.count < 60 { try await Task.sleep(for: .milliseconds(5)) }
        }
        kill(alice.process.processIdentifier, SIGKILL)
        before = try await delivered() // a receipt already on its way counts too
        #expect(before.count >= 60 && before.count < total, "killed with \(before.count) of \(total) acknowledged")
        _ = await alice.waitForExit(seconds: 10)
        try await sending.value

        alice = try Self.daemon(a, name: "alice", peer: bobUDP)
        let (aliceURL, aliceToken, _) = try await Self.info(a, alice)
        let api = APIClient(host: try #require(aliceURL.host), port: try #require(aliceURL.port), token: aliceToken)
        #expect((try await api.get("/v1/status") as? [String: Any])?["storeOpen"] as? Bool == true, "the store opens after kill -9")
        var all: Set<String> = []
        let end = ContinuousClock.now + .seconds(150)
        while all.count < total, ContinuousClock.now < end {
            all = try await delivered()
            if all.count < total { try await Task.sleep(for: .milliseconds(500)) }
        }
        if all.count < total {
            let list = try #require(try await bob.get("/v1/conversations/\(conversation)/messages?limit=1000") as? [[String: Any]])
            let states = Dictionary(grouping: list.compactMap { $0["state"] as? String }, by: { $0 }).mapValues(\.count)
            Issue.record("\(all.count) of \(total) delivered in the end; bob's states: \(states); not delivered: \(Set(list.compactMap { $0["text"] as? String }).subtracting(all).sorted().prefix(10))")
        }
        let conversations = try #require(try await api.get("/v1/conversations") as? [[String: Any]])
        let withBob = try #require(conversations.first { $0["name"] as? String == "bob" }?["id"] as? String, "\(conversations)")
        let kept = try #require(try await api.get("/v1/conversations/\(withBob)/messages?limit=1000") as? [[String: Any]]).compactMap { $0["text"] as? String }
        let lost = before.subtracting(kept)
        #expect(lost.isEmpty, "acknowledged before the kill and not in the store: \(lost.sorted())")
        #expect(kept.count == Set(kept).count, "kept twice: \(kept.count - Set(kept).count)")
        #expect(Set(kept).count == total, "\(Set(kept).count) of \(total) in alice's store")
        print("kill -9 with \(before.count) of \(total) acknowledged: \(lost.count) lost, \(kept.count - Set(kept).count) twice, \(Set(kept).count) kept in the end")
    }

    /// Our own sends across a crash: messages written to someone away are in
    /// the store before they are sent; `kill -9` of the daemon, a restart, and
    /// when the recipient appears every one of them goes, once.
    @Test func ourOwnSendsOutliveAKillDashNine() async throws {
        let (a, b) = (ContactCommandTests.temporaryDirectory("own-alice"), ContactCommandTests.temporaryDirectory("own-bob"))
        defer { for d in [a, b] { try? FileManager.default.removeItem(atPath: d) } }
        // Bob met once (a favourite, so that what is written to him waits for him), then away.
        func bob(_ peer: Int? = nil) throws -> LiveProcess {
            try LiveProcess(["listen", "--no-discovery", "--port", "0", "--json", "--name", "bob", "--duration", "120",
                             "--announce-interval", "1", "--data-dir", b] + (peer.map { ["--peer", "127.0.0.1:\($0)"] } ?? []))
        }
        let bobNode = try bob()
        defer { bobNode.stop() }
        let bobPort = try await MeshProcessTests.port(of: bobNode)
        var alice = try Self.daemon(a, name: "alice", peer: bobPort)
        defer { alice.stop() }
        var (url, token, _) = try await Self.info(a, alice)
        var api = APIClient(host: try #require(url.host), port: try #require(url.port), token: token)
        var fingerprint: String?
        for _ in 0..<300 where fingerprint == nil {
            fingerprint = (try await api.get("/v1/peers") as? [[String: Any]])?.first { $0["nickname"] as? String == "bob" }?["fingerprint"] as? String
            if fingerprint == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        let bobFingerprint = try #require(fingerprint, "bob never appeared: \(alice.text)")
        _ = try await api.post("/v1/trust", ["fingerprint": bobFingerprint, "change": "favourite"])
        let first = try #require(try await api.post("/v1/messages", ["to": "bob", "text": "o00"]) as? [String: Any])
        let conversation = try #require(first["conversation"] as? String)
        bobNode.stop()
        // Bob gone: alice writes 30 more; then she is killed.
        var here = true
        for _ in 0..<300 where here {
            here = (try await api.get("/v1/peers") as? [[String: Any]])?.contains { $0["nickname"] as? String == "bob" } == true
            if here { try await Task.sleep(for: .milliseconds(100)) }
        }
        for i in 1...30 { _ = try await api.post("/v1/messages", ["to": conversation, "text": String(format: "o%02d", i)]) }
        kill(alice.process.processIdentifier, SIGKILL)
        _ = await alice.waitForExit(seconds: 10)

        // Alice again, then bob again (a new process on the same identity): every message goes.
        alice = try Self.daemon(a, name: "alice")
        (url, token, _) = try await Self.info(a, alice)
        api = APIClient(host: try #require(url.host), port: try #require(url.port), token: token)
        let udp = try #require((try await api.get("/v1/status") as? [String: Any])?["udpPort"] as? Int)
        let pending = try #require(try await api.get("/v1/conversations/\(conversation)/messages?limit=100") as? [[String: Any]])
        #expect(pending.filter { ($0["text"] as? String ?? "").hasPrefix("o") }.count == 31, "all in the store after kill -9: \(pending.count)")
        let bobAgain = try bob(udp)
        defer { bobAgain.stop() }
        let end = ContinuousClock.now + .seconds(90)
        var got: [String] = []
        while ContinuousClock.now < end {
            got = bobAgain.events.filter { $0["event"] as? String == "privateMessage" }.compactMap { $0["text"] as? String }
            if Set(got).count >= 30 { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        let expected = Set((1...30).map { String(format: "o%02d", $0) })
        #expect(expected.isSubset(of: Set(got)), "missing: \(expected.subtracting(got).sorted())")
        #expect(got.count == Set(got).count, "shown twice: \(got.count - Set(got).count)")
    }

    /// Every curl example of docs/API.md, run as written against a daemon
    /// with a peer (its fingerprint and conversation put in for the examples'):
    /// each answers JSON without an error; the event stream answers events.
    @Test func everyCurlExampleOfTheAPIDocumentAnswers() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") && FileManager.default.isExecutableFile(atPath: "/usr/bin/jq"),
                     "curl and jq are test dependencies: run scripts/install-deps --test")
        let bob = try MeshProcessTests.node("bob", markRead: true)
        defer { bob.stop() }
        let bobPort = try await MeshProcessTests.port(of: bob)
        let dir = ContactCommandTests.temporaryDirectory("daemon-doc")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let d = try Self.daemon(dir, name: "alice", peer: bobPort)
        defer { d.stop() }
        let (url, token, _) = try await Self.info(dir, d)
        let api = APIClient(host: try #require(url.host), port: try #require(url.port), token: token)
        var peers: [[String: Any]] = []
        for _ in 0..<100 where peers.isEmpty {
            peers = try #require(try await api.get("/v1/peers") as? [[String: Any]])
            if peers.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
        }
        let fingerprint = try #require(peers.first?["fingerprint"] as? String, "bob never appeared: \(d.text)")
        let first = try #require(try await api.post("/v1/messages", ["to": "bob", "text": "hello"]) as? [String: Any])
        let conversation = try #require(first["conversation"] as? String)

        let doc = try String(contentsOf: PythonEnvironment.root.appendingPathComponent("docs/API.md"), encoding: .utf8)
        let blocks = doc.components(separatedBy: "```sh\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        let lines = blocks.flatMap { $0.split(separator: "\n").map(String.init) }.filter { $0.hasPrefix("curl ") || ($0.hasPrefix("printf ") && $0.contains("| curl ")) }
        try #require(lines.count >= 17 && lines.contains { $0.contains("/v1/files/upload") }, "the examples: \(lines)")
        var ran = 0
        for line in lines {
            var command = line.replacingOccurrences(of: "~/.local/share/starling", with: dir)
            let streams = command.contains("/v1/events")
            if streams { command = command.replacingOccurrences(of: "curl -sN", with: "curl -sN --max-time 2") }
            let script = "T=\(token); U=\(url.absoluteString); F=\(fingerprint); C=\(conversation); \(command)"
            let r = try await StarlingProcess.run(executable: URL(fileURLWithPath: "/bin/bash"), ["-c", script])
            if streams {
                #expect(r.stdout.contains("data: {"), "\(line)\n\(r.stdout)\(r.stderr)")
            } else {
                let o = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))
                #expect(o != nil && (o as? [String: Any])?["error"] == nil, "\(line)\n\(r.stdout)\(r.stderr)")
            }
            ran += 1
        }
        #expect(ran == lines.count)
    }

    /// The settings a page saves (the Ya OK server, Nostr, the proxy) are kept
    /// in the data directory and are what the daemon runs with from its next
    /// start; an option on the command line wins; a bad address is refused in
    /// words; a damaged file stops the next start with words.
    @Test func settingsSavedThroughTheAPIHoldFromTheNextStart() async throws {
        let dir = ContactCommandTests.temporaryDirectory("daemon-settings")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var d = try Self.daemon(dir, name: "alice")
        defer { d.stop() }
        var (url, token, _) = try await Self.info(dir, d)
        var api = APIClient(host: try #require(url.host), port: try #require(url.port), token: token)
        let first = try #require(try await api.get("/v1/settings") as? [String: Any])
        #expect(first["saved"] == nil && first["restartNeeded"] as? Bool == false, "\(first)")
        let fresh = try #require(first["inEffect"] as? [String: Any])
        #expect(fresh["server"] == nil && fresh["nostr"] as? Bool == false && fresh["proxy"] as? String == "127.0.0.1:9050", "\(fresh)")
        let before = try #require(try await api.get("/v1/status") as? [String: Any])
        #expect(before["server"] == nil, "\(before)")

        // Refused in words, nothing saved.
        for bad in [["server": "bob's laptop"], ["proxy": "9050"], ["server": "10.0.0.1:99999"]] {
            do {
                _ = try await api.request(.PUT, "/v1/settings", body: try JSONSerialization.data(withJSONObject: bad))
                Issue.record("\(bad) was taken")
            } catch let f as APIClient.Failure {
                #expect(f.status == 400 && f.message.contains("expected HOST:PORT"), "\(f)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: dir + "/settings.json"))

        // Saved: kept owner-only, in effect from the next start.
        let saved = try #require(try await api.request(.PUT, "/v1/settings", body: Data(#"{"server": "127.0.0.1:9", "proxy": "127.0.0.1:1080"}"#.utf8))
                                 as? [String: Any])
        #expect(saved["restartNeeded"] as? Bool == true, "\(saved)")
        #expect((saved["saved"] as? [String: Any])?["server"] as? String == "127.0.0.1:9", "\(saved)")
        #expect(try Self.mode(dir + "/settings.json") == 0o600)
        d.stop()
        d = try Self.daemon(dir, name: "alice")
        (url, token, _) = try await Self.info(dir, d)
        api = APIClient(host: try #require(url.host), port: try #require(url.port), token: token)
        let after = try #require(try await api.get("/v1/settings") as? [String: Any])
        let running = try #require(after["inEffect"] as? [String: Any])
        #expect(running["server"] as? String == "127.0.0.1:9" && running["proxy"] as? String == "127.0.0.1:1080", "\(after)")
        #expect(after["restartNeeded"] as? Bool == false, "\(after)")
        let status = try #require(try await api.get("/v1/status") as? [String: Any])
        #expect(status["server"] != nil, "the server's mailbox runs: \(status)")
        d.stop()

        // The command line wins, and a saved change to what it set needs no restart to be true of the next start.
        d = try LiveProcess(["daemon", "--no-discovery", "--port", "0", "--name", "alice", "--data-dir", dir, "--server", "127.0.0.1:10"])
        (url, token, _) = try await Self.info(dir, d)
        api = APIClient(host: try #require(url.host), port: try #require(url.port), token: token)
        let overridden = try #require(try await api.get("/v1/settings") as? [String: Any])
        #expect((overridden["inEffect"] as? [String: Any])?["server"] as? String == "127.0.0.1:10", "\(overridden)")
        #expect(overridden["setOnCommandLine"] as? [String] == ["server"] && overridden["restartNeeded"] as? Bool == false, "\(overridden)")
        d.stop()

        // A damaged file: the next start says what and where.
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: dir + "/settings.json"))
        let damaged = try await StarlingProcess.run(["daemon", "--no-discovery", "--port", "0", "--data-dir", dir])
        #expect(damaged.status == 1 && damaged.stderr.contains("settings.json is not a settings file"), "\(damaged.stderr)")
    }

    /// A terminal chat on the daemon's data directory is a face of the daemon: it
    /// sees what another face (`send`) does on the same identity, sends through
    /// it, hears a third node, quits leaving the daemon running, and says so
    /// when the daemon itself stops.
    @Test func theChatGoesThroughTheDaemonBesideSendAndOutlivesNeither() async throws {
        let bob = try MeshProcessTests.node("bob", markRead: true)
        defer { bob.stop() }
        let bobPort = try await MeshProcessTests.port(of: bob)
        let dir = ContactCommandTests.temporaryDirectory("daemon-chat")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let d = try Self.daemon(dir, name: "alice", peer: bobPort)
        defer { d.stop() }
        let (url, token, _) = try await Self.info(dir, d)
        let api = APIClient(host: try #require(url.host), port: try #require(url.port), token: token)
        #expect(await bob.waitFor { $0["event"] as? String == "peer" && $0["nickname"] as? String == "alice" } != nil, "\(bob.text)")

        let chat = try LiveProcess(["chat", "--plain", "--data-dir", dir])
        defer { chat.stop() }
        #expect(await chat.waitForText("through the daemon that runs for"), "\(chat.text)")
        // Another face on the same identity: the chat sees its message and receipts.
        let sent = try await StarlingProcess.run(["send", "--data-dir", dir, "--to", "bob", "--linger", "15", "from send"])
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        #expect(await chat.waitForText("<you → bob> from send"), "\(chat.text)")
        // The chat's own message, through the daemon, to bob and back as receipts.
        chat.type("/msg bob from the chat")
        #expect(await bob.waitFor { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "from the chat" } != nil, "\(bob.text)")
        #expect(await chat.waitForText("to bob: read"), "\(chat.text)")
        // A third node writes to alice: the chat shows it.
        let status = try #require(try await api.get("/v1/status") as? [String: Any])
        let udp = try #require(status["udpPort"] as? Int)
        let carol = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--name", "carol", "--data-dir",
                                                   MeshProcessTests.dataDir(), "--peer", "127.0.0.1:\(udp)", "--to", "alice", "--linger", "15",
                                                   "hello alice"])
        #expect(carol.status == 0, "\(carol.stdout)\(carol.stderr)")
        #expect(await chat.waitForText("<carol → you> hello alice"), "\(chat.text)")
        // Commands answer through the daemon; a wrong one is said.
        chat.type("/who")
        #expect(await chat.waitForText("bob  "), "\(chat.text)")
        chat.type("/history bob")
        #expect(await chat.waitForText("<you → bob> from the chat  ✓✓ read"), "\(chat.text)")
        chat.type("/ping nobody")
        #expect(await chat.waitForText("! no peer called nobody"), "\(chat.text)")
        // A file from the chat, through the daemon.
        let file = dir + "/note.txt"
        try Data("meet at six".utf8).write(to: URL(fileURLWithPath: file))
        chat.type("/send bob \(file)")
        #expect(await bob.waitFor { $0["event"] as? String == "fileReceived" && $0["name"] as? String == "note.txt" } != nil, "\(bob.text)")
        #expect(await chat.waitForText("· to bob: delivered"), "\(chat.text)")
        // Beside the daemon: a contact added to its store is the chat's at once; a state set goes through it.
        let dave = ContactCommandTests.temporaryDirectory("daemon-dave")
        defer { try? FileManager.default.removeItem(atPath: dave) }
        #expect(try await StarlingProcess.run(["id", "--data-dir", dave, "--name", "dave"]).status == 0)
        let card = try ContactCommandTests.json(try await StarlingProcess.run(["contact", "qr", "--data-dir", dave, "--json"]).stdout)
        let added = try await StarlingProcess.run(["contact", "add", "--data-dir", dir, try #require(card["uri"] as? String)])
        #expect(added.status == 0, "\(added.stderr)")
        chat.type("/contacts")
        #expect(await chat.waitForText("dave  away"), "\(chat.text)")
        let busy = try await StarlingProcess.run(["status", "set", "busy", "--data-dir", dir])
        #expect(busy.status == 0 && busy.stdout.contains("through the daemon"), "\(busy.stdout)\(busy.stderr)")
        #expect((try await api.get("/v1/stately") as? [String: Any])?["state"] as? String == "busy")
        chat.type("/status")
        #expect(await chat.waitForText("* you: 🔶 Busy"), "\(chat.text)")
        // Quitting the chat leaves the daemon on the mesh.
        chat.type("/quit")
        #expect(await chat.waitForExit(seconds: 15) == 0, "\(chat.text)")
        #expect(chat.text.contains("the daemon stays on the mesh") && !chat.text.contains("the daemon stopped"), "\(chat.text)")
        #expect(try await api.get("/v1/status") is [String: Any])
        // A chat whose daemon stops says so and ends.
        let second = try LiveProcess(["chat", "--plain", "--data-dir", dir])
        defer { second.stop() }
        #expect(await second.waitForText("through the daemon that runs for"), "\(second.text)")
        kill(d.process.processIdentifier, SIGTERM)
        #expect(await d.waitForExit(seconds: 10) == 0, "\(d.text)")
        #expect(await second.waitForText("the daemon stopped"), "\(second.text)")
        #expect(await second.waitForExit(seconds: 15) != nil, "\(second.text)")
    }

}

/// A full disk under a node (a 4 MiB filesystem the test mounts): a private
/// message that cannot be stored is said in words, gets no receipt and is not
/// lost (the sender keeps trying); the node keeps relaying for others; when
/// space is freed the message is stored and acknowledged, once.
@Suite(.serialized, .usesProcesses) struct FullDiskTests {
    @Test func aFullDiskIsSaidAndNothingIsLostWhenSpaceComesBack() async throws {
        let disk = try await SmallDisk(megabytes: 4)
        defer { disk.remove() }
        let dir = disk.path + "/alice"
        // alice (on the small disk) between bob and carol.
        let alice = try LiveProcess(["listen", "--no-discovery", "--port", "0", "--json", "--name", "alice", "--duration", "150",
                                     "--announce-interval", "1", "--data-dir", dir])
        defer { alice.stop() }
        let alicePort = try await MeshProcessTests.port(of: alice)
        let carol = try MeshProcessTests.node("carol", peers: [alicePort], duration: 150)
        defer { carol.stop() }
        let bobDir = ContactCommandTests.temporaryDirectory("full-bob")
        defer { try? FileManager.default.removeItem(atPath: bobDir) }
        let bob = try DaemonProcessTests.daemon(bobDir, name: "bob", peer: alicePort)
        defer { bob.stop() }
        let (url, token, _) = try await DaemonProcessTests.info(bobDir, bob)
        let api = APIClient(host: try #require(url.host), port: try #require(url.port), token: token)
        #expect(await alice.waitFor { $0["event"] as? String == "peer" && $0["nickname"] as? String == "bob" } != nil, "\(alice.text)")
        // And bob has heard alice's announce (each side's comes in its own time).
        for _ in 0..<300 {
            let peers = try await api.get("/v1/peers") as? [[String: Any]] ?? []
            if peers.contains(where: { $0["nickname"] as? String == "alice" }) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        func state(_ text: String) async throws -> String? {
            let list = try #require(try await api.get("/v1/conversations") as? [[String: Any]])
            guard let c = list.first(where: { $0["name"] as? String == "alice" })?["id"] as? String else { return nil }
            let messages = try #require(try await api.get("/v1/conversations/\(c)/messages?limit=100") as? [[String: Any]])
            return messages.first { $0["text"] as? String == text }?["state"] as? String
        }
        func waitState(_ text: String, _ wanted: String, seconds: Double) async throws -> Bool {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                if try await state(text) == wanted { return true }
                try await Task.sleep(for: .milliseconds(200))
            }
            return false
        }
        // Before: the positive control.
        _ = try await api.post("/v1/messages", ["to": "alice", "text": "before the disk filled"])
        #expect(try await waitState("before the disk filled", "delivered", seconds: 30))

        // The disk fills up.
        try await disk.fill()
        _ = try await api.post("/v1/messages", ["to": "alice", "text": "while the disk is full"])
        let said = await alice.waitFor(seconds: 30) { $0["event"] as? String == "notSaved" }
        #expect((said?["text"] as? String)?.contains("the disk is full: free some space where \(dir)") == true, "\(alice.text)")
        try await Task.sleep(for: .seconds(3))
        #expect(try await state("while the disk is full") != "delivered", "no receipt for what was not stored")
        // alice still relays: bob's public words reach carol through her.
        _ = try await api.post("/v1/public", ["text": "relayed while alice's disk is full"])
        #expect(await carol.waitFor(seconds: 30) { $0["event"] as? String == "message" && $0["text"] as? String == "relayed while alice's disk is full" } != nil,
                "\(carol.text)")

        // Space again: bob's next retry is stored and acknowledged.
        try disk.free()
        #expect(try await waitState("while the disk is full", "delivered", seconds: 90), "\(alice.text.suffix(2000))")
        #expect(alice.events.filter { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "while the disk is full" }.count == 1,
                "shown once: \(alice.text)")

        // A file while the disk is full: not saved, said, no receipt; saved from a retry once space is back.
        let peers = try #require(try await api.get("/v1/peers") as? [[String: Any]])
        let alicePeer = try #require(peers.first { $0["nickname"] as? String == "alice" }?["peerID"] as? String)
        try await disk.fill()
        let content = Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        _ = try await api.post("/v1/files", ["to": alicePeer, "name": "notes.bin", "content": content.base64EncodedString()])
        let refused = await alice.waitFor(seconds: 30) { $0["event"] as? String == "rejected" && ($0["reason"] as? String)?.contains("could not be saved") == true }
        #expect(refused != nil, "\(alice.text.suffix(2000))")
        try disk.free()
        let saved = await alice.waitFor(seconds: 90) { $0["event"] as? String == "fileReceived" && $0["name"] as? String == "notes.bin" }
        #expect(saved != nil, "saved from a retry: \(alice.text.suffix(2000))")
        if let path = saved?["path"] as? String { #expect(FileManager.default.contents(atPath: path) == content) }
    }
}
