import Foundation
import StarlingCrypto
import StarlingMessenger
import StarlingMessengerCore
import StarlingNode
import StarlingWire
import StarlingYaOK
import StarlingStore

/// Names a person types, the store's contacts and conversations, and the lock.
extension ChatScreen {
    /// The conversation a typed name means (the messenger's ``Messenger/resolve(_:)``:
    /// a contact, `NAME#0a1b`, a peer here, `bob#fde2`, a Nostr contact, a
    /// conversation kept from before). Says why when there is no single answer.
    func conversation(named name: String, quietly: Bool = false) async -> UserID? {
        let found = await ask(Messenger.Resolution.none, { try await client.resolve(name) })
        if quietly {
            if case let .conversation(id) = found { return id }
            return nil
        }
        switch found {
        case let .conversation(id):
            return id
        case let .ambiguous(names):
            // Several peers here by that name: listed with their marks, as /who shows them.
            if await peerTable().values.filter({ $0.nickname == name }).count > 1 {
                _ = await peer(named: name)
                return nil
            }
            say("! \(names.count) are called \(name): \(names.map(DisplayText.clean).joined(separator: ", ")); say which, e.g. \(DisplayText.clean(names[0]))")
            return nil
        case .none:
            say("! no contact or peer called \(name) (try /who or /contacts)")
            return nil
        }
    }

    /// The Noise key of a contact, or of a peer decided about before, by the
    /// name it was kept under (one only).
    func decided(named name: String) async -> (Fingerprint, String)? {
        let contacts = await ask([]) { try await client.contacts() }.filter { $0.name.lowercased() == name.lowercased() }
        if contacts.count == 1, let c = contacts.first { return (c.fingerprint, c.name) }
        let kept = await ask([:]) { try await client.trust() }.filter { DisplayText.clean($0.value.nickname ?? "") == name }
        guard kept.count == 1, let (f, t) = kept.first else { return nil }
        return (f, t.nickname ?? name)
    }

    /// The one peer a typed name means. Several peers with that nickname are
    /// refused and listed (`bob#fde2 ✓★, bob#7e6b`), never chosen silently;
    /// `bob#fde2` (4 digits of the peer ID) picks one.
    func peer(named name: String) async -> PeerID? {
        let peers = await peerTable()
        switch Names.peer(name, among: peers, nickname: \.nickname) {
        case let .one(id): return id
        case .none:
            say("! no peer called \(name) (try /who)")
            return nil
        case let .several(matches):
            let labels = matches.map { id -> String in
                let info = peers[id]
                let marks = (info?.verified == true ? "✓" : "") + (info?.favorite == true ? "★" : "")
                return Names.label(DisplayText.clean(info?.nickname ?? name), peer: id) + (marks.isEmpty ? "" : " " + marks)
            }
            say("! \(matches.count) peers are called \(name): \(labels.joined(separator: ", ")); say which, e.g. \(Names.label(DisplayText.clean(name), peer: matches[0]))")
            return nil
        }
    }

    /// A conversation's latest lines (20) in its window, oldest first: ours with
    /// their marks, theirs unread counted (and highlighted) only when not read yet.
    func fillWindow(_ conversation: UserID, _ w: String) async {
        guard let screen, let messages = await ask(nil, { try await client.history(conversation, limit: 20) }), !messages.isEmpty else { return }
        let name = await name(of: conversation)
        let f = DateFormatter()
        f.dateFormat = "HH:mm"
        for m in messages {
            let time = f.string(from: Date(timeIntervalSince1970: Double(m.timestamp) / 1000))
            let body = m.file.map { Self.fileLine($0) } ?? Self.lines(m.text)
            if m.outgoing {
                screen.append(.init(time: time, nick: "you", text: body, messageID: m.transportID, mark: m.progress.map { $0.state.mark }, own: true), to: w)
            } else {
                let unread = m.readAt == nil
                screen.append(.init(time: time, nick: DisplayText.clean(m.author ?? name), text: body, highlight: unread, seen: !unread), to: w)
                shown(m, in: conversation)
            }
        }
    }

