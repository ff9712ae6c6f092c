import Foundation
import StarlingCrypto
import StarlingNode
import StarlingWire
import StarlingYaOK
import StarlingYaOKStore

/// The chat's use of the encrypted store: Ya OK contacts (a contact is also a
/// mesh peer: their X25519 key is their Noise key), their conversations with
/// message states, messages pending until the contact is on the mesh, and
/// trust decisions (verified, blocked, favourite) that outlive the process.
extension ChatScreen {
    /// A contact known by the fingerprint the mesh shows.
    func contact(for fingerprint: Fingerprint) -> (ContactRecord, ContactCard)? {
        contacts.first { $0.1.meshFingerprint == fingerprint }
    }

    func reloadContacts() {
        guard let yaok else { return }
        contacts = ((try? yaok.contacts()) ?? []).compactMap { r in r.card.map { (r, $0) } }
    }

    /// At start: trust decisions to the node, receipts' IDs, a summary.
    func loadStore() async {
        guard let yaok else { return }
        reloadContacts()
        for record in (try? yaok.trust()) ?? [] {
            guard let fingerprint = Fingerprint(hex: record.fingerprint.lowercased()) else { continue }
            if record.verified { verified.insert(fingerprint); await node.setVerified(fingerprint, true) }
            if record.blocked { await node.block(fingerprint) }
            if record.favorite { await node.setFavorite(fingerprint, true) }
        }
        // Pins kept from earlier runs, then contacts' cards (signed, scanned in
        // person) over them: an announce with another signing key for a
        // contact's Noise key is refused.
        for (fingerprint, key) in (try? yaok.pins()) ?? [] {
            if let f = Fingerprint(hex: fingerprint) { await node.pinSigningKey(key, for: f) }
        }
        for (record, card) in contacts {
            await node.pinSigningKey(card.signingKey, for: card.meshFingerprint)
            if record.verified { verified.insert(card.meshFingerprint); await node.setVerified(card.meshFingerprint, true) }
            if record.blocked { await node.block(card.meshFingerprint) }
            for var m in (try? yaok.conversation(with: card.userID, limit: 200)) ?? [] where m.outgoing {
                if let t = m.transportID { transportIDs[t] = (m.id, m.contact) }
                // Handed to the mesh by an earlier run, no receipt since: that
                // run's retries are gone, so it is tried again when the contact
                // appears (at least once; a duplicate is possible, a loss is not).
                if m.progress?.state == .sending {
                    try? m.progress?.move(to: .retrying, at: Date().timeIntervalSince1970)
                    try? yaok.updateMessage(m)
                }
            }
        }
        let pending = (try? yaok.pendingMessages().count) ?? 0
        if !contacts.isEmpty || pending > 0 {
            say("* \(contacts.count) contact\(contacts.count == 1 ? "" : "s") (/contacts, /history NAME)"
                + (pending > 0 ? "; \(pending) message\(pending == 1 ? "" : "s") waiting for their contact to appear" : ""))
        }
    }

    /// Keeps a pin the node made on first use, for the next run.
    func rememberPin(_ fingerprint: Fingerprint, _ key: [UInt8]) {
        try? yaok?.setPin(fingerprint: fingerprint.hex, signingKey: key, at: Date().timeIntervalSince1970)
    }

    /// Remembers a trust decision about a mesh peer (and on its contact
    /// record when it is a contact).
    func rememberTrust(_ fingerprint: Fingerprint, nickname: String?, _ change: (inout TrustRecord) -> Void) {
        guard let yaok else { return }
        if var (record, _) = contact(for: fingerprint) {
            var probe = TrustRecord(fingerprint: fingerprint.hex, verified: record.verified, favorite: record.favorite,
                                    blocked: record.blocked, updatedAt: 0)
            change(&probe)
            record.verified = probe.verified
            record.favorite = probe.favorite
            record.blocked = probe.blocked
            try? yaok.updateContact(record)
            reloadContacts()
        }
        var record = (try? yaok.trust(fingerprint: fingerprint.hex))
            ?? TrustRecord(fingerprint: fingerprint.hex, updatedAt: Date().timeIntervalSince1970)
        change(&record)
        record.nickname = nickname ?? record.nickname
        record.updatedAt = Date().timeIntervalSince1970
        do { try yaok.setTrust(record) } catch { say("! not saved: \(error)") }
    }

