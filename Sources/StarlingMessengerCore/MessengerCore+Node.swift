import StarlingCrypto
import StarlingMesh
import StarlingNodeCore
import StarlingWire
import StarlingYaOK

/// The messenger and the node: each `NodeEvent` decided (held until trust is
/// known when a block could hide it), messages and files that came, receipts,
/// and how a message we sent went.
extension MessengerCore {
    // MARK: The node

    /// Whether an event is something a block could hide.
    static func hideable(_ event: NodeEvent) -> PeerID? {
        switch event {
        case let .message(from, _, _, _, _, _), let .privateMessage(from, _, _, _, _, _), let .favorited(from, _, _, _),
             let .fileReceived(from, _, _, _, _), let .fileProgress(from, _, _), let .fileOffered(from, _, _, _, _), let .sessionEstablished(from, _),
             let .peer(from, _, _), let .pong(from, _, _), let .voiceNote(from, _, _, _, _, _):
            return from
        case let .state(s), let .sos(s):
            return s.senderID
        default:
            return nil
        }
    }

    /// The node's view of the peers now (before a command that names one).
    public mutating func updatePeers(_ peers: [PeerID: NodeCore.PeerInfo]) { self.peers = peers }

    /// A node event, with the node's view of the peers at that moment.
    public mutating func handle(_ event: NodeEvent, peers: [PeerID: NodeCore.PeerInfo], now: Double) {
        self.peers = peers
        if !trustKnown, Self.hideable(event) != nil {
            if held.count >= configuration.maxHeld {
                held.removeFirst()
                heldDropped += 1
            }
            held.append((event, peers))
            return
        }
        if let from = Self.hideable(event), let f = fingerprint(ofPeer: from), isBlocked(f) {
            // A blocked person's file is not asked about: declined at once (it
            // would hold a place among the offers waiting until its timeout).
            if case let .fileOffered(_, transferID, _, _, _) = event { command(.declineFileOffer(transferID)) }
            return
        }
        passing = event
        defer { passing = nil }
        switch event {
        case let .peer(id, nickname, hops):
            rememberName(id, nickname)
            emit(.peerJoined(id, nickname: nickname, hops: hops))
            if let f = peers[id]?.fingerprint {
                let key = peers[id]?.noiseKey.flatMap { Fingerprint(noiseStaticKey: $0) == f ? $0 : nil }
                if let c = conversationIfAny(f), var r = peerConversations[c], r.nickname != nickname || (key != nil && r.noiseKey != key) {
                    r.nickname = nickname
                    if let key { r.noiseKey = key }
                    peerConversations[c] = r
                    write(.conversation(r))
                }
                if var t = trust[f], t.nickname != nickname {
                    t.nickname = nickname
                    trust[f] = t
                    write(.trust(t))
                }
                if configuration.tellsFavourites, configuration.npub != nil, isFavorite(f), told.insert(id).inserted {
                    tell(id, favourite: true)
                }
            }
            sendWaiting(now: now)
            if hops == 1 { dropWaiting(now: now) }
        case let .left(id):
            emit(.peerLeft(id))
        case let .sessionEstablished(peer, hex):
            if let f = Fingerprint(hex: hex) {
                if sessions[peer] == nil, sessions.count >= 4_096, let any = sessions.keys.first { sessions[any] = nil }
                sessions[peer] = f
                emit(.sessionEstablished(peer, name: displayName(peer), fingerprint: f))
            }
        case let .privateMessage(from, nickname, text, messageID, hops, via):
            receivePrivate(from: from, nickname: nickname, text: text, messageID: messageID, hops: hops, via: via, now: now)
        case let .fileReceived(from, name, size, path, transferID):
            receiveFile(from: from, attachment: FileAttachment(name: name, size: size, transferID: transferID, path: path), now: now)
            emit(.node(event))
        case let .voiceNote(from, path, ms, isPrivate, id, size):
            // A private voice note stays in the conversation's history, as a file that came;
            // a public one is shown as it comes (the public line keeps no history).
            if isPrivate {
                var note = FileAttachment(name: id + ".aac", size: size, mimeType: "audio/aac", transferID: id, path: path)
                note.durationMillis = ms
                receiveFile(from: from, attachment: note, now: now)
            }
            emit(.node(event))
        case let .dropOpened(from, hex, key, nickname, text, messageID, hops):
            // The seal proved the sender's key: its fingerprint, whether or not the sender is here.
            guard let f = Fingerprint(hex: hex), Fingerprint(noiseStaticKey: key) == f, !isBlocked(f) else { return }
            receivePrivate(from: from, fingerprint: f, noiseKey: key, nickname: nickname, text: text, messageID: messageID, hops: hops,
                           via: "courier", now: now)
        case let .dropDeposited(id, _, couriers):
            guard couriers > 0 else {
                // None here to carry it: tried again when a neighbour comes.
                dropsMade.remove(id)
                dropOrder.removeAll { $0 == id }
                return
            }
            progress(id, now: now, via: "courier") { _ in }
            if let r = record(id) { emit(.dropDeposited(conversation: r.contact, record: r, couriers: couriers)) }
        case let .delivered(id, _):
            progress(id, now: now, receipt: .delivered) { p in p.receipt(.delivered, at: now) }
        case let .read(id, _):
            progress(id, now: now, receipt: .read) { p in p.receipt(.read, at: now) }
        case let .sentOffMesh(id, _, via):
            progress(id, now: now, via: via) { p in
                if p.state == .retrying { try? p.move(to: .sending, at: now) }
                try? p.move(to: .sent, at: now)
            }
        case let .held(id, _):
            if record(id)?.file != nil { emit(.node(event)); return } // a file is not queued again as text
            progress(id, now: now) { p in try? p.move(to: .retrying, at: now) }
        case let .fileSent(id, _, _):
            progress(id, now: now) { p in try? p.move(to: .sent, at: now) }
        case let .failed(id, _):
            failed(id, now: now)
        case let .favorited(by, nickname, on, npub):
            favorited(by: by, nickname: nickname, on: on, npub: npub, now: now)
        case let .pinned(fingerprint, key):
            write(.pin(fingerprint, key))
        case .groupChanged:
            write(.groups)
            emit(.node(event))
        case let .groupMessage(m):
            receiveGroup(m, now: now)
        case let .gatewayMessage(m):
            // Anyone in radio range can sign channel events: shown only for a channel
            // the person joined, once (whether it came through a gateway or a relay).
            guard channels.contains(m.geohash), channelEventShown(m.eventID) else { return }
            emit(.node(event))
        case let .message(from, _, text, _, timestamp, replayed):
            let key = HistoryKey(sender: from.description, timestamp: timestamp, text: text)
            if replayed {
                history.add(key, event, now: UInt64(now * 1000))
            } else {
                history.shown(key)
                emit(.node(event))
            }
        case let .rejected(r):
            switch r.kind {
            case .badAnnounce, .fileRefused, .fileNotSaved, .transport:
                emit(.node(event)) // a person should know: the face says it
            case .undecryptable, .handshakeFailed, .malformedPrivatePayload, .notText, .stately, .group:
                // Internals (a session lost in a restart, a stranger's bad bytes): counted, not shown.
                emit(.diagnostic(r))
            }
        default:
            emit(.node(event))
        }
    }

