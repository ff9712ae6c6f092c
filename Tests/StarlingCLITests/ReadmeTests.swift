import Foundation
import StarlingTestSupport
import StarlingWire
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// README.md as a test (issue 52, "the README as a test"): each example that
/// runs on one machine is read from README.md and run as written, in a network
/// namespace of its own with a home directory per person, so that README cannot
/// drift from the program again. What is substituted, and only that:
///
/// - `scripts/run` is the built `starling` (RunScriptTests checks that
///   `scripts/run` runs it), put first on PATH as `starling`;
/// - placeholders a reader fills in (`3f1c…(64 hex digits)`, `yaok://…`,
///   `npub1…`, `K7QF2M9X`) get the value the other person printed;
/// - `relay.example.org` is the namespace's own hosts entry for 127.0.0.1;
/// - a command README leaves running (`&`, "until Ctrl-C") is stopped by the test;
/// - a question README answers at a terminal ("y marks bob ✓", restore's) is
///   answered with `--yes` (the test has no terminal), a PIN by `STARLING_NEW_PIN`.
///
/// Output README shows is compared line by line, loosely where it is the
/// machine's (hex, numbers, paths: ``Readme/matches(_:_:)``).
enum Readme {
    static let text: String = {
        (try? String(contentsOf: PythonEnvironment.root.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""
    }()

    /// The lines of the fenced block holding `needle` (empty when none does: the test says so).
    static func block(containing needle: String) -> [String] {
        var blocks: [[String]] = [], current: [String]?
        for line in text.components(separatedBy: "\n") {
            if line.hasPrefix("```") {
                if let c = current { blocks.append(c); current = nil } else { current = [] }
            } else if current != nil {
                current!.append(line)
            }
        }
        return blocks.first { $0.contains { $0.contains(needle) } } ?? []
    }

    /// A `$ ` line's command: its comment cut, continuation lines joined, `scripts/run` the command.
    static func commands(_ block: [String]) -> [String] {
        var out: [String] = [], pending: String?
        for line in block {
            var l = line
            if pending != nil { l = pending! + " " + l.trimmingCharacters(in: .whitespaces); pending = nil } else {
                guard l.hasPrefix("$ ") else { continue }
                l.removeFirst(2)
            }
            if l.hasSuffix("\\") { pending = String(l.dropLast()).trimmingCharacters(in: .whitespaces); continue }
            out.append(uncommented(l).replacingOccurrences(of: "scripts/run ", with: "starling "))
        }
        return out
    }

    /// The command with its trailing `# comment` (two spaces or more before it) cut, outside quotes.
    static func uncommented(_ line: String) -> String {
        var quote: Character?, spaces = 0, cut = line.endIndex
        for i in line.indices {
            let c = line[i]
            if let q = quote { if c == q { quote = nil } ; spaces = 0; continue }
            if c == "'" || c == "\"" { quote = c; spaces = 0; continue }
            if c == "#", spaces >= 2 { cut = i; break }
            spaces = c == " " ? spaces + 1 : 0
        }
        return String(line[..<cut]).trimmingCharacters(in: .whitespaces)
    }

    /// The output README shows after the `$ ` line holding `needle`, up to the next `$ ` line.
    static func shown(after needle: String, in block: [String]) -> [String] {
        guard let i = block.firstIndex(where: { $0.hasPrefix("$ ") && $0.contains(needle) }) else { return [] }
        return Array(block[(i + 1)...].prefix { !$0.hasPrefix("$ ") }).filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
    }

    /// Whether an output line is what README shows: literally, except hex runs (6 or
    /// more), numbers and `…` (anything), and README's home `/home/you` for ours.
    static func matches(_ shown: String, _ actual: String, home: String) -> Bool {
        var pattern = "^"
        var i = shown.startIndex
        let s = shown.replacingOccurrences(of: "/home/you", with: home)
        i = s.startIndex
        while i < s.endIndex {
            let rest = s[i...]
            if rest.hasPrefix("…") { pattern += ".*"; i = s.index(after: i); continue }
            // A key printed in groups of four hex digits, or a bech32 npub.
            let atWordStart = i == s.startIndex || s[s.index(before: i)] == " "
            if atWordStart, let run = rest.prefixMatch(of: /[0-9a-f]{4}(?= |$)/) {
                pattern += "[0-9a-f]{4}"
                i = run.range.upperBound
                continue
            }
            if atWordStart, let run = rest.prefixMatch(of: /npub1[02-9ac-hj-np-z]{58}/) {
                pattern += "npub1[02-9ac-hj-np-z]{58}"
                i = run.range.upperBound
                continue
            }
            if let run = rest.prefixMatch(of: /[0-9a-f]{6,}/) {
                pattern += "[0-9a-f]+"
                i = run.range.upperBound
                continue
            }
            if let run = rest.prefixMatch(of: /[0-9]+/) {
                pattern += "[0-9]+"
                i = run.range.upperBound
                continue
            }
            pattern += NSRegularExpression.escapedPattern(for: String(s[i]))
            i = s.index(after: i)
        }
        pattern += "$"
        return actual.range(of: pattern, options: .regularExpression) != nil
    }

    /// Every line README shows appears in `output`, in order.
    static func showsAsREADME(_ shown: [String], _ output: String, home: String) -> [String] {
        var lines = output.components(separatedBy: "\n")[...]
        var missing: [String] = []
        for s in shown {
            if let i = lines.firstIndex(where: { matches(s, $0, home: home) }) { lines = lines[(i + 1)...] } else { missing.append(s) }
        }
        return missing
    }
}

/// One README example's world: a network namespace with loopback up, a home per
/// person, `starling` first on PATH, and the hosts file README's names need.
final class ReadmeWorld: @unchecked Sendable {
    let namespace: BulkProcessTests.Namespace
    let root: String
    let bin: String

    init(_ name: String) throws {
        namespace = try BulkProcessTests.Namespace(name)
        root = ContactCommandTests.temporaryDirectory("readme-\(name)")
        bin = root + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: bin + "/starling", withDestinationPath: StarlingProcess.executable.path)
        // README's server name, for this namespace only (ip netns exec bind-mounts it over /etc/hosts).
        let etc = "/etc/netns/\(namespace.name)"
        try FileManager.default.createDirectory(atPath: etc, withIntermediateDirectories: true)
        try "127.0.0.1 localhost relay.example.org\n".write(toFile: etc + "/hosts", atomically: true, encoding: .utf8)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: "/etc/netns/\(namespace.name)")
        try? FileManager.default.removeItem(atPath: root)
    }