    /// The fingerprint of a peer: from its verified announce, else from the
    /// Noise session it opened (a private message can come before the announce).
    func fingerprint(of peer: PeerID) async -> Fingerprint? {
        if let info = await node.peers[peer] { return info.fingerprint }
        return sessionFingerprints[peer]
    }

    /// A private message from a contact goes into their conversation (held
    /// in memory while the store is locked, and written when it opens).
    func storeIncoming(from peer: PeerID, text: String, messageID: String) async {
        guard let fingerprint = await fingerprint(of: peer), let (_, card) = contact(for: fingerprint) else { return }
        let now = Date().timeIntervalSince1970
        let record = MessageRecord(id: Self.recordID(messageID), contact: card.userID, outgoing: false, text: text,
                                   timestamp: UInt64(now * 1000), recordedAt: now, transport: "mesh", transportID: messageID)
        guard let yaok else {
            if heldWhileLocked.count < Self.maxHeldWhileLocked { heldWhileLocked.append(record) }
            else { say("! the store is locked and \(Self.maxHeldWhileLocked) messages wait: /unlock to keep more") }
            return
        }
        do { try yaok.insertMessage(record) } catch { say("! message not stored: \(error)") }
    }

    static let maxHeldWhileLocked = 1_000

    // MARK: Auto-lock

    func setLockAfter(_ seconds: Double) { lockAfter = seconds }

    /// Closes the store after `lockAfter` idle seconds (only a store with a
    /// PIN or passphrase: the key file would open it again at once).
    func lockIfIdle() {
        guard lockAfter > 0, yaok != nil, flushing == 0, Date().timeIntervalSince(lastActivity) >= lockAfter else { return }
        lock(reason: "locked after \(Int(lockAfter)) s idle")
    }

    func lock(reason: String) {
        guard let store = yaok else { say("* the store is already locked"); return }
        try? store.close()
        yaok = nil
        say("* \(reason): contacts' history is closed; messages still arrive and are kept. /unlock opens it again")
    }

    /// /unlock: the next line is the PIN or passphrase (not echoed on a terminal).
    func beginUnlock() {
        guard yaok == nil else { say("* the store is open"); return }
        awaitingSecret = true
        Terminal.echo(false)
        screen?.expectSecret()
        say(YaOKStore.protection(in: store.directory.url) == .passphrase ? "passphrase:" : "PIN:")
    }

    func unlock(with secret: String) async {
        awaitingSecret = false
        Terminal.echo(true)
        let directory = store.directory.url
        let protection: Keyring.Protection
        switch YaOKStore.protection(in: directory) {
        case .pin?: protection = .pin(secret)
        case .passphrase?: protection = .passphrase(secret)
        case nil, .keyFile?: protection = .keyFile(node.identity)
        }
        do {
            let opened = try YaOKStore.open(directory: directory, protection: protection)
            yaok = opened
            let held = heldWhileLocked
            do {
                if !held.isEmpty { _ = try opened.insertMessages(held) }
                heldWhileLocked = []
            } catch {
                say("! the \(held.count) messages that came meanwhile were not stored (\(error)); they stay in memory")
            }
            let receipts = heldReceipts
            heldReceipts = []
            for (id, receipt) in receipts { storeProgress(id, receipt) }
            reloadContacts()
            say("* unlocked" + (held.isEmpty || !heldWhileLocked.isEmpty ? ""
                                : "; \(held.count) message\(held.count == 1 ? "" : "s") from meanwhile stored"))
        } catch {
            say("! \(error)")
        }
    }

