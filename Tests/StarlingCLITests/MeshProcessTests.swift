import Foundation
import StarlingTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif


@Suite(.serialized, .usesProcesses) struct MeshProcessTests {
    static func dataDir() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("starling-node-\(UUID().uuidString)").path
    }

    /// Runs up to `duration` s (each test stops it sooner; long enough for a loaded machine).
    /// `markRead`: the listener shows what comes to a person (read receipts go back).
    static func node(_ name: String, peers: [UInt16] = [], duration: Int = 60, markRead: Bool = false) throws -> LiveProcess {
        try LiveProcess(["listen", "--no-discovery", "--port", "0", "--json", "--name", name, "--duration", String(duration),
                         "--announce-interval", "1", "--data-dir", dataDir()] + peers.flatMap { ["--peer", "127.0.0.1:\($0)"] }
                        + (markRead ? ["--mark-read"] : []))
    }

    /// A `starling chat` process linked to one peer, typed into through stdin.
    static func chat(_ name: String, peer: UInt16) throws -> LiveProcess {
        try LiveProcess(["chat", "--no-discovery", "--port", "0", "--name", name, "--announce-interval", "1",
                         "--data-dir", dataDir(), "--peer", "127.0.0.1:\(peer)"])
    }

    static func port(of p: LiveProcess) async throws -> UInt16 {
        // Generous: at a cold start of the suite a dozen processes start at once on two cores.
        let started = try #require(await p.waitFor(seconds: 90) { $0["event"] as? String == "started" })
        return UInt16(try #require(started["port"] as? Int))
    }

    /// Sends datagrams to 127.0.0.1:port from a throwaway socket.
    static func spray(_ datagrams: [[UInt8]], to port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var sa = sockaddr_in()
        sa.sin_family = sa_family_t(AF_INET)
        sa.sin_port = port.bigEndian
        sa.sin_addr.s_addr = inet_addr("127.0.0.1")
        for d in datagrams {
            _ = d.withUnsafeBytes { buf in
                withUnsafePointer(to: &sa) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(fd, buf.baseAddress, buf.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
        }
    }

    /// Bob, and carol linked to bob only; alice will link to bob only too.
    static func line(carolMarksRead: Bool = true) async throws -> (bob: LiveProcess, carol: LiveProcess, bobPort: UInt16) {
        let bob = try node("bob")
        let bobPort = try await port(of: bob)
        let carol = try node("carol", peers: [bobPort], markRead: carolMarksRead)
        #expect(await bob.waitFor { $0["event"] as? String == "peer" && $0["nickname"] as? String == "carol" } != nil)
        return (bob, carol, bobPort)
    }

    @Test func sendExitsOneAndSaysSoWhenAPrivateMessageIsNotDelivered() async throws {
        let (bob, carol, bobPort) = try await Self.line()
        defer { kill(carol.process.processIdentifier, SIGCONT); bob.stop(); carol.stop() }
        let alice = Self.dataDir()
        func send(linger: Int) async throws -> StarlingProcess.Result {
            try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--name", "alice", "--data-dir", alice,
                                           "--peer", "127.0.0.1:\(bobPort)", "--to", "carol", "--linger", String(linger), "psst"])
        }
        // The control: carol answers through bob, the message is delivered, exit 0.
        let delivered = try await send(linger: 20)
        #expect(delivered.status == 0, "\(delivered.stdout)\n\(delivered.stderr)")
        // Carol frozen: bob still tells of her (her signed announce), but nothing she
        // could acknowledge reaches her. Not delivered, and said so (a race-free
        // silence: --linger 0 alone let a fast receipt in before the check).
        kill(carol.process.processIdentifier, SIGSTOP)
        let r = try await send(linger: 2)
        #expect(r.status == 1, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stderr.contains("the message to carol was not delivered"), "\(r.stderr)")
        #expect(r.stderr.contains("--linger"))
        // Nobody there: the error hints at --wait.
        let none = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--name", "alice", "--data-dir", Self.dataDir(),
                                                  "--wait", "1", "--to", "nobody", "psst"])
        #expect(none.status != 0)
        #expect(none.stderr.contains("nobody not found within 1 s") && none.stderr.contains("--wait"), "\(none.stderr)")
    }

    /// Issue 52, item 9: a one-shot `send` prints what it did, not what the
    /// mesh replays to it. Bob holds public lines and a board post from before
    /// (gossip sync hands them to every newcomer); alice's `send --to carol`
    /// prints her delivery, and none of them — in plain text and in JSON.
    @Test func aOneShotSendPrintsWhatItDidAndNothingReplayed() async throws {
        let (bob, carol, bobPort) = try await Self.line()
        defer { bob.stop(); carol.stop() }
        let before = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--name", "dave", "--data-dir", Self.dataDir(),
                                                    "--peer", "127.0.0.1:\(bobPort)", "a line from before"])
        #expect(before.status == 0, "\(before.stderr)")
        let posted = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--name", "dave", "--data-dir", Self.dataDir(),
                                                    "--peer", "127.0.0.1:\(bobPort)", "--board", "a notice from before"])
        #expect(posted.status == 0, "\(posted.stderr)")
        #expect(await bob.waitFor { $0["event"] as? String == "message" && $0["text"] as? String == "a line from before" } != nil)
        // The control: a newcomer that listens is handed the board post (it is there to replay).
        let newcomer = try LiveProcess(["listen", "--no-discovery", "--port", "0", "--json", "--name", "erin", "--data-dir", Self.dataDir(),
                                        "--peer", "127.0.0.1:\(bobPort)", "--duration", "60", "--announce-interval", "1"])
        defer { newcomer.stop() }
        #expect(await newcomer.waitForText("a notice from before", seconds: 30), "\(newcomer.text)")
        for json in [false, true] {
            let r = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--name", "alice", "--data-dir", Self.dataDir(),
                                                   "--peer", "127.0.0.1:\(bobPort)", "--to", "carol", "--linger", "3"] + (json ? ["--json"] : [])
                                                  + ["psst \(json)"])
            #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
            #expect(r.stdout.contains("delivered"), "json \(json): \(r.stdout)")
            for replayed in ["a line from before", "a notice from before", "history"] {
                #expect(!r.stdout.contains(replayed), "json \(json): a send printed what the mesh replayed: \(r.stdout)")
            }
        }
    }

    @Test func publicMessageCrossesALineOfThreeProcesses() async throws {
        let (bob, carol, bobPort) = try await Self.line()
        defer { bob.stop(); carol.stop() }

        // Junk on bob's port first: random bytes, truncated packets, a bad hello.
        var rng = SystemRandomNumberGenerator()
        var junk: [[UInt8]] = (0..<200).map { _ in (0..<Int.random(in: 0...600, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) } }
        junk += [[1, 2, 7], [2, 0x11], Array("SHLO".utf8), Array("SHLO".utf8) + [9] + [UInt8](repeating: 0, count: 8)]
        Self.spray(junk, to: bobPort)

        let alice = try LiveProcess(["send", "--no-discovery", "--port", "0", "--json", "--name", "alice", "--data-dir", Self.dataDir(),
                                     "--peer", "127.0.0.1:\(bobPort)", "--wait", "8", "--linger", "1", "hello across the mesh"])
        defer { alice.stop() }
        let got = await carol.waitFor(seconds: 30) { $0["event"] as? String == "message" }
        let message = try #require(got, "carol's output:\n\(carol.text)\nbob's:\n\(bob.text)\nalice's:\n\(alice.text)")
        #expect(message["text"] as? String == "hello across the mesh")
        let alicePeer = await alice.waitFor { $0["event"] as? String == "started" }?["peerID"] as? String
        #expect(message["from"] as? String == alicePeer)
        #expect(message["nickname"] as? String == "alice")
        #expect(message["hops"] as? Int == 2)       // through bob
        #expect(bob.process.isRunning)               // the junk did not stop it
        #expect(await bob.waitFor { $0["event"] as? String == "message" }?["hops"] as? Int == 1)
        #expect(await alice.waitForExit() == 0)
    }

    @Test func privateMessageIsEncryptedEndToEndWithReceipts() async throws {
        let (bob, carol, bobPort) = try await Self.line()
        defer { bob.stop(); carol.stop() }
        let secret = "meet at the north gate \(UUID().uuidString)"
        let alice = try LiveProcess(["send", "--no-discovery", "--port", "0", "--json", "--name", "alice", "--data-dir", Self.dataDir(),
                                     "--peer", "127.0.0.1:\(bobPort)", "--to", "carol", "--wait", "8", "--linger", "3", secret])
        defer { alice.stop() }
        let got = try #require(await carol.waitFor(seconds: 30) { $0["event"] as? String == "privateMessage" },
                               "carol:\n\(carol.text)\nalice:\n\(alice.text)")
        #expect(got["text"] as? String == secret)
        #expect(got["nickname"] as? String == "alice")
        #expect(got["hops"] as? Int == 2)
        let id = try #require(got["messageID"] as? String)
        #expect(await alice.waitFor { $0["event"] as? String == "delivered" && $0["messageID"] as? String == id } != nil, "\(alice.text)")
        #expect(await alice.waitFor { $0["event"] as? String == "read" && $0["messageID"] as? String == id } != nil, "\(alice.text)")
        // Bob relayed every packet of it and never saw the plaintext.
        #expect(!bob.text.contains(secret))
        #expect(!bob.events.contains { $0["event"] as? String == "privateMessage" })
    }

    /// A program that only prints what comes (`listen --json`) acknowledges
    /// delivery but never says "read": nobody has seen it. With --mark-read
    /// (the positive control, in the test above) it does.
    @Test func aListenerThatShowsNoPersonSendsNoReadReceipt() async throws {
        let (bob, carol, bobPort) = try await Self.line(carolMarksRead: false)
        defer { bob.stop(); carol.stop() }
        let alice = try LiveProcess(["send", "--no-discovery", "--port", "0", "--json", "--name", "alice", "--data-dir", Self.dataDir(),
                                     "--peer", "127.0.0.1:\(bobPort)", "--to", "carol", "--wait", "8", "--linger", "4", "unseen"])
        defer { alice.stop() }
        let got = try #require(await carol.waitFor(seconds: 30) { $0["event"] as? String == "privateMessage" }, "\(carol.text)")
        let id = try #require(got["messageID"] as? String)
        #expect(await alice.waitFor { $0["event"] as? String == "delivered" && $0["messageID"] as? String == id } != nil, "\(alice.text)")
        #expect(await alice.waitForExit() == 0)
        #expect(!alice.events.contains { $0["event"] as? String == "read" }, "\(alice.text)")
    }

    /// Issue 36: `send --board` posts on the mesh's board; listeners print it
    /// as `"event": "board"` with its text; a chat's `/board` lists it and
    /// `/board post` posts one that reaches the listeners too.
    @Test func boardPostsFromTheCommandLineAndTheChat() async throws {
        let (bob, carol, bobPort) = try await Self.line()
        defer { bob.stop(); carol.stop() }
        let posted = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--json", "--name", "alice", "--data-dir", Self.dataDir(),
                                                    "--peer", "127.0.0.1:\(bobPort)", "--wait", "8", "--linger", "1", "--board", "--urgent",
                                                    "--days", "2", "water at gate 2"])
        #expect(posted.status == 0, "\(posted.stdout)\(posted.stderr)")
        #expect(posted.stdout.contains("\"board\":true"), "\(posted.stdout)")
        let got = await carol.waitFor(seconds: 30) { $0["event"] as? String == "board" }
        let board = try #require(got, "carol:\n\(carol.text)")
        #expect(board["text"] as? String == "water at gate 2" && board["urgent"] as? Bool == true && board["nickname"] as? String == "alice")
        #expect(board["geohash"] as? String == "" && board["hops"] as? Int == 2)
        // alice's announce reached carol, verified: the post is alice's by her key, not only by its claim.
        #expect(board["author"] as? String == "alice" && board["shownName"] as? String == "alice", "\(board)")
        let lifetime = (board["expiresAt"] as? Int ?? 0) - (board["createdAt"] as? Int ?? 0)
        #expect(lifetime == 2 * 86_400_000)
        // Bad input is a usage error (64), in words.
        let bad = try await StarlingProcess.run(["send", "--board", "--days", "9", "x"])
        #expect(bad.status == 64 && bad.stderr.contains("1 to 7 days"), "\(bad.stderr)")

        let dave = try Self.chat("dave", peer: bobPort)
        defer { dave.stop() }
        #expect(await dave.waitForText("carol joined (2 hops)"), "\(dave.text)")
        dave.type("/board post bread at the school at noon")
        #expect(await dave.waitForText("posted on the board for a day"), "\(dave.text)")
        let second = await carol.waitFor(seconds: 30) { $0["event"] as? String == "board" && $0["text"] as? String == "bread at the school at noon" }
        #expect(second != nil, "\(carol.text)")
        dave.type("/board")
        #expect(await dave.waitForText("<dave> bread at the school at noon"), "\(dave.text)")
        dave.type("/board post")
        #expect(await dave.waitForText("usage: /board post TEXT"), "\(dave.text)")
        dave.type("/leave")
        #expect(await dave.waitForExit() == 0)
    }

    /// Issue 36: a group made in the chat (`/group create crew bob carol`)
    /// reaches its members' listeners (`"event": "group"`), `/group say` and
    /// `send --to-group` reach them as `"event": "groupMessage"` with the
    /// group's name, and a member restarted reads the group again from its
    /// store (its key is nowhere else).
    @Test func aGroupMadeInTheChatIsReadByItsMembersAcrossARestart() async throws {
        let bob = try Self.node("bob", duration: 120)
        defer { bob.stop() }
        let bobPort = try await Self.port(of: bob)
        let carolDir = Self.dataDir()
        func carol() throws -> LiveProcess {
            try LiveProcess(["listen", "--no-discovery", "--port", "0", "--json", "--name", "carol", "--duration", "120",
                             "--announce-interval", "1", "--data-dir", carolDir, "--peer", "127.0.0.1:\(bobPort)"])
        }
        let first = try carol()
        defer { first.stop() }
        let aliceDir = Self.dataDir()
        let alice = try LiveProcess(["chat", "--no-discovery", "--port", "0", "--name", "alice", "--announce-interval", "1",
                                     "--data-dir", aliceDir, "--peer", "127.0.0.1:\(bobPort)"])
        defer { alice.stop() }
        #expect(await alice.waitForText("carol joined (2 hops)"), "\(alice.text)")
        alice.type("/group create crew bob carol")
        #expect(await alice.waitForText("you made crew: alice, bob, carol"), "\(alice.text)")
        for member in [bob, first] {
            let joined = await member.waitFor(seconds: 30) { $0["event"] as? String == "group" && $0["change"] as? String == "joined" }
            #expect((joined?["text"] as? String)?.hasPrefix("you were added to group 'crew' by alice") == true, "\(member.text)")
        }
        alice.type("/group say crew hello crew")
        for member in [bob, first] {
            let said = await member.waitFor(seconds: 30) { $0["event"] as? String == "groupMessage" }
            #expect(said?["group"] as? String == "crew" && said?["text"] as? String == "hello crew" && said?["nickname"] as? String == "alice",
                    "\(member.text)")
        }
        alice.type("/group")
        #expect(await alice.waitForText("&crew"), "\(alice.text)")
        alice.type("/leave")
        #expect(await alice.waitForExit() == 0)

        // carol restarts: her store gives her the group back.
        kill(first.process.processIdentifier, SIGTERM)
        #expect(await first.waitForExit(seconds: 30) == 0)
        let second = try carol()
        defer { second.stop() }
        #expect(await bob.waitFor(seconds: 30) { $0["event"] as? String == "peer" && $0["nickname"] as? String == "carol" } != nil)
        let sent = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--json", "--data-dir", aliceDir,
                                                  "--peer", "127.0.0.1:\(bobPort)", "--wait", "8", "--linger", "1", "--to-group", "crew",
                                                  "from the command line"])
        #expect(sent.status == 0 && sent.stdout.contains("\"group\":\"crew\""), "\(sent.stdout)\(sent.stderr)")
        for member in [bob, second] {
            let got = await member.waitFor(seconds: 30) { $0["event"] as? String == "groupMessage" && $0["text"] as? String == "from the command line" }
            #expect(got?["group"] as? String == "crew", "\(member.text)")
        }
        // Bad input: a usage error (64); a group this directory is not in: a runtime failure (1), in words.
        let both = try await StarlingProcess.run(["send", "--to-group", "crew", "--board", "x"])
        #expect(both.status == 64 && both.stderr.contains("--to-group"), "\(both.stderr)")
        let unknown = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--data-dir", aliceDir, "--wait", "1",
                                                     "--to-group", "nosuch", "x"])
        #expect(unknown.status == 1 && unknown.stderr.contains("no group nosuch"), "\(unknown.stderr)")
        // Alice's full-screen chat after the restart opens on #mesh, the group's window behind it
        // (issue 52 item 10: it opened on the group's).
        try Tmux.require()
        let tmux = Tmux()
        defer { tmux.stop() }
        try tmux.start("alice", [StarlingProcess.executable.path, "chat", "--no-discovery", "--port", "0", "--announce-interval", "1",
                                 "--data-dir", aliceDir, "--peer", "127.0.0.1:\(bobPort)"], environment: ["TERM": "screen"])
        #expect(await tmux.waitForScreen("alice", "in 1 group: &crew (a window each)"), "\(tmux.screen("alice"))")
        #expect(await tmux.waitForScreen("alice", "1:*#mesh 2:&crew"), "\(tmux.screen("alice"))")
        #expect(tmux.screen("alice").contains("[#mesh]"), "\(tmux.screen("alice"))")
        try tmux.keys("alice", "M-2") // the control: the group's window is there, and shows its name when chosen
        #expect(await tmux.waitForScreen("alice", "[&crew]"), "\(tmux.screen("alice"))")
    }

    /// The board outlives a restart: a listener that took a post and was
    /// stopped keeps it in its data directory's `board` (0600), and after its
    /// restart hands it to a newcomer by the board's sync.
    @Test func theBoardIsKeptAcrossARestartAndSyncedToANewcomer() async throws {
        let dir = Self.dataDir()
        func keeper() throws -> LiveProcess {
            try LiveProcess(["listen", "--no-discovery", "--port", "0", "--json", "--name", "keeper", "--duration", "90",
                             "--announce-interval", "1", "--data-dir", dir])
        }
        let first = try keeper()
        defer { first.stop() }
        let port = try await Self.port(of: first)
        let posted = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--name", "alice", "--data-dir", Self.dataDir(),
                                                    "--peer", "127.0.0.1:\(port)", "--wait", "8", "--linger", "1", "--board", "kept across a restart"])
        #expect(posted.status == 0, "\(posted.stdout)\(posted.stderr)")
        #expect(await first.waitFor { $0["event"] as? String == "board" } != nil, "\(first.text)")
        kill(first.process.processIdentifier, SIGTERM)
        #expect(await first.waitForExit(seconds: 30) == 0)
        #expect(try DaemonProcessTests.mode(dir + "/board") == 0o600)
        let second = try keeper()
        defer { second.stop() }
        let again = try await Self.port(of: second)
        let erin = try Self.node("erin", peers: [again], duration: 90)
        defer { erin.stop() }
        let got = await erin.waitFor(seconds: 75) { $0["event"] as? String == "board" }
        #expect(got?["text"] as? String == "kept across a restart" && got?["hops"] as? Int == 1, "erin:\n\(erin.text)\nkeeper:\n\(second.text)")
    }

    @Test func chatSessionWithCommands() async throws {
        let (bob, carol, bobPort) = try await Self.line()
        defer { bob.stop(); carol.stop() }
        let alice = try Self.chat("alice", peer: bobPort)
        defer { alice.stop() }
        #expect(await alice.waitForText("carol joined (2 hops)"), "\(alice.text)")
        alice.type("/who")
        #expect(await alice.waitForText("2 hops"))
        alice.type("hello \u{202E}everyone")
        let message = try #require(await carol.waitFor { $0["event"] as? String == "message" })
        #expect(message["text"] as? String == "hello \u{202E}everyone") // the wire carries it as typed
        alice.type("/msg carol a private word")
        #expect(await carol.waitFor { $0["event"] as? String == "privateMessage" }?["text"] as? String == "a private word")
        #expect(await alice.waitForText("to carol: delivered"), "\(alice.text)")
        #expect(await alice.waitForText("to carol: read"), "\(alice.text)")
        alice.type("/verify carol")
        #expect(await alice.waitForText("y to mark verified"))
        alice.type("y")
        #expect(await alice.waitForText("carol✓ verified"))
        alice.type("/stats")
        #expect(await alice.waitForText("relays scheduled"))
        #expect(await alice.waitForText("refused: malformed 0, from blocked senders 0, TTL clamped 0, too large to send 0"))
        alice.type("/status busy")
        #expect(await alice.waitForText("you are 🔶 Busy"))
        let state = await carol.waitFor { $0["event"] as? String == "state" && $0["name"] as? String == "alice" }
        #expect(state?["state"] as? String == "busy" && state?["hops"] as? Int == 2, "\(carol.text)")
        alice.type("/fav carol")
        #expect(await alice.waitForText("carol is a favourite"))
        alice.type("/status")
        #expect(await alice.waitForText("you: 🔶 Busy"))
        alice.type("/nick alicia")
        #expect(await bob.waitFor { $0["event"] as? String == "peer" && $0["nickname"] as? String == "alicia" } != nil)
        alice.type("/leave")
        #expect(await alice.waitForText("* left"))
        #expect(await carol.waitFor { $0["event"] as? String == "left" } != nil)
        #expect(await alice.waitForExit() == 0)
    }

    @Test func chatShowsStrangersTextCleaned() async throws {
        let bob = try Self.node("bob")
        defer { bob.stop() }
        let bobPort = try await Self.port(of: bob)
        let watcher = try Self.chat("watcher", peer: bobPort)
        defer { watcher.stop() }
        #expect(await watcher.waitForText("bob joined"))
        let sender = try LiveProcess(["send", "--no-discovery", "--port", "0", "--name", "m\u{200B}allory", "--data-dir", Self.dataDir(),
                                      "--peer", "127.0.0.1:\(bobPort)", "--wait", "8", "--linger", "1",
                                      "clear\u{1B}[2J screen \u{202E}gnp.exe watcher"])
        defer { sender.stop() }
        #expect(await watcher.waitForText("clear[2J screen gnp.exe watcher"), "\(watcher.text)")
        #expect(await watcher.waitForText("<mallory"))            // zero-width stripped from the nickname
        #expect(!watcher.text.contains("\u{1B}[2J"))          // no escape reached the terminal
        // A mention to a pipe stays a plain line (README: plain lines); the bell and bold are a terminal's.
        #expect(!watcher.text.contains("\u{7}") && !watcher.text.contains("\u{1B}[1m"), "\(watcher.text)")
    }

    @Test func messagesQueueWhileTheRelayIsDownAndArriveWhenItReturns() async throws {
        let bobDir = Self.dataDir()
        var bob = try LiveProcess(["listen", "--no-discovery", "--port", "0", "--json", "--name", "bob", "--duration", "40",
                                   "--announce-interval", "1", "--data-dir", bobDir])
        let bobPort = try await Self.port(of: bob)
        let carol = try Self.node("carol", peers: [bobPort], duration: 40)
        defer { carol.stop() }
        let alice = try Self.chat("alice", peer: bobPort)
        defer { alice.stop() }
        #expect(await alice.waitForText("carol joined (2 hops)"), "\(alice.text)")
        alice.type("/who") // each peer with what its announce says it can do
        #expect(await alice.waitForText("2 hops  can: prekeys, wifiBulk, groups, board, meshDiagnostics, privateMedia"), "\(alice.text)")
        alice.type("/msg carol before the outage")
        #expect(await alice.waitForText("to carol: delivered"))

        bob.stop() // the only relay goes away
        alice.type("/msg carol during the outage")
        try await Task.sleep(for: .seconds(3))
        #expect(!carol.text.contains("during the outage"))

        bob = try LiveProcess(["listen", "--no-discovery", "--port", String(bobPort), "--json", "--name", "bob", "--duration", "30",
                               "--announce-interval", "1", "--data-dir", bobDir])
        defer { bob.stop() }
        let got = await carol.waitFor(seconds: 30) { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "during the outage" }
        #expect(got != nil, "carol:\n\(carol.text)\nalice:\n\(alice.text)")
        // Alice hears it was delivered: two deliveries now, before and during the outage.
        let deadline = Date().addingTimeInterval(5)
        while alice.text.components(separatedBy: "to carol: delivered").count < 3, Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(alice.text.components(separatedBy: "to carol: delivered").count == 3, "\(alice.text)")
        // Shown once, however many times it was sent.
        #expect(carol.events.filter { $0["text"] as? String == "during the outage" }.count == 1)
    }

    /// Carol's identity, made ahead: her data directory and fingerprint.
    static func identity() async throws -> (dataDir: String, fingerprint: String) {
        let dir = dataDir()
        let r = try await StarlingProcess.run(["id", "--json", "--data-dir", dir])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        return (dir, try #require(object["fingerprint"] as? String))
    }

    @Test func aMessageForAnAbsentFavouriteIsHeldAndDeliveredWhenSheReturns() async throws {
        let carol = try await Self.identity()
        let alice = try LiveProcess(["chat", "--no-discovery", "--port", "0", "--name", "alice", "--announce-interval", "1",
                                     "--data-dir", Self.dataDir(), "--favorite", carol.fingerprint, "--retry-budget", "1"])
        defer { alice.stop() }
        #expect(await alice.waitForText("you are alice"))
        let alicePort = try #require(alice.text.split(separator: ":").last.flatMap { UInt16($0.prefix { $0.isNumber }) })
        let carol1 = try LiveProcess(["listen", "--no-discovery", "--port", "0", "--json", "--name", "carol", "--announce-interval", "1",
                                      "--data-dir", carol.dataDir, "--peer", "127.0.0.1:\(alicePort)", "--duration", "30"])
        let carolPort = try await Self.port(of: carol1)
        #expect(await alice.waitForText("carol joined"), "\(alice.text)")
        kill(carol1.process.processIdentifier, SIGKILL)             // she goes without a word (out of range: no LEAVE)
        _ = await carol1.waitForExit(seconds: 15)
        alice.type("/msg carol while you were away")
        #expect(await alice.waitForText("held until they are back", seconds: 30), "\(alice.text)")
        #expect(!alice.text.contains("failed"))
        let carol2 = try LiveProcess(["listen", "--no-discovery", "--port", String(carolPort), "--json", "--name", "carol",
                                      "--announce-interval", "1", "--data-dir", carol.dataDir, "--peer", "127.0.0.1:\(alicePort)",
                                      "--duration", "30"])
        defer { carol2.stop() }
        let got = await carol2.waitFor(seconds: 30) { $0["event"] as? String == "privateMessage" }
        #expect(got?["text"] as? String == "while you were away", "carol:\n\(carol2.text)\nalice:\n\(alice.text)")
        #expect(await alice.waitForText("to carol: delivered", seconds: 30), "\(alice.text)")
    }

    @Test func aMessageForSomeoneElseFailsAtTheEndOfItsBudgetAndSaysSo() async throws {
        let alice = try LiveProcess(["chat", "--no-discovery", "--port", "0", "--name", "alice", "--announce-interval", "1",
                                     "--data-dir", Self.dataDir(), "--retry-budget", "1"])
        defer { alice.stop() }
        #expect(await alice.waitForText("you are alice"))
        let alicePort = try #require(alice.text.split(separator: ":").last.flatMap { UInt16($0.prefix { $0.isNumber }) })
        let dave = try LiveProcess(["listen", "--no-discovery", "--port", "0", "--json", "--name", "dave", "--announce-interval", "1",
                                    "--data-dir", Self.dataDir(), "--peer", "127.0.0.1:\(alicePort)", "--duration", "30"])
        #expect(await alice.waitForText("dave joined"), "\(alice.text)")
        kill(dave.process.processIdentifier, SIGKILL)               // out of range: no LEAVE
        _ = await dave.waitForExit(seconds: 15)
        let start = Date()
        alice.type("/msg dave are you there")
        #expect(await alice.waitForText("to dave: failed (not delivered)", seconds: 10), "\(alice.text)")
        #expect(Date().timeIntervalSince(start) >= 1.0)             // not before the budget
        #expect(!alice.text.contains("held"))
    }

    @Test func fileOf100KiBCrossesTheLineIntact() async throws {
        let (bob, carol, bobPort) = try await Self.line()
        defer { bob.stop(); carol.stop() }
        var rng = SystemRandomNumberGenerator()
        let content = Data((0..<100 * 1024).map { _ in UInt8.random(in: 0...255, using: &rng) })
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("starling-photo-\(UUID().uuidString).jpg")
        try content.write(to: path)
        defer { try? FileManager.default.removeItem(at: path) }
        let alice = try Self.chat("alice", peer: bobPort)
        defer { alice.stop() }
        #expect(await alice.waitForText("carol joined (2 hops)"), "\(alice.text)")
        alice.type("/send carol \(path.path)")
        let received = try #require(await carol.waitFor(seconds: 30) { $0["event"] as? String == "fileReceived" },
                                    "carol:\n\(carol.text.suffix(2000))\nalice:\n\(alice.text)")
        #expect(received["size"] as? Int == content.count)
        #expect(received["name"] as? String == path.lastPathComponent)
        let saved = try #require(received["path"] as? String)
        #expect(FileManager.default.contents(atPath: saved) == content)
        // Progress was reported as fragments came in, and the sender heard of the delivery.
        #expect(carol.events.filter { $0["event"] as? String == "fileProgress" }.count > 100)
        #expect(await alice.waitForText("to carol: delivered"), "\(alice.text)")
        #expect(!bob.events.contains { $0["event"] as? String == "fileReceived" })
    }

    /// `--lan` finds peers by multicast on a real (virtual) network: two network
    /// namespaces this test creates, joined by a veth pair. Nothing leaves them.
    @Test func lanDiscoveryAcrossTwoNetworkNamespaces() async throws {
        let tag = String(getpid() % 100_000)
        let (a, b) = ("stA\(tag)", "stB\(tag)")
        let ip = BulkProcessTests.Namespace.ip
        defer { try? ip(["netns", "del", a]); try? ip(["netns", "del", b]) }
        try ip(["netns", "add", a])
        try ip(["netns", "add", b])
        try ip(["link", "add", "veA\(tag)", "netns", a, "type", "veth", "peer", "name", "veB\(tag)", "netns", b])
        for (ns, dev, addr) in [(a, "veA\(tag)", "10.247.0.1/24"), (b, "veB\(tag)", "10.247.0.2/24")] {
            try ip(["-n", ns, "link", "set", "lo", "up"])
            try ip(["-n", ns, "addr", "add", addr, "dev", dev])
            try ip(["-n", ns, "link", "set", dev, "up"])
            try ip(["-n", ns, "route", "add", "224.0.0.0/4", "dev", dev])
        }
        func node(_ ns: String, _ name: String) throws -> LiveProcess {
            let p = LiveProcess.unstarted(["/usr/sbin/ip", "netns", "exec", ns, StarlingProcess.executable.path,
                                           "listen", "--lan", "--no-discovery", "--json", "--name", name, "--duration", "10",
                                           "--announce-interval", "1", "--data-dir", Self.dataDir()])
            try p.start()
            return p
        }
        let left = try node(a, "left"), right = try node(b, "right")
        defer { left.stop(); right.stop() }
        let seen = await left.waitFor(seconds: 30) { $0["event"] as? String == "peer" && $0["nickname"] as? String == "right" }
        #expect(seen != nil, "left:\n\(left.text)\nright:\n\(right.text)")
        #expect(await right.waitFor(seconds: 30) { $0["event"] as? String == "peer" && $0["nickname"] as? String == "left" } != nil)
        // They linked each other's address on the virtual network, not loopback.
        #expect(left.events.contains { ($0["address"] as? String)?.hasPrefix("10.247.0.2:") == true })
    }

    @Test func nodesFindEachOtherWithoutConfigurationOnLoopback() async throws {
        // Discovery uses the fixed rendezvous ports; run only if two are free.
        let a = try LiveProcess(["listen", "--json", "--name", "disco-a", "--duration", "8", "--announce-interval", "1", "--data-dir", Self.dataDir()])
        defer { a.stop() }
        let b = try LiveProcess(["listen", "--json", "--name", "disco-b", "--duration", "8", "--announce-interval", "1", "--data-dir", Self.dataDir()])
        defer { b.stop() }
        let seen = await a.waitFor(seconds: 30) { $0["event"] as? String == "peer" && $0["nickname"] as? String == "disco-b" }
        #expect(seen != nil, "a:\n\(a.text)\nb:\n\(b.text)")
    }
}
