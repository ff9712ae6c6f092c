import Foundation
import StarlingTestSupport
import Testing

/// `starling contact`, `pin`, `backup` and `restore` as a person runs them:
/// two identities in two data directories adding each other by QR code.
@Suite(.usesProcesses) struct ContactCommandTests {
    static func temporaryDirectory(_ label: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("starling-\(label)-\(UUID().uuidString)").path
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not JSON: \(text)")
    }

    @Test func twoPeopleAddEachOtherAndCompareSafetyNumbers() async throws {
        let alice = Self.temporaryDirectory("alice"), bob = Self.temporaryDirectory("bob")
        defer { for d in [alice, bob] { try? FileManager.default.removeItem(atPath: d) } }
        #expect(try await StarlingProcess.run(["id", "--data-dir", alice, "--name", "alice"]).status == 0)
        #expect(try await StarlingProcess.run(["id", "--data-dir", bob, "--name", "bob"]).status == 0)

        // Bob shows his code as a picture; alice reads the picture.
        let png = bob + "/bob.png"
        let bobQR = try await StarlingProcess.run(["contact", "qr", "--data-dir", bob, "--png", png, "--json"])
        #expect(bobQR.status == 0, "\(bobQR.stderr)")
        let bobCard = try Self.json(bobQR.stdout)
        let bobURI = try #require(bobCard["uri"] as? String)
        #expect(bobURI.hasPrefix("yaok://contact?v=1&d="))
        #expect(bobCard["displayName"] as? String == "bob")
        let added = try await StarlingProcess.run(["contact", "add", "--data-dir", alice, "--image", png])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.contains("added bob"))

