import Foundation
import StarlingTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A terminal for tests: tmux on a private socket, typed into with
/// send-keys and read with capture-pane, as a person would use the client.
final class Tmux: @unchecked Sendable {
    let socket = "starling-\(UUID().uuidString.prefix(8))"
    private var sessions: [String] = []

    static var available: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux") }

    /// tmux is a test dependency (scripts/install-deps --test installs it): missing is a failure, not a skip.
    static func require() throws {
        try #require(available, "tmux is not installed at /usr/bin/tmux: run scripts/install-deps --test")
    }

    @discardableResult
    func run(_ arguments: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/tmux")
        p.arguments = ["-L", socket, "-f", "/dev/null"] + arguments
        // Output to a file, not a pipe: the tmux server this may start keeps
        // the descriptors it inherits, and a pipe would never reach its end.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("\(socket)-\(UUID().uuidString).out")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: file) }
        let handle = try FileHandle(forWritingTo: file)
        p.standardOutput = handle
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        // Reaped with waitpid (the suite's helper): Foundation's wait can miss
        // a child whose own child (the tmux server) lives on.
        _ = StarlingProcess.waitForExit(p, seconds: 20)
        try handle.close()
        return String(decoding: try Data(contentsOf: file), as: UTF8.self)
    }

    /// Starts `command` in a new session of `width` × `height`.
    func start(_ session: String, _ command: [String], width: Int = 100, height: Int = 24, environment: [String: String] = [:]) throws {
        let quoted = command.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        try run(["new-session", "-d", "-s", session, "-x", String(width), "-y", String(height)]
            + environment.flatMap { ["-e", "\($0.key)=\($0.value)"] } + [quoted])
        sessions.append(session)
    }

    func keys(_ session: String, _ keys: String...) throws { try run(["send-keys", "-t", session] + keys) }
    func type(_ session: String, _ text: String) throws { try run(["send-keys", "-t", session, "-l", text]) }

    /// A paste, bracketed as a terminal does it for a program that asked.
    func paste(_ session: String, _ text: String) throws {
        try run(["set-buffer", "--", text])
        try run(["paste-buffer", "-p", "-t", session])
    }

    func screen(_ session: String) -> String { (try? run(["capture-pane", "-p", "-t", session])) ?? "" }

    /// The screen with its attributes as escape sequences (colour, bold).
    func screenWithAttributes(_ session: String) -> String { (try? run(["capture-pane", "-e", "-p", "-t", session])) ?? "" }

    /// Polls the screen for `needle` (a generous limit, for a loaded first run).
    func waitForScreen(_ session: String, _ needle: String, seconds: Double = 30) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if screen(session).contains(needle) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return screen(session).contains(needle)
    }

    /// Polls until `needle` shows exactly `count` times.
    func screenCount(_ session: String, _ needle: String, equals count: Int, seconds: Double = 30) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if screen(session).components(separatedBy: needle).count - 1 == count { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return screen(session).components(separatedBy: needle).count - 1 == count
    }

    /// Presses `key` (a window's switch) until `needle` shows `count` times: a switch
    /// typed before the window exists (its /send still in hand) leaves the view where it
    /// was (seen under load: #mesh in view, the count never reached).
    func switchUntil(_ session: String, _ key: String, _ needle: String, equals count: Int, seconds: Double = 30) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            try keys(session, key)
            if await screenCount(session, needle, equals: count, seconds: 2) { return true }
        }
        return screen(session).components(separatedBy: needle).count - 1 == count
    }

    /// Polls until the session's program has ended (and the session with it).
    func waitForEnd(_ session: String, seconds: Double = 30) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let list = (try? run(["list-sessions", "-F", "#{session_name}"])) ?? ""
            if !list.split(whereSeparator: \.isNewline).contains(Substring(session)) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Ends the programs in the panes and the server (kill-server alone was
    /// seen to leave the server and its panes running).
    func stop() {
        let server = sessions.first.flatMap { try? run(["display-message", "-p", "-t", $0, "#{pid}"]) }
        let panes = (try? run(["list-panes", "-a", "-F", "#{pane_pid}"])) ?? ""
        for pid in panes.split(whereSeparator: \.isNewline).compactMap({ Int32($0) }) { kill(pid, SIGKILL) }
        _ = try? run(["kill-server"])
        if let pid = server.flatMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) { kill(pid, SIGKILL) }
    }
}