    /// A private message to a contact: sent now if they are on the mesh,
    /// else kept as pending until they appear.
    func sendToContact(_ card: ContactCard, text: String) async {
        let now = Date().timeIntervalSince1970
        var progress = MessageProgress(at: now)
        try? progress.move(to: .encrypting, at: now)
        try? progress.move(to: .routing, at: now)
        var record = MessageRecord(id: .random(), contact: card.userID, outgoing: true, text: text,
                                   timestamp: UInt64(now * 1000), recordedAt: now, progress: progress)
        let peer = await node.peers.first { $0.value.fingerprint == card.meshFingerprint }?.key
        guard let yaok else {
            // Locked: what can go now goes, and is stored at /unlock; a
            // message that would have to wait is refused, not lost.
            guard let peer else {
                say("! the store is locked and \(DisplayText.clean(card.displayName)) is away: /unlock first (not sent)")
                return
            }
            await send(&record, to: peer)
            if heldWhileLocked.count < Self.maxHeldWhileLocked { heldWhileLocked.append(record) }
            else { say("! the store is locked and \(Self.maxHeldWhileLocked) messages wait: this one was sent but is not kept (/unlock)") }
            return
        }
        if let peer {
            await send(&record, to: peer)
        } else if await relayReady() {
            // Not on the mesh: the relay. Stored first, so that QUEUED finds it.
            do { _ = try yaok.insertMessage(record) } catch { say("! message not stored: \(error)"); return }
            await sendViaRelay(&record, card: card, announce: true)
            do { try yaok.updateMessage(record) } catch { say("! the state of a sent message was not stored: \(error)") }
            return
        } else {
            showOwnPrivate(to: DisplayText.clean(card.displayName), window: DisplayText.clean(card.displayName), text: text,
                           id: nil, note: relay == nil ? "pending: not on the mesh now; sent when they appear"
                                                       : "pending: not on the mesh, and the relay is not reachable now; sent when either is")
        }
        do { try yaok.insertMessage(record) } catch { say("! message not stored: \(error)") }
    }

    /// Hands a stored message to the node and moves it to sending.
    func send(_ record: inout MessageRecord, to peer: PeerID) async {
        let now = Date().timeIntervalSince1970
        do {
            let id = try await node.sendPrivate(record.text, to: peer)
            try? record.progress?.attempt(on: 0, at: now)
            routes[record.contact] = "mesh"
            record.transport = "mesh"
            record.transportID = id
            transportIDs[id] = (record.id, record.contact)
            outgoing[id] = (await display(peer), false)
            showOwnPrivate(to: await display(peer), window: await window(peer), text: record.text, id: id, note: screen == nil ? "sent" : "✓")
        } catch {
            say("! \(error)")
        }
    }

    /// A contact appeared on the mesh: their pending messages go now.
    func flushPending(to peer: PeerID) async {
        guard let yaok, let info = await node.peers[peer], let (_, card) = contact(for: info.fingerprint) else { return }
        let pending = ((try? yaok.pendingMessages()) ?? []).filter { $0.contact == card.userID }
        guard !pending.isEmpty else { return }
        // The store stays open until every sent message's new state is written.
        flushing += 1
        defer { flushing -= 1 }
        say("* \(DisplayText.clean(card.displayName)) is here: sending \(pending.count) waiting message\(pending.count == 1 ? "" : "s")")
        for var record in pending {
            await send(&record, to: peer)
            do { try yaok.updateMessage(record) } catch { say("! the state of a sent message was not stored: \(error)") }
        }
    }

    enum Receipt { case delivered, read, failed }