        // The terminal form draws the code with block characters.
        let aliceQR = try await StarlingProcess.run(["contact", "qr", "--data-dir", alice])
        #expect(aliceQR.stdout.contains("█") && aliceQR.stdout.contains("yaok://contact?v=1&d="))
        let aliceURI = try #require(aliceQR.stdout.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix("yaok://") }
            .map(String.init))
        #expect(try await StarlingProcess.run(["contact", "add", "--data-dir", bob, aliceURI]).status == 0)

        // Both see the same safety number.
        let onAlice = try Self.json(try await StarlingProcess.run(["contact", "verify", "--data-dir", alice, "bob", "--json"]).stdout)
        let onBob = try Self.json(try await StarlingProcess.run(["contact", "verify", "--data-dir", bob, "alice", "--json"]).stdout)
        let number = try #require(onAlice["safetyNumber"] as? String)
        #expect(number.split(separator: " ").count == 16)
        #expect(number == number.uppercased())
        #expect(onBob["safetyNumber"] as? String == number)
        #expect(onAlice["verified"] as? Bool == false)
        #expect(try await StarlingProcess.run(["contact", "verify", "--data-dir", alice, "bob", "--yes"]).stdout.contains("verified ✓"))
        #expect(try await StarlingProcess.run(["contact", "list", "--data-dir", alice]).stdout.contains("bob ✓"))
        let mismatch = try await StarlingProcess.run(["contact", "verify", "--data-dir", bob, "alice", "--mismatch"])
        #expect(mismatch.status != 0)
        #expect(mismatch.stderr.contains("SECURITY WARNING") && mismatch.stderr.contains("do not match"))

        // A duplicate asks; a script says --replace.
        let again = try await StarlingProcess.run(["contact", "add", "--data-dir", alice, bobURI])
        #expect(again.status != 0)
        #expect(again.stderr.contains("--replace"))
        #expect(try await StarlingProcess.run(["contact", "add", "--data-dir", alice, bobURI, "--replace"]).status == 0)

        // A tampered code: a character of the signature changed.
        var chars = Array(bobURI)
        let i = chars.count - 10
        chars[i] = chars[i] == "A" ? "B" : "A"
        let tampered = try await StarlingProcess.run(["contact", "add", "--data-dir", alice, String(chars), "--replace"])
        #expect(tampered.status == 3)
        #expect(tampered.stderr.contains("signature"))
        // A broken one says which field.
        let cut = try await StarlingProcess.run(["contact", "add", "--data-dir", alice, String(bobURI.dropLast(20))])
        #expect(cut.status != 0 && cut.status != 3, "a format error, not a security warning")
        #expect(cut.stderr.contains("not a valid contact code") && !cut.stderr.contains("SECURITY"))

        // Removing asks (the conversation goes too): without a terminal, --yes is needed, and nothing is removed.
        let asked = try await StarlingProcess.run(["contact", "remove", "--data-dir", alice, "bob"])
        #expect(asked.status == 1 && asked.stderr.contains("confirm with --yes"), "\(asked.stderr)")
        #expect(try await StarlingProcess.run(["contact", "list", "--data-dir", alice]).stdout.contains("bob"))
        #expect(try await StarlingProcess.run(["contact", "remove", "--data-dir", alice, "--yes", "bob"]).status == 0)
        #expect(try await StarlingProcess.run(["contact", "list", "--data-dir", alice]).stdout.contains("no contacts yet"))
    }

    /// A PIN locks the store; 5 wrong PINs lock it for 30 s across processes.
    @Test func pinLockoutAcrossProcesses() async throws {
        let dir = Self.temporaryDirectory("pin")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let set = try await StarlingProcess.run(["pin", "--data-dir", dir], environment: ["STARLING_NEW_PIN": "2468"])
        #expect(set.status == 0, "\(set.stderr)")
        let noPIN = try await StarlingProcess.run(["contact", "list", "--data-dir", dir])
        #expect(noPIN.status != 0 && noPIN.stderr.contains("STARLING_PIN"))
        #expect(try await StarlingProcess.run(["contact", "list", "--data-dir", dir], environment: ["STARLING_PIN": "2468"]).status == 0)
        for attempt in 1...4 {
            let wrong = try await StarlingProcess.run(["contact", "list", "--data-dir", dir], environment: ["STARLING_PIN": "1111"])
            #expect(wrong.stderr.contains("\(5 - attempt) attempt"), "\(wrong.stderr)")
        }
        let locked = try await StarlingProcess.run(["contact", "list", "--data-dir", dir], environment: ["STARLING_PIN": "1111"])
        #expect(locked.stderr.contains("locked for"))
        let right = try await StarlingProcess.run(["contact", "list", "--data-dir", dir], environment: ["STARLING_PIN": "2468"])
        #expect(right.status != 0 && right.stderr.contains("locked for"), "the lockout holds in a new process")
    }

    /// A damaged store says what to do; `restore` brings back the backup.
    @Test func backupAndRestore() async throws {
        let alice = Self.temporaryDirectory("alice-backup"), bob = Self.temporaryDirectory("bob-backup")
        defer { for d in [alice, bob] { try? FileManager.default.removeItem(atPath: d) } }
        let card = try Self.json(try await StarlingProcess.run(["contact", "qr", "--data-dir", bob, "--json"]).stdout)
        #expect(try await StarlingProcess.run(["contact", "add", "--data-dir", alice, try #require(card["uri"] as? String)]).status == 0)
        let backup = try await StarlingProcess.run(["backup", "--data-dir", alice])
        #expect(backup.status == 0 && backup.stdout.contains("backed up to"))
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: alice + "/store.sqlite"))
        let damaged = try await StarlingProcess.run(["contact", "list", "--data-dir", alice])
        #expect(damaged.status != 0)
        #expect(damaged.stderr.contains("damaged") && damaged.stderr.contains("starling restore"))
        // Not from a script without --yes: it replaces the store.
        let unasked = try await StarlingProcess.run(["restore", "--data-dir", alice])
        #expect(unasked.status == 1 && unasked.stderr.contains("confirm with --yes"), "\(unasked.stderr)")
        #expect(try await StarlingProcess.run(["contact", "list", "--data-dir", alice]).status != 0) // still damaged: nothing was done
        let restored = try await StarlingProcess.run(["restore", "--data-dir", alice, "--yes"])
        #expect(restored.status == 0, "\(restored.stderr)")
        let list = try await StarlingProcess.run(["contact", "list", "--data-dir", alice, "--json"])
        let contacts = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        #expect(contacts.count == 1)
        #expect(contacts.first?["userID"] as? String != nil)
        // Reset keeps the identity.
        let before = try Self.json(try await StarlingProcess.run(["id", "--data-dir", alice, "--json"]).stdout)["fingerprint"] as? String
        #expect(try await StarlingProcess.run(["reset", "--data-dir", alice, "--yes"]).status == 0)
        #expect(try await StarlingProcess.run(["contact", "list", "--data-dir", alice]).stdout.contains("no contacts yet"))
        let after = try Self.json(try await StarlingProcess.run(["id", "--data-dir", alice, "--json"]).stdout)["fingerprint"] as? String
        #expect(before != nil && before == after)
    }

    /// Errors at the edge: a runtime failure is one sentence and exit 1 (no
    /// usage text, no NSError dump); a usage error is the command's usage and 64.
    @Test func runtimeFailuresAreOneSentenceUsageErrorsAreUsage() async throws {
        let dir = Self.temporaryDirectory("edge")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try await StarlingProcess.run(["backup", "--data-dir", dir]).status == 0)
        let missing = try await StarlingProcess.run(["restore", "--data-dir", dir, "--from", "/nonexistent", "--yes"])
        #expect(missing.status == 1, "\(missing.stderr)")
        #expect(missing.stderr.contains("/nonexistent does not exist"), "\(missing.stderr)")
        #expect(!missing.stderr.contains("NSCocoaErrorDomain") && !missing.stderr.contains("Usage:"), "\(missing.stderr)")
        // A port that is not free is the machine's state, not a usage error.
        let bad = try await StarlingProcess.run(["listen", "--no-discovery", "--peer", "not-an-address", "--data-dir", dir])
        #expect(bad.status == 64 && bad.stderr.contains("--peer not-an-address") && bad.stderr.contains("Usage: starling listen"),
                "\(bad.stderr)")
    }

    /// A new PIN or passphrase is judged at its first entry (not after "Again:"),
    /// and `id --seal` asks what `pin --passphrase` asks: 10 characters or more.
    @Test func aNewSecretIsJudgedAtItsFirstEntry() async throws {
        try Tmux.require()
        let dir = Self.temporaryDirectory("new-pin")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try await StarlingProcess.run(["backup", "--data-dir", dir]).status == 0)
        // From the environment: said at once, exit 1.
        let short = try await StarlingProcess.run(["pin", "--data-dir", dir], environment: ["STARLING_NEW_PIN": "12"])
        #expect(short.status == 1 && short.stderr.contains("a PIN is 4 to 6 digits"), "\(short.stderr)")
        let weak = try await StarlingProcess.run(["pin", "--passphrase", "--data-dir", dir], environment: ["STARLING_NEW_PIN": "short"])
        #expect(weak.status == 1 && weak.stderr.contains("at least 10 characters"), "\(weak.stderr)")
        let sealed = try await StarlingProcess.run(["id", "--seal", "--data-dir", Self.temporaryDirectory("seal-short")],
                                                   environment: ["STARLING_PASSPHRASE": "short"])
        #expect(sealed.status == 1 && sealed.stderr.contains("10 or more characters"), "\(sealed.stderr)")
        // At a terminal: "12" is refused before "Again:"; the control, "1357", is asked again.
        let tmux = Tmux()
        defer { tmux.stop() }
        // (In a shell that stays, so that what it said stays on the screen.)
        try tmux.start("pin", ["/bin/sh", "-c", "'\(StarlingProcess.executable.path)' pin --data-dir '\(dir)'; echo \"exit $?\"; sleep 60"],
                       environment: ["TERM": "screen"])
        #expect(await tmux.waitForScreen("pin", "New PIN (4–6 digits):"), "\(tmux.screen("pin"))")
        try tmux.type("pin", "12")
        try tmux.keys("pin", "Enter")
        #expect(await tmux.waitForScreen("pin", "exit 1"), "\(tmux.screen("pin"))")
        #expect(tmux.screen("pin").contains("a PIN is 4 to 6 digits"), "\(tmux.screen("pin"))")
        #expect(!tmux.screen("pin").contains("Again:"), "\(tmux.screen("pin"))")
        try tmux.start("pin2", [StarlingProcess.executable.path, "pin", "--data-dir", dir], environment: ["TERM": "screen"])
        #expect(await tmux.waitForScreen("pin2", "New PIN (4–6 digits):"), "\(tmux.screen("pin2"))")
        try tmux.type("pin2", "1357")
        try tmux.keys("pin2", "Enter")
        #expect(await tmux.waitForScreen("pin2", "Again:"), "\(tmux.screen("pin2"))")
        // `inspect` with nothing to read, at a terminal: it says what it waits for.
        try tmux.start("inspect", [StarlingProcess.executable.path, "inspect"], environment: ["TERM": "screen"])
        #expect(await tmux.waitForScreen("inspect", "reading a packet as hex from standard input; end with Ctrl-D"), "\(tmux.screen("inspect"))")
    }

    /// A wrong PIN at start is said, and nothing opens half: no chat without the store.
    @Test func aWrongPINAtStartIsSaidAndNothingOpens() async throws {
        let dir = Self.temporaryDirectory("wrong-pin")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try await StarlingProcess.run(["pin", "--data-dir", dir], environment: ["STARLING_NEW_PIN": "1357"]).status == 0)
        let wrong = try await StarlingProcess.run(["chat", "--plain", "--no-discovery", "--port", "0", "--data-dir", dir], stdin: Data(),
                                                  environment: ["STARLING_PIN": "0000"])
        #expect(wrong.status == 1, "\(wrong.stdout)\(wrong.stderr)")
        #expect(wrong.stderr.contains("wrong PIN or passphrase"), "\(wrong.stderr)")
        #expect(!wrong.stdout.contains("starling chat"), "it opened: \(wrong.stdout)")
        // Control: the right PIN opens it.
        let right = try await StarlingProcess.run(["chat", "--plain", "--no-discovery", "--port", "0", "--data-dir", dir], stdin: Data("/quit\n".utf8),
                                                  environment: ["STARLING_PIN": "1357"])
        #expect(right.status == 0, "\(right.stdout)\(right.stderr)")
        #expect(right.stdout.contains("starling chat"), "\(right.stdout)")
    }
}