/// The full-screen client driven through a real terminal (tmux): editing
/// with arrow keys, history, Tab completion, a bracketed paste, windows and
/// receipts on their lines; each step asserts what the screen shows.
@Suite(.serialized, .usesProcesses) struct FullScreenTests {
    static func chat(_ tmux: Tmux, _ name: String, relay: UInt16, session: String? = nil,
                     dataDir: String = MeshProcessTests.dataDir()) throws {
        try tmux.start(session ?? name, [StarlingProcess.executable.path, "chat", "--no-discovery", "--port", "0", "--name", name,
                                         "--announce-interval", "1", "--data-dir", dataDir, "--peer", "127.0.0.1:\(relay)"],
                       environment: ["TERM": "screen"])
    }

    /// Verified and blocked survive a restart; what sync replays after it is
    /// shown as history, oldest first, ours as ours, once; a file sent twice
    /// arrives twice, with the sender's bar and receipts on its lines.
    @Test func trustHistoryAndFilesAcrossARestart() async throws {
        try Tmux.require()
        let relay = try MeshProcessTests.node("relay", duration: 180)
        defer { relay.stop() }
        let port = try await MeshProcessTests.port(of: relay)
        let tmux = Tmux()
        defer { tmux.stop() }
        let aliceData = MeshProcessTests.dataDir()
        try Self.chat(tmux, "alice", relay: port, dataDir: aliceData)
        try Self.chat(tmux, "bob", relay: port)
        try Self.chat(tmux, "carol", relay: port)
        #expect(await tmux.waitForScreen("alice", "bob joined"), "\(tmux.screen("alice"))")
        #expect(await tmux.waitForScreen("alice", "carol joined"), "\(tmux.screen("alice"))")
        #expect(await tmux.waitForScreen("bob", "alice joined"), "\(tmux.screen("bob"))")

        try tmux.type("bob", "bob said this first")
        try tmux.keys("bob", "Enter")
        #expect(await tmux.waitForScreen("alice", "<bob> bob said this first"), "\(tmux.screen("alice"))")
        try tmux.type("alice", "and alice said this")
        try tmux.keys("alice", "Enter")
        #expect(await tmux.waitForScreen("bob", "<alice> and alice said this"), "\(tmux.screen("bob"))")

        // Standard error goes to the data directory's chat.log while the screen is up.
        #expect(FileManager.default.fileExists(atPath: aliceData + "/chat.log"))

        // Trust decisions.
        try tmux.type("alice", "/verify bob")
        try tmux.keys("alice", "Enter")
        #expect(await tmux.waitForScreen("alice", "y to mark verified"), "\(tmux.screen("alice"))")
        try tmux.type("alice", "y")
        try tmux.keys("alice", "Enter")
        #expect(await tmux.waitForScreen("alice", "bob✓ verified"), "\(tmux.screen("alice"))")
        try tmux.type("alice", "/block carol")
        try tmux.keys("alice", "Enter")
        #expect(await tmux.waitForScreen("alice", "carol blocked"), "\(tmux.screen("alice"))")

        // A file (a quoted path with a space) sent twice.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("starling-files-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("the same file, twice\n".utf8).write(to: folder.appendingPathComponent("my notes.txt"))
        for _ in 0..<2 {
            try tmux.type("alice", "/send bob \"\(folder.path)/my notes.txt\"")
            try tmux.keys("alice", "Enter")
        }
        #expect(try await tmux.switchUntil("alice", "M-2", "file my notes.txt (21 bytes)  ✓✓", equals: 2), "\(tmux.screen("alice"))")
        try tmux.keys("bob", "M-2")
        #expect(await tmux.screenCount("bob", "file my notes.txt (21 bytes) saved to", equals: 2), "\(tmux.screen("bob"))")

        // Alice restarts on the same data directory.
        try tmux.keys("alice", "M-1")
        try tmux.type("alice", "/quit")
        try tmux.keys("alice", "Enter")
        #expect(await tmux.waitForEnd("alice"), "\(tmux.screen("alice"))")
        try Self.chat(tmux, "alice", relay: port, session: "alice2", dataDir: aliceData)
        #expect(await tmux.waitForScreen("alice2", "end of history"), "\(tmux.screen("alice2"))")
        let screen = tmux.screen("alice2")
        let bobLine = screen.range(of: "<bob✓> bob said this first"), aliceLine = screen.range(of: "<alice> and alice said this")
        #expect(bobLine != nil && aliceLine != nil, "verified, and ours as ours: \(screen)")
        if let b = bobLine, let a = aliceLine { #expect(b.lowerBound < a.lowerBound, "oldest first: \(screen)") }
        #expect(screen.components(separatedBy: "bob said this first").count == 2, "once: \(screen)")
        #expect(!screen.contains("relays"), "replays come from a neighbour, not 'via 7 relays': \(screen)")

        // Carol is still blocked: her words do not show; bob's, said after hers, do.
        try tmux.type("carol", "carol is still here")
        try tmux.keys("carol", "Enter")
        try tmux.type("carol", "/msg alice psst")
        try tmux.keys("carol", "Enter")
        try tmux.keys("bob", "M-1")
        #expect(await tmux.waitForScreen("bob", "<carol> carol is still here"), "\(tmux.screen("bob"))")
        try tmux.type("bob", "bob after carol")
        try tmux.keys("bob", "Enter")
        #expect(await tmux.waitForScreen("alice2", "<bob✓> bob after carol"), "\(tmux.screen("alice2"))")
        #expect(!tmux.screen("alice2").contains("carol is still here"), "\(tmux.screen("alice2"))")
        #expect(!tmux.screen("alice2").contains("psst"), "\(tmux.screen("alice2"))")

        // `starling send` delivers and leaves quietly: no "joined … left" in
        // anyone's #mesh (a join is shown after 5 s; dave is gone before).
        let started = Date()
        let send = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--name", "dave", "--data-dir",
                                                  MeshProcessTests.dataDir(), "--peer", "127.0.0.1:\(port)", "--wait", "20",
                                                  "--to", "bob", "a quick word"])
        let present = Date().timeIntervalSince(started)
        #expect(send.status == 0, "\(send.stdout)\n\(send.stderr)")
        #expect(await tmux.waitForScreen("bob", "2:alice 3:dave"), "\(tmux.screen("bob"))")
        try tmux.type("carol", "a barrier after the send")
        try tmux.keys("carol", "Enter")
        #expect(await tmux.waitForScreen("alice2", "<bob✓> bob after carol"))
        #expect(await tmux.waitForScreen("bob", "<carol> a barrier after the send"), "\(tmux.screen("bob"))")
        if present < 4 { // (a machine so loaded that dave stayed longer would rightly show him)
            #expect(!tmux.screen("bob").contains("dave joined") && !tmux.screen("bob").contains("dave left"), "\(tmux.screen("bob"))")
            #expect(!tmux.screen("carol").contains("dave"), "\(tmux.screen("carol"))")
            #expect(await tmux.waitForScreen("carol", "3 here"), "dave is gone: \(tmux.screen("carol"))")
        }
        try tmux.keys("bob", "M-3")
        #expect(await tmux.waitForScreen("bob", "<dave> a quick word"), "\(tmux.screen("bob"))")
    }

    /// What came while no face was open is found when one opens (seen in a
    /// person's pass: after the daemon's restart the chat showed #mesh only,
    /// and `/query bob` an empty window). The conversation with unread
    /// messages has its window behind #mesh, counted unread, with its lines;
    /// `/query` opens a window with the latest lines, counted read.
    @Test func whatCameWhileNoFaceWasOpenIsInItsWindow() async throws {
        try Tmux.require()
        let relay = try MeshProcessTests.node("relay", duration: 180)
        defer { relay.stop() }
        let port = try await MeshProcessTests.port(of: relay)
        let aliceData = MeshProcessTests.dataDir()
        let daemon = try DaemonProcessTests.daemon(aliceData, name: "alice", peer: port)
        defer { daemon.stop() }
        #expect(await daemon.waitForText("daemon: "), "\(daemon.text)")
        let send = try await StarlingProcess.run(["send", "--no-discovery", "--port", "0", "--name", "bob", "--data-dir",
                                                  MeshProcessTests.dataDir(), "--peer", "127.0.0.1:\(port)", "--wait", "60",
                                                  "--to", "alice", "while no face was open"])
        #expect(send.status == 0 && send.stdout.contains("delivered"), "\(send.stdout)\n\(send.stderr)")
        let tmux = Tmux()
        defer { tmux.stop() }
        try tmux.start("alice", [StarlingProcess.executable.path, "chat", "--data-dir", aliceData], environment: ["TERM": "screen"])
        #expect(await tmux.waitForScreen("alice", "2:bob(1)"), "its window, behind #mesh, unread: \(tmux.screen("alice"))")
        #expect(!tmux.screen("alice").contains("while no face was open"), "not in #mesh (the control): \(tmux.screen("alice"))")
        try tmux.keys("alice", "M-2")
        #expect(await tmux.waitForScreen("alice", "<bob> while no face was open"), "\(tmux.screen("alice"))")
        // Closed, then asked for again: the latest lines, counted read.
        try tmux.type("alice", "/close")
        try tmux.keys("alice", "Enter")
        #expect(await tmux.waitForScreen("alice", "[1:*#mesh]"), "\(tmux.screen("alice"))")
        try tmux.type("alice", "/query bob")
        try tmux.keys("alice", "Enter")
        #expect(await tmux.waitForScreen("alice", "<bob> while no face was open"), "\(tmux.screen("alice"))")
        #expect(await tmux.waitForScreen("alice", "2:*bob]"), "in view, nothing unread: \(tmux.screen("alice"))")
    }

    @Test func editingCompletionPasteWindowsAndReceipts() async throws {
        try Tmux.require()
        let relay = try MeshProcessTests.node("relay")
        defer { relay.stop() }
        let port = try await MeshProcessTests.port(of: relay)
        let tmux = Tmux()
        defer { tmux.stop() }
        try Self.chat(tmux, "alice", relay: port)
        try Self.chat(tmux, "bob", relay: port)
        #expect(await tmux.waitForScreen("alice", "bob joined"), "\(tmux.screen("alice"))")
        #expect(await tmux.waitForScreen("bob", "alice joined"), "\(tmux.screen("bob"))")

        // Editing in the middle of the line with the arrow keys.
        try tmux.type("alice", "helo wrld")
        try tmux.keys("alice", "Left", "Left", "Left")
        try tmux.type("alice", "o")
        try tmux.keys("alice", "Home", "Right", "Right", "Right")
        try tmux.type("alice", "l")
        try tmux.keys("alice", "Enter")
        #expect(await tmux.waitForScreen("bob", "<alice> hello world"), "\(tmux.screen("bob"))")
        #expect(!tmux.screen("alice").contains("[D"), "no escape codes in the text")

        // The history: ↑ brings the line back into the input line.
        try tmux.keys("alice", "Up")
        #expect(await tmux.waitForScreen("alice", "[#mesh] hello world"), "\(tmux.screen("alice"))")
        try tmux.keys("alice", "C-u")

        // Tab completes a command and a nickname.
        try tmux.type("alice", "/ms")
        try tmux.keys("alice", "Tab")
        try tmux.type("alice", "bo")
        try tmux.keys("alice", "Tab")
        try tmux.type("alice", "a private word")
        // (capture-pane trims trailing spaces: the completion's space shows once text follows it)
        #expect(await tmux.waitForScreen("alice", "[#mesh] /msg bob a private word"), "\(tmux.screen("alice"))")
        try tmux.keys("alice", "Enter")
        // Bob: a window of its own, unread and flagged; alice: the receipt on the line.
        #expect(await tmux.waitForScreen("bob", "2:alice(1)!"), "\(tmux.screen("bob"))")
        try tmux.keys("bob", "M-2")
        #expect(await tmux.waitForScreen("bob", "<alice> a private word"), "\(tmux.screen("bob"))")
        try tmux.keys("alice", "M-2")
        #expect(await tmux.waitForScreen("alice", "<you> a private word  ✓✓ read"), "\(tmux.screen("alice"))")
        // Typed in a conversation's window, text goes to that peer.
        try tmux.type("bob", "and back")
        try tmux.keys("bob", "Enter")
        #expect(await tmux.waitForScreen("alice", "<bob> and back"), "\(tmux.screen("alice"))")

        // A paste of several lines is one message, and its "/nick" is text.
        try tmux.keys("alice", "M-1")
        try tmux.paste("alice", "line one\n/nick mallory")
        try tmux.keys("alice", "Enter")
        try tmux.keys("bob", "M-1")
        #expect(await tmux.waitForScreen("bob", "<alice> line one"), "\(tmux.screen("bob"))")
        #expect(await tmux.waitForScreen("bob", "┆ /nick mallory"), "\(tmux.screen("bob"))")
        #expect(!tmux.screen("bob").contains("known as mallory"))
        #expect(tmux.screen("alice").contains("you are alice"))
    }

    /// What a person at a terminal trips over, each seen before: a wrong PIN at
    /// start is said and asked again; /unlock keeps the input line (no doubled
    /// keys); an SOS is flagged, not drawn as escape codes; a paste of several
    /// lines is shown whole (⏎) before Enter sends it as one message.
    @Test func thePINTheLockAnSOSAndAPasteAtATerminal() async throws {
        try Tmux.require()
        let relay = try MeshProcessTests.node("relay")
        defer { relay.stop() }
        let port = try await MeshProcessTests.port(of: relay)
        let dir = MeshProcessTests.dataDir()
        #expect(try await StarlingProcess.run(["pin", "--data-dir", dir], environment: ["STARLING_NEW_PIN": "2468"]).status == 0)
        let tmux = Tmux()
        defer { tmux.stop() }
        try Self.chat(tmux, "dora", relay: port, dataDir: dir)
        #expect(await tmux.waitForScreen("dora", "PIN for the store:"), "\(tmux.screen("dora"))")
        try tmux.type("dora", "1111")
        try tmux.keys("dora", "Enter")
        #expect(await tmux.waitForScreen("dora", "wrong PIN or passphrase"), "\(tmux.screen("dora"))")
        #expect(await tmux.screenCount("dora", "PIN for the store:", equals: 2), "asked again: \(tmux.screen("dora"))")
        try tmux.type("dora", "2468")
        try tmux.keys("dora", "Enter")
        #expect(await tmux.waitForScreen("dora", "relay joined"), "\(tmux.screen("dora"))")

        // /lock, /unlock: the secret as stars, then the input line as typed.
        try tmux.type("dora", "/lock")
        try tmux.keys("dora", "Enter")
        #expect(await tmux.waitForScreen("dora", "locked: contacts' history is closed"), "\(tmux.screen("dora"))")
        try tmux.type("dora", "/unlock")
        try tmux.keys("dora", "Enter")
        #expect(await tmux.waitForScreen("dora", "PIN:"), "\(tmux.screen("dora"))")
        try tmux.type("dora", "2468")
        #expect(await tmux.waitForScreen("dora", "[#mesh] ****"), "\(tmux.screen("dora"))")
        try tmux.keys("dora", "Enter")
        #expect(await tmux.waitForScreen("dora", "* unlocked"), "\(tmux.screen("dora"))")
        try tmux.type("dora", "abc")
        #expect(await tmux.waitForScreen("dora", "[#mesh] abc"), "\(tmux.screen("dora"))")
        #expect(!tmux.screen("dora").contains("abcabc"), "\(tmux.screen("dora"))")
        try tmux.keys("dora", "C-u")

        // An SOS from a neighbour: a line of its own, no escape codes.
        let sos = try LiveProcess(["status", "sos", "--no-discovery", "--port", "0", "--name", "eve", "--duration", "20",
                                   "--announce-interval", "1", "--data-dir", MeshProcessTests.dataDir(), "--peer", "127.0.0.1:\(port)"])
        defer { sos.stop() }
        #expect(await tmux.waitForScreen("dora", "🆘 SOS from eve"), "\(tmux.screen("dora"))")
        #expect(!tmux.screen("dora").contains("[1;31m") && !tmux.screen("dora").contains("^["), "\(tmux.screen("dora"))")
        // Drawn in red (the terminal's attributes, not text): the line's colour is set before it.
        let drawn = tmux.screenWithAttributes("dora")
        let sosLine = drawn.split(separator: "\n").first { $0.contains("SOS from eve") }.map(String.init) ?? ""
        #expect(sosLine.contains("31m") || sosLine.contains("31;"), "\(sosLine.debugDescription)")

        // A paste of two lines and a trailing line break: shown whole, sent as one message of two lines.
        try tmux.paste("dora", "first line\nsecond line\n")
        #expect(await tmux.waitForScreen("dora", "first line⏎second line⏎"), "\(tmux.screen("dora"))")
        #expect(await tmux.waitForScreen("dora", "a paste of 3 lines"), "\(tmux.screen("dora"))")
        try tmux.keys("dora", "Enter")
        let got = await relay.waitFor { $0["event"] as? String == "message" && ($0["text"] as? String)?.hasPrefix("first line") == true }
        #expect(got?["text"] as? String == "first line\nsecond line", "\(relay.text)")
    }

}
