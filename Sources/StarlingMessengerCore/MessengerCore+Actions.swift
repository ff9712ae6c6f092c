import StarlingCrypto
import StarlingMesh
import StarlingNodeCore
import StarlingWire
import StarlingYaOK

/// What the person does: send, seen, trust decisions, contacts added and
/// removed; each recorded, then handed to the node, an off-mesh transport or
/// the store's queue.
extension MessengerCore {
    // MARK: What the person does

    public enum SendError: Error, Hashable, Sendable, CustomStringConvertible {
        case blocked(String)
        case empty
        case tooLong(Int, limit: Int)
        public var description: String {
            switch self {
            case let .blocked(name): "\(name) is blocked: unblock them first"
            case .empty: "an empty message is not sent"
            case let .tooLong(n, limit) where limit == MessengerCore.meshTextLimit:
                "the message is \(n) bytes; at most \(limit) cross the mesh (to a contact, the Ya OK server carries up to \(SealedMessageBytes.maxTextBytes))"
            case let .tooLong(n, limit): "the message is \(n) bytes; at most \(limit) go in one"
            }
        }
    }

    /// A group's conversation: its messages are kept under this ID.
    public static func conversationID(forGroup groupID: String) -> UserID {
        UserID(bytes: BLAKE3.hash(Array("starling group".utf8) + Array(groupID.utf8), byteCount: 16))!
    }

    /// A group message: kept in the group's conversation (once), and shown.
    mutating func receiveGroup(_ m: GroupMessage, now: Double) {
        let conversation = Self.conversationID(forGroup: m.group.groupID)
        let id = UserID(bytes: BLAKE3.hash(Array("group message".utf8) + Array(m.group.groupID.utf8) + Array(m.messageID.utf8), byteCount: 16))!
        guard !(recent[conversation] ?? []).contains(where: { $0.id == id }) else { return }
        var record = MessageRecord(id: id, contact: conversation, outgoing: false, text: m.text, timestamp: m.timestamp, recordedAt: now,
                                   transport: MessageRoute.mesh.name, transportID: m.messageID)
        record.author = m.nickname
        remember(record)
        write(.insertMessage(record))
        emit(.node(.groupMessage(m)))
    }

    /// One of our group messages went out: kept in the group's conversation
    /// (groups have no receipts: it is sent, no more).
    @discardableResult
    public mutating func sentToGroup(_ groupID: String, text: String, messageID: String, now: Double) -> MessageRecord {
        let conversation = Self.conversationID(forGroup: groupID)
        var progress = MessageProgress(at: now)
        for state in [MessageState.encrypting, .routing, .sending, .sent] { try? progress.move(to: state, at: now) }
        let record = MessageRecord(id: UserID.random(), contact: conversation, outgoing: true, text: text, timestamp: UInt64(now * 1000),
                                   recordedAt: now, progress: progress, transport: MessageRoute.mesh.name, transportID: messageID)
        remember(record)
        write(.insertMessage(record))
        emit(.sent(conversation: conversation, record: record))
        return record
    }

    /// Sends a private message in a conversation: recorded, then handed to
    /// the best route there is now, or queued until there is one.
    @discardableResult
    public mutating func send(_ text: String, to named: UserID, now: Double) throws(SendError) -> MessageRecord {
        let conversation = current(named)
        guard !text.isEmpty else { throw .empty }
        let bytes = text.utf8.count
        guard bytes <= SealedMessageBytes.maxTextBytes else { throw .tooLong(bytes, limit: SealedMessageBytes.maxTextBytes) }
        if let f = fingerprint(of: conversation), isBlocked(f) { throw .blocked(name(of: conversation)) }
        if bytes > Self.meshTextLimit, configuration.server == nil || contacts[conversation] == nil {
            throw .tooLong(bytes, limit: Self.meshTextLimit)
        }
        var progress = MessageProgress(at: now)
        try? progress.move(to: .encrypting, at: now)
        try? progress.move(to: .routing, at: now)
        let id = UserID.random()
        var record = MessageRecord(id: id, contact: conversation, outgoing: true, text: text, timestamp: UInt64(now * 1000),
                                   recordedAt: now, progress: progress, transportID: Self.transportID(id))
        remember(record)
        write(.insertMessage(record))
        if let f = fingerprint(of: conversation) {
            if contacts[conversation] == nil { keepConversation(conversation, fingerprint: f, nickname: name(of: conversation), now: now) }
            if route(to: f, bytes: bytes) != nil { hand(&record, to: f, now: now) }
        }
        emit(.sent(conversation: conversation, record: record))
        if record.isPending { dropWaiting(now: now) }
        return record
    }

