import Foundation
import StarlingMessengerAPI
import StarlingNostr
import StarlingWire
import StarlingTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Two `starling` nodes that are each other's favourites, then have no mesh
/// link: a private message and its receipts cross a real Nostr relay (the
/// PyPI `nostr-relay`) on loopback, through a real SOCKS5 proxy (Debian's
/// `microsocks`). With the proxy down nothing reaches the relay, and the
/// sender is told.
@Suite(.serialized, .usesProcesses) struct NostrProcessTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    static func accepts(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: port.bigEndian,
                                  sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// Waits for a port to accept, up to 90 s (a cold first start of the
    /// Python relay, with its imports, on a loaded CI machine).
    static func waitForPort(_ port: UInt16, _ process: LiveProcess) async throws {
        let deadline = Date().addingTimeInterval(90)
        while Date() < deadline {
            if accepts(port) { return }
            try #require(process.process.isRunning, "exited: \(process.text)")
            try await Task.sleep(for: .milliseconds(50))
        }
        if accepts(port) { return }
        Issue.record("nothing listens on \(port) after 90 s: \(process.text)")
        throw CancellationError()
    }

    /// `nostr-relay` on a fresh SQLite file; its database, to count what it stored.
    static func relay() async throws -> (LiveProcess, port: UInt16, db: String) {
        let exe = root.appendingPathComponent(".venv/bin/nostr-relay").path
        try #require(FileManager.default.isExecutableFile(atPath: exe), "run scripts/install-deps --test")
        let dir = ContactCommandTests.temporaryDirectory("nostr-relay")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let port = try LoopbackPorts.freeTCP(), db = dir + "/events.sqlite3"
        let config = """
        DEBUG: false
        relay_name: starling test relay
        storage:
          sqlalchemy.url: sqlite+aiosqlite:///\(db)
          num_concurrent_reqs: 10
          num_concurrent_adds: 2
          validators:
            - nostr_relay.validators.is_not_too_large
            - nostr_relay.validators.is_signed
            - nostr_relay.validators.is_recent
        gunicorn:
          bind: 127.0.0.1:\(port)
          workers: 1
          loglevel: warning
          reload: false
        verification:
          nip05_verification: disabled
        authentication:
          enabled: false
        message_timeout: 1800
        subscription_limit: 32
        oldest_event: 31536000

        """
        try config.write(toFile: dir + "/config.yaml", atomically: true, encoding: .utf8)
        return (try await relayAgain(db: db, port: port), port, db)
    }

    /// `nostr-relay` started (again) on the configuration and database beside `db`.
    static func relayAgain(db: String, port: UInt16) async throws -> LiveProcess {
        let exe = root.appendingPathComponent(".venv/bin/nostr-relay").path
        let dir = (db as NSString).deletingLastPathComponent
        let p = LiveProcess.unstarted([exe, "-c", dir + "/config.yaml", "serve"])
        try p.start()
        try await waitForPort(port, p)
        return p
    }

    /// A process and its children (gunicorn's worker), given a signal.
    static func signalTree(_ p: LiveProcess, _ signal: Int32) async throws {
        let pid = p.process.processIdentifier
        let children = try await StarlingProcess.run(executable: URL(fileURLWithPath: "/usr/bin/pgrep"), ["-P", String(pid)])
        for child in children.stdout.split(separator: "\n").compactMap({ Int32($0) }) { kill(child, signal) }
        kill(pid, signal)
    }

    /// Bytes waiting, unread, in the receive queues of connections to `port`
    /// (`ss`): what a stopped server was sent and has not taken.
    static func unread(on port: UInt16) async throws -> Int {
        let r = try await StarlingProcess.run(executable: URL(fileURLWithPath: "/usr/bin/ss"),
                                              ["-tnH", "state", "established", "( sport = :\(port) )"])
        return r.stdout.split(separator: "\n").compactMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).first ?? "") }.reduce(0, +)
    }

    static func socks() async throws -> (LiveProcess, port: UInt16) {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/microsocks"), "run scripts/install-deps --test (microsocks)")
        let port = try LoopbackPorts.freeTCP()
        let p = LiveProcess.unstarted(["/usr/bin/microsocks", "-i", "127.0.0.1", "-p", String(port)])
        try p.start()
        try await waitForPort(port, p)
        return (p, port)
    }

    /// Events the relay stored (its own database, read with Python's sqlite3).
    static func storedEvents(_ db: String) async throws -> Int {
        let python = root.appendingPathComponent(".venv/bin/python")
        let r = try await StarlingProcess.run(executable: python,
                                              ["-c", "import sqlite3,sys;print(sqlite3.connect(sys.argv[1]).execute('select count(*) from events').fetchone()[0])", db])
        return try #require(Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(r.stdout)\(r.stderr)")
    }

    static func identity(_ name: String) async throws -> (dir: String, fingerprint: String) {
        let dir = ContactCommandTests.temporaryDirectory(name)
        let r = try await StarlingProcess.run(["id", "--data-dir", dir, "--name", name, "--json"])
        let json = try ContactCommandTests.json(r.stdout)
        return (dir, try #require(json["fingerprint"] as? String))
    }

    static func nostr(relayPort: UInt16, proxyPort: UInt16) -> [String] {
        ["--nostr", "--nostr-relay", "ws://127.0.0.1:\(relayPort)", "--proxy", "127.0.0.1:\(proxyPort)", "--no-discovery",
         "--announce-interval", "1"]
    }

    /// Alice and Bob meet on the mesh and make each other favourites: the
    /// notices carry their npubs, kept in their encrypted stores.
    static func favourites(relayPort: UInt16, proxyPort: UInt16) async throws -> (alice: (dir: String, fingerprint: String),
                                                                                  bob: (dir: String, fingerprint: String)) {
        let alice = try await Self.identity("alice"), bob = try await Self.identity("bob")
        func nostr(_ proxyPort: UInt16) -> [String] { Self.nostr(relayPort: relayPort, proxyPort: proxyPort) }
        let a = try LiveProcess(["listen", "--json", "--port", "0", "--duration", "60", "--data-dir", alice.dir,
                                 "--favorite", bob.fingerprint] + nostr(proxyPort))
        defer { a.stop() }
        let aPort = try #require(await a.waitFor { $0["event"] as? String == "started" }?["port"] as? Int)
        let b = try LiveProcess(["listen", "--json", "--port", "0", "--duration", "60", "--data-dir", bob.dir,
                                 "--favorite", alice.fingerprint, "--peer", "127.0.0.1:\(aPort)"] + nostr(proxyPort))
        defer { b.stop() }
        let toldA = await a.waitFor { $0["event"] as? String == "favorited" && ($0["npub"] as? String)?.hasPrefix("npub1") == true }
        let toldB = await b.waitFor { $0["event"] as? String == "favorited" && ($0["npub"] as? String)?.hasPrefix("npub1") == true }
        #expect(toldA != nil && toldB != nil, "\(a.text)\n\(b.text)")
        // Both reached the relay through the proxy.
        #expect(await a.waitForText("connected to ws://127.0.0.1:\(relayPort) through SOCKS5 proxy 127.0.0.1:\(proxyPort)"), "\(a.text)")
        a.stop()
        b.stop()
        // Kept in the encrypted store, not in a file beside it.
        #expect(toldA != nil, "\(a.text)")
        #expect(!FileManager.default.fileExists(atPath: alice.dir + "/nostr-contacts"))
        return (alice, bob)
    }

    @Test func favouritesWithNoMeshLinkTalkThroughARelayBehindTheProxyAndNothingLeavesWithoutIt() async throws {
        let (relay, relayPort, db) = try await Self.relay()
        defer { relay.stop() }
        let (proxy, proxyPort) = try await Self.socks()
        defer { proxy.stop() }
        func nostr(_ proxyPort: UInt16) -> [String] { Self.nostr(relayPort: relayPort, proxyPort: proxyPort) }
        let (alice, bob) = try await Self.favourites(relayPort: relayPort, proxyPort: proxyPort)

        // Apart: no mesh link at all. Bob listens; Alice sends to him by name.
        let bobAlone = try LiveProcess(["listen", "--json", "--port", "0", "--duration", "90", "--data-dir", bob.dir, "--mark-read",
                                        "--favorite", alice.fingerprint] + nostr(proxyPort))
        defer { bobAlone.stop() }
        #expect(await bobAlone.waitForText("connected to ws://127.0.0.1:\(relayPort)"), "\(bobAlone.text)")
        let sent = try await StarlingProcess.run(["send", "--json", "--port", "0", "--data-dir", alice.dir, "--favorite", bob.fingerprint,
                                                  "--to", "bob", "--linger", "40", "across the city"] + nostr(proxyPort))
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        let lines = sent.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let id = try #require(lines.first { $0["event"] as? String == "sent" }?["messageID"] as? String, "\(sent.stdout)")
        // The way it went, then both receipts, back over Nostr.
        #expect(lines.contains { $0["event"] as? String == "sentOffMesh" && $0["messageID"] as? String == id && $0["via"] as? String == "nostr" },
                "\(sent.stdout)")
        #expect(lines.contains { $0["event"] as? String == "delivered" && $0["messageID"] as? String == id }, "\(sent.stdout)")
        #expect(lines.contains { $0["event"] as? String == "read" && $0["messageID"] as? String == id }, "\(sent.stdout)")
        let got = await bobAlone.waitFor { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "across the city" }
        #expect(got?["via"] as? String == "nostr" && got?["messageID"] as? String == id, "\(bobAlone.text)")
        #expect(bobAlone.events.filter { $0["event"] as? String == "privateMessage" }.count == 1, "shown once: \(bobAlone.text)")

        // In chat, the way a message went is shown with its receipts.
        let aliceChat = try LiveProcess(["chat", "--plain", "--port", "0", "--data-dir", alice.dir, "--favorite", bob.fingerprint]
                                        + nostr(proxyPort))
        #expect(await aliceChat.waitForText("connected to ws://127.0.0.1:\(relayPort)"), "\(aliceChat.text)")
        aliceChat.type("/msg bob from the chat")
        #expect(await aliceChat.waitForText("to bob: sent via nostr", seconds: 40), "\(aliceChat.text)")
        #expect(await aliceChat.waitForText("to bob: delivered", seconds: 40), "\(aliceChat.text)")
        let second = await bobAlone.waitFor { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "from the chat" }
        #expect(second?["via"] as? String == "nostr", "\(bobAlone.text)")
        aliceChat.stop()

        // The proxy goes down: nothing reaches the relay, and the sender hears why.
        proxy.stop()
        let before = try await Self.storedEvents(db)
        let failed = try await StarlingProcess.run(["send", "--json", "--port", "0", "--data-dir", alice.dir, "--favorite", bob.fingerprint,
                                                    "--to", "bob", "--linger", "35", "--retry-budget", "60", "not without the proxy"]
                                                   + nostr(proxyPort))
        #expect(failed.status != 0, "\(failed.stdout)")
        #expect(failed.stdout.contains("cannot reach ws://127.0.0.1:\(relayPort) through SOCKS5 proxy 127.0.0.1:\(proxyPort)"), "\(failed.stdout)")
        #expect(failed.stdout.contains("no relay reachable"), "\(failed.stdout)")
        #expect(try await Self.storedEvents(db) == before, "an event reached the relay without the proxy")
        #expect(bobAlone.events.filter { $0["event"] as? String == "privateMessage" }.count == 2, "\(bobAlone.text)")

        // The proxy comes back (restarted on its port): a message written while it
        // was down goes once the way is back, and is shown once.
        let waiting = try LiveProcess(["chat", "--plain", "--port", "0", "--data-dir", alice.dir, "--favorite", bob.fingerprint]
                                      + nostr(proxyPort))
        defer { waiting.stop() }
        #expect(await waiting.waitForText("cannot reach ws://127.0.0.1:\(relayPort)", seconds: 30), "\(waiting.text)")
        waiting.type("/msg bob written while the proxy was down")
        let restarted = LiveProcess.unstarted(["/usr/bin/microsocks", "-i", "127.0.0.1", "-p", String(proxyPort)])
        try restarted.start()
        defer { restarted.stop() }
        try await Self.waitForPort(proxyPort, restarted)
        let late = await bobAlone.waitFor(seconds: 80) { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "written while the proxy was down" }
        #expect(late?["via"] as? String == "nostr", "alice:\n\(waiting.text)\nbob:\n\(bobAlone.text)")
        #expect(await waiting.waitForText("to bob: delivered", seconds: 40), "\(waiting.text)")
        try await Task.sleep(for: .seconds(2))
        #expect(bobAlone.events.filter { $0["text"] as? String == "written while the proxy was down" }.count == 1, "shown once: \(bobAlone.text)")
    }

    /// The relay dies with our message in its socket, unread (stopped, then
    /// killed): the event never reached its store, and the connection drops
    /// under the sender. When the relay is back, the message goes, is shown
    /// once, and its receipt comes back.
    @Test func aMessageTheRelayDroppedMidSendGoesWhenItIsBackAndIsShownOnce() async throws {
        let (relay, relayPort, db) = try await Self.relay()
        defer { relay.stop() }
        let (proxy, proxyPort) = try await Self.socks()
        defer { proxy.stop() }
        func nostr(_ proxyPort: UInt16) -> [String] { Self.nostr(relayPort: relayPort, proxyPort: proxyPort) }
        let (alice, bob) = try await Self.favourites(relayPort: relayPort, proxyPort: proxyPort)

        let bobAlone = try LiveProcess(["listen", "--json", "--port", "0", "--duration", "150", "--data-dir", bob.dir,
                                        "--favorite", alice.fingerprint] + nostr(proxyPort))
        defer { bobAlone.stop() }
        #expect(await bobAlone.waitForText("connected to ws://127.0.0.1:\(relayPort)"), "\(bobAlone.text)")
        let aliceChat = try LiveProcess(["chat", "--plain", "--port", "0", "--data-dir", alice.dir, "--favorite", bob.fingerprint]
                                        + nostr(proxyPort))
        defer { aliceChat.stop() }
        #expect(await aliceChat.waitForText("connected to ws://127.0.0.1:\(relayPort)"), "\(aliceChat.text)")

        // The relay stops taking anything; the message is written into its socket.
        try await Self.signalTree(relay, SIGSTOP)
        let stored = try await Self.storedEvents(db)
        let unreadBefore = try await Self.unread(on: relayPort)
        aliceChat.type("/msg bob sent as the relay fell")
        var waited = 0
        while try await Self.unread(on: relayPort) <= unreadBefore, waited < 600 {
            try await Task.sleep(for: .milliseconds(50))
            waited += 1
        }
        #expect(try await Self.unread(on: relayPort) > unreadBefore, "the event never reached the relay's socket: \(aliceChat.text)")
        // It dies with the event unread: the connection drops under alice.
        try await Self.signalTree(relay, SIGKILL)
        relay.stop()
        #expect(try await Self.storedEvents(db) == stored, "the relay stored it after all")
        #expect(await aliceChat.waitForText("nostr: lost ws://127.0.0.1:\(relayPort)", seconds: 30), "\(aliceChat.text)")

        // Back on its port and database.
        let again = try await Self.relayAgain(db: db, port: relayPort)
        defer { again.stop() }
        let got = await bobAlone.waitFor(seconds: 120) { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "sent as the relay fell" }
        #expect(got?["via"] as? String == "nostr", "alice:\n\(aliceChat.text)\nbob:\n\(bobAlone.text)")
        #expect(await aliceChat.waitForText("to bob: delivered", seconds: 60), "\(aliceChat.text)")
        // It waited for the relay, the same event sent again on the new connection:
        // never reported as failed (the old way: a timeout, "not sent yet", a new wrap at the next retry).
        #expect(!aliceChat.text.contains("not sent yet"), "\(aliceChat.text)")
        // Shown once, even if a copy went on each connection.
        try await Task.sleep(for: .seconds(3))
        #expect(bobAlone.events.filter { $0["text"] as? String == "sent as the relay fell" }.count == 1, "shown once: \(bobAlone.text)")
    }

    /// A contact known only by an npub (someone on a standard NIP-17 client):
    /// `contact add npub1…`, then a message to them by name goes over Nostr as
    /// standard NIP-17, which nostr-sdk (the independent client) opens from the
    /// relay's store as a kind-14 message from our key.
    @Test func aContactAddedByNpubIsReachedAsStandardNIP17() async throws {
        let (relay, relayPort, db) = try await Self.relay()
        defer { relay.stop() }
        let (proxy, proxyPort) = try await Self.socks()
        defer { proxy.stop() }
        let alice = try await Self.identity("alice-npub")
        let carolSecret = Secp256k1.PrivateKey.random()
        let carolNpub = Bech32.npub(carolSecret.publicKey)
        let added = try await StarlingProcess.run(["contact", "add", carolNpub, "--name", "carol", "--data-dir", alice.dir])
        #expect(added.status == 0, "\(added.stderr)")
        let list = try await StarlingProcess.run(["contact", "list", "--data-dir", alice.dir])
        #expect(list.stdout.contains("carol  nostr  \(carolNpub)"), "\(list.stdout)")
        let sent = try await StarlingProcess.run(["send", "--json", "--port", "0", "--no-discovery", "--data-dir", alice.dir, "--to", "carol",
                                                  "--linger", "8", "--nostr", "--nostr-relay", "ws://127.0.0.1:\(relayPort)",
                                                  "--proxy", "127.0.0.1:\(proxyPort)", "hello carol, from the mesh side"])
        // No receipts in standard NIP-17: the send says where it went, not that it was delivered.
        #expect(sent.stdout.contains("\"sentOffMesh\"") && sent.stdout.contains("\"via\":\"nostr\""), "\(sent.stdout)\(sent.stderr)")
        let request = try JSONSerialization.data(withJSONObject: ["op": "inbox", "secret": carolSecret.bytes.hexString, "db": db])
        var inbox: [[String: Any]] = []
        for _ in 0..<50 where inbox.isEmpty {
            let out = try await PythonEnvironment.run("nostr_reference.py", input: request + Data("\n".utf8))
            inbox = (try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [String: Any])?["messages"] as? [[String: Any]] ?? []
            if inbox.isEmpty { try await Task.sleep(for: .milliseconds(200)) }
        }
        let message = try #require(inbox.first, "nothing for carol in the relay's store")
        #expect(message["content"] as? String == "hello carol, from the mesh side")
        #expect(message["kind"] as? Int == 14)
        // From alice's own Nostr key (the seal's signature says so).
        let aliceKey = try String(contentsOfFile: alice.dir + "/nostr.key", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let alicePublic = try Secp256k1.PrivateKey(bytes: try [UInt8](hex: aliceKey)).publicKey.hexString
        #expect(message["sender"] as? String == alicePublic, "\(message)")
        #expect(inbox.count == 1, "\(inbox)")
    }

    /// A stranger who writes to our npub (nostr-sdk, as Amethyst would) is a
    /// request on the page (issue 52 item 7: opened and dropped without a
    /// trace): carol accepted under a name (her message in her conversation),
    /// mallory blocked (never shown again, and carol's next message is, the
    /// control); after a restart nothing answered comes back, and dave, who
    /// was not answered, does.
    /// A private message from `secret` to the key `to` (hex), published by the
    /// reference peer (nostr_reference.py) through the relay on `relayPort`.
    static func publish(from secret: Secp256k1.PrivateKey, to: String, _ text: String, relayPort: UInt16) async throws {
        let request = try JSONSerialization.data(withJSONObject: ["op": "publish", "secret": secret.bytes.hexString, "to": to,
                                                                  "content": text, "relay": "ws://127.0.0.1:\(relayPort)"])
        let out = try await PythonEnvironment.run("nostr_reference.py", input: request + Data("\n".utf8))
        #expect(out.contains("\"accepted\": true"), "\(out)")
    }

    @Test func aStrangersMessageIsARequestToAcceptOrBlockOnThePage() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "run scripts/install-deps --test")
        let (relay, relayPort, _) = try await Self.relay()
        defer { relay.stop() }
        let (proxy, proxyPort) = try await Self.socks()
        defer { proxy.stop() }
        let nostr = ["--nostr", "--nostr-relay", "ws://127.0.0.1:\(relayPort)", "--proxy", "127.0.0.1:\(proxyPort)"]
        let dir = ContactCommandTests.temporaryDirectory("web-requests")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var ann = try WebProcessTests.web(dir, name: "ann", nostr)
        defer { ann.stop() }
        var link = try await WebProcessTests.link(ann)
        func api(_ link: String) throws -> APIClient {
            let base = try #require(URL(string: String(link.prefix { $0 != "#" })))
            return APIClient(host: try #require(base.host), port: try #require(base.port), token: String(try #require(link.split(separator: "=").last)))
        }
        let status = try #require(try await api(link).get("/v1/status") as? [String: Any])
        let annKey = try Bech32.publicKey(npub: try #require(status["npub"] as? String)).hexString
        func write(_ secret: Secp256k1.PrivateKey, _ text: String) async throws {
            try await Self.publish(from: secret, to: annKey, text, relayPort: relayPort)
        }
        func requests(_ link: String) async throws -> [String] {
            ((try await api(link).get("/v1/requests")) as? [[String: Any]] ?? []).compactMap { $0["npub"] as? String }
        }
        let carol = Secp256k1.PrivateKey.random(), mallory = Secp256k1.PrivateKey.random(), dave = Secp256k1.PrivateKey.random()
        let (carolNpub, malloryNpub, daveNpub) = (Bech32.npub(carol.publicKey), Bech32.npub(mallory.publicKey), Bech32.npub(dave.publicKey))
        try await write(carol, "hello ann, carol here")
        try await write(mallory, "click here")
        var waiting: [String] = []
        for _ in 0..<300 where Set(waiting) != [carolNpub, malloryNpub] {
            waiting = try await requests(link)
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(Set(waiting) == [carolNpub, malloryNpub], "\(waiting)\n\(ann.text.suffix(2_000))")
        let shots = PythonEnvironment.root.appendingPathComponent(".build/screenshots")
        try FileManager.default.createDirectory(at: shots, withIntermediateDirectories: true)
        let page = try await PythonEnvironment.run(PythonEnvironment.root.appendingPathComponent("Tests/web/web_requests.py").path,
                                                   [link, carolNpub, malloryNpub, shots.appendingPathComponent("web-requests.png").path], seconds: 180)
        #expect(page.contains("ok   her message is in her conversation") && !page.contains("FAIL"), "\(page)")
        // Mallory again, then carol (a contact now) and dave: carol's is shown, dave's is a request, mallory's nothing.
        try await write(mallory, "click here, again")
        try await write(carol, "carol's second")
        try await write(dave, "dave, unanswered")
        let conversations = { () async throws -> [[String: Any]] in (try await api(link).get("/v1/conversations")) as? [[String: Any]] ?? [] }
        var carolsConversation: String?
        var now: [String] = []
        for _ in 0..<300 where carolsConversation == nil || !now.contains(daveNpub) {
            carolsConversation = try await conversations().first { $0["name"] as? String == "carol" && (($0["last"] as? [String: Any])?["text"] as? String) == "carol's second" }?["id"] as? String
            now = try await requests(link)
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(carolsConversation != nil, "carol's second message, in her conversation")
        #expect(now == [daveNpub], "mallory is blocked: \(now)")
        // A restart: what was answered stays answered; dave's request comes back from the relay.
        ann.stop()
        #expect(await ann.waitForExit(seconds: 30) != nil)
        ann = try WebProcessTests.web(dir, name: "ann", nostr)
        link = try await WebProcessTests.link(ann)
        now = []
        for _ in 0..<300 where now != [daveNpub] {
            now = (try? await requests(link)) ?? []
            if now == [daveNpub] { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(now == [daveNpub], "after a restart: \(now)")
        let id = try #require(carolsConversation)
        let history = (try await api(link).get("/v1/conversations/\(id)/messages")) as? [[String: Any]] ?? []
        #expect(history.compactMap { $0["text"] as? String } == ["hello ann, carol here", "carol's second"], "each once: \(history)")
    }

    /// Issue 41, the gateway's downlink with real parts: ben speaks in
    /// #u4pruy from a chat with Nostr; `gate` (`listen --gateway u4pruy`,
    /// Nostr through microsocks) follows the channel and carries the line into
    /// the mesh; alice, on the mesh only, shows it once, from ben's Nostr key,
    /// two hops from nowhere but the gateway; gate announces bit 2. Up: dan,
    /// a chat on the mesh only, speaks in the channel through the gateway,
    /// and ben's answer comes back to him the same way.
    @Test func aGatewayCarriesALocationChannelIntoTheMesh() async throws {
        let (relay, relayPort, _) = try await Self.relay()
        defer { relay.stop() }
        let (proxy, proxyPort) = try await Self.socks()
        defer { proxy.stop() }
        let gate = try LiveProcess(["listen", "--json", "--port", "0", "--name", "gate", "--duration", "90", "--data-dir",
                                    ContactCommandTests.temporaryDirectory("gate"), "--gateway", "u4pruy"] + Self.nostr(relayPort: relayPort, proxyPort: proxyPort))
        defer { gate.stop() }
        let gatePort = try await MeshProcessTests.port(of: gate)
        let alice = try LiveProcess(["listen", "--json", "--port", "0", "--name", "alice", "--duration", "90", "--no-discovery",
                                     "--announce-interval", "1", "--data-dir", ContactCommandTests.temporaryDirectory("alice-mesh"),
                                     "--peer", "127.0.0.1:\(gatePort)", "--channel", "u4pruy"])
        // The control of the channel filter: a mesh node that joined no channel shows none of it.
        let carl = try LiveProcess(["listen", "--json", "--port", "0", "--name", "carl", "--duration", "90", "--no-discovery",
                                    "--announce-interval", "1", "--data-dir", ContactCommandTests.temporaryDirectory("carl-mesh"),
                                    "--peer", "127.0.0.1:\(gatePort)"])
        defer { carl.stop() }
        defer { alice.stop() }
        let caps = await alice.waitFor { $0["event"] as? String == "capabilities" && ($0["capabilities"] as? [String])?.contains("gateway") == true }
        #expect(caps != nil, "gate announces the gateway bit: \(alice.text)")
        let ben = try LiveProcess(["chat", "--plain", "--no-discovery", "--port", "0", "--name", "ben", "--data-dir", ContactCommandTests.temporaryDirectory("ben"),
                                   "--nostr", "--nostr-relay", "ws://127.0.0.1:\(relayPort)", "--proxy", "127.0.0.1:\(proxyPort)"])
        defer { ben.stop() }
        #expect(await ben.waitForText("connected to ws://127.0.0.1:\(relayPort)"), "\(ben.text)")
        ben.type("/join #u4pruy")
        #expect(await ben.waitForText("joined #u4pruy"), "\(ben.text)")
        // The gateway follows once its relay is up; a line said before it subscribed may be older than its lookback: say until heard.
        var got: [String: Any]?
        for attempt in 0..<6 where got == nil {
            ben.type("water at the north gate \(attempt)")
            got = await alice.waitFor(seconds: 10) { $0["event"] as? String == "gatewayMessage" }
        }
        #expect(got?["geohash"] as? String == "u4pruy" && (got?["text"] as? String)?.hasPrefix("water at the north gate") == true, "\(alice.text)\n\(gate.text)")
        #expect(got?["nickname"] as? String == "ben" && (got?["pubkey"] as? String)?.count == 64, "\(String(describing: got))")
        // Shown once (the gateway's copy and any relayed one are one event).
        let id = try #require(got?["eventID"] as? String)
        try await Task.sleep(for: .seconds(2))
        #expect(alice.events.filter { $0["eventID"] as? String == id }.count == 1, "\(alice.text)")
        #expect(await carl.waitFor(seconds: 5) { $0["event"] as? String == "peer" && $0["nickname"] as? String == "gate" } != nil)
        #expect(!carl.text.contains("gatewayMessage"), "carl joined no channel: \(carl.text)")

        // Up: a chat on the mesh only joins the channel and speaks through the gateway; ben reads it.
        let dan = try LiveProcess(["chat", "--plain", "--no-discovery", "--port", "0", "--name", "dan", "--announce-interval", "1",
                                   "--data-dir", ContactCommandTests.temporaryDirectory("dan-mesh"), "--peer", "127.0.0.1:\(gatePort)"])
        defer { dan.stop() }
        #expect(await dan.waitForText("gate joined"), "\(dan.text)")
        dan.type("/join #u4pruy")
        #expect(await dan.waitForText("your lines go through a gateway on the mesh"), "\(dan.text)")
        dan.type("the bridge is out")
        #expect(await ben.waitForText("@#u4pruy> the bridge is out"), "ben reads dan's line, published by the gateway:\n\(ben.text)\n\(gate.text)")
        #expect(ben.text.contains("<dan#"), "\(ben.text)")
        // ben's answer comes down to dan through the gateway.
        ben.type("take the east road")
        #expect(await dan.waitForText("(via a gateway) take the east road"), "\(dan.text)")
    }

    @Test func twoChatsMeetInALocationChannel() async throws {
        let (relay, relayPort, _) = try await Self.relay()
        defer { relay.stop() }
        let (proxy, proxyPort) = try await Self.socks()
        defer { proxy.stop() }
        func chat(_ name: String) throws -> LiveProcess {
            try LiveProcess(["chat", "--plain", "--no-discovery", "--port", "0", "--name", name, "--data-dir", ContactCommandTests.temporaryDirectory(name),
                             "--nostr", "--nostr-relay", "ws://127.0.0.1:\(relayPort)", "--proxy", "127.0.0.1:\(proxyPort)"])
        }
        let ann = try chat("ann"), ben = try chat("ben")
        defer { ann.stop(); ben.stop() }
        // `listen --channel` prints the channel's lines as the daemon's stream has them (it printed none).
        let cal = try LiveProcess(["listen", "--json", "--port", "0", "--name", "cal", "--duration", "90", "--data-dir",
                                   ContactCommandTests.temporaryDirectory("cal"), "--channel", "u4pruyd"]
                                  + Self.nostr(relayPort: relayPort, proxyPort: proxyPort))
        defer { cal.stop() }
        for c in [ann, ben] {
            #expect(await c.waitForText("connected to ws://127.0.0.1:\(relayPort)"), "\(c.text)")
            c.type("/join #u4pruyd")
            #expect(await c.waitForText("joined #u4pruyd"), "\(c.text)")
        }
        ann.type("who is near the station?")
        #expect(await ben.waitForText("<ann#"), "\(ben.text)")
        #expect(ben.text.contains("@#u4pruyd> who is near the station?"), "\(ben.text)")
        let heard = await cal.waitFor { $0["event"] as? String == "channelMessage" && $0["text"] as? String == "who is near the station?" }
        #expect(heard?["geohash"] as? String == "u4pruyd" && heard?["nickname"] as? String == "ann", "\(cal.text)")
        ben.type("by the north gate")
        #expect(await ann.waitForText("@#u4pruyd> by the north gate"), "\(ann.text)")
        // Back to the mesh: a line no longer goes to the channel.
        ann.type("/join #mesh")
        #expect(await ann.waitForText("back in #mesh"))
        ann.type("only on the mesh")
        #expect(await ann.waitForText("only on the mesh"))
        #expect(!ann.text.contains("@#u4pruyd> only on the mesh"), "\(ann.text)")
        ben.type("/part #u4pruyd")
        #expect(await ben.waitForText("left #u4pruyd"))
    }

    /// `/fav` tells the peer our npub as the apps do (`[FAVORITED]:npub1…`): it
    /// sees a notice, never the text, and keeps the npub; `/unfav` takes it back.
    @Test func favouritingSomeoneTellsThemOurNpubAsANotice() async throws {
        let relay = try MeshProcessTests.node("relay")
        defer { relay.stop() }
        let port = try await MeshProcessTests.port(of: relay)
        let bobDir = ContactCommandTests.temporaryDirectory("bob-fav")
        let bob = try LiveProcess(["chat", "--no-discovery", "--port", "0", "--name", "bob", "--announce-interval", "1",
                                   "--data-dir", bobDir, "--peer", "127.0.0.1:\(port)"])
        defer { bob.stop() }
        let alice = try MeshProcessTests.chat("alice", peer: port)
        defer { alice.stop() }
        #expect(await alice.waitForText("bob joined"), "\(alice.text)")
        alice.type("/fav bob")
        #expect(await bob.waitForText("* alice favorited you"), "\(bob.text)")
        #expect(!bob.text.contains("[FAVORITED]"), "\(bob.text)")
        // Kept in the encrypted store (no file beside it), with alice's npub.
        #expect(!FileManager.default.fileExists(atPath: bobDir + "/nostr-contacts"))
        bob.type("/nostr")
        #expect(await bob.waitForText("alice  npub1"), "\(bob.text)")
        // Bob chooses standard NIP-17 for her, and back.
        bob.type("/nostr alice standard")
        #expect(await bob.waitForText("messages to alice over Nostr go as standard NIP-17"), "\(bob.text)")
        bob.type("/nostr")
        #expect(await bob.waitForText("…  standard NIP-17"), "\(bob.text)")
        bob.type("/nostr alice bitchat")
        #expect(await bob.waitForText("go as bitchat's envelope"), "\(bob.text)")
        bob.type("/nostr carol standard")
        #expect(await bob.waitForText("no Nostr contact named carol"), "\(bob.text)")
        alice.type("/unfav bob")
        #expect(await bob.waitForText("* alice unfavorited you"), "\(bob.text)")
        #expect(!bob.text.contains("[UNFAVORITED]"))
        bob.type("/nostr")
        #expect(await bob.waitForText("no Nostr contacts yet"), "\(bob.text)")
    }
}