    /// A file in a conversation's history as a line says it: a voice note by its length.
    static func fileLine(_ f: FileAttachment) -> String {
        if let ms = f.durationMillis { return "voice note (\(ChatScreen.seconds(ms)))" }
        return "file \(DisplayText.clean(f.name)) (\(ByteCountFormatter.string(fromByteCount: Int64(f.size), countStyle: .file)))"
    }

    /// /history NAME: the conversation, oldest first, each with its mark.
    func showHistory(of name: String) async {
        await refreshMe()
        guard me.storeOpen else { say("! the store is locked (/unlock)"); return }
        guard let c = await conversation(named: name) else { return }
        let shown = await self.name(of: c)
        guard let messages = await ask(nil, { try await client.history(c, limit: 200) }) else { return }
        if messages.isEmpty { say("* no messages with \(shown) yet") }
        let f = DateFormatter()
        f.dateFormat = "yyyy-MM-dd HH:mm"
        for m in messages {
            let when = f.string(from: Date(timeIntervalSince1970: Double(m.timestamp) / 1000))
            let who = m.outgoing ? "you → \(shown)" : m.author.map { "\($0) → \(shown)" } ?? "\(shown) → you"
            let mark = m.progress.map { "  \($0.state.mark)" } ?? ""
            let body = m.file.map { Self.fileLine($0) + ($0.path.map { " saved to \(DisplayText.clean($0))" } ?? "") } ?? DisplayText.clean(m.text)
            say("  [\(when)] <\(DisplayText.clean(who))> \(body)\(mark)")
        }
        // Read now: the person has the conversation in front of them.
        if let newest = messages.last(where: { !$0.outgoing }) {
            self.shown(newest, in: c)
            await markSeen(c)
        }
    }

    /// /contacts: who they are, whether they are here, and how they were last reached.
    func listContacts() async {
        await refreshMe()
        guard me.storeOpen else { say("! the store is locked (/unlock)"); return }
        // Every contact, as the start line counts them: cards, Nostr-only contacts, favourites
        // (`starling contact add` may have run meanwhile).
        let all = await ask([]) { try await client.contacts() }
        if all.isEmpty { say("* no contacts: add one with `starling contact add yaok://…`") }
        let here = Set(await peerTable().values.map(\.fingerprint))
        for c in all {
            let kind = switch c.kind { case .card: ""; case .nostr: " (Nostr only)"; case .favourite: " (a favourite from the mesh)" }
            let marks = (c.verified ? " ✓" : "") + (c.favorite ? " ★" : "") + (c.blocked ? " (blocked)" : "") + kind
            let route = routes[c.conversation].map { " · last reached via \($0 == .mesh ? "the mesh" : $0.description)" } ?? ""
            say("  \(DisplayText.clean(c.name))\(marks)  \(here.contains(c.fingerprint) ? "here" : "away")\(route)")
        }
    }

    // MARK: The lock (the messenger's: its auto-lock, and its event to every face)

    func setLockAfter(_ seconds: Double) { lockAfter = seconds }

    /// The person did something here: the messenger's auto-lock waits again
    /// (said at most every 5 s: through a daemon, each is a call).
    func noteActivity() async {
        guard Date().timeIntervalSince(activityNoted) >= 5 else { return }
        activityNoted = Date()
        try? await client.noteActivity() // (best effort: a daemon gone is said by its event stream)
    }

    /// /lock: the store closes; the messenger's event says so here and in every face.
    func lock() async {
        await refreshMe()
        guard me.storeOpen else { say("* the store is already locked"); return }
        do { try await client.lock() } catch { say("! \(error)") }
    }

    /// /unlock: the next line is the PIN or passphrase (not echoed).
    func beginUnlock() async {
        await refreshMe()
        guard !me.storeOpen else { say("* the store is open"); return }
        awaitingSecret = true
        // The full screen draws the secret as stars itself; the terminal's own
        // echo is for plain lines only (on under ncurses it doubles every key).
        if let screen { screen.expectSecret() } else { Terminal.echo(false) }
        say(MessengerStore.protection(in: directory) == .passphrase ? "passphrase:" : "PIN:")
    }

    func unlock(with secret: String) async {
        awaitingSecret = false
        if screen == nil { Terminal.echo(true) }
        do {
            try await client.unlock(secret: secret)
            await refreshMe()
        } catch {
            say("! \(error)")
        }
    }
}