    /// The conversation with a mesh peer (made when new).
    public mutating func conversation(withPeer peer: PeerID, now: Double) -> UserID? {
        guard let f = fingerprint(ofPeer: peer) else { return nil }
        return conversation(withKey: f, nickname: displayName(peer), now: now)
    }

    /// The conversation with a Noise key (made when new): a contact's, or the peer's own.
    public mutating func conversation(withKey f: Fingerprint, nickname: String, now: Double) -> UserID {
        let id = conversation(for: f)
        if contacts[id] == nil, peerConversations[id] == nil { keepConversation(id, fingerprint: f, nickname: nickname, now: now) }
        return id
    }

    /// Hands a recorded message to the node (which takes the mesh, then an off-mesh transport).
    mutating func hand(_ record: inout MessageRecord, to f: Fingerprint, now: Double) {
        guard let way = route(to: f, bytes: record.text.utf8.count), let transportID = record.transportID else { return }
        if record.progress?.state == .retrying || record.progress?.state == .failed { try? record.progress?.move(to: .retrying, at: now) }
        try? record.progress?.attempt(on: way.attemptIndex, at: now)
        record.route = way
        index(transportID, record.contact)
        command(.sendPrivate(record.text, to: peer(for: f), messageID: transportID))
        remember(record)
        write(.updateMessage(record))
    }

    /// Messages waiting in the queue go where they now can.
    mutating func sendWaiting(now: Double) {
        for (c, list) in recent {
            guard let f = fingerprint(of: c), !isBlocked(f) else { continue }
            let waiting = list.filter { $0.isPending && route(to: f, bytes: $0.text.utf8.count) != nil }
            guard !waiting.isEmpty else { continue }
            emit(.sendingWaiting(conversation: c, count: waiting.count))
            for var m in waiting {
                hand(&m, to: f, now: now)
                emit(.progress(conversation: c, record: m))
            }
        }
    }

    /// Messages waiting for someone away go as courier drops with the
    /// neighbours here (once each: a message some neighbour took is not
    /// dropped again; they stay queued, and go directly when the recipient
    /// is back: the recipient shows one copy).
    /// Only texts the mesh carries, to a key we hold, never to a blocked key.
    mutating func dropWaiting(now: Double) {
        guard peers.values.contains(where: { $0.hops == 1 }) else { return }
        for (c, list) in recent {
            guard let f = fingerprint(of: c), !isBlocked(f), !isPresent(f), let key = noiseKey(of: c) else { continue }
            guard peers.values.contains(where: { $0.hops == 1 && $0.fingerprint != f && !isBlocked($0.fingerprint) }) else { continue }
            // Once a message went with couriers (its record says so, across restarts), not again: a
            // courier keeps 2 drops of one depositor (iOS), and the same words sealed anew would take both.
            for m in list where m.isPending && m.transport != "courier" && m.text.utf8.count <= Self.meshTextLimit {
                guard let t = m.transportID, !dropsMade.contains(t) else { continue }
                dropsMade.insert(t)
                dropOrder.append(t)
                if dropOrder.count > 4_096 { dropsMade.remove(dropOrder.removeFirst()) }
                command(.sendDrop(m.text, toNoiseKey: key, messageID: t))
            }
        }
    }

    /// The person has seen a conversation's messages: each not yet read is
    /// marked read, and its sender told (a read receipt).
    /// The person has seen the conversation: its messages are read, and their
    /// senders told. `through`: the last message the face showed (its record
    /// ID); what arrived after it is not read yet (another face may have
    /// been told of it first). A `through` this core does not hold marks nothing.
    public mutating func markSeen(_ conversation: UserID, through last: UserID? = nil, now: Double) {
        // A group's conversation has no one key: read here, and no receipts (groups have none).
        let f = fingerprint(of: conversation)
        if let f, isBlocked(f) { return }
        let list = recent[conversation] ?? []
        var bound = Double.infinity
        if let last {
            guard let shown = list.first(where: { $0.id == last }) else { return }
            bound = shown.recordedAt
        }
        for var m in list where !m.outgoing && m.readAt == nil && m.recordedAt <= bound {
            m.readAt = now
            remember(m)
            write(.updateMessage(m))
            if let f, let t = m.transportID { command(.sendReadReceipt(t, to: peer(for: f))) }
        }
    }

    /// One message seen (a face that prints messages one by one, `listen
    /// --mark-read`): its read receipt, and no other's.
    public mutating func markSeen(_ conversation: UserID, only id: UserID, now: Double) {
        guard let f = fingerprint(of: conversation), !isBlocked(f),
              var m = (recent[conversation] ?? []).first(where: { $0.id == id }), !m.outgoing, m.readAt == nil else { return }
        m.readAt = now
        remember(m)
        write(.updateMessage(m))
        if let t = m.transportID { command(.sendReadReceipt(t, to: peer(for: f))) }
    }

