import ArgumentParser
import Foundation
import StarlingCrypto
import StarlingMessenger
import StarlingMessengerCore
import StarlingMessengerAPI
import StarlingNode
import StarlingNostr
import StarlingNostrTransport
import StarlingTransport
import StarlingStately
import StarlingTerminal
import StarlingWire
import StarlingYaOK
import StarlingStore

struct Chat: AsyncParsableCommand, ServerAlias {
    static let configuration = CommandConfiguration(
        abstract: "Chat on the mesh: public messages, and private ones encrypted end to end.",
        discussion: """
        Type a line to send it to everyone; /help lists the commands (/msg, /who, /verify, \
        /block, /fav, /stats, /nick, /leave, /panic …). Processes on this machine find each \
        other over loopback with no configuration.
        """
    )
    @OptionGroup var node: NodeOptions
    @Option(help: "Lock the encrypted store after this many idle seconds when it has a PIN or passphrase (0: never).")
    var lockAfter: Double = 300
    @Flag(help: "Plain lines instead of the full-screen client (also when the output is not a terminal).")
    var plain = false
    @Option(name: .customLong("server"), help: "A Ya OK server (HOST:PORT, or several separated by commas, tried in turn; `starling yaok-server`): contacts who are not on the mesh are reached through it.")
    var server: String?
    /// The old name of --server, kept for scripts: it works, and says the new one.
    @Option(name: .customLong("relay"), help: .private) var relayAlias: String?
    @Flag(help: "Poll the Ya OK server every 5 minutes instead of every 30 s (a device in the background).") var background = false

    mutating func validate() throws {
        takeRelayAlias()
        if let server, UDPAddress.hostList(server) == nil { throw ValidationError("--server \(server): \(UDPAddress.expected), or several separated by commas") }
    }

    func run() async throws {
        let directory = DataDirectory(explicit: node.dataDir).url
        let ui: ChatScreen
        let events: AsyncThrowingStream<MessengerEvent, any Error>
        var runners: [Task<Void, Never>] = []
        var localNode: MeshNode?
        if let api = await APIClient.find(directory: directory) {
            // A daemon runs for this data directory: it is the node, the chat one of its faces.
            let client = APIMessengerClient(api)
            do {
                ui = ChatScreen(client: client, directory: directory, local: nil, me: try await client.summary())
                events = try await client.events()
            } catch {
                throw RuntimeFailure("the daemon for \(directory.path) did not answer (\(error)); stop it, or try again")
            }
        } else {
            let session = try await NodeSession.start(node, server: server, background: background, asks: true)
            let n = session.node, messenger = session.messenger
            ui = ChatScreen(client: session.client, directory: session.directory, local: session, me: try await session.client.summary())
            // The auto-lock is the messenger's (a store with a PIN or passphrase only: the key file would open it at once).
            let lockable = MessengerStore.protection(in: session.directory).map { $0 != .keyFile } == true
            await ui.setLockAfter(lockable ? lockAfter : 0)
            await messenger.setAutoLock(after: lockAfter) // (it locks only while the store has a PIN or passphrase)
            events = try await session.client.events()
            runners = [Task { await n.run() }, Task { await messenger.run() }]
            localNode = n
        }
        let fullScreen = !plain && isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1
            && ProcessInfo.processInfo.environment["TERM"].map { $0 != "dumb" && !$0.isEmpty } == true
        let input: AsyncStream<FullScreen.Submission>
        var screen: FullScreen?
        if fullScreen {
            let (stream, continuation) = AsyncStream.makeStream(of: FullScreen.Submission.self)
            input = stream
            let s = FullScreen(log: directory.appendingPathComponent("chat.log")) { continuation.yield($0) }
            screen = s
            await ui.attach(s)
            s.start()
        } else {
            let lines = Self.lines()
            input = AsyncStream { continuation in
                let task = Task {
                    for await line in lines { continuation.yield(FullScreen.Submission(text: line, command: true, window: "")) }
                    continuation.finish()
                }
                continuation.onTermination = { _ in task.cancel() }
            }
        }
        await ui.say("starling chat — /help for commands" + (fullScreen ? "; Alt-1…9 or /win N switch windows, /query NICK opens one" : ""))
        await ui.greet()
        let stoppable = localNode
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    for try await event in events { await ui.show(event) }
                    if !Task.isCancelled { await ui.ended(nil) }
                } catch {
                    if !Task.isCancelled { await ui.ended(error) }
                }
            }
            group.addTask {
                // The chat's clock, bounded by its life: joins are shown after a
                // moment, and the window in view is marked seen.
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(250))
                    await ui.showJoins()
                    await ui.markWindowSeen()
                }
            }
            group.addTask {
                for await submission in input {
                    if await !ui.handle(submission) { break }
                }
                await stoppable?.stop()
            }
            await group.next()
            group.cancelAll()
        }
        await stoppable?.stop()
        for r in runners { await r.value }
        if let screen {
            screen.stop()
            if let note = await ui.endNote { StandardOutput.write(Data((note + "\n").utf8)) }
        }
    }

    /// Standard input, line by line (read on its own thread).
    static func lines() -> AsyncStream<String> {
        AsyncStream { continuation in
            Thread.detachNewThread {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }
        }
    }
}

