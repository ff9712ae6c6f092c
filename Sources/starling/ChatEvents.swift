import Foundation
import StarlingCrypto
import StarlingMessenger
import StarlingMessengerCore
import StarlingNode
import StarlingStately
import StarlingTerminal
import StarlingWire
import StarlingYaOK
import StarlingStore

/// How the chat renders what the messenger says.
extension ChatScreen {
    /// A mailbox's name in words.
    static func way(_ via: String) -> String { MessageRoute(name: via).description }

    func show(_ event: MessengerEvent) async {
        switch event {
        case .trustLoaded:
            break // said by summary()
        case let .storeUnlocked(stored):
            say("* unlocked" + (stored > 0 ? "; \(stored) change\(stored == 1 ? "" : "s") from meanwhile stored" : ""))
            await refreshScreen()
        case let .storeLocked(reason):
            // Whichever face locked it, or the messenger's auto-lock: every face says so.
            await refreshMe()
            say("* \(DisplayText.clean(reason)): contacts' history is closed; messages still arrive and are kept. /unlock opens it again")
            await refreshScreen()
        case let .privateMessage(conversation, record, from, _, hops, via, _):
            // (No join line for it: the message names its sender in their own window, and a
            // one-shot `send` that comes and goes leaves no trace in #mesh, as README says.)
            let shownVia = via.map { " (via \(Self.way($0)))" } ?? (hops > 1 ? " (via \(hops - 1) relay\(hops == 2 ? "" : "s"))" : "")
            let name = await display(from)
            if let screen {
                let w = await window(for: conversation)
                screen.append(.init(time: FullScreen.clock(), nick: name, text: Self.lines(record.text) + shownVia, highlight: true), to: w)
                screen.ring() // a private message rings
                // Seen now only if its window is in view (else when the person opens it).
                shown(record, in: conversation)
                if screen.windowInView == w { await markSeen(conversation) }
            } else {
                say("[\(Self.clock())] <\(name) → you>\(shownVia) \(DisplayText.clean(record.text))")
                shown(record, in: conversation)
                await markSeen(conversation) // plain lines: shown to the person as they come
            }
            routes[conversation] = record.route ?? .mesh
        case let .sent(conversation, record):
            // A file has its own line (its bar), made when it was sent: its record is the history's.
            if record.file != nil { return }
            // A line of ours to a group is shown in its window by /group say (or the window's input).
            if await ask([], { try await client.groups() }).contains(where: { MessengerCore.conversationID(forGroup: $0.groupID) == conversation }) {
                return
            }
            await showSent(conversation, record)
        case let .sendingWaiting(conversation, count):
            let name = await name(of: conversation)
            say("* \(name) is here: sending \(count) waiting message\(count == 1 ? "" : "s")")
        case let .progress(conversation, record):
            if sendsInFlight > 0 {
                if progressMeanwhile.count < 256 { progressMeanwhile.append((conversation, record)) }
                return
            }
            await showProgress(conversation, record)
        case let .dropDeposited(conversation, record, couriers):
            guard let id = record.transportID else { return }
            let fallback = await name(of: conversation)
            let to = outgoing[id]?.to ?? fallback
            let text = "left with \(couriers) courier\(couriers == 1 ? "" : "s"): handed on if they meet \(to) within 24 h; sent directly too when \(to) is here"
            if let screen { screen.mark(id, "→ \(couriers) courier\(couriers == 1 ? "" : "s")") } else { say("  · to \(to): \(text)") }
        case let .peerJoined(peer, nickname, hops):
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
            await refreshScreen()
        case let .peerLeft(peer):
            // Came and went within the join delay: nothing to say.
            if pendingJoins.removeValue(forKey: peer) == nil { say("* \(await display(peer)) left") }
            await refreshScreen()
        case let .sessionEstablished(peer, _, _):
            say("* encrypted session with \(await display(peer))")
            await refreshScreen()
        case let .favorited(by, _, on, _, overNostr):
            await showJoins(only: by)
            say("* \(await display(by)) \(on ? "favorited" : "unfavorited") you"
                + (on && overNostr ? " (reachable over Nostr when both of you are favourites)" : ""))
        case .trustChanged:
            await refreshScreen()
        case let .warning(text):
            say("! \(text)")
        case let .notSaved(text):
            say("! \(text)")
        case .diagnostic:
            break // internals (a session lost in a restart): /stats counts them
        case let .publicHistory(burst):
            await showHistory(burst)
        case let .channel(e):
            showChannel(e)
        case let .request(r):
            showRequest(r)
        case let .node(e):
            await show(e)
        }
    }