    func conversationIfAny(_ f: Fingerprint) -> UserID? {
        let id = conversation(for: f)
        return contacts[id] != nil || peerConversations[id] != nil ? id : nil
    }

    mutating func rememberName(_ peer: PeerID, _ nickname: String) {
        if lastNames.updateValue(nickname, forKey: peer) == nil {
            lastNameOrder.append(peer)
            if lastNameOrder.count > 4_096 { lastNames[lastNameOrder.removeFirst()] = nil }
        }
    }

    /// What a face calls a peer: their nickname here, a contact's or trusted name, the last they announced, else their ID.
    public func displayName(_ peer: PeerID) -> String {
        if let info = peers[peer] { return info.nickname }
        if let f = fingerprint(ofPeer: peer) {
            if let c = contactByKey[f].flatMap({ contactCards[$0] }) { return c.displayName }
            if let n = trust[f]?.nickname { return n }
            if let r = peerConversations[Self.conversationID(for: f)] { return r.nickname }
        }
        return lastNames[peer] ?? peer.description
    }

    mutating func receivePrivate(from: PeerID, fingerprint known: Fingerprint? = nil, noiseKey: [UInt8]? = nil, nickname: String?,
                                         text: String, messageID: String, hops: Int, via: String?, now: Double) {
        guard let f = known ?? fingerprint(ofPeer: from) else {
            emit(.diagnostic(Rejection(.malformedPrivatePayload, peer: from, "a private message from \(from) with no known key")))
            return
        }
        let conversation = conversation(for: f)
        let name = nickname ?? displayName(from)
        keepConversation(conversation, fingerprint: f, nickname: name, now: now, noiseKey: noiseKey)
        // Its own namespace (the sender's key and its ID): a peer cannot name one of our messages.
        let id = UserID(bytes: BLAKE3.hash(Array("incoming".utf8) + f.bytes + Array(messageID.utf8), byteCount: 16))!
        if let shown = (recent[conversation] ?? []).first(where: { $0.id == id && !$0.outgoing }) {
            // Shown already; a retry of one the store did not take (a full disk) is stored now, not shown again.
            if unstoredIncoming.remove(id) != nil { write(.insertMessage(shown)) }
            return
        }
        var record = MessageRecord(id: id, contact: conversation, outgoing: false, text: text, timestamp: UInt64(now * 1000),
                                   recordedAt: now, transport: via ?? MessageRoute.mesh.name, transportID: messageID)
        record.readAt = nil
        remember(record)
        write(.insertMessage(record))
        emit(.privateMessage(conversation: conversation, record: record, from: from, name: name, hops: hops, via: via, fingerprint: f))
    }

