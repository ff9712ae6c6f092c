import Foundation
import StarlingCrypto
import StarlingMessenger
import StarlingNode
import StarlingWire
import StarlingYaOK
import StarlingYaOKStore

/// Names a person types, the store's contacts and conversations, and the lock.
extension ChatScreen {
    /// The conversation a typed name means: a contact (`NAME`, or `NAME#0a1b`
    /// with the start of its user ID), a peer here (`bob`, `bob#fde2`), a
    /// Nostr contact, or a conversation kept from before. Says why when there
    /// is no single answer.
    func conversation(named name: String) async -> UserID? {
        let matches = contacts(named: name, in: await messenger.contacts)
        if matches.count > 1 {
            say(ambiguity(name, matches))
            return nil
        }
        if let card = matches.first?.card { return card.userID }
        let peers = await node.peers
        if peers.contains(where: { $0.value.nickname == name }) || name.contains("#") {
            guard let p = await peer(named: name) else { return nil }
            return await messenger.conversation(withPeer: p)
        }
        let trust = await messenger.trust
        if let (f, _) = trust.filter({ $0.value.npub != nil && $0.value.favorite && DisplayText.clean($0.value.nickname ?? "") == name })
            .min(by: { $0.key < $1.key }) {
            return await messenger.conversation(withKey: f) // a mutual favourite over Nostr, not on the mesh
        }
        if let kept = await messenger.peerConversations.filter({ DisplayText.clean($0.nickname) == name }).max(by: { $0.updatedAt < $1.updatedAt }) {
            return kept.id
        }
        _ = await peer(named: name) // says there is none
        return nil
    }

    /// The Noise key of a contact, or of a peer decided about before, by the
    /// name it was kept under (one only).
    func decided(named name: String) async -> (Fingerprint, String)? {
        if let card = contacts(named: name, in: await messenger.contacts).first?.card { return (card.meshFingerprint, card.displayName) }
        let kept = await messenger.trust.filter { DisplayText.clean($0.value.nickname ?? "") == name }
        guard kept.count == 1, let (f, t) = kept.first else { return nil }
        return (f, t.nickname ?? name)
    }