    /// A person's home (made on first use): README's `~`, and `~/.local/share/starling` in it.
    func home(_ person: String) -> String {
        let h = root + "/" + person
        try? FileManager.default.createDirectory(atPath: h, withIntermediateDirectories: true)
        return h
    }

    private func argv(_ command: String, as person: String, environment: [String: String]) -> [String] {
        let env = ["HOME=\(home(person))", "PATH=\(bin):/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"]
            + environment.map { "\($0.key)=\($0.value)" }.sorted()
        return ["/usr/sbin/ip", "netns", "exec", namespace.name, "/usr/bin/env", "-i"] + env
            + ["/bin/bash", "-c", "cd \"$HOME\" && " + command]
    }

    /// Runs a command line as `person` (in their home) to its end.
    func run(_ command: String, as person: String, environment: [String: String] = [:], input: String? = nil,
             seconds: Double = 60) async throws -> StarlingProcess.Result {
        let a = argv(command, as: person, environment: environment)
        return try await StarlingProcess.run(executable: URL(fileURLWithPath: a[0]), Array(a.dropFirst()), stdin: input.map { Data($0.utf8) },
                                             seconds: seconds)
    }

    /// Starts a command line as `person` that runs until stopped (README's `&`, or a window of its own).
    func start(_ command: String, as person: String, environment: [String: String] = [:]) throws -> LiveProcess {
        let p = LiveProcess.unstarted(argv("exec " + command, as: person, environment: environment))
        try p.start()
        return p
    }
}

@Suite(.serialized, .usesProcesses) struct ReadmeTests {
    /// "Show (and on first run create) this node's identity": `id --name alice`
    /// prints what README shows; `id --seal` seals it; `id --json` is for scripts.
    @Test func theIdentityExample() async throws {
        let block = Readme.block(containing: "run id --name alice")
        let commands = Readme.commands(block)
        try #require(commands == ["starling id --name alice", "starling id --seal", "starling id --json"], "README's id block changed: \(commands)")
        let world = try ReadmeWorld("rmid")
        let home = world.home("alice")
        let first = try await world.run(commands[0], as: "alice")
        #expect(first.status == 0, "\(first.stderr)")
        let shown = Readme.shown(after: "id --name alice", in: block)
        #expect(shown.count >= 8, "README shows the output: \(shown)")
        let missing = Readme.showsAsREADME(shown, first.stdout + first.stderr, home: home)
        #expect(missing.isEmpty, "README shows lines `id --name alice` does not print: \(missing)\n--- printed:\n\(first.stdout)\(first.stderr)")
        let passphrase = ["STARLING_PASSPHRASE": "a long passphrase"]
        let sealed = try await world.run(commands[1], as: "alice", environment: passphrase)
        #expect(sealed.status == 0, "\(sealed.stdout)\(sealed.stderr)")
        let json = try await world.run(commands[2], as: "alice", environment: passphrase)
        let object = try ContactCommandTests.json(json.stdout)
        #expect(object["sealed"] as? Bool == true && object["nickname"] as? String == "alice", "\(json.stdout)\(json.stderr)")
        // The control: without the passphrase a sealed key is refused, in words.
        let refused = try await world.run(commands[2], as: "alice")
        #expect(refused.status == 1 && refused.stderr.contains("passphrase"), "\(refused.stdout)\(refused.stderr)")
    }