/// The chat with the encrypted store: a message to a contact who is away
/// waits and goes when they appear; the conversation and trust decisions
/// survive a restart.
@Suite(.serialized, .usesProcesses) struct ContactChatProcessTests {
    static func chat(_ name: String, dir: String, peer: UInt16) throws -> LiveProcess {
        try LiveProcess(["chat", "--no-discovery", "--port", "0", "--name", name, "--announce-interval", "1",
                         "--data-dir", dir, "--peer", "127.0.0.1:\(peer)"])
    }

    @Test func pendingForAnAbsentContactThenHistoryAndTrustAfterARestart() async throws {
        let alice = ContactCommandTests.temporaryDirectory("chat-alice"), bob = ContactCommandTests.temporaryDirectory("chat-bob")
        defer { for d in [alice, bob] { try? FileManager.default.removeItem(atPath: d) } }
        for (dir, name) in [(alice, "alice"), (bob, "bob")] {
            #expect(try await StarlingProcess.run(["id", "--data-dir", dir, "--name", name]).status == 0)
        }
        func uri(_ dir: String) async throws -> String {
            try #require(try ContactCommandTests.json(try await StarlingProcess.run(["contact", "qr", "--data-dir", dir, "--json"]).stdout)["uri"] as? String)
        }
        #expect(try await StarlingProcess.run(["contact", "add", "--data-dir", alice, try await uri(bob)]).status == 0)
        #expect(try await StarlingProcess.run(["contact", "add", "--data-dir", bob, try await uri(alice)]).status == 0)

        // A relay both link to; bob is not there yet.
        let relay = try MeshProcessTests.node("relay")
        defer { relay.stop() }
        let relayPort = try await MeshProcessTests.port(of: relay)
        let first = try Self.chat("alice", dir: alice, peer: relayPort)
        defer { first.stop() }
        #expect(await first.waitForText("relay joined"), "\(first.text)")
        first.type("/msg bob hello while you were away")
        #expect(await first.waitForText("pending: not on the mesh now"), "\(first.text)")

        let bobChat = try Self.chat("bob", dir: bob, peer: relayPort)
        defer { bobChat.stop() }
        // Directly through the relay, or first as the courier drop alice left with it (the relay
        // hands it over as bob appears): one or the other, shown once, and read. When bob's read
        // receipt for the courier's copy comes before alice sees his announce, the message is
        // read already and does not go again (on a loaded machine; otherwise it goes directly too).
        #expect(await bobChat.waitForText("hello while you were away"), "\(bobChat.text)")
        #expect(bobChat.text.contains("<alice → you> (via 1 relay) hello while you were away")
                || bobChat.text.contains("<alice → you> (via courier) hello while you were away"), "\(bobChat.text)")
        #expect(await first.waitForText("to bob: read"), "\(first.text)")
        #expect(first.text.contains("bob is here: sending 1 waiting message") || bobChat.text.contains("(via courier) hello while you were away"),
                "neither sent directly nor read as the courier's copy: \(first.text)")
        #expect(bobChat.text.components(separatedBy: "hello while you were away").count == 2, "shown once: \(bobChat.text)")
        first.type("/verify bob")
        #expect(await first.waitForText("y to mark verified"))
        first.type("y")
        #expect(await first.waitForText("verified"))
        first.type("/block relay")
        #expect(await first.waitForText("relay blocked"))
        first.type("/quit")
        #expect(await first.waitForExit() == 0)

        // Restarted: the conversation with its states, the verification and the block.
        let second = try Self.chat("alice", dir: alice, peer: relayPort)
        defer { second.stop() }
        #expect(await second.waitForText("1 contact"), "\(second.text)")
        second.type("/history bob")
        #expect(await second.waitForText("<you → bob> hello while you were away  ✓✓ read"), "\(second.text)")
        second.type("/contacts")
        #expect(await second.waitForText("bob ✓"), "\(second.text)")
        // The relay is blocked: its join is not shown, but /who marks it once it is linked.
        var marked = false
        for _ in 0..<30 where !marked {
            second.type("/who")
            marked = await second.waitForText("(blocked)", seconds: 1)
        }
        #expect(marked, "\(second.text)")
        #expect(!second.text.contains("relay joined"), "\(second.text)")
        // Bob's side kept alice's message too.
        bobChat.type("/history alice")
        #expect(await bobChat.waitForText("<alice → you> hello while you were away"), "\(bobChat.text)")
    }

    /// With a PIN, the chat closes the store when idle; /unlock with the PIN
    /// opens it again (a wrong PIN is refused and counted).
    @Test func theStoreLocksWhenIdleAndOpensWithThePIN() async throws {
        let dora = ContactCommandTests.temporaryDirectory("chat-lock"), bob = ContactCommandTests.temporaryDirectory("chat-lock-bob")
        defer { for d in [dora, bob] { try? FileManager.default.removeItem(atPath: d) } }
        #expect(try await StarlingProcess.run(["id", "--data-dir", bob, "--name", "bob"]).status == 0)
        let card = try ContactCommandTests.json(try await StarlingProcess.run(["contact", "qr", "--data-dir", bob, "--json"]).stdout)
        #expect(try await StarlingProcess.run(["contact", "add", "--data-dir", dora, try #require(card["uri"] as? String)]).status == 0)
        #expect(try await StarlingProcess.run(["pin", "--data-dir", dora], environment: ["STARLING_NEW_PIN": "1357"]).status == 0)
        let relay = try MeshProcessTests.node("relay")
        defer { relay.stop() }
        let relayPort = try await MeshProcessTests.port(of: relay)
        let chat = LiveProcess.unstarted([StarlingProcess.executable.path, "chat", "--no-discovery", "--port", "0", "--name", "dora",
                                          "--data-dir", dora, "--peer", "127.0.0.1:\(relayPort)", "--lock-after", "2"])
        chat.process.environment = ProcessInfo.processInfo.environment.merging(["STARLING_PIN": "1357"]) { $1 }
        try chat.start()
        defer { chat.stop() }
        #expect(await chat.waitForText("1 contact"), "\(chat.text)")
        #expect(await chat.waitForText("locked after 2 s idle"), "\(chat.text)")
        chat.type("/history bob")
        #expect(await chat.waitForText("the store is locked (/unlock)"), "\(chat.text)")
        chat.type("/unlock")
        #expect(await chat.waitForText("PIN:"))
        chat.type("0000")
        #expect(await chat.waitForText("wrong PIN or passphrase (4 attempts left"), "\(chat.text)")
        chat.type("/unlock")
        chat.type("1357")
        #expect(await chat.waitForText("* unlocked"), "\(chat.text)")
        chat.type("/history bob")
        #expect(await chat.waitForText("no messages with"), "\(chat.text)")
    }
}

