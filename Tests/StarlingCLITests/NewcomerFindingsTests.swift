import Foundation
import StarlingTestSupport
import Testing

/// Issue 52's smaller findings, each as a person met it: what the command
/// says, and that it says what to do.
@Suite(.usesProcesses) struct NewcomerFindingsTests {
    /// `--relay` was renamed `--server`: old scripts still work, and are told
    /// the new name (not "Did you mean '--lan'?").
    @Test func theOldRelayFlagStillWorksAndSaysTheNewName() async throws {
        let dir = ContactCommandTests.temporaryDirectory("relay-alias")
        let r = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--data-dir", dir, "--wait", "1",
                                               "--relay", "127.0.0.1:9", "--to", "nobody", "hi"])
        #expect(r.stderr.contains("--relay is now --server"), "\(r.stderr)")
        #expect(!r.stderr.contains("Did you mean"), "\(r.stderr)")
        #expect(r.stderr.contains("nobody not found"), "it ran: \(r.stderr)")
        // The alias is the option itself: a bad value is refused as --server's would be.
        let bad = try await StarlingProcess.run(["listen", "--data-dir", dir, "--relay", "nowhere"])
        #expect(bad.status == 64 && bad.stderr.contains("--server nowhere"), "\(bad.status) \(bad.stderr)")
        // It stays out of the help.
        let help = try await StarlingProcess.run(["send", "--help"])
        #expect(help.stdout.contains("--server <") && !help.stdout.contains("--relay <"), "\(help.stdout)")
    }

    /// `--server` takes a host name, as README shows it: a node registers with
    /// a Ya OK server named (here) by a name /etc/hosts knows.
    @Test func theServerIsReachedByItsName() async throws {
        let dbDir = ContactCommandTests.temporaryDirectory("server-by-name")
        try FileManager.default.createDirectory(atPath: dbDir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dbDir) }
        let (server, port) = try await ServerProcessTests.server(db: dbDir + "/relay.sqlite")
        defer { server.stop() }
        let node = try LiveProcess(["listen", "--json", "--no-discovery", "--port", "0", "--duration", "30",
                                    "--data-dir", ContactCommandTests.temporaryDirectory("by-name"), "--server", "LOCALHOST:\(port)"])
        defer { node.stop() }
        #expect(await node.waitForText("registered with the Ya OK server LOCALHOST:\(port) (127.0.0.1:\(port))", seconds: 60), "\(node.text)")
        // A name that is no host name is a usage error (64), said with what is expected.
        let bad = try await StarlingProcess.run(["listen", "--data-dir", dbDir, "--server", "bad_host:1"])
        #expect(bad.status == 64 && bad.stderr.contains("a host name, an IPv4 address or an IPv6 one in brackets"), "\(bad.stderr)")
    }

    /// `listen` in words names a peer by nickname when they go, as when they
    /// came (it said their ID), and a stranger's nickname reaches the terminal
    /// cleaned of controls.
    @Test func listenNamesPeopleAndCleansTheirNames() async throws {
        let bob = try LiveProcess(["listen", "--no-discovery", "--port", "0", "--name", "bob", "--duration", "60", "--announce-interval", "1",
                                   "--data-dir", ContactCommandTests.temporaryDirectory("names-bob")])
        defer { bob.stop() }
        #expect(await bob.waitForText("* bob ("), "\(bob.text)")
        let port = try #require(bob.text.split(separator: ":").last.flatMap { UInt16($0.prefix { $0.isNumber }) }, "\(bob.text)")
        let sent = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--name", "mal\u{1B}[2Jlory", "--announce-interval", "1",
                                                  "--data-dir", ContactCommandTests.temporaryDirectory("names-mallory"),
                                                  "--peer", "127.0.0.1:\(port)", "hello"])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(await bob.waitForText("<mal[2Jlory> hello"), "\(bob.text)")
        #expect(await bob.waitForText("* mal[2Jlory ("), "the join names them: \(bob.text)")
        #expect(await bob.waitForText(") left"), "\(bob.text)")
        let left = try #require(bob.text.split(separator: "\n").first { $0.hasSuffix(") left") })
        #expect(left.hasPrefix("* mal[2Jlory ("), "the leave names them too: \(left)")
        #expect(!bob.text.contains("\u{1B}"), "no escape reached the terminal")
    }

    /// `listen --mark-read` sends read receipts "as they are printed": for the
    /// messages it prints, not for those an earlier run printed unmarked.
    @Test func markReadMarksOnlyWhatItPrints() async throws {
        let alice = try LiveProcess(["chat", "--plain", "--no-discovery", "--port", "0", "--name", "alice", "--announce-interval", "1",
                                     "--data-dir", ContactCommandTests.temporaryDirectory("markread-alice")])
        defer { alice.stop() }
        #expect(await alice.waitForText("on 127.0.0.1:"), "\(alice.text)")
        let port = try #require(alice.text.components(separatedBy: "on 127.0.0.1:").last.flatMap { UInt16($0.prefix { $0.isNumber }) })
        let bobDir = ContactCommandTests.temporaryDirectory("markread-bob")
        func bob(_ markRead: Bool) throws -> LiveProcess {
            try LiveProcess(["listen", "--json", "--no-discovery", "--port", "0", "--name", "bob", "--announce-interval", "1", "--duration", "90",
                             "--data-dir", bobDir, "--peer", "127.0.0.1:\(port)"] + (markRead ? ["--mark-read"] : []))
        }
        let first = try bob(false)
        #expect(await alice.waitForText("bob joined"), "\(alice.text)")
        alice.type("/msg bob one")
        alice.type("/msg bob two")
        #expect(await first.waitFor { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "two" } != nil, "\(first.text)")
        let until = Date().addingTimeInterval(60)
        while alice.text.components(separatedBy: "to bob: delivered").count < 3, Date() < until { try await Task.sleep(for: .milliseconds(50)) }
        #expect(alice.text.components(separatedBy: "to bob: delivered").count == 3, "\(alice.text)")
        #expect(!alice.text.contains("to bob: read"), "not read: bob's first run does not mark")
        first.stop()
        _ = await first.waitForExit(seconds: 30)
        let second = try bob(true)
        defer { second.stop() }
        // Bob's second arrival (his first left the text "bob joined" already).
        let back = Date().addingTimeInterval(60)
        while alice.text.components(separatedBy: "bob joined").count < 3, Date() < back { try await Task.sleep(for: .milliseconds(50)) }
        #expect(alice.text.components(separatedBy: "bob joined").count == 3, "\(alice.text)")
        alice.type("/msg bob three")
        #expect(await second.waitFor(seconds: 60) { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "three" } != nil,
                "bob:\n\(second.text)\nalice:\n\(alice.text)")
        // The control: the message it printed is read.
        #expect(await alice.waitForText("to bob: read"), "\(alice.text)")
        try await Task.sleep(for: .seconds(3)) // receipts for one and two would have come by now
        #expect(alice.text.components(separatedBy: "to bob: read").count == 2, "only three was read: \(alice.text)")
    }

    /// Your own npub: `starling id` shows it (a contact on a NIP-17 client
    /// needs it to write first), the same at every run, another for another person.
    @Test func idShowsOurNpub() async throws {
        let dir = ContactCommandTests.temporaryDirectory("npub")
        let first = try ContactCommandTests.json(try await StarlingProcess.run(["id", "--data-dir", dir, "--name", "alice", "--json"]).stdout)
        let npub = try #require(first["npub"] as? String)
        #expect(npub.hasPrefix("npub1") && npub.count == 63, "\(npub)")
        let plain = try await StarlingProcess.run(["id", "--data-dir", dir])
        #expect(plain.stdout.contains("npub:        \(npub)"), "\(plain.stdout)")
        let other = try ContactCommandTests.json(try await StarlingProcess.run(["id", "--data-dir", ContactCommandTests.temporaryDirectory("npub2"), "--json"]).stdout)
        #expect(other["npub"] as? String != npub, "the control: another person, another key")
    }

    /// A damaged identity.key: the path and what to do, not only "not a Starling key file".
    @Test func aDamagedKeyFileIsNamedWithWhatToDo() async throws {
        let dir = ContactCommandTests.temporaryDirectory("damaged-key")
        #expect(try await StarlingProcess.run(["id", "--data-dir", dir, "--name", "alice"]).status == 0)
        let key = dir + "/identity.key"
        try Data("this is not a key".utf8).write(to: URL(fileURLWithPath: key))
        chmod(key, 0o600)
        let r = try await StarlingProcess.run(["id", "--data-dir", dir])
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains(key) && r.stderr.contains("backup") && r.stderr.contains("move the file away"), "\(r.stderr)")
    }

    /// A damaged user-id file is refused, never silently replaced: a new ID
    /// would make this person a stranger to every Ya OK contact.
    @Test func aDamagedUserIDIsRefusedNotReplaced() async throws {
        let dir = ContactCommandTests.temporaryDirectory("damaged-user-id")
        let card = try await StarlingProcess.run(["contact", "qr", "--data-dir", dir, "--json"])
        #expect(card.status == 0, "\(card.stderr)")
        let file = dir + "/user-id"
        let original = try String(contentsOfFile: file, encoding: .utf8)
        #expect(!original.isEmpty)
        // The control: read again, the same ID.
        let again = try await StarlingProcess.run(["contact", "qr", "--data-dir", dir, "--json"])
        #expect(try ContactCommandTests.json(again.stdout)["uri"] as? String == ContactCommandTests.json(card.stdout)["uri"] as? String)
        try Data("garbage\n".utf8).write(to: URL(fileURLWithPath: file))
        let r = try await StarlingProcess.run(["contact", "qr", "--data-dir", dir, "--json"])
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains(file) && r.stderr.contains("stranger"), "\(r.stderr)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "garbage\n", "the file was replaced")
    }

    /// `pin --passphrase` without a terminal on an unlocked store asks for a
    /// new passphrase: it must not say the store is locked.
    @Test func aNewPassphraseWithoutATerminalIsAskedForAsSuch() async throws {
        let dir = ContactCommandTests.temporaryDirectory("pin-no-tty")
        #expect(try await StarlingProcess.run(["contact", "qr", "--data-dir", dir]).status == 0)
        let r = try await StarlingProcess.run(["pin", "--passphrase", "--data-dir", dir])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("new passphrase") && r.stderr.contains("STARLING_NEW_PIN"), "\(r.stderr)")
        #expect(!r.stderr.contains("locked"), "\(r.stderr)")
        // The control: given in the variable, it is set.
        let set = try await StarlingProcess.run(["pin", "--passphrase", "--data-dir", dir], environment: ["STARLING_NEW_PIN": "a long enough passphrase"])
        #expect(set.status == 0, "\(set.stderr)")
    }

    /// The chat's /help names every way to answer a stranger's request (a person's
    /// pass found /requests and /accept NPUB NAME missing from it); /board is the control.
    @Test func theChatsHelpNamesTheRequestCommands() async throws {
        let r = try await StarlingProcess.run(["chat", "--plain", "--no-discovery", "--port", "0", "--name", "helpful",
                                               "--data-dir", ContactCommandTests.temporaryDirectory("help")], stdin: Data("/help\n/quit\n".utf8))
        #expect(r.stdout.contains("/board") && r.stdout.contains("/requests") && r.stdout.contains("/accept NPUB NAME, /block NPUB"),
                "\(r.stdout)\(r.stderr)")
    }
}