    /// The one peer a typed name means. Several peers with that nickname are
    /// refused and listed (`bob#fde2 ✓★, bob#7e6b`), never chosen silently;
    /// `bob#fde2` (4 digits of the peer ID) picks one.
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
        for id in matches.sorted(by: { $0.description < $1.description }) {
            let info = peers[id]
            var marks = ""
            if let f = info?.fingerprint {
                marks = (await messenger.isVerified(f) ? "✓" : "") + (await messenger.isFavorite(f) ? "★" : "")
            }
            labels.append("\(DisplayText.clean(info?.nickname ?? name))#\(id.description.prefix(4))\(marks.isEmpty ? "" : " " + marks)")
        }
        say("! \(matches.count) peers are called \(name): \(labels.joined(separator: ", ")); say which, e.g. \(DisplayText.clean(name))#\(matches.sorted(by: { $0.description < $1.description })[0].description.prefix(4))")
        return nil
    }

    /// Contacts a typed name means: by display name, or `NAME#0a1b`.
    func contacts(named name: String, in all: [ContactRecord]) -> [ContactRecord] {
        let exact = all.filter { $0.card?.displayName.lowercased() == name.lowercased() }
        if !exact.isEmpty { return exact }
        let parts = name.split(separator: "#")
        guard parts.count == 2, parts[1].count >= 4 else { return [] }
        return all.filter {
            $0.card?.displayName.lowercased() == parts[0].lowercased() && $0.card?.userID.description.hasPrefix(parts[1].lowercased()) == true
        }
    }

    func ambiguity(_ name: String, _ matches: [ContactRecord]) -> String {
        let cards = matches.compactMap { r in r.card.map { (r, $0) } }
        return "! \(cards.count) contacts are called \(name): "
            + cards.map { r, c in "\(DisplayText.clean(c.displayName))#\(c.userID.description.prefix(4))\(r.verified ? " ✓" : "")" }
                .joined(separator: ", ") + "; say which, e.g. \(DisplayText.clean(cards[0].1.displayName))#\(cards[0].1.userID.description.prefix(4))"
    }

    /// /history NAME: the conversation, oldest first, each with its mark.
    func showHistory(of name: String) async {
        guard await messenger.isStoreOpen else { say("! the store is locked (/unlock)"); return }
        await messenger.reloadContacts()
        guard let c = await conversation(named: name) else { return }
        let shown = DisplayText.clean(await messenger.name(of: c))
        let messages: [MessageRecord]
        do { messages = try await messenger.history(c) } catch { say("! the history did not open: \(error)"); return }
        if messages.isEmpty { say("* no messages with \(shown) yet") }
        let f = DateFormatter()
        f.dateFormat = "yyyy-MM-dd HH:mm"
        for m in messages {
            let when = f.string(from: Date(timeIntervalSince1970: Double(m.timestamp) / 1000))
            let who = m.outgoing ? "you → \(shown)" : "\(shown) → you"
            let mark = m.progress.map { "  \($0.state.mark)" } ?? ""
            say("  [\(when)] <\(DisplayText.clean(who))> \(DisplayText.clean(m.text))\(mark)")
        }
    }

    /// /contacts: who they are, whether they are here, and how they were last reached.
    func listContacts() async {
        guard await messenger.isStoreOpen else { say("! the store is locked (/unlock)"); return }
        await messenger.reloadContacts() // `starling contact add` may have run meanwhile
        let all = await messenger.contacts
        if all.isEmpty { say("* no contacts: add one with `starling contact add yaok://…`") }
        let here = Set(await node.peers.values.map(\.fingerprint))
        for record in all {
            guard let card = record.card else { continue }
            let f = card.meshFingerprint
            let marks = (await messenger.isVerified(f) ? " ✓" : "") + (await messenger.isFavorite(f) ? " ★" : "")
                + (await messenger.isBlocked(f) ? " (blocked)" : "")
            let route = routes[card.userID].map { " · last reached via \($0 == "mesh" ? "the mesh" : Self.way($0))" } ?? ""
            say("  \(DisplayText.clean(card.displayName))\(marks)  \(here.contains(f) ? "here" : "away")\(route)")
        }
    }

    // MARK: Auto-lock

    func setLockAfter(_ seconds: Double) { lockAfter = seconds }

    /// Closes the store after `lockAfter` idle seconds (only a store with a
    /// PIN or passphrase: the key file would open it again at once).
    func lockIfIdle() async {
        guard lockAfter > 0, await messenger.isStoreOpen, Date().timeIntervalSince(lastActivity) >= lockAfter else { return }
        await lock(reason: "locked after \(Int(lockAfter)) s idle")
    }

    func lock(reason: String) async {
        guard await messenger.isStoreOpen else { say("* the store is already locked"); return }
        do { try await messenger.lock() } catch { say("! the store did not close cleanly: \(error)") }
        say("* \(reason): contacts' history is closed; messages still arrive and are kept. /unlock opens it again")
        await refreshScreen()
    }

    /// /unlock: the next line is the PIN or passphrase (not echoed).
    func beginUnlock() async {
        guard await !messenger.isStoreOpen else { say("* the store is open"); return }
        awaitingSecret = true
        // The full screen draws the secret as stars itself; the terminal's own
        // echo is for plain lines only (on under ncurses it doubles every key).
        if let screen { screen.expectSecret() } else { Terminal.echo(false) }
        say(YaOKStore.protection(in: session.directory) == .passphrase ? "passphrase:" : "PIN:")
    }

    func unlock(with secret: String) async {
        awaitingSecret = false
        if screen == nil { Terminal.echo(true) }
        let directory = session.directory
        let protection: Keyring.Protection
        switch YaOKStore.protection(in: directory) {
        case .pin?: protection = .pin(secret)
        case .passphrase?: protection = .passphrase(secret)
        case nil, .keyFile?: protection = .keyFile(node.identity)
        }
        do {
            let opened = try YaOKStore.open(directory: directory, protection: protection)
            try await messenger.open(opened)
        } catch {
            say("! \(error)")
        }
    }
}