    /// A message over Nostr from a key proved by its seal (an accepted request's).
    mutating func receiveFromNostr(fingerprint f: Fingerprint, nickname: String, text: String, messageID: String, now: Double) {
        receivePrivate(from: f.peerID, fingerprint: f, nickname: nickname, text: text, messageID: messageID, hops: 1, via: "nostr", now: now)
    }

    /// A file received: kept in its sender's conversation's history (once).
    /// The record of a file (or voice note) that came from `f` by transfer `transferID`.
    public static func incomingFileID(_ transferID: String, from f: Fingerprint) -> UserID {
        UserID(bytes: BLAKE3.hash(Array("incoming file".utf8) + f.bytes + Array(transferID.utf8), byteCount: 16))!
    }

    mutating func receiveFile(from: PeerID, attachment: FileAttachment, now: Double) {
        guard let f = fingerprint(ofPeer: from) else { return }
        let conversation = conversation(for: f)
        keepConversation(conversation, fingerprint: f, nickname: displayName(from), now: now)
        let id = Self.incomingFileID(attachment.transferID, from: f)
        guard !(recent[conversation] ?? []).contains(where: { $0.id == id }) else { return }
        var record = MessageRecord(id: id, contact: conversation, outgoing: false, text: attachment.name, timestamp: UInt64(now * 1000),
                                   recordedAt: now, transport: MessageRoute.mesh.name, transportID: attachment.transferID)
        record.file = attachment
        remember(record)
        write(.insertMessage(record))
    }

    mutating func earlyReceipt(_ id: String, _ state: MessageState) {
        if earlyReceipts[id] == nil {
            earlyOrder.append(id)
            if earlyOrder.count > 256 { earlyReceipts[earlyOrder.removeFirst()] = nil }
        }
        earlyReceipts[id] = max(earlyReceipts[id] ?? state, state)
    }

    /// A file we handed to the node for `peer`: kept in their conversation's
    /// history, sent; its receipts (the transfer's) move it as a message's do.
    public mutating func fileSent(_ attachment: FileAttachment, to peer: PeerID, now: Double) -> MessageRecord? {
        guard let conversation = conversation(withPeer: peer, now: now) else { return nil }
        var progress = MessageProgress(at: now)
        for state in [MessageState.encrypting, .routing, .sending] { try? progress.move(to: state, at: now) }
        var record = MessageRecord(id: Self.recordID(attachment.transferID), contact: conversation, outgoing: true, text: attachment.name,
                                   timestamp: UInt64(now * 1000), recordedAt: now, progress: progress, transport: MessageRoute.mesh.name,
                                   transportID: attachment.transferID)
        record.file = attachment
        if let early = earlyReceipts.removeValue(forKey: attachment.transferID) {
            earlyOrder.removeAll { $0 == attachment.transferID }
            try? record.progress?.move(to: .sent, at: now)
            record.progress?.receipt(early, at: now)
        }
        index(attachment.transferID, conversation)
        remember(record)
        write(.insertMessage(record))
        emit(.sent(conversation: conversation, record: record))
        return record
    }

    mutating func progress(_ transportID: String, now: Double, via: String? = nil, receipt: MessageState? = nil,
                                   _ change: (inout MessageProgress) -> Void) {
        guard var r = record(transportID), r.progress != nil else {
            if let receipt, let c = outgoing[transportID] {
                // Ours, but older than the recent ones kept in memory (many sent since):
                // the store takes the receipt, so it is never lost to the cache.
                write(.receipt(Self.recordID(transportID), conversation: c, receipt, at: now))
                return
            }
            if let event = passing { emit(.node(event)) } // a file's, or a notice's: the face's to show
            if let receipt { earlyReceipt(transportID, receipt) }
            return
        }
        let before = r.progress!.state
        change(&r.progress!)
        if let via { r.transport = via }
        // A file's events are the faces' to show as before (its bar, "delivered: ID"), besides its record's progress.
        if r.file != nil, let event = passing { emit(.node(event)) }
        guard r.progress!.state != before || via != nil else { return }
        remember(r)
        write(.updateMessage(r))
        emit(.progress(conversation: r.contact, record: r))
    }

    /// The node gave up: a message to a contact or favourite waits for a
    /// route again (the store's queue); to anyone else it failed.
    mutating func failed(_ transportID: String, now: Double) {
        guard var r = record(transportID), r.progress != nil else {
            if let event = passing { emit(.node(event)) }
            return
        }
        if r.file != nil, let event = passing { emit(.node(event)) }
        // A file is not queued again as text: its transfer failed, said so (sending it again is the person's).
        let keeps = r.file == nil && (fingerprint(of: r.contact).map { contact(for: $0) != nil || isFavorite($0) } ?? false)
        try? r.progress!.move(to: .retrying, at: now)
        if !keeps { try? r.progress!.move(to: .failed, at: now) }
        r.transport = nil
        remember(r)
        write(.updateMessage(r))
        emit(.progress(conversation: r.contact, record: r))
    }
}
