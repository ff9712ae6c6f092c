import ArgumentParser
import Foundation
import StarlingCrypto
import StarlingNode
import StarlingNostr
import StarlingNostrTransport
import StarlingRelayClient
import StarlingTransport
import StarlingStately
import StarlingTerminal
import StarlingWire
import StarlingYaOK
import StarlingYaOKStore

struct Chat: AsyncParsableCommand {
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
    @Option(help: "A Ya OK relay server (HOST:PORT): contacts who are not on the mesh are reached through it.")
    var relay: String?
    @Flag(help: "Poll the relay every 5 minutes instead of every 30 s (a device in the background).") var background = false

    func run() async throws {
        let (n, nostr) = try await node.makeNodeWithNostr()
        let store = IdentityStore(directory: DataDirectory(explicit: node.dataDir))
        var yaok: YaOKStore?
        do {
            yaok = try StoreAccess.open(directory: store.directory.url, identity: n.identity)
        } catch {
            print("! the encrypted store did not open (\(error)); contacts, history and saved trust are off this time")
        }
        let ui = ChatScreen(node: n, store: store, yaok: yaok)
        await ui.attachNostr(nostr)
        await ui.setLockAfter(YaOKStore.protection(in: store.directory.url).map { $0 != .keyFile } == true ? lockAfter : 0)
        await ui.loadStore()
        var relayClient: RelayClient?
        if let relay {
            guard let address = UDPAddress(relay) else { throw ValidationError("--relay \(relay): expected HOST:PORT with an IPv4 host") }
            let client = try RelayClient(server: address, userID: try store.userID(), signingKey: n.identity.signingKey,
                                         configuration: background ? .background : .init())
            await ui.attachRelay(client, userID: try store.userID())
            relayClient = client
        }
        let runner = Task { await n.run() }
        let fullScreen = !plain && isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1
            && ProcessInfo.processInfo.environment["TERM"].map { $0 != "dumb" && !$0.isEmpty } == true
        let input: AsyncStream<FullScreen.Submission>
        var screen: FullScreen?
        if fullScreen {
            let (stream, continuation) = AsyncStream.makeStream(of: FullScreen.Submission.self)
            input = stream
            let s = FullScreen(log: store.directory.url.appendingPathComponent("chat.log")) { continuation.yield($0) }
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
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in n.events {
                    await nostr.handle(event)
                    await ui.show(event)
                }
            }
            if let transport = nostr.transport {
                group.addTask { for await event in transport.channelEvents { await ui.showChannel(event) } }
            }
            if let relayClient {
                group.addTask { for await event in relayClient.events { await ui.showRelay(event) } }
                await relayClient.start()
            }
            group.addTask {
                // The chat's clock, bounded by its life: history bursts that went
                // quiet are shown, and the auto-lock looks at the idle time.
                var ticks = 0
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(250))
                    await ui.showJoins()
                    await ui.showHistory()
                    await ui.lockIfIdle()
                    ticks += 1
                    if ticks % 4 == 0 { await ui.retryPending() } // the store's queue, once a second
                }
            }
            group.addTask {
                for await submission in input {
                    if await !ui.handle(submission) { break }
                }
                await n.stop()
            }
            await group.next()
            group.cancelAll()
        }
        await n.stop()
        _ = await runner.value
        await relayClient?.leave()
        screen?.stop()
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