/// One node per data directory: a second refuses and names the first.
@Suite(.usesProcesses) struct DataDirectoryLockTests {
    @Test func aSecondNodeOnOneDirectoryRefuses() async throws {
        let dir = ContactCommandTests.temporaryDirectory("lock")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try LiveProcess(["listen", "--no-discovery", "--port", "0", "--json", "--duration", "60", "--data-dir", dir])
        defer { first.stop() }
        #expect(await first.waitFor { $0["event"] as? String == "started" } != nil, "\(first.text)")
        let second = try await StarlingProcess.run(["listen", "--no-discovery", "--port", "0", "--duration", "5", "--data-dir", dir])
        #expect(second.status != 0)
        #expect(second.stderr.contains("another starling process (pid \(first.process.processIdentifier))"), "\(second.stderr)")
        // A one-shot store command asks the messenger: beside a node without a daemon there is none
        // it can reach, and it never goes behind that node into the store (issue 54).
        let contact = try await StarlingProcess.run(["contact", "list", "--data-dir", dir])
        #expect(contact.status == 1 && contact.stderr.contains("runs on") && contact.stderr.contains("without a daemon"), "\(contact.stderr)")
        first.stop()
        let alone = try await StarlingProcess.run(["contact", "list", "--data-dir", dir])
        #expect(alone.status == 0 && alone.stdout.contains("no contacts yet"), "the control, alone: \(alone.stdout)\(alone.stderr)")
        // The lock goes with the process.
        let third = try await StarlingProcess.run(["listen", "--no-discovery", "--port", "0", "--duration", "0.5", "--data-dir", dir])
        #expect(third.status == 0, "\(third.stderr)")
    }