/// The chat's screen: it renders what the messenger says and hands it what
/// the person does. Decisions (routes, receipts, trust, history) are the
/// messenger's.
actor ChatScreen {
    /// The messenger and its node: in this process, or a daemon's through its API.
    let client: any MessengerClient
    /// The data directory (files received, the store's kind of protection).
    let directory: URL
    /// In process: the node and stores (what only the process that runs them
    /// can do: leave the mesh on quit, /panic); nil through a daemon.
    let local: NodeSession?
    /// Who we are and what the node holds, as last asked.
    var me: NodeSummary
    /// Said once, with the first line from another mesh: how one's own lines cross.
    var bridgeHinted = false
    /// The newest incoming message this face showed, per conversation (what
    /// "seen" may mark read: 4,096 conversations at most).
    var lastShown: [UserID: UserID] = [:]
    /// Why the chat ended, when it was not the person's choice (said again after the full screen closes).
    var endNote: String?
    /// The location channel plain lines go to (plain mode, after /join); nil: #mesh.
    var channel: String?
    var pendingVerify: PeerID?
    /// Our private messages by transport ID: to whom (as shown), and what was said of it.
    var outgoing: [String: (to: String, shown: Set<String>)] = [:]
    /// Peers a file is arriving from, in the full screen: its line's ID there (its bar is that line's mark).
    var arriving: Set<PeerID> = []
    /// Which conversation each window shows.
    var windowConversation: [String: UserID] = [:]
    /// The last name each peer was shown with, for lines after it has gone.
    var lastNames: [PeerID: String] = [:]
    /// Files received this session (newest last, 200 at most), for /files.
    var receivedFiles: [(time: String, from: String, name: String, size: Int, path: String)] = []
    /// Nicknames as announced, to tell a rename from a join.
    var knownNicknames: [PeerID: String] = [:]
    /// The messenger's auto-lock, idle seconds (0: none here), when activity was
    /// last told to it, whether the next line is the secret.
    var lockAfter: Double = 0
    var activityNoted = Date.distantPast
    var awaitingSecret = false
    /// A quit with changes not yet stored asks once.
    var quitWarned = false
    /// While a /send waits for its transfer ID, the file events that come meanwhile
    /// (they can overtake it, and a file sent again has the same ID) wait here
    /// and are shown after its line (64 at most).
    var sendsInFlight = 0
    var fileEventsMeanwhile: [MeshNode.Event] = []
    /// The messenger's progress, kept the same way while a /send is in flight: the same
    /// file sent twice has one transfer ID, and a receipt shown before the second line
    /// existed marked the first only (the second stayed "queued").
    var progressMeanwhile: [(UserID, MessageRecord)] = []
    /// Which way each conversation was last reached.
    var routes: [UserID: MessageRoute] = [:]
    /// Joins not shown yet (256 at most; more are shown at once).
    var pendingJoins: [PeerID: (hops: Int, at: Date)] = [:]
    /// The full-screen client, when there is one (else plain lines on stdout).
    var screen: FullScreen?

    init(client: any MessengerClient, directory: URL, local: NodeSession?, me: NodeSummary) {
        self.client = client
        self.directory = directory
        self.local = local
        self.me = me
    }

    /// A request to the messenger: its answer, or `fallback` with the refusal said.
    func ask<T: Sendable>(_ fallback: T, _ body: () async throws -> T) async -> T {
        do { return try await body() } catch {
            say("! \(error)")
            return fallback
        }
    }

    /// The peers here, by ID.
    func peerTable() async -> [PeerID: PeerView] {
        Dictionary(await ask([]) { try await client.peers() }.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// Asks again who we are (after a rename, a lock …).
    func refreshMe() async {
        if let s = try? await client.summary() { me = s }
    }

    /// The event stream ended: the node stopped, or the daemon went.
    func ended(_ error: (any Error)?) {
        guard local == nil else { return }
        endNote = "* the daemon stopped" + (error.map { " (\($0))" } ?? "") + ": this chat ends; start the daemon again, or chat without it"
        say("* the daemon stopped" + (error.map { " (\($0))" } ?? "") + ": this chat ends; start the daemon again, or chat without it")
    }

    func attach(_ screen: FullScreen) { self.screen = screen }

    /// Text from the network for the full screen: each line cleaned of
    /// controls, the line breaks kept (shown as marked continuation rows).
    static func lines(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { DisplayText.clean(String($0)) }.joined(separator: "\n")
    }

    /// Now, or a packet's timestamp (Unix ms), as HH:mm:ss.
    static func clock(_ timestamp: UInt64? = nil) -> String {
        let f = DateFormatter()
        f.dateFormat = "HH:mm:ss"
        return f.string(from: timestamp.map { Date(timeIntervalSince1970: Double($0) / 1000) } ?? Date())
    }

    /// A notice for the person: a line in the window in view, or on stdout.
    func say(_ text: String) {
        if let screen {
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                screen.append(.init(time: FullScreen.clock(), text: String(line)))
            }
            return
        }
        StandardOutput.write(Data((text + "\n").utf8))
    }

    /// An alert (SOS): bold red with a bell on a terminal, flagged in the full screen.
    func alert(_ text: String) {
        if let screen {
            screen.append(.init(time: FullScreen.clock(), text: text, highlight: true))
            screen.ring()
            return
        }
        say("\u{7}\u{1B}[1;31m\(text)\u{1B}[0m")
    }

    /// Who we are and what the store holds, said once at start.
    func greet() async {
        if local == nil {
            say("* you are \(DisplayText.clean(me.nickname)) (\(me.peerID)), through the daemon that runs for \(directory.path)"
                + " (its node options hold; /quit leaves the chat, the daemon stays)")
            screen?.setTitle("starling — you are \(me.nickname) (\(me.peerID)) · daemon")
        }
        let contacts = await ask([]) { try await client.contacts() }.count
        let pending = me.pending ?? 0
        if contacts > 0 || pending > 0 {
            say("* \(contacts) contact\(contacts == 1 ? "" : "s") (/contacts, /history NAME)"
                + (pending > 0 ? "; \(pending) message\(pending == 1 ? "" : "s") waiting for their contact to appear" : ""))
        }
        let groups = await ask([]) { try await client.groups() }
        if !groups.isEmpty {
            say("* in \(groups.count) group\(groups.count == 1 ? "" : "s"): " + groups.map { "&" + DisplayText.clean($0.name) }.joined(separator: ", ")
                + (screen == nil ? " (/group say NAME TEXT)" : " (a window each)"))
            // Behind #mesh (issue 52: after a restart the chat opened on a group's window).
            for g in groups { screen?.openBehind(Self.groupWindow(g.name)) }
        }
        // What came while no face was open: each conversation with unread messages gets its
        // window behind #mesh, with its latest lines (read once the person opens it).
        if screen != nil, me.storeOpen {
            for c in await ask([], { try await client.conversations() }) where c.unread > 0 && c.group == nil {
                await fillWindow(c.id, await window(for: c.id))
            }
        }
        if !me.storeOpen { say("* the store is locked: /unlock opens it") }
    }

    /// A group's window: "&" and its name (a peer's name never starts so).
    static func groupWindow(_ name: String) -> String { "&" + DisplayText.clean(name) }

    /// A peer's window name: its name as shown, without marks.
    func window(_ peer: PeerID) async -> String {
        await display(peer).replacingOccurrences(of: "✓", with: "")
    }

    /// A conversation's window name: the peer's, when it is present; else the conversation's name.
    func window(for conversation: UserID) async -> String {
        let name: String
        let c = await ask(nil) { try await client.conversation(conversation) }
        if let f = c?.fingerprint, let p = await peerTable().first(where: { $0.value.fingerprint == f })?.key {
            name = await window(p)
        } else {
            name = DisplayText.clean(c?.name ?? String(conversation.description.prefix(8)))
        }
        windowConversation[name] = conversation
        if windowConversation.count > 4_096, let any = windowConversation.keys.first(where: { $0 != name }) { windowConversation[any] = nil }
        return name
    }

    /// A conversation's name as shown.
    func name(of conversation: UserID) async -> String {
        DisplayText.clean(await ask(nil) { try await client.conversation(conversation) }?.name ?? String(conversation.description.prefix(8)))
    }

    /// Keeps the screen's title, status and completions current.
    func refreshScreen() async {
        guard let screen else { return }
        let peers = await peerTable()
        let names = Set(peers.values.map { DisplayText.clean($0.nickname) } + (await ask([]) { try await client.contacts() }).map { DisplayText.clean($0.name) })
        screen.setNicknames(names.sorted())
        await refreshMe()
        let locked = !me.storeOpen && (lockAfter > 0 || local == nil)
        screen.setStatus("\(peers.count) here · \(me.sessions) encrypted session\(me.sessions == 1 ? "" : "s")" + (locked ? " · store locked" : ""))
    }

    /// A line typed or pasted in a window: a command, public text in #mesh,
    /// or a private message in a conversation's window.
    func handle(_ submission: FullScreen.Submission) async -> Bool {
        guard let screen, !awaitingSecret, pendingVerify == nil else { return await handle(submission.text) }
        let text = submission.text
        if submission.command, text.hasPrefix("/") {
            let words = text.split(separator: " ", maxSplits: 1).map(String.init)
            switch words[0] {
            case "/query", "/q":
                guard words.count == 2 else { say("usage: /query NICK"); return true }
                let name = words[1].trimmingCharacters(in: .whitespaces)
                let fresh = !screen.hasWindow(name)
                screen.open(name)
                // A new window shows the conversation's latest lines (issue 52: it opened empty after a restart).
                if fresh, let c = await conversation(named: name, quietly: true) {
                    await fillWindow(c, name)
                    await markSeen(c)
                }
                await refreshScreen()
                return true
            case "/win", "/w":
                guard words.count == 2, let n = Int(words[1].trimmingCharacters(in: .whitespaces)) else { say("usage: /win N"); return true }
                screen.select(n)
                return true
            case "/close":
                screen.closeCurrent()
                return true
            case "/clear":
                screen.clearCurrent()
                return true
            default:
                return await handle(text)
            }
        }
        await noteActivity()
        if submission.window.hasPrefix("&") {
            await groupSay(String(submission.window.dropFirst()), text)
        } else if submission.window.hasPrefix("#"), submission.window != ChatBuffers.publicName {
            await say(text, in: String(submission.window.dropFirst()))
        } else if submission.window == ChatBuffers.publicName || submission.window.isEmpty {
            await sendPublicText(text)
        } else if let c = windowConversation[submission.window] {
            await sendPrivate(text, to: c)
        } else {
            return await handle("/msg \(submission.window) \(text)")
        }
        return true
    }

    // MARK: Location channels

    func join(_ name: String) async {
        if name.lowercased() == "mesh" {
            channel = nil
            screen?.open(ChatBuffers.publicName)
            say("* back in #mesh: lines go to everyone on the mesh")
            return
        }
        do {
            let g = try await client.join(channel: name)
            if let screen { screen.open("#" + g) } else { channel = g }
            say("* joined #\(g), a public location channel over Nostr (anyone can read it; you are a new identity there)"
                + (me.nostr ? "" : "; with no Nostr here, your lines go through a gateway on the mesh (a peer with --gateway), and its lines come back the same way")
                + (screen == nil ? "; lines you type go there, /join #mesh comes back" : ""))
        } catch { say("! \(error)") }
    }

    func say(_ text: String, in geohash: String) async {
        let me = self.me.nickname
        do {
            try await client.say(text, in: geohash)
            if let screen {
                screen.append(.init(time: FullScreen.clock(), nick: me, text: Self.lines(text), own: true), to: "#" + geohash)
            } else {
                say("[\(Self.clock())] <\(DisplayText.clean(me)) @#\(geohash)> \(DisplayText.clean(text))")
            }
        } catch { say("! \(error)") }
    }

    func showChannel(_ event: NostrTransport.ChannelEvent) {
        switch event {
        case let .message(m):
            let nick = DisplayText.clean(m.nickname ?? "anon") + "#" + m.publicKey.prefix(4)
            if let screen {
                screen.append(.init(time: FullScreen.clock(UInt64(m.createdAt) * 1000), nick: nick, text: Self.lines(m.text)), to: "#" + m.geohash)
            } else {
                say("[\(Self.clock(UInt64(m.createdAt) * 1000))] <\(nick) @#\(m.geohash)> \(DisplayText.clean(m.text))")
            }
        case .presence, .bridge, .drop, .request:
            break // a bridge's events are the node's to check (shown as bridgedMessage); requests come as .request
        case let .failed(why):
            say("! a location channel message was not sent: \(why)")
        }
    }

    /// Public text as typed (or pasted): sent and shown.
    func sendPublicText(_ line: String) async {
        do {
            try await client.sendPublic(line)
            let me = self.me.nickname
            if let screen {
                screen.append(.init(time: FullScreen.clock(), nick: me, text: line, own: true), to: ChatBuffers.publicName)
            } else {
                say("[\(Self.clock())] <\(me)> \(line)")
            }
        } catch { say("! \(error)") }
    }

    /// A private message in a conversation, through the messenger.
    func sendPrivate(_ text: String, to conversation: UserID) async {
        do {
            _ = try await client.send(text, to: conversation)
        } catch {
            say("! \(error)")
        }
    }

    /// A nickname as shown: cleaned, and with 4 digits of the peer ID when two peers share it;
    /// a peer known only by its session shows as the contact it is, else by its ID.
    func display(_ peer: PeerID) async -> String {
        let peers = await peerTable()
        guard let info = peers[peer] else {
            if let known = try? await client.identity(ofPeer: peer), known.name != known.conversation.description.prefix(8).description {
                return DisplayText.clean(known.name) + (known.verified ? "✓" : "")
            }
            if let name = lastNames[peer] { return name }
            return peer.description
        }
        let name = DisplayText.clean(info.nickname)
        let twins = peers.filter { $0.value.nickname == info.nickname }.count
        let shown = (twins > 1 ? "\(name)#\(peer.description.prefix(4))" : name) + (info.verified ? "✓" : "")
        Self.remember(&lastNames, peer, shown)
        return shown
    }

    /// What the chat remembers per peer is bounded as the node's peer table
    /// is (4,096): past that, an entry goes to make room (names only: the
    /// node keeps what matters for trust).
    static func remember<V>(_ table: inout [PeerID: V], _ peer: PeerID, _ value: V) {
        if table[peer] == nil, table.count >= 4_096, let any = table.keys.first { table[any] = nil }
        table[peer] = value
    }

    /// A path as a person types it: in quotes or with `\ ` for spaces, `~` for home.
    static func typedPath(_ typed: String) -> String {
        var path = typed.trimmingCharacters(in: .whitespaces)
        if path.count >= 2, let first = path.first, first == "\"" || first == "'", path.last == first {
            path = String(path.dropFirst().dropLast())
        } else {
            path = path.replacingOccurrences(of: "\\ ", with: " ")
        }
        if path == "~" || path.hasPrefix("~/") {
            path = (ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory()) + path.dropFirst()
        }
        return path
    }

    func indent(_ s: String) -> String { s.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n") }
}

struct Relay: AsyncParsableCommand, ServerAlias {
    static let configuration = CommandConfiguration(
        abstract: "Relay for the mesh without a chat screen (for a Raspberry Pi in a window)."
    )
    @OptionGroup var node: NodeOptions
    @Option(help: "Stop after this many seconds (default: run until interrupted).") var duration: Double?
    @Option(name: .customLong("server"), help: "A Ya OK server (HOST:PORT, or several separated by commas, tried in turn; `starling yaok-server`): also take what it holds for this node's user.")
    var server: String?
    /// The old name of --server, kept for scripts: it works, and says the new one.
    @Option(name: .customLong("relay"), help: .private) var relayAlias: String?
    @Flag(help: "Poll the Ya OK server every 5 minutes instead of every 30 s.") var background = false

    mutating func validate() throws {
        takeRelayAlias()
        if let server, UDPAddress.hostList(server) == nil { throw ValidationError("--server \(server): \(UDPAddress.expected), or several separated by commas") }
    }

    func run() async throws {
        let session = try await NodeSession.start(node, server: server, background: background, asks: true)
        let n = session.node
        let deadline = duration.map { UInt64(Date().timeIntervalSince1970 * 1000) + UInt64($0 * 1000) }
        let signals = SignalWatch([SIGINT, SIGTERM]) { Task { await n.stop() } }
        defer { signals.cancel() }
        let runner = Task { await n.run(until: deadline) }
        let messenger = session.messenger
        let taking = Task { await messenger.run() }
        // Each line as it happens, unbuffered (a relay's output is a pipe or a journal more often than a terminal).
        func say(_ line: String) { StandardOutput.write(Data((line + "\n").utf8)) }
        for await event in messenger.events {
            switch event {
            case let .node(.notice(text)): say(text)
            case let .node(.started(port, peerID, nickname)): say("relaying as \(nickname) (\(peerID))" + (port.map { " on 127.0.0.1:\($0)" } ?? ""))
            case let .node(.linkUp(a)): say("link up \(a)")
            case let .node(.linkDown(a)): say("link down \(a)")
            case let .notSaved(text), let .warning(text): say("! \(text)")
            default: break
            }
        }
        await runner.value
        await taking.value
        let s = await n.statistics
        say("relayed \(s.relaysExecuted) of \(s.received) packets; \(s.duplicatesBlocked) duplicates blocked")
    }
}

/// The terminal's echo, off while a secret is typed (a no-op on a pipe).
enum Terminal {
    static func echo(_ on: Bool) {
        guard isatty(STDIN_FILENO) == 1 else { return }
        var t = termios()
        guard tcgetattr(STDIN_FILENO, &t) == 0 else { return }
        if on { t.c_lflag |= tcflag_t(ECHO) } else { t.c_lflag &= ~tcflag_t(ECHO) }
        tcsetattr(STDIN_FILENO, TCSANOW, &t)
    }
}