    /// A stranger's message over Nostr: shown as a request, with what to do about it.
    func showRequest(_ r: StrangerRequest) {
        guard let m = r.messages.last else { return }
        let first = r.messages.count == 1
        say("* \(r.npub) (not a contact) writes over Nostr: \(DisplayText.clean(m.text))"
            + (first ? "\n  /accept \(r.npub) NAME makes them a contact (their messages go to your conversation); /block \(r.npub) refuses them"
                     : "  (\(r.messages.count) waiting; /requests)"))
    }

    /// Our message, shown in its conversation with its first mark.
    func showSent(_ conversation: UserID, _ record: MessageRecord) async {
        let name = await name(of: conversation)
        let w = await window(for: conversation)
        guard let id = record.transportID else { return }
        outgoing[id] = (name, [])
        if let t = record.route { routes[conversation] = t }
        let note: String
        switch record.route {
        case .mesh?: note = screen == nil ? "sent" : "✓"
        case let via?: note = "→ \(via)"
        case nil:
            note = me.server == nil ? "pending: not on the mesh now; sent when they appear"
                                         : "pending: not on the mesh, and the Ya OK server is not reachable now; sent when either is"
        }
        if let screen {
            screen.append(.init(time: FullScreen.clock(), nick: "you", text: record.text, messageID: id, mark: note, own: true), to: w)
        } else {
            say("[\(Self.clock())] <you → \(name)> \(record.text)  · \(note)")
        }
    }

    /// A receipt or a change of way: on the message's own line in the full
    /// screen, a line of its own in plain mode (each said once).
    func showProgress(_ conversation: UserID, _ record: MessageRecord) async {
        guard let id = record.transportID, let state = record.progress?.state else { return }
        let fallback = await name(of: conversation)
        let to = outgoing[id]?.to ?? fallback
        var said = outgoing[id]?.shown ?? []
        func once(_ key: String, mark: String, plain: String) {
            guard said.insert(key).inserted else { return }
            if let screen { screen.mark(id, mark) } else { say(plain) }
        }
        if let t = record.route { routes[conversation] = t }
        // Read, in plain mode: delivered first, if it was not said (the full screen's mark says both).
        if state == .read, screen == nil { once("delivered", mark: "✓✓", plain: "  · to \(to): delivered") }
        if let w = ProgressWords.of(record, server: me.server) { once(w.key, mark: w.mark, plain: "  · to \(to): \(w.words)") }
        outgoing[id] = (to, said)
        if outgoing.count > 10_000, let any = outgoing.keys.first(where: { $0 != id }) { outgoing[any] = nil }
    }

    /// The window in view is seen by the person: its messages are read.
    func markWindowSeen() async {
        guard let screen, let c = windowConversation[screen.windowInView] else { return }
        await markSeen(c)
    }

    /// This face showed an incoming message (the newest it showed of its conversation).
    func shown(_ record: MessageRecord, in conversation: UserID) {
        if lastShown[conversation] == nil, lastShown.count >= 4_096, let any = lastShown.keys.first { lastShown[any] = nil }
        lastShown[conversation] = record.id
    }

    /// The person saw this conversation, as far as this face showed it: read
    /// receipts go for those messages only (another face may have been told of
    /// newer ones first). Nothing shown here: nothing marked.
    func markSeen(_ conversation: UserID) async {
        guard let last = lastShown[conversation] else { return }
        _ = await ask(()) { try await client.markSeen(conversation, through: last) }
    }