    /// A receipt or failure for a stored message moves its state (kept in
    /// memory while the store is locked, applied at unlock).
    func storeProgress(_ transportID: String, _ receipt: Receipt) {
        guard let yaok else {
            if heldReceipts.count < Self.maxHeldWhileLocked { heldReceipts.append((transportID, receipt)) }
            return
        }
        guard let (id, contact) = transportIDs[transportID], var record = try? yaok.message(id, contact: contact),
              record.progress != nil else { return }
        let now = Date().timeIntervalSince1970
        switch receipt {
        case .delivered: record.progress!.receipt(.delivered, at: now)
        case .read: record.progress!.receipt(.read, at: now)
        case .failed:
            try? record.progress!.move(to: .retrying, at: now)
            try? record.progress!.move(to: .failed, at: now)
        }
        do { try yaok.updateMessage(record) } catch { say("! a receipt was not stored: \(error)") }
    }

    /// /history NAME: the stored conversation, by the sender's time.
    func history(_ name: String) {
        guard yaok != nil else { say("! the store is locked (/unlock)"); return }
        reloadContacts()
        let matches = contacts(named: name)
        guard matches.count <= 1 else { say(ambiguity(name, matches)); return }
        guard let (_, card) = matches.first else { say("! no contact called \(name) (/contacts)"); return }
        let messages = (try? yaok?.conversation(with: card.userID, limit: 200)) ?? []
        if messages.isEmpty { say("* no messages with \(DisplayText.clean(card.displayName)) yet") }
        let f = DateFormatter()
        f.dateFormat = "yyyy-MM-dd HH:mm"
        for m in messages {
            let when = f.string(from: Date(timeIntervalSince1970: Double(m.timestamp) / 1000))
            let who = m.outgoing ? "you → \(card.displayName)" : "\(card.displayName) → you"
            let mark = m.progress.map { "  \($0.state.mark)" } ?? ""
            say("  [\(when)] <\(DisplayText.clean(who))> \(DisplayText.clean(m.text))\(mark)")
        }
    }

    /// /contacts: who they are, whether they are here.
    func listContacts() async {
        guard yaok != nil else { say("! the store is locked (/unlock)"); return }
        reloadContacts() // `starling contact add` may have run meanwhile
        if contacts.isEmpty { say("* no contacts: add one with `starling contact add yaok://…`") }
        let here = Set(await node.peers.values.map(\.fingerprint))
        for (record, card) in contacts {
            let marks = (record.verified || verified.contains(card.meshFingerprint) ? " ✓" : "") + (record.favorite ? " ★" : "") + (record.blocked ? " (blocked)" : "")
            let route = routes[card.userID].map { " · last reached via the \($0)" } ?? ""
            say("  \(DisplayText.clean(card.displayName))\(marks)  \(here.contains(card.meshFingerprint) ? "here" : "away")\(route)")
        }
    }

    /// Contacts a typed name means: by display name, or `NAME#0a1b` (the name and the
    /// start of the user ID).
    func contacts(named name: String) -> [(ContactRecord, ContactCard)] {
        let exact = contacts.filter { $0.1.displayName.lowercased() == name.lowercased() }
        if !exact.isEmpty { return exact }
        let parts = name.split(separator: "#")
        guard parts.count == 2, parts[1].count >= 4 else { return [] }
        return contacts.filter {
            $0.1.displayName.lowercased() == parts[0].lowercased() && $0.1.userID.description.hasPrefix(parts[1].lowercased())
        }
    }

    func ambiguity(_ name: String, _ matches: [(ContactRecord, ContactCard)]) -> String {
        "! \(matches.count) contacts are called \(name): "
            + matches.map { r, c in "\(DisplayText.clean(c.displayName))#\(c.userID.description.prefix(4))\(r.verified ? " ✓" : "")" }
                .joined(separator: ", ") + "; say which, e.g. \(DisplayText.clean(matches[0].1.displayName))#\(matches[0].1.userID.description.prefix(4))"
    }

    /// A bitchat message ID as a record ID: the UUID it is, or 16 bytes of
    /// its BLAKE3 hash.
    static func recordID(_ messageID: String) -> UserID {
        UserID(string: messageID) ?? UserID(bytes: BLAKE3.hash(Array(messageID.utf8), byteCount: 16))!
    }
}
