import StarlingCrypto
import StarlingMesh
import StarlingNodeCore
import StarlingWire
import StarlingYaOK

/// The messenger and its store: what the store holds when it opens (trust
/// first, then what waited for it), when it closes, and a write that failed.
extension MessengerCore {
    // MARK: The store

    /// The store opened: its trust decisions go to the node, what waited for
    /// them is shown or dropped, the writes held while it was locked are made,
    /// and waiting messages go where they can.
    public mutating func storeOpened(_ contents: StoreContents, peers: [PeerID: NodeCore.PeerInfo], now: Double) {
        self.peers = peers
        storeOpen = true
        let first = !trustKnown
        contacts = Dictionary(contents.contacts.compactMap { r in r.card.map { ($0.userID, r) } }, uniquingKeysWith: { a, _ in a })
        trust = Dictionary(contents.trust.compactMap { r in Fingerprint(hex: r.fingerprint.lowercased()).map { ($0, r) } },
                           uniquingKeysWith: { a, _ in a })
        for r in contents.conversations { peerConversations[r.id] = r }
        // Decisions made while the store was locked are newer than what it holds.
        for w in heldWrites {
            switch w {
            case let .trust(t): if let f = Fingerprint(hex: t.fingerprint.lowercased()) { trust[f] = t }
            case let .contact(c): if let id = c.card?.userID { contacts[id] = c }
            default: break
            }
        }
        for f in contents.favorites where trust[f]?.favorite != true {
            var t = trust[f] ?? TrustRecord(fingerprint: f.hex, updatedAt: now)
            t.favorite = true
            trust[f] = t
        }
        for (c, list) in contents.messages {
            var merged = list.sorted { ($0.timestamp, $0.recordedAt) < ($1.timestamp, $1.recordedAt) }
            for m in recent[c] ?? [] where !merged.contains(where: { $0.id == m.id }) { merged.append(m) }
            recent[c] = Array(merged.suffix(configuration.recentPerConversation))
            for m in merged where m.outgoing { if let t = m.transportID { index(t, c) } }
        }
        // Trust to the node: pins kept, then contacts' cards over them.
        for (f, key) in contents.pins { command(.pin(key, for: f)) }
        for (f, r) in trust {
            if r.blocked { command(.block(f)) }
            if r.favorite { command(.setFavorite(f, true)) }
            if r.verified { command(.setVerified(f, true)) }
        }
        for r in contacts.values {
            guard let card = r.card else { continue }
            mergePeerConversation(into: card) // kept apart by an earlier version
            command(.pin(card.signingKey, for: card.meshFingerprint))
            if r.blocked { command(.block(card.meshFingerprint)) }
            if r.favorite { command(.setFavorite(card.meshFingerprint, true)) }
            if r.verified { command(.setVerified(card.meshFingerprint, true)) }
            if configuration.server != nil, !r.blocked {
                effects.append(.offMesh(.serverContact(card.meshFingerprint.peerID, card: card.bytes)))
            }
        }
        for f in trust.keys { refreshNostr(f) }
        if first, !contents.groups.isEmpty { command(.restoreGroups(contents.groups)) }
        // Messages an earlier run handed to the node with no receipt since:
        // that run's retries are gone, so they wait to be sent again (at least
        // once; a duplicate is possible, a loss is not).
        var pending = contents.pending
        for (c, list) in recent where first {
            for var m in list where m.outgoing && m.progress?.state == .sending {
                try? m.progress?.move(to: .retrying, at: now)
                recent[c] = recent[c]?.map { $0.id == m.id ? m : $0 }
                write(.updateMessage(m))
                if !pending.contains(where: { $0.id == m.id }) { pending.append(m) }
            }
        }
        let writes = heldWrites
        heldWrites = []
        for w in writes { effects.append(.store(w)) }
        if first {
            trustKnown = true
            command(.trustDecided)
            emit(.trustLoaded(contacts: contacts.count, pending: pending.count))
            let waiting = held
            held = []
            for (event, view) in waiting { handle(event, peers: view, now: now) }
            self.peers = peers
        } else {
            emit(.storeUnlocked(storedMeanwhile: writes.count))
        }
        for m in pending { remember(m) }
        sendWaiting(now: now)
        dropWaiting(now: now)
    }

    /// The store closed (locked): its writes wait in memory until it opens.
    public mutating func storeClosed() {
        storeOpen = false
    }

    /// A write the store did not make: the person is told.
    public mutating func storeFailed(_ write: StoreWrite, reason: String) {
        switch write {
        case let .insertMessage(m) where m.outgoing:
            emit(.notSaved("your message to \(name(of: m.contact)) was not stored (\(reason)); it is still being sent"))
        case let .insertMessage(m):
            // Its sender gets no receipt and tries again: that copy is stored then.
            if unstoredIncoming.count < 1_024 { unstoredIncoming.insert(m.id) }
            emit(.notSaved("a message from \(name(of: m.contact)) was not stored (\(reason)); it is shown, and stored when its sender tries again"))
        case .updateMessage, .receipt:
            emit(.notSaved("a message's new state was not stored (\(reason))"))
        case .trust, .contact:
            emit(.notSaved("a trust decision was not stored (\(reason)): it holds until this program stops; try again"))
        case .conversation, .pin:
            emit(.notSaved("the store did not take a change (\(reason))"))
        case .mergeConversation:
            emit(.notSaved("a contact's earlier messages were not moved into their conversation (\(reason)); they move at the next start"))
        case .groups:
            emit(.notSaved("your groups were not stored (\(reason)): they hold until this program stops; free space and change one to store them"))
        }
    }
}