    /// The file events kept while a /send was waiting, in the order they came.
    func showFileEventsMeanwhile() async {
        while sendsInFlight == 0, !fileEventsMeanwhile.isEmpty {
            await show(fileEventsMeanwhile.removeFirst())
        }
        while sendsInFlight == 0, !progressMeanwhile.isEmpty {
            let (c, r) = progressMeanwhile.removeFirst()
            await showProgress(c, r)
        }
    }

    /// What the node said that the messenger passes on as it is.
    func show(_ event: MeshNode.Event) async {
        switch event {
        case .fileSent, .delivered, .failed:
            // Kept until /send has shown its line (see fileEventsMeanwhile).
            if sendsInFlight > 0 {
                if fileEventsMeanwhile.count < 64 { fileEventsMeanwhile.append(event) }
                return
            }
        default:
            break
        }
        let me = self.me.nickname
        // Whoever speaks in #mesh has joined: their join line goes first.
        switch event {
        case let .message(from, _, _, _, _, _):
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
        case let .message(from, _, text, hops, timestamp, _):
            let clean = DisplayText.clean(text)
            let mention = DisplayText.mentions(clean, nickname: me)
            let via = hops > 1 ? " (via \(hops - 1) relay\(hops == 2 ? "" : "s"))" : ""
            if let screen {
                screen.append(.init(time: FullScreen.clock(timestamp), nick: await display(from), text: Self.lines(text) + via,
                                    highlight: mention), to: ChatBuffers.publicName)
                if mention { screen.ring() }
            } else {
                let line = "[\(Self.clock())] <\(await display(from))>\(via) \(clean)"
                // A bell and bold only for a terminal: plain lines to a pipe or a file stay plain.
                say(mention && isatty(STDOUT_FILENO) == 1 ? "\u{7}\u{1B}[1m\(line)\u{1B}[0m" : line)
            }
        case let .boardPost(entry, _, _):
            let post = entry.post, line = EventPrinter.boardLine(entry)
            if let screen {
                let by = entry.shownName
                screen.append(.init(time: FullScreen.clock(post.createdAt), nick: "board",
                                    text: "<\(by)> " + (entry.crossed ? "(across a bridge) " : "") + Self.lines(post.content) + (post.isUrgent ? " (urgent)" : ""),
                                    highlight: post.isUrgent), to: ChatBuffers.publicName)
            } else {
                say("[\(Self.clock())] \(line)")
            }
        case .boardPostDeleted:
            break // /board shows what is left
        case .recognized, .vouched:
            say("* " + (event.sentence ?? ""))
        case let .gatewayMessage(m):
            if let screen {
                screen.append(.init(time: FullScreen.clock(), text: EventPrinter.gatewayLine(m)), to: "#" + m.geohash)
            } else {
                say("[\(Self.clock())] " + EventPrinter.gatewayLine(m))
            }
        case let .bridgedMessage(m):
            if !bridgeHinted {
                bridgeHinted = true
                say("* a line from another mesh, through a bridge here (its name is its author's claim); yours cross to other meshes only when you start with --cross-bridges or run a bridge")
            }
            if let screen {
                screen.append(.init(time: FullScreen.clock(), nick: DisplayText.clean(m.nickname ?? "anon") + "? " + m.pubkey.prefix(8),
                                    text: "(across a bridge) " + Self.lines(m.text)), to: ChatBuffers.publicName)
            } else {
                say("[\(Self.clock())] " + EventPrinter.bridgedLine(m))
            }
        case let .groupMessage(m):
            if let screen {
                screen.append(.init(time: FullScreen.clock(m.timestamp), nick: DisplayText.clean(m.nickname), text: Self.lines(m.text)),
                              to: Self.groupWindow(m.group.name))
            } else {
                say("[\(Self.clock())] \(EventPrinter.groupLine(m))")
            }
        case let .groupChanged(g, change, _):
            let text = event.sentence ?? ""
            if let screen {
                screen.append(.init(time: FullScreen.clock(), text: text), to: change == .removed || change == .left ? ChatBuffers.publicName : Self.groupWindow(g.name))
            } else {
                say("[\(Self.clock())] * \(text)")
            }
        case let .voiceNote(from, path, ms, isPrivate, _, _):
            let text = "voice from \(await display(from)) (\(Self.seconds(ms))): \(path)"
            if let screen {
                screen.append(.init(time: FullScreen.clock(), nick: await display(from), text: "voice (\(Self.seconds(ms))): \(path)"),
                              to: isPrivate ? await window(from) : ChatBuffers.publicName)
            } else {
                say("[\(Self.clock())] * \(text)")
            }
        case let .fileProgress(from, received, total):
            let width = 20, filled = received * width / max(1, total)
            let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
            if let screen {
                // A line in the peer's window, its bar redrawn as the file arrives.
                let id = "arriving-\(from)"
                if arriving.insert(from).inserted {
                    screen.append(.init(time: FullScreen.clock(), nick: await display(from), text: "a file is arriving", messageID: id), to: await window(from))
                }
                screen.mark(id, "[\(bar)] \(received * 100 / max(1, total))%")
            } else {
                // One line, redrawn in place.
                StandardOutput.write(Data("\r* file from \(await display(from)) [\(bar)] \(received * 100 / max(1, total))%".utf8))
            }
        case let .fileSending(id, _, sent, total):
            // Over the network: the part on the peer's disk.
            guard let o = outgoing[id], !o.shown.contains("delivered") else { return }
            let width = 20, filled = sent * width / max(1, total)
            let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
            if let screen {
                screen.mark(id, "[\(bar)] \(sent * 100 / max(1, total))% on \(o.to)'s disk")
            } else {
                StandardOutput.write(Data("\r* file to \(o.to) [\(bar)] \(sent * 100 / max(1, total))%".utf8))
            }
        case let .fileSent(id, _, 0):
            // Offered over the network: the peer fetches it (its progress follows).
            guard let o = outgoing[id], !o.shown.contains("delivered") else { return }
            let empty = String(repeating: " ", count: 20)
            if let screen { screen.mark(id, "[\(empty)] offered over the network") } else { say("* file to \(o.to): offered over the network; \(o.to) is fetching it") }
        case let .fileSent(id, _, fragments):
            // The sender's bar: queued (for a session) → out to the links → delivered.
            guard let o = outgoing[id] else { return }
            if !o.shown.contains("delivered") {
                let full = String(repeating: "#", count: 20)
                if let screen {
                    screen.mark(id, "[\(full)] sent in \(fragments) fragment\(fragments == 1 ? "" : "s") · waiting for the receipt")
                } else {
                    say("* file to \(o.to) [\(full)] sent in \(fragments) fragment\(fragments == 1 ? "" : "s"); waiting for the receipt")
                }
            }
        case let .delivered(id, _):
            // A file's receipt (messages' come as the messenger's progress).
            if var o = outgoing[id], o.shown.insert("delivered").inserted {
                outgoing[id] = o
                if let screen { screen.mark(id, "✓✓") } else { say("  · to \(o.to): delivered") }
            }
        case let .failed(id, _):
            if var o = outgoing[id], o.shown.insert("failed").inserted {
                outgoing[id] = o
                if let screen { screen.mark(id, "✗ not delivered") } else { say("  · to \(o.to): failed (not delivered)") }
            }
        case let .fileOffered(from, id, name, size, mimeType):
            let what = "\(name) (\(Self.bytes(size))\(mimeType.map { ", \($0)" } ?? ""))"
            alert("\(await display(from)) offers \(what) over the network: /accept \(id.prefix(8)) to take it, /decline \(id.prefix(8)) to refuse")
        case let .fileReceived(from, name, size, path, _):
            if arriving.remove(from) != nil { screen?.mark("arriving-\(from)", "[\(String(repeating: "#", count: 20))] 100%") }
            receivedFiles.append((Self.clock(), await display(from), DisplayText.clean(name), size, path))
            if receivedFiles.count > 200 { receivedFiles.removeFirst(receivedFiles.count - 200) }
            if let screen {
                screen.append(.init(time: FullScreen.clock(), nick: await display(from), text: "file \(DisplayText.clean(name)) (\(size) bytes) saved to \(path)"),
                              to: await window(from))
            } else {
                say("\r* file from \(await display(from)) [\(String(repeating: "#", count: 20))] 100%")
                say("[\(Self.clock())] <\(await display(from)) → you> file \(DisplayText.clean(name)) (\(size) bytes) saved to \(path)")
            }
        case let .state(s):
            say("* \(await display(s.senderID)) is \(s.state.emoji) \(s.state.displayName)\(s.hops > 1 ? " (\(s.hops) hops)" : "")")
        case let .sos(s):
            alert("🆘 SOS from \(DisplayText.clean(s.name)) (\(s.hops == 1 ? "direct" : "\(s.hops) hops")) — /status to see everyone")
        case let .rejected(why):
            if why.kind == .fileNotSaved, let p = why.peer, arriving.remove(p) != nil { screen?.mark("arriving-\(p)", "✗ not saved") }
            say("! \(why)")
        case let .pong(from, rtt, hops):
            say("* pong from \(await display(from)): \(rtt) ms, \(hops == 1 ? "direct" : "\(hops) hops")")
        case let .notice(text):
            say("* \(text)")
        case .stateExpired, .linkUp, .linkDown, .capabilities, .pinned, .held, .read, .sentOffMesh, .peer, .left, .privateMessage,
             .sessionEstablished, .favorited, .dropOpened, .dropDeposited:
            break // the messenger's, or nothing for a person
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

    /// A burst of history (the messenger's, oldest first): one block, each
    /// line at its sender's time, ours as ours.
    func showHistory(_ events: [MeshNode.Event]) async {
        let burst = events.compactMap { e -> (from: PeerID, text: String, timestamp: UInt64)? in
            if case let .message(from, _, text, _, timestamp, _) = e { (from, text, timestamp) } else { nil }
        }
        guard !burst.isEmpty else { return }
        let me = self.me.nickname, own = self.me.peerID
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
            guard let view = await ask(nil, { try await client.stately() }) else { return }
            let mine = view.state
            say("* you: \(mine.emoji) \(mine.displayName) (every \(view.interval / 1000) s, \(view.powerMode))")
            let board = view.board
            if board.isEmpty { say("* no states around yet") }
            let now = UInt64(Date().timeIntervalSince1970 * 1000)
            for s in board {
                let age = now > s.timestamp ? (now - s.timestamp) / 1000 : 0
                let line = "  \(s.state.emoji) \(DisplayText.clean(s.name)) — \(s.state.displayName), \(age) s ago, \(s.hops) hop\(s.hops == 1 ? "" : "s")"
                if s.state == .sos, screen == nil { say("\u{1B}[1;31m\(line)\u{1B}[0m") } else if s.state == .sos { alert(line) } else { say(line) }
            }
            return
        }
        if word == "clear" {
            guard await ask(false, { try await client.clearSOS(); return true }),
                  let now = await ask(nil, { try await client.stately() })?.state else { return }
            say("* SOS cleared: \(now.emoji) \(now.displayName)")
            return
        }
        guard let kind = StateKind(name: word) else {
            say("! states: " + StateKind.allCases.map { "\($0.emoji) \($0.rawValue)" }.joined(separator: ", ") + ", or clear")
            return
        }
        guard await ask(false, { try await client.setState(kind); return true }) else { return }
        say(kind == .invisible ? "* invisible: your state is no longer broadcast"
                               : "* you are \(kind.emoji) \(kind.displayName)\(kind == .sos ? " — broadcast every 5 s to 7 hops; /status clear ends it" : "")")
    }
}