/// The chat's state and rendering: what a person sees.
actor ChatScreen {
    let node: MeshNode
    let store: IdentityStore
    /// Favourites' npubs, and Nostr when `--nostr` is on.
    var nostr: NostrLink?
    func attachNostr(_ link: NostrLink) { nostr = link }
    /// The location channel plain lines go to (plain mode, after /join); nil: #mesh.
    var channel: String?
    var verified: Set<Fingerprint> = []
    /// Our private messages by ID: recipient as shown, and whether delivery was reported.
    var outgoing: [String: (to: String, delivered: Bool)] = [:]
    var pendingVerify: PeerID?
    /// The encrypted store (nil when it did not open, or while it is locked).
    var yaok: YaOKStore?
    var contacts: [(ContactRecord, ContactCard)] = []
    /// Bitchat message IDs of stored messages (and their contacts), for their receipts.
    var transportIDs: [String: (UserID, UserID)] = [:]
    /// Fingerprints of peers we hold Noise sessions with (known before their announce).
    var sessionFingerprints: [PeerID: Fingerprint] = [:]
    /// The last name each peer was shown with, for lines after it has gone.
    var lastNames: [PeerID: String] = [:]
    /// Files received this session (newest last, 200 at most), for /files.
    var receivedFiles: [(time: String, from: String, name: String, size: Int, path: String)] = []
    /// Nicknames as announced, to tell a rename from a join.
    var knownNicknames: [PeerID: String] = [:]
    /// Auto-lock: idle seconds before the store closes (0: never), the last
    /// typed line, whether the next line is the secret, messages that came
    /// while locked.
    var lockAfter: Double = 0
    var lastActivity = Date()
    var awaitingSecret = false
    var heldWhileLocked: [MessageRecord] = []
    var heldReceipts: [(String, Receipt)] = []
    /// Sends of waiting messages under way (the store does not lock meanwhile).
    var flushing = 0
    /// A quit with messages not yet stored asks once.
    var quitWarned = false
    /// Public messages a sync replays, gathered and shown as one block,
    /// oldest first, without what was shown already.
    var fileSentEarly: [String: Int] = [:]
    /// The relay server (--relay), our Ya OK user ID, and which way each contact was last reached.
    var relay: RelayClient?
    var relayUserID: UserID?
    var routes: [UserID: String] = [:]
    /// Joins not shown yet (256 at most; more are shown at once).
    var pendingJoins: [PeerID: (hops: Int, at: Date)] = [:]
    var history = HistoryCollector<(from: PeerID, text: String, timestamp: UInt64)>()

    init(node: MeshNode, store: IdentityStore, yaok: YaOKStore? = nil) {
        self.node = node
        self.store = store
        self.yaok = yaok
    }

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

    /// The full-screen client, when there is one (else plain lines on stdout).
    var screen: FullScreen?

    func attach(_ screen: FullScreen) { self.screen = screen }

    /// A notice for the person: a line in the window in view, or on stdout.
    func say(_ text: String) {
        if let screen {
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                screen.append(.init(time: FullScreen.clock(), text: String(line)))
            }
            return
        }
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// A peer's window name: its name as shown, without marks.
    func window(_ peer: PeerID) async -> String {
        await display(peer).replacingOccurrences(of: "✓", with: "")
    }

    /// Keeps the screen's title, status and completions current.
    func refreshScreen() async {
        guard let screen else { return }
        let peers = await node.peers
        let names = Set(peers.values.map { DisplayText.clean($0.nickname) } + contacts.map { DisplayText.clean($0.1.displayName) })
        screen.setNicknames(names.sorted())
        let sessions = sessionFingerprints.count
        screen.setStatus("\(peers.count) here · \(sessions) encrypted session\(sessions == 1 ? "" : "s")" + (yaok == nil && lockAfter > 0 ? " · store locked" : ""))
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
                screen.open(words[1].trimmingCharacters(in: .whitespaces))
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
        lastActivity = Date()
        if submission.window.hasPrefix("#"), submission.window != ChatBuffers.publicName {
            await say(text, in: String(submission.window.dropFirst()))
        } else if submission.window == ChatBuffers.publicName || submission.window.isEmpty {
            await sendPublicText(text)
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
        guard let transport = nostr?.transport else { say("! location channels travel over Nostr: start the chat with --nostr"); return }
        do {
            let g = try LocationChannel.geohash(name)
            try await transport.join(g)
            if let screen { screen.open("#" + g) } else { channel = g }
            say("* joined #\(g), a public location channel over Nostr (anyone can read it; you are a new identity there)"
                + (screen == nil ? "; lines you type go there, /join #mesh comes back" : ""))
        } catch { say("! \(error)") }
    }

    func say(_ text: String, in geohash: String) async {
        guard let transport = nostr?.transport else { say("! start the chat with --nostr"); return }
        let me = await node.currentNickname
        do {
            try await transport.say(text, nickname: me, in: geohash)
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
        case .presence:
            break
        case let .failed(why):
            say("! a location channel message was not sent: \(why)")
        }
    }

    /// Public text as typed (or pasted): sent and shown.
    func sendPublicText(_ line: String) async {
        do {
            try await node.sendPublic(line)
            let me = await node.currentNickname
            if let screen {
                screen.append(.init(time: FullScreen.clock(), nick: me, text: line, own: true), to: ChatBuffers.publicName)
            } else {
                say("[\(Self.clock())] <\(me)> \(line)")
            }
        } catch { say("! \(error)") }
    }

    /// Our private message, shown in its conversation with its first mark.
    func showOwnPrivate(to peerName: String, window: String, text: String, id: String?, note: String) {
        if let screen {
            screen.append(.init(time: FullScreen.clock(), nick: "you", text: text, messageID: id, mark: note, own: true), to: window)
        } else {
            say("[\(Self.clock())] <you → \(peerName)> \(text)  · \(note)")
        }
    }

    /// A receipt: on the message's own line in the full screen, a line of its own in plain mode.
    func showReceipt(_ id: String, mark: String, plain: String) {
        if let screen { screen.mark(id, mark) } else { say(plain) }
    }

    /// A nickname as shown: cleaned, and with 4 digits of the peer ID when two peers share it;
    /// a peer known only by its session shows as the contact it is, else by its ID.
    func display(_ peer: PeerID) async -> String {
        let peers = await node.peers
        guard let info = peers[peer] else {
            if let f = sessionFingerprints[peer], let (_, card) = contact(for: f) {
                return DisplayText.clean(card.displayName) + (verified.contains(f) ? "✓" : "")
            }
            if let name = lastNames[peer] { return name }
            if let c = await nostr?.contact(for: peer) { return DisplayText.clean(c.nickname) }
            return peer.description
        }
        let name = DisplayText.clean(info.nickname)
        let twins = peers.filter { $0.value.nickname == info.nickname }.count
        let mark = verified.contains(info.fingerprint) ? "✓" : ""
        let shown = (twins > 1 ? "\(name)#\(peer.description.prefix(4))" : name) + mark
        Self.remember(&lastNames, peer, shown)
        return shown
    }

    func show(_ event: MeshNode.Event) async {
        let me = await node.currentNickname
        // Whoever speaks in #mesh has joined: their join line goes first.
        switch event {
        case let .message(from, _, _, _, _, _), let .favorited(from, _, _, _):
            await showJoins(only: from)
        case let .state(s), let .sos(s):
            await showJoins(only: s.senderID)
        default:
            break
        }
        switch event {
        case let .started(port, peerID, nickname):
            say("* you are \(nickname) (\(peerID))" + (port.map { " on 127.0.0.1:\($0)" } ?? ""))
            screen?.setTitle("starling — you are \(nickname) (\(peerID))")
            await refreshScreen()
        case let .peer(peer, nickname, hops):
            if let old = knownNicknames[peer], old != nickname {
                say("* \(DisplayText.clean(old)) is now known as \(await display(peer))")
            } else if pendingJoins.count < 256 {
                // Shown after a moment, unless the peer is gone by then (a
                // `starling send` comes, delivers and leaves without a trace).
                pendingJoins[peer] = (hops, Date())
            } else {
                say("* \(await display(peer)) joined (\(hops == 1 ? "direct" : "\(hops) hops"))")
            }
            Self.remember(&knownNicknames, peer, nickname)
            await flushPending(to: peer)
            await refreshScreen()
        case let .left(peer):
            // Came and went within the join delay: nothing to say.
            if pendingJoins.removeValue(forKey: peer) == nil { say("* \(await display(peer)) left") }
            await refreshScreen()
        case let .message(from, _, text, hops, timestamp, replayed):
            let key = HistoryKey(sender: from.description, timestamp: timestamp, text: text)
            if replayed {
                history.add(key, (from, text, timestamp), now: Self.nowMillis)
                return
            }
            history.shown(key)
            let clean = DisplayText.clean(text)
            let mention = DisplayText.mentions(clean, nickname: me)
            let via = hops > 1 ? " (via \(hops - 1) relay\(hops == 2 ? "" : "s"))" : ""
            if let screen {
                screen.append(.init(time: FullScreen.clock(timestamp), nick: await display(from), text: Self.lines(text) + via,
                                    highlight: mention), to: ChatBuffers.publicName)
                if mention { screen.ring() }
            } else {
                let line = "[\(Self.clock())] <\(await display(from))>\(via) \(clean)"
                say(mention ? "\u{7}\u{1B}[1m\(line)\u{1B}[0m" : line)
            }
        case let .privateMessage(from, _, text, id, hops, mailbox):
            let via = mailbox.map { " (via \($0))" } ?? (hops > 1 ? " (via \(hops - 1) relay\(hops == 2 ? "" : "s"))" : "")
            if let screen {
                screen.append(.init(time: FullScreen.clock(), nick: await display(from), text: Self.lines(text) + via, highlight: true),
                              to: await window(from))
                screen.ring() // a private message rings
            } else {
                say("[\(Self.clock())] <\(await display(from)) → you>\(via) \(DisplayText.clean(text))")
            }
            await storeIncoming(from: from, text: text, messageID: id)
            try? await node.sendReadReceipt(id, to: from) // displayed: read
        case let .sessionEstablished(peer, fingerprint):
            if let f = Fingerprint(hex: fingerprint) { Self.remember(&sessionFingerprints, peer, f) }
            say("* encrypted session with \(await display(peer))")
            await refreshScreen()
        case let .delivered(id, _):
            storeProgress(id, .delivered)
            if let o = outgoing[id], !o.delivered {
                outgoing[id]?.delivered = true
                showReceipt(id, mark: "✓✓", plain: "  · to \(o.to): delivered")
            }
        case let .sentOffMesh(id, _, via):
            if let o = outgoing[id], !o.delivered { showReceipt(id, mark: "→ \(via)", plain: "  · to \(o.to): sent via \(via)") }
        case let .read(id, _):
            // Receipts travel separately and may arrive in either order; read implies delivered.
            storeProgress(id, .read)
            if let o = outgoing.removeValue(forKey: id) {
                if !o.delivered, screen == nil { say("  · to \(o.to): delivered") }
                showReceipt(id, mark: "✓✓ read", plain: "  · to \(o.to): read")
            }
        case let .fileProgress(from, received, total):
            let width = 20, filled = received * width / max(1, total)
            let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
            if screen == nil {
                // One line, redrawn in place.
                FileHandle.standardOutput.write(Data("\r* file from \(await display(from)) [\(bar)] \(received * 100 / max(1, total))%".utf8))
            }
        case let .fileSent(id, _, fragments):
            // The sender's bar: queued (for a session) → out to the links → delivered.
            // (The event can overtake /send's own line: kept for it, a few at most.)
            guard outgoing[id] != nil else {
                if fileSentEarly.count < 16 { fileSentEarly[id] = fragments }
                return
            }
            if let o = outgoing[id], !o.delivered {
                let full = String(repeating: "#", count: 20)
                showReceipt(id, mark: "[\(full)] sent in \(fragments) fragment\(fragments == 1 ? "" : "s") · waiting for the receipt",
                            plain: "* file to \(o.to) [\(full)] sent in \(fragments) fragment\(fragments == 1 ? "" : "s"); waiting for the receipt")
            }
        case let .fileReceived(from, name, size, path, _):
            receivedFiles.append((Self.clock(), await display(from), DisplayText.clean(name), size, path))
            if receivedFiles.count > 200 { receivedFiles.removeFirst(receivedFiles.count - 200) }
            if let screen {
                screen.append(.init(time: FullScreen.clock(), nick: await display(from), text: "file \(DisplayText.clean(name)) (\(size) bytes) saved to \(path)"),
                              to: await window(from))
            } else {
                say("\r* file from \(await display(from)) [\(String(repeating: "#", count: 20))] 100%")
                say("[\(Self.clock())] <\(await display(from)) → you> file \(DisplayText.clean(name)) (\(size) bytes) saved to \(path)")
            }
        case let .failed(id, _):
            storeProgress(id, .failed)
            if let o = outgoing.removeValue(forKey: id) { showReceipt(id, mark: "✗ not delivered", plain: "  · to \(o.to): failed (not delivered)") }
        case let .state(s):
            say("* \(await display(s.senderID)) is \(s.state.emoji) \(s.state.displayName)\(s.hops > 1 ? " (\(s.hops) hops)" : "")")
        case let .sos(s):
            say("\u{7}\u{1B}[1;31m🆘 SOS from \(DisplayText.clean(s.name)) (\(s.hops == 1 ? "direct" : "\(s.hops) hops")) — /status to see everyone\u{1B}[0m")
        case .stateExpired:
            break
        case let .held(id, _):
            if let o = outgoing[id] { showReceipt(id, mark: "↻ held until they are back", plain: "  · to \(o.to): held until they are back") }
        case .linkUp, .linkDown:
            break
        case let .rejected(why):
            say("! \(why)")
        case let .pong(from, rtt, hops):
            say("* pong from \(await display(from)): \(rtt) ms, \(hops == 1 ? "direct" : "\(hops) hops")")
        case .capabilities:
            break // /who reads them from the node
        case let .pinned(fingerprint, key):
            rememberPin(fingerprint, key)
        case let .favorited(by, _, on, npub):
            say("* \(await display(by)) \(on ? "favorited" : "unfavorited") you"
                + (on && npub != nil && nostr?.transport != nil ? " (reachable over Nostr when both of you are favourites)" : ""))
        case let .notice(text):
            say("* \(text)")
        }
    }

    /// Join lines held for `joinDelay` seconds: those now due (or this peer's).
    func showJoins(only peer: PeerID? = nil) async {
        let now = Date()
        let due = pendingJoins.filter { entry in
            if let peer { return entry.key == peer }
            return now.timeIntervalSince(entry.value.at) >= Self.joinDelay
        }
        for (id, join) in due.sorted(by: { $0.value.at < $1.value.at }) {
            pendingJoins[id] = nil
            say("* \(await display(id)) joined (\(join.hops == 1 ? "direct" : "\(join.hops) hops"))")
        }
    }

    static let joinDelay: TimeInterval = 5

    static var nowMillis: UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    /// A burst of history that has gone quiet: one block, oldest first, each
    /// line at its sender's time, ours as ours.
    func showHistory() async {
        let burst = history.take(now: Self.nowMillis)
        guard !burst.isEmpty else { return }
        let me = await node.currentNickname, own = await node.peerID
        let header = "— history: \(burst.count) message\(burst.count == 1 ? "" : "s") from before you were here, oldest first —"
        if let screen {
            screen.append(.init(time: FullScreen.clock(), text: header), to: ChatBuffers.publicName)
            for m in burst {
                screen.append(.init(time: FullScreen.clock(m.timestamp), nick: m.from == own ? me : await display(m.from),
                                    text: Self.lines(m.text), own: m.from == own), to: ChatBuffers.publicName)
            }
            screen.append(.init(time: FullScreen.clock(), text: "— end of history —"), to: ChatBuffers.publicName)
        } else {
            say("* \(header)")
            for m in burst {
                say("[\(Self.clock(m.timestamp))] <\(m.from == own ? me : await display(m.from))> \(DisplayText.clean(m.text))")
            }
            say("* — end of history —")
        }
    }

    /// /status: everyone's states; /status STATE sets ours; sos and clear.
    func status(_ args: [String]) async {
        guard let word = args.first else {
            let mine = await node.status
            say("* you: \(mine.emoji) \(mine.displayName) (every \(await node.statusInterval / 1000) s, \(await node.powerMode.rawValue))")
            let board = await node.statusBoard
            if board.isEmpty { say("* no states around yet") }
            let now = UInt64(Date().timeIntervalSince1970 * 1000)
            for s in board {
                let age = now > s.timestamp ? (now - s.timestamp) / 1000 : 0
                let line = "  \(s.state.emoji) \(DisplayText.clean(s.name)) — \(s.state.displayName), \(age) s ago, \(s.hops) hop\(s.hops == 1 ? "" : "s")"
                say(s.state == .sos ? "\u{1B}[1;31m\(line)\u{1B}[0m" : line)
            }
            return
        }
        if word == "clear" {
            await node.clearSOS()
            say("* SOS cleared: \(await node.status.emoji) \(await node.status.displayName)")
            return
        }
        guard let kind = StateKind(name: word) else {
            say("! states: " + StateKind.allCases.map { "\($0.emoji) \($0.rawValue)" }.joined(separator: ", ") + ", or clear")
            return
        }
        await node.setStatus(kind)
        say(kind == .invisible ? "* invisible: your state is no longer broadcast"
                               : "* you are \(kind.emoji) \(kind.displayName)\(kind == .sos ? " — broadcast every 5 s to 7 hops; /status clear ends it" : "")")
    }

    /// The one peer a typed name means. Several peers with that nickname are
    /// refused and listed (`bob#fde2 ✓★, bob#7e6b`), never chosen silently;
    /// `bob#fde2` (4 digits of the peer ID) picks one. Says why when there is no single answer.
    func peer(named name: String) async -> PeerID? {
        let peers = await node.peers
        var matches = peers.filter { $0.value.nickname == name }.map(\.key)
        let parts = name.split(separator: "#")
        if matches.isEmpty, parts.count == 2 {
            matches = peers.filter { $0.value.nickname == parts[0] && $0.key.description.hasPrefix(parts[1]) }.map(\.key)
        }
        if matches.count == 1 { return matches[0] }
        if matches.isEmpty {
            say("! no peer called \(name) (try /who)")
            return nil
        }
        var labels: [String] = []
        let favourites = await node.favoriteFingerprints
        for id in matches.sorted(by: { $0.description < $1.description }) {
            let info = peers[id]
            let marks = (info.map { verified.contains($0.fingerprint) } == true ? "✓" : "")
                + (info.map { favourites.contains($0.fingerprint) } == true ? "★" : "")
            labels.append("\(DisplayText.clean(info?.nickname ?? name))#\(id.description.prefix(4))\(marks.isEmpty ? "" : " " + marks)")
        }
        say("! \(matches.count) peers are called \(name): \(labels.joined(separator: ", ")); say which, e.g. \(DisplayText.clean(name))#\(matches.sorted(by: { $0.description < $1.description })[0].description.prefix(4))")
        return nil
    }

    /// Handles one typed line; false means quit.
    func handle(_ raw: String) async -> Bool {
        lastActivity = Date()
        if awaitingSecret {
            await unlock(with: raw)
            return true
        }
        let line = raw.trimmingCharacters(in: .whitespaces)
        guard !line.isEmpty else { return true }
        if let pending = pendingVerify {
            pendingVerify = nil
            if line.lowercased().hasPrefix("y"), let info = await node.peers[pending] {
                verified.insert(info.fingerprint)
                await node.setVerified(info.fingerprint, true)
                rememberTrust(info.fingerprint, nickname: info.nickname) { $0.verified = true }
                say("* \(await display(pending)) verified")
                return true
            }
        }
        guard line.hasPrefix("/") else {
            if let channel { await say(line, in: channel) } else { await sendPublicText(line) }
            return true
        }
        let words = line.split(separator: " ", maxSplits: 2).map(String.init)
        switch words[0] {
        case "/msg", "/m", "/dm":
            guard words.count == 3 else { say("usage: /msg NICK text"); return true }
            reloadContacts()
            let named = contacts(named: words[1])
            if named.count > 1 {
                say(ambiguity(words[1], named))
                return true
            }
            if let (_, card) = named.first {
                await sendToContact(card, text: words[2])
                return true
            }
            let to: PeerID
            if await node.peers.contains(where: { $0.value.nickname == words[1] }) || nostr == nil {
                guard let p = await peer(named: words[1]) else { return true }
                to = p
            } else if let nostr, nostr.transport != nil, let c = await nostr.contact(named: words[1]) {
                to = c.fingerprint.peerID // not on the mesh: a mutual favourite over Nostr
                Self.remember(&lastNames, to, DisplayText.clean(c.nickname))
            } else {
                guard let p = await peer(named: words[1]) else { return true }
                to = p
            }
            do {
                let id = try await node.sendPrivate(words[2], to: to)
                outgoing[id] = (await display(to), false)
                showOwnPrivate(to: await display(to), window: await window(to), text: words[2], id: id, note: screen == nil ? "sent" : "✓")
            } catch { say("! \(error)") }
        case "/send":
            guard words.count == 3 else { say("usage: /send NICK PATH"); return true }
            guard let to = await peer(named: words[1]) else { return true }
            let path = Self.typedPath(words[2])
            guard let data = FileManager.default.contents(atPath: path) else { say("! cannot read \(path)"); return true }
            do {
                let name = URL(fileURLWithPath: path).lastPathComponent
                let id = try await node.sendFile(name: name, mimeType: nil, content: [UInt8](data), to: to)
                outgoing[id] = (await display(to), false)
                showOwnPrivate(to: await display(to), window: await window(to), text: "file \(name) (\(data.count) bytes)", id: id,
                               note: "[\(String(repeating: " ", count: 20))] queued")
                if let fragments = fileSentEarly.removeValue(forKey: id) {
                    await show(.fileSent(transferID: id, to: to, fragments: fragments))
                }
            } catch { say("! \(error)") }
        case "/status":
            await status(Array(words.dropFirst()))
        case "/files":
            if receivedFiles.isEmpty { say("* no files received this session") }
            for f in receivedFiles { say("  [\(f.time)] \(f.name) (\(f.size) bytes) from \(f.from): \(f.path)") }
            let folder = store.directory.url.appendingPathComponent("files/incoming").path
            let all = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            say("* \(all.count) file\(all.count == 1 ? "" : "s") in \(folder)")
        case "/contacts":
            await listContacts()
        case "/lock":
            lock(reason: "locked")
        case "/unlock":
            beginUnlock()
        case "/history":
            guard words.count >= 2 else { say("usage: /history NAME (a contact)"); return true }
            history(words[1...].joined(separator: " "))
        case "/who":
            let peers = await node.peers.sorted { $0.value.nickname < $1.value.nickname }
            if peers.isEmpty { say("* nobody yet") }
            for (id, info) in peers {
                let favourite = await node.favoriteFingerprints.contains(info.fingerprint)
                let marks = (favourite ? " ★" : "") + (await node.isBlocked(id) ? " (blocked)" : "")
                let can = info.capabilities.map { $0.isEmpty ? "  (announces no capabilities)" : "  can: " + $0.names.joined(separator: ", ") } ?? ""
                say("  \(await display(id))  \(id)  \(info.hops == 1 ? "direct" : "\(info.hops) hops")\(marks)\(can)")
            }
        case "/ping":
            guard words.count >= 2 else { say("usage: /ping NICK (a peer /who lists)"); return true }
            guard let id = await peer(named: words[1]) else { return true }
            await node.ping(id)
            say("* ping \(words[1]) …")
        case "/block", "/unblock", "/fav", "/unfav", "/verify":
            guard words.count >= 2 else { say("usage: \(words[0]) NICK (a peer /who lists)"); return true }
            guard let id = await peer(named: words[1]), let info = await node.peers[id] else { return true }
            switch words[0] {
            case "/block":
                await node.block(info.fingerprint)
                rememberTrust(info.fingerprint, nickname: info.nickname) { $0.blocked = true }
                say("* \(words[1]) blocked")
            case "/unblock":
                await node.unblock(info.fingerprint)
                rememberTrust(info.fingerprint, nickname: info.nickname) { $0.blocked = false }
                say("* \(words[1]) unblocked")
            case "/fav", "/unfav":
                await node.setFavorite(info.fingerprint, words[0] == "/fav")
                // The apps' notice, with our npub: a mutual favourite can reach us over Nostr.
                await nostr?.favouriteChanged(id, fingerprint: info.fingerprint, on: words[0] == "/fav")
                rememberTrust(info.fingerprint, nickname: info.nickname) { $0.favorite = words[0] == "/fav" }
                do {
                    try store.setFavorites(await node.favoriteFingerprints)
                    say(words[0] == "/fav" ? "* \(words[1]) is a favourite: messages for them are held while they are away"
                                           : "* \(words[1]) is no longer a favourite")
                } catch { say("! favourites not saved: \(error)") }
            default:
                say("* your fingerprint:\n" + indent(node.identity.fingerprint.grouped))
                say("* \(words[1])'s fingerprint:\n" + indent(info.fingerprint.grouped))
                say("* do they read the same on \(words[1])'s screen? y to mark verified")
                pendingVerify = id
            }
        case "/stats":
            let s = await node.statistics
            let r = await node.refusals
            say("""
              received \(s.received) (direct \(s.direct), relayed \(s.relayed)), average hops \(String(format: "%.1f", s.averageHops))
              relays scheduled \(s.relaysScheduled), executed \(s.relaysExecuted), cancelled \(s.relaysCancelled)
              duplicates blocked \(s.duplicatesBlocked) (\(String(format: "%.0f", s.duplicateRate * 100))%), transmissions \(s.transmissions)
              refused: malformed \(s.malformed), from blocked senders \(s.blockedDropped), TTL clamped \(s.ttlClamped), too large to send \(s.unsendable)
              refused before relaying: forged \(r.forged), unverifiable \(r.unverifiable), stale \(r.stale), our own ID \(r.ownID), oversized \(r.oversized), replayed \(r.replayed), handshakes over budget \(r.handshakeBudget)
              announces refused: signing key not the pinned one \(r.pinMismatch), older than the last taken \(r.outdatedAnnounce)
            """)
        case "/nick":
            guard words.count >= 2 else { say("usage: /nick NAME"); return true }
            let name = words[1...].joined(separator: " ")
            do {
                try store.setNickname(name) // refuses what an announce cannot carry
                await node.rename(name)
                say("* you are now \(name)")
            } catch { say("! \(error)") }
        case "/clear":
            FileHandle.standardOutput.write(Data("\u{1B}[2J\u{1B}[H".utf8))
        case "/leave", "/quit":
            if !heldWhileLocked.isEmpty, !quitWarned {
                quitWarned = true
                say("! \(heldWhileLocked.count) message\(heldWhileLocked.count == 1 ? "" : "s") that came while the store was locked are not stored yet: /unlock to keep them, or \(words[0]) again to leave without")
                return true
            }
            await node.leave()
            say("* left")
            return false
        case "/panic":
            await node.wipe()
            try? yaok?.close()
            yaok = nil
            heldWhileLocked = []
            try? YaOKStore.reset(directory: store.directory.url)
            try? store.wipe()
            say("* keys, sessions and state wiped")
            return false
        case "/join", "/j":
            guard words.count >= 2, words[1].hasPrefix("#") else { say("usage: /join #GEOHASH (or /join #mesh)"); return true }
            await join(String(words[1].dropFirst()))
        case "/nostr":
            // How a Nostr contact's messages are wrapped: the apps' variant, or standard NIP-17.
            guard let nostr else { say("! no Nostr here"); return true }
            if words.count == 1 {
                let all = await nostr.contacts.values.sorted { $0.nickname < $1.nickname }
                if all.isEmpty { say("* no Nostr contacts yet (a favourite who favourites you back tells you their npub)") }
                for c in all { say("  \(c.nickname)  \(c.npub.prefix(20))…  \(c.variant == .standard ? "standard NIP-17" : "bitchat")") }
                return true
            }
            guard words.count == 3, let variant = ["standard": GiftWrap.Variant.standard, "nip17": .standard, "bitchat": .bitchat][words[2]] else {
                say("usage: /nostr [NICK standard|bitchat]")
                return true
            }
            if let c = await nostr.setVariant(variant, named: words[1]) {
                say("* messages to \(c.nickname) over Nostr go as \(variant == .standard ? "standard NIP-17 (plain text, no receipts)" : "bitchat's envelope (as the apps)")")
            } else {
                say("! no Nostr contact named \(words[1]) (/nostr lists them)")
            }
        case "/part":
            guard words.count >= 2, words[1].hasPrefix("#") else { say("usage: /part #GEOHASH"); return true }
            let g = String(words[1].dropFirst()).lowercased()
            await nostr?.transport?.leave(g)
            if channel == g { channel = nil }
            say("* left #\(g)")
        case "/help":
            say("""
              text              to everyone
              /msg NICK text    privately, end-to-end encrypted (/m, /dm); to a contact
                                who is away, kept and sent when they appear
              /contacts         Ya OK contacts (starling contact add), here or away
              /history NAME     your conversation with a contact, kept in the encrypted store
              /lock, /unlock    close the store now (with a PIN it also closes when idle); open it again
              /send NICK PATH   a file, privately (~ and "quoted paths" work)
              /files            files received, and where they are
              /who              who is here, how far, ★ favourites, ✓ verified, what they can do
              /ping NICK        round trip and hops to a peer (mesh diagnostics)
              /verify NICK      compare fingerprints and mark verified
              /block NICK, /unblock NICK, /fav NICK, /unfav NICK  (a mutual favourite is reached over Nostr with --nostr)
              /nostr [NICK standard|bitchat]  Nostr contacts; wrap a contact's messages as standard NIP-17
                                (any Nostr client) or as the bitchat apps do (the default)
              /join #GEOHASH    a public location channel over Nostr (--nostr), as the apps run them;
                                /join #mesh comes back, /part #GEOHASH leaves
              /nick NAME        rename yourself
              /status [STATE|sos|clear]  your state, or everyone's (Stately)
              /stats            mesh statistics
              /query NICK, /win N, /close   windows (full screen): Alt-1…9, Ctrl-N/Ctrl-P switch; PgUp/PgDn scroll
              /clear, /leave, /panic (wipe keys, the store and state, then quit), /help
            """)
        default:
            say("! unknown command \(words[0]) (/help)")
        }
        return true
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

struct Relay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Relay for the mesh without a chat screen (for a Raspberry Pi in a window)."
    )
    @OptionGroup var node: NodeOptions
    @Option(help: "Stop after this many seconds (default: run until interrupted).") var duration: Double?
    @Option(help: "A Ya OK relay server (HOST:PORT): also take what it holds for this node's user.") var relay: String?
    @Flag(help: "Poll the relay every 5 minutes instead of every 30 s.") var background = false

    func run() async throws {
        let (n, nostr) = try await node.makeNodeWithNostr()
        let deadline = duration.map { UInt64(Date().timeIntervalSince1970 * 1000) + UInt64($0 * 1000) }
        var relayClient: RelayClient?
        if let relay {
            relayClient = try await RelayInbox.start(relay: relay, node: n, dataDir: node.dataDir, json: false, background: background)
        }
        let signals = SignalWatch([SIGINT, SIGTERM]) { Task { await n.stop() } }
        defer { signals.cancel() }
        let runner = Task { await n.run(until: deadline) }
        for await event in n.events {
            await nostr.handle(event)
            switch event {
            case let .notice(text): print(text)
            case let .started(port, peerID, nickname): print("relaying as \(nickname) (\(peerID))" + (port.map { " on 127.0.0.1:\($0)" } ?? ""))
            case let .linkUp(a): print("link up \(a)")
            case let .linkDown(a): print("link down \(a)")
            default: break
            }
        }
        await runner.value
        await relayClient?.leave()
        let s = await n.statistics
        print("relayed \(s.relaysExecuted) of \(s.received) packets; \(s.duplicatesBlocked) duplicates blocked")
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