    /// "Decode a packet": the four `inspect` lines, the first one's output as README shows it, byte for byte.
    @Test func theInspectExamples() async throws {
        let block = Readme.block(containing: "run inspect 0102070000019aaaac26")
        let commands = Readme.commands(block)
        try #require(commands.count == 4, "\(commands)")
        let world = try ReadmeWorld("rmins")
        let home = world.home("you")
        let hex = String(commands[0].split(separator: " ").last ?? "")
        // capture.bin: the same packet as bytes (what `xxd -p capture.bin` reads back).
        try Data(try [UInt8](hex: hex)).write(to: URL(fileURLWithPath: home + "/capture.bin"))
        let text = try await world.run(commands[0], as: "you")
        let shown = Readme.shown(after: "inspect 0102070000019aaaac26", in: block)
        #expect(text.status == 0 && text.stdout.components(separatedBy: "\n").filter { !$0.isEmpty } == shown,
                "README shows:\n\(shown.joined(separator: "\n"))\nprinted:\n\(text.stdout)\(text.stderr)")
        let json = try await world.run(commands[1], as: "you")
        let decoded = try ContactCommandTests.json(json.stdout)
        #expect(json.status == 0 && (decoded["packet"] as? [String: Any])?["message"] as? String == "hello", "\(json.stdout)\(json.stderr)")
        let binary = try await world.run(commands[2], as: "you")
        #expect(binary.status == 0 && binary.stdout == text.stdout, "\(binary.stdout)\(binary.stderr)")
        let plaintext = try await world.run(commands[3], as: "you")
        #expect(plaintext.status == 0 && plaintext.stdout.contains("\"hi\""), "\(plaintext.stdout)\(plaintext.stderr)")
        // "Malformed input names the field and the offset": README's example, as shown.
        let bad = Readme.block(containing: "run inspect 0102070000019aaaac2600000005a1b2\n")
        let badBlock = bad.isEmpty ? Readme.block(containing: "malformed packet") : bad
        let badCommands = Readme.commands(badBlock)
        #expect(badCommands.count == 1, "\(badCommands)")
        if let c = badCommands.first {
            let r = try await world.run(c, as: "you")
            let expected = Readme.shown(after: "inspect", in: badBlock)
            #expect(r.status == 1 && r.stderr.components(separatedBy: "\n").filter { !$0.isEmpty } == expected, "\(expected) vs \(r.stderr)")
        }
    }

    /// The matcher's own controls: machine values match loosely, words do not.
    @Test func theMatcherIsLooseOnlyWhereTheMachineDecides() {
        #expect(Readme.matches("fingerprint: d786 db92 2a17 4d6a", "fingerprint: f4f7 1025 ed43 2e96", home: "/h"))
        #expect(Readme.matches("* you are alice (447062c1a447544b) on 127.0.0.1:47371", "* you are alice (0123456789abcdef) on 127.0.0.1:47372", home: "/h"))
        #expect(Readme.matches("key file:    /home/you/.local/x", "key file:    /h/.local/x", home: "/h"))
        #expect(!Readme.matches("nickname:    alice", "nickname:    bob", home: "/h"))
        #expect(!Readme.matches("* bob joined (direct)", "* bob joined (2 hops)", home: "/h"))
        #expect(Readme.uncommented("starling send --to bob \"a  # b\"   # the comment") == "starling send --to bob \"a  # b\"")
    }

    /// The plain chat: two windows (README's terminal 1 and 2), the lines typed as
    /// README types them, and what README shows alice's window print.
    @Test func theChatExample() async throws {
        let block = Readme.block(containing: "--name alice --data-dir /tmp/alice")
        let commands = Readme.commands(block)
        try #require(commands.count == 2, "\(commands)")
        let world = try ReadmeWorld("rmchat")
        // (/tmp/bob and /tmp/alice: this example's own, not the machine's.)
        let own = { (c: String) in c.replacingOccurrences(of: "/tmp/", with: world.root + "/tmp-") }
        let bob = try world.start(own(commands[0]), as: "bob")
        defer { bob.stop() }
        #expect(await bob.waitForText("* you are bob"), "\(bob.text)")
        try Data(repeating: 0xAB, count: 30_000).write(to: URL(fileURLWithPath: world.home("alice") + "/photo.jpg"))
        let alice = try world.start(own(commands[1]), as: "alice")
        defer { alice.stop() }
        let shown = Readme.shown(after: "--name alice --data-dir /tmp/alice", in: block)
        let typed = shown.filter { $0.contains("←") }.map { String($0[..<$0.range(of: "←")!.lowerBound]).trimmingCharacters(in: .whitespaces) }
        #expect(typed == ["hello bob", "/msg bob psst", "/send bob ~/photo.jpg"], "README's typed lines: \(typed)")
        let printed = shown.filter { !$0.contains("←") && !$0.hasPrefix("/who") }
        #expect(await alice.waitForText("* bob joined (direct)"), "\(alice.text)")
        for line in typed {
            alice.type(line)
            if line.hasPrefix("/msg") { #expect(await alice.waitForText("· to bob: read", seconds: 60), "\(alice.text)") }
        }
        #expect(await bob.waitForText("<alice> hello bob"), "\(bob.text)")
        #expect(await bob.waitForText("photo.jpg", seconds: 60) && bob.text.contains("saved to"), "\(bob.text)")
        let missing = Readme.showsAsREADME(printed, alice.text, home: world.home("alice"))
        #expect(missing.isEmpty, "README shows lines alice's window did not print: \(missing)\n--- printed:\n\(alice.text)")
    }

    /// The board: a post from the command line, seen by a listener as README's grep shows.
    @Test func theBoardExample() async throws {
        let block = Readme.block(containing: "send --board --urgent --days 2")
        let commands = Readme.commands(block)
        try #require(commands.count == 2, "\(commands)")
        let world = try ReadmeWorld("rmboard")
        _ = try await world.run("starling id --name bob", as: "bob")
        // (grep prints when the listen ends: README's Ctrl-C, here after 12 s.)
        let listener = try world.start("timeout -s INT 12 " + commands[1], as: "bob")
        defer { listener.stop() }
        try await Task.sleep(for: .seconds(1)) // (bob's node up before alice comes: she posts once and goes)
        let posted = try await world.run(commands[0], as: "alice", seconds: 60)
        #expect(posted.status == 0 && posted.stdout.contains("* posted on the board for 2 days: water at gate 2"), "\(posted.stdout)\(posted.stderr)")
        #expect(await listener.waitForText("\"text\":\"water at gate 2\"", seconds: 40), "\(listener.text)")
        #expect(listener.text.contains("\"urgent\":true") && listener.text.contains("\"event\":\"board\""), "\(listener.text)")
    }

    /// Everyday commands: `listen --json` and `send --to bob "text"` meet with no
    /// configuration; `relay` relays; `relay --favorite` takes the fingerprint `id --json` prints.
    @Test func theListenSendAndRelayExample() async throws {
        let block = Readme.block(containing: "run send --to bob \"text\"")
        let commands = Readme.commands(block)
        try #require(commands.count == 4, "\(commands)")
        let world = try ReadmeWorld("rmsend")
        let made = try await world.run("starling id --name bob --json", as: "bob")
        let bobFingerprint = try #require(try ContactCommandTests.json(made.stdout)["fingerprint"] as? String)
        let bob = try world.start(commands[0], as: "bob")
        defer { bob.stop() }
        #expect(await bob.waitFor { $0["event"] as? String == "started" } != nil, "\(bob.text)")
        let relay = try world.start(commands[2], as: "relay")
        defer { relay.stop() }
        #expect(await relay.waitForText("relaying as"), "\(relay.text)")
        let sent = try await world.run(commands[1], as: "alice", seconds: 60)
        #expect(sent.status == 0 && sent.stdout.contains("delivered"), "\(sent.stdout)\(sent.stderr)")
        #expect(await bob.waitFor { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "text" } != nil, "\(bob.text)")
        // `relay --favorite 3f1c…(64 hex digits)`: bob's fingerprint, as `id --json` printed it.
        let favourite = commands[3].replacingOccurrences(of: #"3f1c…\(64 hex digits\)"#, with: bobFingerprint, options: .regularExpression)
        #expect(favourite != commands[3], "README's placeholder changed: \(commands[3])")
        relay.stop()
        let keeper = try world.start(favourite, as: "relay")
        defer { keeper.stop() }
        #expect(await keeper.waitForText("relaying as"), "\(keeper.text)")
        #expect(keeper.process.isRunning, "\(keeper.text)")
    }

    /// Contacts: the card as text and as a picture, added both ways, an npub,
    /// the safety number confirmed, the list, a PIN, a backup and a restore.
    @Test func theContactsExample() async throws {
        let block = Readme.block(containing: "run contact qr --png me.png")
        let commands = Readme.commands(block)
        try #require(commands.count == 8, "\(commands)")
        let world = try ReadmeWorld("rmcontact")
        for who in ["alice", "bob", "carol"] { _ = try await world.run("starling id --name \(who)", as: who) }
        let qr = try await world.run(commands[0], as: "bob")
        let link = try #require(qr.stdout.split(separator: "\n").map(String.init).first { $0.contains("yaok://contact?") }?
            .split(separator: " ").first { $0.hasPrefix("yaok://") }, "\(qr.stdout)")
        let png = try await world.run(commands[1], as: "bob")
        #expect(png.status == 0 && FileManager.default.fileExists(atPath: world.home("bob") + "/me.png"), "\(png.stdout)\(png.stderr)")
        // `contact add 'yaok://…'` with bob's link; the comment's `--image bob.png` with his picture.
        let add = commands[2].replacingOccurrences(of: #"'yaok://contact\?v=1&d=[^']*'"#, with: "'\(link)'", options: .regularExpression)
        #expect(add != commands[2])
        let added = try await world.run(add, as: "alice")
        #expect(added.status == 0 && Readme.showsAsREADME(Readme.shown(after: "contact add 'yaok", in: block), added.stdout, home: "").isEmpty,
                "\(added.stdout)\(added.stderr)")
        try FileManager.default.copyItem(atPath: world.home("bob") + "/me.png", toPath: world.home("dave") + "/bob.png")
        _ = try await world.run("starling id --name dave", as: "dave")
        let byImage = try await world.run("starling contact add --image bob.png", as: "dave")
        #expect(byImage.status == 0 && byImage.stdout.contains("added bob"), "\(byImage.stdout)\(byImage.stderr)")
        let carol = try ContactCommandTests.json(try await world.run("starling id --json", as: "carol").stdout)
        let npub = try #require(carol["npub"] as? String)
        let byNpub = try await world.run(commands[3].replacingOccurrences(of: "npub1…", with: npub), as: "alice")
        #expect(byNpub.status == 0 && byNpub.stdout.contains("carol"), "\(byNpub.stdout)\(byNpub.stderr)")
        // `contact verify bob`: "y marks bob ✓" at a terminal; here, with no terminal, --yes says it.
        let verified = try await world.run(commands[4] + " --yes", as: "alice")
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        let list = try await world.run(commands[5], as: "alice")
        let missing = Readme.showsAsREADME(Readme.shown(after: "contact list", in: block), list.stdout, home: "")
        #expect(missing.isEmpty, "README shows: \(missing)\n--- printed:\n\(list.stdout)")
        let pin = try await world.run(commands[6], as: "alice", environment: ["STARLING_NEW_PIN": "482913"])
        #expect(pin.status == 0, "\(pin.stdout)\(pin.stderr)")
        // `backup; restore`: restore asks before it replaces the store; with no terminal, --yes.
        let backup = try await world.run(commands[7] + " --yes", as: "alice", environment: ["STARLING_PIN": "482913"])
        #expect(backup.status == 0 && backup.stdout.contains("backed up to"), "\(backup.stdout)\(backup.stderr)")
        let after = try await world.run(commands[5], as: "alice", environment: ["STARLING_PIN": "482913"])
        #expect(after.stdout.contains("bob ✓") && after.stdout.contains("carol"), "the contacts after the restore: \(after.stdout)\(after.stderr)")
    }

    /// The value of `key=` in README's ini block holding `needle`, with the
    /// machine's paths made this example's (`/usr/local/bin/starling`, `%h/bin/starling`
    /// are the built one; `/var/lib/starling` a directory of the example's).
    static func execStart(_ needle: String, _ world: ReadmeWorld) -> String? {
        Readme.block(containing: needle).first { $0.hasPrefix("ExecStart=") }.map {
            String($0.dropFirst("ExecStart=".count))
                .replacingOccurrences(of: "/usr/local/bin/starling", with: "starling")
                .replacingOccurrences(of: "%h/bin/starling", with: "starling")
                .replacingOccurrences(of: "/var/lib/starling", with: world.home("operator") + "/var")
        }
    }

    /// Two people who are each other's contacts (README's contacts block, done before).
    static func contacts(_ world: ReadmeWorld, _ a: String, _ b: String) async throws {
        for who in [a, b] { _ = try await world.run("starling id --name \(who)", as: who) }
        for (from, to) in [(a, b), (b, a)] {
            let card = try ContactCommandTests.json(try await world.run("starling contact qr --json", as: from).stdout)
            let uri = try #require(card["uri"] as? String)
            let added = try await world.run("starling contact add '\(uri)'", as: to)
            #expect(added.status == 0, "\(added.stdout)\(added.stderr)")
        }
    }

    /// The Ya OK server: run as README's unit runs it (with its metrics), bob
    /// registers once, alice's message waits for him at `relay.example.org` (the
    /// namespace's name for 127.0.0.1), and bob takes it when he listens again.
    @Test func theServerExample() async throws {
        let block = Readme.block(containing: "send --server relay.example.org:41641")
        let commands = Readme.commands(block)
        try #require(commands.count == 3, "\(commands)")
        let world = try ReadmeWorld("rmsrv")
        try FileManager.default.createDirectory(atPath: world.home("operator") + "/var", withIntermediateDirectories: true)
        let unit = try #require(Self.execStart("Description=Starling: Ya OK server", world), "README's yaok-server unit")
        let server = try world.start(unit, as: "operator")
        defer { server.stop() }
        #expect(await server.waitForText("Ya OK server on 0.0.0.0:41641"), "\(server.text)")
        try await Self.contacts(world, "alice", "bob")
        // Bob registers once ("bob runs with --server once … to register").
        let first = try world.start(commands[1], as: "bob")
        #expect(await first.waitForText("registered with the Ya OK server relay.example.org:41641 (127.0.0.1:41641)", seconds: 60), "\(first.text)")
        first.stop()
        let sent = try await world.run(commands[0], as: "alice", seconds: 90)
        let shownSent = Readme.shown(after: "send --server relay.example.org", in: block)
        #expect(sent.status == 0 && Readme.showsAsREADME(shownSent, sent.stdout, home: "").isEmpty,
                "README shows \(shownSent)\n--- printed:\n\(sent.stdout)\(sent.stderr)")
        let back = try world.start(commands[1], as: "bob")
        defer { back.stop() }
        let shownTaken = Readme.shown(after: "listen --server relay.example.org", in: block)
        #expect(shownTaken.count == 1)
        if let line = shownTaken.first { #expect(await back.waitForText(line, seconds: 60), "\(back.text)") }
        let metrics = try await world.run("curl -s http://127.0.0.1:9464/metrics", as: "operator")
        #expect(metrics.stdout.contains("starling_relay_"), "\(metrics.stdout.prefix(500))\(metrics.stderr)")
    }

    /// The daemon: `daemon --name alice &`, then `send`, `listen --json` and the curl
    /// line through it, word for word; a user unit's ExecStart stops within its 10 s.
    @Test func theDaemonExample() async throws {
        let block = Readme.block(containing: "run daemon --name alice &")
        let commands = Readme.commands(block)
        try #require(commands.count == 5, "\(commands)")
        let world = try ReadmeWorld("rmdaemon")
        _ = try await world.run("starling id --name bob", as: "bob")
        let bob = try world.start("starling listen --json", as: "bob")
        defer { bob.stop() }
        #expect(commands[0].hasSuffix(" &"))
        let daemon = try world.start(String(commands[0].dropLast(2)), as: "alice")
        defer { daemon.stop() }
        let shown = Readme.shown(after: "daemon --name alice &", in: block)
        #expect(await daemon.waitForText("daemon: alice"), "\(daemon.text)")
        try await Task.sleep(for: .milliseconds(500))
        #expect(Readme.showsAsREADME(shown, daemon.text, home: "").isEmpty, "README shows \(shown)\n--- printed:\n\(daemon.text)")
        let events = try world.start("timeout -s INT 30 " + commands[3], as: "alice")
        defer { events.stop() }
        let sent = try await world.run(commands[2], as: "alice", seconds: 60)
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        #expect(await bob.waitFor { $0["text"] as? String == "through the daemon" } != nil, "\(bob.text)")
        #expect(await events.waitFor { $0["event"] as? String == "started" } != nil, "the daemon's events from its start: \(events.text)")
        #expect(await events.waitFor { $0["event"] as? String == "sent" && ($0["message"] as? [String: Any])?["text"] as? String == "through the daemon" } != nil,
                "\(events.text)")
        #expect(!events.events.contains { $0["seq"] != nil }, "the objects as in process (the stream's seq is the stream's): \(events.text)")
        let curl = try await world.run(commands[4], as: "alice")
        let list = try JSONSerialization.jsonObject(with: Data(curl.stdout.utf8)) as? [[String: Any]]
        #expect(list?.contains { $0["name"] as? String == "bob" } == true, "\(curl.stdout)\(curl.stderr)")
        // The user unit: a daemon of its own, stopped by SIGTERM within TimeoutStopSec=10.
        let unit = try #require(Self.execStart("Starling node and messenger", world))
        let pi = try world.start(unit, as: "pi")
        #expect(await pi.waitForText("daemon: kitchen-pi"), "\(pi.text)")
        kill(pi.process.processIdentifier, SIGTERM)
        #expect(await pi.waitForExit(seconds: 10) != nil, "\(pi.text)")
    }

    /// `starling web --name alice` prints the link README shows, and the page answers at it.
    @Test func theWebExample() async throws {
        let block = Readme.block(containing: "run web --name alice")
        let commands = Readme.commands(block)
        #expect(commands == ["starling web --name alice"], "\(commands)")
        let world = try ReadmeWorld("rmweb")
        let web = try world.start(commands[0], as: "alice")
        defer { web.stop() }
        #expect(await web.waitForText("web: open http://127.0.0.1:"), "\(web.text)")
        try await Task.sleep(for: .milliseconds(300))
        let shown = Readme.shown(after: "run web --name alice", in: block)
        #expect(Readme.showsAsREADME(shown, web.text, home: "").isEmpty, "README shows \(shown)\n--- printed:\n\(web.text)")
        let link = try #require(web.text.split(separator: "\n").first { $0.hasPrefix("web: open ") }.map { String($0.dropFirst("web: open ".count)) })
        let page = try await world.run("curl -s -o /dev/null -w '%{http_code}' '\(link.prefix { $0 != "#" })'", as: "alice")
        #expect(page.stdout == "200", "\(page.stdout)\(page.stderr)")
    }

    /// Stately: a state set, watched, an SOS raised and cleared by typing "clear",
    /// and a family's state read only with the family's --group (the control: the family).
    @Test func theStatusExample() async throws {
        let block = Readme.block(containing: "run status set working")
        let commands = Readme.commands(block)
        try #require(commands.count == 4, "\(commands)")
        let world = try ReadmeWorld("rmstatus")
        for who in ["alice", "carol", "dave", "erin", "fay"] { _ = try await world.run("starling id --name \(who)", as: who) }
        let watch = try world.start(commands[2], as: "carol")
        defer { watch.stop() }
        let family = try world.start(commands[2] + " --group \"our family\"", as: "fay")
        defer { family.stop() }
        let working = try world.start(commands[0], as: "alice")
        defer { working.stop() }
        #expect(await working.waitForText("Working"), "\(working.text)")
        #expect(await watch.waitForText("alice"), "\(watch.text)")
        #expect(watch.text.contains("working") || watch.text.contains("Working"), "\(watch.text)")
        let sos = try world.start(commands[1], as: "dave")
        defer { sos.stop() }
        #expect(await watch.waitForText("SOS"), "\(watch.text)")
        sos.type("clear")
        #expect(await sos.waitForText("* SOS cleared"), "\(sos.text)")
        #expect(await sos.waitForExit(seconds: 30) == 0, "\(sos.text)")
        let busy = try world.start(commands[3], as: "erin")
        defer { busy.stop() }
        #expect(await family.waitForText("erin", seconds: 30) && family.text.lowercased().contains("busy"), "the family reads it: \(family.text)")
        try await Task.sleep(for: .seconds(2))
        #expect(!watch.text.contains("erin"), "only the family reads it: \(watch.text)")
    }

    /// WiFiSet: README's networks file, a secured device, a scan, a provisioning
    /// with the code the device printed and the password asked for, the status after.
    @Test func theWiFiExample() async throws {
        let block = Readme.block(containing: "run wifi device --networks networks.json")
        let commands = Readme.commands(block)
        try #require(commands.count == 4, "\(commands)")
        let networks = Readme.block(containing: "\"password\": \"correct horse\"")
        #expect(networks.count == 4, "README's networks file: \(networks)")
        let world = try ReadmeWorld("rmwifi")
        for who in ["device", "phone"] {
            try networks.joined(separator: "\n").write(toFile: world.home(who) + "/networks.json", atomically: true, encoding: .utf8)
        }
        let device = try world.start(commands[0], as: "device")
        defer { device.stop() }
        #expect(await device.waitForText("* proof of possession: "), "\(device.text)")
        let code = try #require(device.text.split(separator: "\n").first { $0.hasPrefix("* proof of possession: ") }?
            .dropFirst("* proof of possession: ".count).prefix(8))
        let scan = try await world.run(commands[1], as: "phone")
        #expect(scan.status == 0 && scan.stdout.contains("Home") && scan.stdout.contains("Cafe"), "\(scan.stdout)\(scan.stderr)")
        // `--pop K7QF2M9X`: the code this device printed; "asks the password": given as README's file has it.
        let provision = commands[2].replacingOccurrences(of: "K7QF2M9X", with: String(code))
        #expect(provision != commands[2], "README's code placeholder changed: \(commands[2])")
        let joined = try await world.run(provision, as: "phone", environment: ["STARLING_WIFI_PASSWORD": "correct horse"])
        #expect(joined.status == 0 && joined.stdout.contains("connected to Home"), "\(joined.stdout)\(joined.stderr)")
        let status = try await world.run(commands[3], as: "phone")
        #expect(status.stdout.contains("connected to Home"), "\(status.stdout)\(status.stderr)")
        // The control: the wrong password is refused, and the device keeps Home.
        let wrong = try await world.run(provision, as: "phone", environment: ["STARLING_WIFI_PASSWORD": "wrong horse"])
        #expect(wrong.status == 1 && wrong.stdout.contains("keeping Home, which worked"), "\(wrong.stdout)\(wrong.stderr)")
    }

    /// Groups: made in the chat with bob and carol, a line, dave invited and removed
    /// (as README's chat commands), then `send --to-group` and the listener's grep.
    @Test func theGroupsExample() async throws {
        let block = Readme.block(containing: "/group create crew bob carol")
        let commands = Readme.commands(block)
        try #require(commands.count == 2, "\(commands)")
        let typed = block.filter { !$0.hasPrefix("$ ") }.flatMap { line -> [String] in
            let said = line.range(of: "←").map { String(line[..<$0.lowerBound]) } ?? line
            return said.components(separatedBy: "    /").map { ($0.hasPrefix("/") ? $0 : "/" + $0).trimmingCharacters(in: .whitespaces) }
        }.filter { $0.count > 1 }
        try #require(typed == ["/group create crew bob carol", "/group say crew meet at the bridge", "/group invite crew dave",
                               "/group remove crew dave", "/group leave crew"], "README's group lines: \(typed)")
        let world = try ReadmeWorld("rmgroup")
        for who in ["alice", "bob", "carol", "dave"] { _ = try await world.run("starling id --name \(who)", as: who) }
        let members = try ["bob", "carol", "dave"].map { try world.start("starling listen --json", as: $0) }
        defer { for m in members { m.stop() } }
        let alice = try world.start("starling chat --plain", as: "alice")
        defer { alice.stop() }
        #expect(await alice.waitForText("dave joined"), "\(alice.text)")
        alice.type(typed[0])
        #expect(await alice.waitForText("you made crew: alice, bob, carol"), "\(alice.text)")
        alice.type(typed[1])
        #expect(await members[0].waitFor { $0["event"] as? String == "groupMessage" && $0["text"] as? String == "meet at the bridge" } != nil, "\(members[0].text)")
        alice.type(typed[2])
        #expect(await alice.waitForText("dave invited to crew"), "\(alice.text)")
        alice.type(typed[3])
        #expect(await alice.waitForText("dave removed from crew"), "\(alice.text)")
        alice.type("/quit")
        #expect(await alice.waitForExit(seconds: 30) == 0, "\(alice.text)")
        // bob's listen becomes README's grep, for as long as the send takes (README's Ctrl-C: here 15 s).
        members[0].stop()
        let grep = try world.start("timeout -s INT 15 " + commands[1], as: "bob")
        defer { grep.stop() }
        try await Task.sleep(for: .seconds(1))
        let sent = try await world.run(commands[0], as: "alice", seconds: 60)
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        #expect(await members[1].waitFor { $0["event"] as? String == "groupMessage" && $0["text"] as? String == "from the command line" } != nil,
                "carol: \(members[1].text)")
        #expect(await grep.waitForExit(seconds: 30) != nil)
        #expect(grep.text.contains("\"event\":\"groupMessage\"") && grep.text.contains("\"text\":\"from the command line\"")
                && grep.text.contains("\"group\":\"crew\""), "bob's grep: \(grep.text)")
        // And leaving: alice's chat again, /group leave crew.
        let again = try world.start("starling chat --plain", as: "alice")
        defer { again.stop() }
        #expect(await again.waitForText("in 1 group"), "\(again.text)")
        again.type(typed[4])
        again.type("/group")
        #expect(await again.waitForText("you are in no group"), "\(again.text)")
    }

    /// Files: bob `listen`s, alice sends ~/maps/region.mbtiles (5 MB here: too large
    /// for the mesh, so over the network with no flag); a chat with `--accept-up-to 50`
    /// asks about a larger one, and `/accept` takes it.
    @Test func theFilesExample() async throws {
        let block = Readme.block(containing: "send --to bob --file ~/maps/region.mbtiles")
        let commands = Readme.commands(block)
        try #require(commands.count == 3, "\(commands)")
        let world = try ReadmeWorld("rmfiles")
        for who in ["alice", "bob"] { _ = try await world.run("starling id --name \(who)", as: who) }
        try FileManager.default.createDirectory(atPath: world.home("alice") + "/maps", withIntermediateDirectories: true)
        var bytes = [UInt8](repeating: 0, count: 5_000_000)
        for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 7) }
        try Data(bytes).write(to: URL(fileURLWithPath: world.home("alice") + "/maps/region.mbtiles"))
        let bob = try world.start(commands[0], as: "bob")
        defer { bob.stop() }
        #expect(await bob.waitForText("bob"), "\(bob.text)")
        let sent = try await world.run(commands[1], as: "alice", seconds: 120)
        #expect(sent.status == 0 && sent.stdout.contains("bob saved region.mbtiles"), "\(sent.stdout)\(sent.stderr)")
        let saved = world.home("bob") + "/.local/share/starling/files/incoming/region.mbtiles"
        #expect(FileManager.default.contents(atPath: saved) == Data(bytes), "the same bytes at \(saved)")
        bob.stop()
        // `chat --accept-up-to 50`: a 51 MiB file is asked about; /accept takes it.
        let chat = try world.start(commands[2], as: "bob")
        defer { chat.stop() }
        #expect(await chat.waitForText("* you are bob"), "\(chat.text)")
        try Data(count: 51 << 20).write(to: URL(fileURLWithPath: world.home("alice") + "/maps/large.bin"))
        let large = Task { try await world.run("starling send --to bob --file ~/maps/large.bin", as: "alice", seconds: 120) }
        #expect(await chat.waitForText("offers large.bin", seconds: 60), "\(chat.text)")
        chat.type("/accept")
        let done = try await large.value
        #expect(done.status == 0 && done.stdout.contains("bob saved large.bin"), "\(done.stdout)\(done.stderr)\n\(chat.text.suffix(800))")
    }

    /// The simulator lines that take seconds (the two scenarios README runs on 100 and
    /// 300 nodes take minutes on a debug build: SimCommandTests runs them smaller).
    @Test func theSimulatorExamples() async throws {
        let block = Readme.block(containing: "run sim --nodes 300 --degree 8 --loss 0.05")
        let commands = Readme.commands(block)
        #expect(commands.count == 6, "\(commands)")
        let world = try ReadmeWorld("rmsim")
        // README runs them from the repository (its docs/scenarios).
        _ = try await world.run("ln -s '\(PythonEnvironment.root.appendingPathComponent("docs").path)' docs", as: "you")
        for command in commands where !command.contains("--scenario") {
            let r = try await world.run(command, as: "you", seconds: 240)
            #expect(r.status == 0 && !r.stdout.isEmpty, "\(command): \(r.stdout.suffix(300))\(r.stderr)")
            if command.contains("--plot mesh.svg") { #expect(FileManager.default.fileExists(atPath: world.home("you") + "/mesh.svg")) }
            if command.contains("--json") { #expect((try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) != nil, "\(r.stdout.prefix(300))") }
        }
    }

    /// Bluetooth LE: the chat on the first adapter and a relay on another, over
    /// bluezoo (BlueZ's D-Bus API, two virtual adapters), as written: loopback discovery
    /// links them too, and the relay's `link up ble …` says the Bluetooth link is there.
    @Test func theBluetoothExample() async throws {
        let block = Readme.block(containing: "run relay --ble --adapter hci1")
        let commands = Readme.commands(block)
        try #require(commands.count == 2, "\(commands)")
        let zoo = try await MockBlueZ.started(adapters: 2)
        let world = try ReadmeWorld("rmble")
        let bus = ["DBUS_SYSTEM_BUS_ADDRESS": zoo.bus.address]
        let relay = try world.start(commands[1], as: "pi", environment: bus)
        defer { relay.stop() }
        #expect(await relay.waitForText("relaying as"), "\(relay.text)")
        let alice = try world.start(commands[0], as: "alice", environment: bus)
        defer { alice.stop() }
        #expect(await alice.waitForText("joined (direct)", seconds: 60), "alice:\n\(alice.text)\nrelay:\n\(relay.text)\nbluezoo:\n\(zoo.logText.suffix(2_000))")
        #expect(await relay.waitForText("link up ble "), "\(relay.text)")
    }

    /// The tree README draws: every folder and document it names is there, and every
    /// module under Sources/ is named (a newcomer finds each room from README).
    @Test func theLayoutREADMEDrawsIsTheTree() throws {
        let block = Readme.block(containing: "Sources/StarlingWire/   bytes only")
        let named = block.filter { !$0.hasPrefix(" ") }.compactMap { $0.split(separator: " ").first.map(String.init) }
            .filter { $0.contains("/") || $0.hasSuffix(".md") }
        #expect(named.count > 30, "\(named)")
        let root = PythonEnvironment.root
        for path in named {
            #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path), "README names \(path), which is not there")
        }
        let modules = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path)
            .filter { !$0.hasPrefix("C") || $0 == "CZlib" }
        let unnamed = modules.filter { m in !named.contains { $0 == "Sources/\(m)/" } }
        #expect(unnamed.isEmpty, "modules README's layout does not name: \(unnamed.sorted())")
    }
}