    @Test func anUnwritableDataDirectoryIsSaidInWords() async throws {
        // Not even root can make a directory in /proc.
        let result = try await StarlingProcess.run(["listen", "--duration", "1", "--data-dir", "/proc/starling-cannot-be-here"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("cannot create the data directory"))
    }
}

/// Names as a person reads them: two peers with one nickname are never
/// confused, a rename is a rename, and `/send` takes `~` and quoted paths.
@Suite(.serialized, .usesProcesses) struct ChatNamesProcessTests {
    @Test func twoPeersWithOneNicknameARenameAndATypedPath() async throws {
        let relay = try MeshProcessTests.node("relay")
        defer { relay.stop() }
        let port = try await MeshProcessTests.port(of: relay)
        let first = try MeshProcessTests.chat("bob", peer: port)
        defer { first.stop() }
        let second = try MeshProcessTests.chat("bob", peer: port)
        defer { second.stop() }
        let home = ContactCommandTests.temporaryDirectory("home")
        try FileManager.default.createDirectory(atPath: home + "/my files", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: home) }
        try Data("a note".utf8).write(to: URL(fileURLWithPath: home + "/my files/note.txt"))
        let alice = LiveProcess.unstarted([StarlingProcess.executable.path, "chat", "--no-discovery", "--port", "0", "--name", "alice",
                                           "--announce-interval", "1", "--data-dir", ContactCommandTests.temporaryDirectory("alice-names"),
                                           "--peer", "127.0.0.1:\(port)"])
        alice.process.environment = ProcessInfo.processInfo.environment.merging(["HOME": home]) { $1 }
        try alice.start()
        defer { alice.stop() }
        func peerID(_ p: LiveProcess) async throws -> String {
            #expect(await p.waitForText("* you are bob ("))
            let line = try #require(p.text.split(separator: "\n").first { $0.contains("* you are bob (") })
            return String(try #require(line.split(separator: "(").dropFirst().first?.prefix(16)))
        }
        let firstID = try await peerID(first), secondID = try await peerID(second)
        // The second to arrive is shown with 4 digits of its ID; /who lists both so.
        #expect(await alice.waitForText("bob#"), "\(alice.text)")
        alice.type("/who")
        #expect(await alice.waitForText("bob#\(firstID.prefix(4))  \(firstID)"), "\(alice.text)")
        #expect(await alice.waitForText("bob#\(secondID.prefix(4))  \(secondID)"), "\(alice.text)")
        alice.type("/msg bob which of you?")
        #expect(await alice.waitForText("2 peers are called bob:"), "\(alice.text)")
        #expect(!first.text.contains("which of you?") && !second.text.contains("which of you?"))
        alice.type("/msg bob#\(firstID.prefix(4)) you, the first")
        #expect(await first.waitForText("you, the first"), "\(first.text)")
        #expect(!second.text.contains("you, the first"))
        second.type("/nick robert")
        #expect(await alice.waitForText("is now known as robert"), "\(alice.text)")
        alice.type("/send robert \"~/my files/note.txt\"")
        #expect(await second.waitForText("file note.txt (6 bytes) saved"), "\(second.text)\n---\n\(alice.text)")
        alice.type("/send robert ~/my\\ files/note.txt")
        #expect(await alice.waitForText("file note.txt (6 bytes)  · [                    ] queued"), "\(alice.text)")
        // The sender's bar: out to the links, then the receipt.
        #expect(await alice.waitForText("* file to robert [####################] sent in 1 fragment; waiting for the receipt"), "\(alice.text)")
        #expect(await alice.waitForText("· to robert: delivered"), "\(alice.text)")
        // The same file twice arrives twice, and /files lists both.
        let deadline = Date().addingTimeInterval(30)
        while second.text.components(separatedBy: "(6 bytes) saved").count < 3, Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        second.type("/files")
        #expect(await second.waitForText("* 2 files in"), "\(second.text)")
        #expect(second.text.components(separatedBy: "(6 bytes) saved").count == 3, "two saved lines: \(second.text)")
        #expect(second.text.components(separatedBy: "note.txt (6 bytes) from alice").count == 3, "\(second.text)")
    }
}