    public enum TrustChange: String, Sendable, CaseIterable { case block, unblock, favourite, unfavourite, verify, unverify }

    /// A trust decision about a mesh peer (and its contact, when it is one).
    public mutating func decide(_ change: TrustChange, about f: Fingerprint, nickname: String?, now: Double) {
        let known = contact(for: f)
        var t = trust[f] ?? TrustRecord(fingerprint: f.hex, nickname: nickname, verified: known?.verified ?? false,
                                        favorite: known?.favorite ?? false, blocked: known?.blocked ?? false, updatedAt: now)
        if let nickname { t.nickname = nickname }
        t.updatedAt = now
        switch change {
        case .block: t.blocked = true; command(.block(f))
        case .unblock: t.blocked = false; command(.unblock(f))
        case .favourite: t.favorite = true; command(.setFavorite(f, true))
        case .unfavourite: t.favorite = false; command(.setFavorite(f, false))
        case .verify: t.verified = true; command(.setVerified(f, true))
        case .unverify: t.verified = false; command(.setVerified(f, false))
        }
        trust[f] = t
        write(.trust(t))
        if var c = contact(for: f), let card = c.card {
            c.blocked = t.blocked
            c.favorite = t.favorite
            c.verified = t.verified
            contacts[card.userID] = c
            write(.contact(c))
            if configuration.server != nil {
                effects.append(.offMesh(.serverContact(f.peerID, card: c.blocked ? nil : card.bytes)))
            }
        }
        refreshNostr(f)
        if change == .favourite || change == .unfavourite {
            let p = peer(for: f)
            told.insert(p)
            tell(p, favourite: change == .favourite)
        }
        emit(.trustChanged(f, name: t.nickname ?? f.peerID.description, blocked: isBlocked(f), favorite: isFavorite(f),
                           verified: isVerified(f)))
        if change == .unblock || change == .favourite { sendWaiting(now: now) }
    }

    /// A trust record made outside the core's decisions (a contact added by
    /// npub): known from now on, and reached over Nostr when it can be.
    public mutating func trustRecordAdded(_ t: TrustRecord) {
        guard let f = Fingerprint(hex: t.fingerprint.lowercased()) else { return }
        trust[f] = t
        refreshNostr(f)
    }

    /// A contact added (by `starling contact add`, or a face): its key is
    /// pinned, and what waits for it goes when it can.
    public mutating func contactAdded(_ record: ContactRecord, now: Double) {
        guard let card = record.card else { return }
        let old = Self.conversationID(for: card.meshFingerprint)
        contacts[card.userID] = record
        command(.pin(card.signingKey, for: card.meshFingerprint))
        if configuration.server != nil { effects.append(.offMesh(.serverContact(card.meshFingerprint.peerID, card: card.bytes))) }
        _ = old
        mergePeerConversation(into: card)
        if recent[card.userID] == nil { recent[card.userID] = [] }
        sendWaiting(now: now)
    }

    /// A contact removed (the store took it out): its card and its conversation go.
    public mutating func contactRemoved(_ id: UserID) {
        contacts[id] = nil
        recent[id] = nil
    }

    /// One person, one conversation, whatever way they are known: the
    /// conversation kept for their mesh key before they were a contact merges
    /// into their card's, history and all (issue 52: the page listed bob
    /// twice, the relay's messages under one, the mesh's under the other).
    mutating func mergePeerConversation(into card: ContactCard) {
        let old = Self.conversationID(for: card.meshFingerprint), new = card.userID
        guard old != new, peerConversations[old] != nil || recent[old] != nil else { return }
        let moved = (recent.removeValue(forKey: old) ?? []).map { m -> MessageRecord in
            var m = m
            m.contact = new
            return m
        }
        var merged = recent[new] ?? []
        for m in moved where !merged.contains(where: { $0.id == m.id }) { merged.append(m) }
        merged.sort { ($0.timestamp, $0.recordedAt) < ($1.timestamp, $1.recordedAt) }
        recent[new] = Array(merged.suffix(configuration.recentPerConversation))
        for m in moved where m.outgoing { if let t = m.transportID { index(t, new) } }
        peerConversations[old] = nil
        if mergedInto.count >= 1_024, let any = mergedInto.keys.first { mergedInto[any] = nil }
        mergedInto[old] = new
        write(.mergeConversation(old, into: new))
    }

    /// The conversation an ID names now: itself, or the one it merged into.
    public func current(_ conversation: UserID) -> UserID { mergedInto[conversation] ?? conversation }
}
