import Foundation
import StarlingAPIContract
import StarlingCrypto
import StarlingMessenger
import StarlingMessengerCore
import StarlingNodeCore
import StarlingNostr
import StarlingNostrTransport
import StarlingStately
import StarlingWire
import StarlingYaOK
import StarlingStore

// The messenger's values as the API's objects (StarlingAPIContract), and back:
// one mapping each way, used by the daemon, the command line in process, and
// the client that reads a daemon. Tests hold the round trips.

extension APIMessage {
    public init(_ m: MessageRecord) {
        self.init(id: m.id.description, conversation: m.contact.description, outgoing: m.outgoing, text: m.text, timestamp: m.timestamp,
                  recordedAt: m.recordedAt, messageID: m.transportID, via: m.transport, state: m.progress?.state.rawValue,
                  read: m.outgoing ? nil : m.readAt != nil, author: m.author,
                  file: m.file.map { APIFile(name: $0.name, size: $0.size, transferID: $0.transferID, mimeType: $0.mimeType, path: $0.path,
                                             durationMillis: $0.durationMillis) })
    }

    /// The record it was written from (a state's time and a read time are its recording's).
    public func record() throws -> MessageRecord {
        var m = MessageRecord(id: try Self.userID(id, "id"), contact: try Self.userID(conversation, "conversation"), outgoing: outgoing, text: text,
                              timestamp: timestamp, recordedAt: recordedAt, transport: via, transportID: messageID)
        if let state {
            guard let s = MessageState(rawValue: state) else { throw APIJSON.Unreadable("state \(state)") }
            m.progress = MessageProgress(reported: s, at: recordedAt)
        }
        if read == true { m.readAt = recordedAt }
        m.author = author
        m.file = file.map {
            var f = FileAttachment(name: $0.name, size: $0.size, mimeType: $0.mimeType, transferID: $0.transferID, path: $0.path)
            f.durationMillis = $0.durationMillis
            return f
        }
        return m
    }

    static func userID(_ s: String, _ field: String) throws -> UserID {
        guard let u = UserID(string: s) else { throw APIJSON.Unreadable(field) }
        return u
    }
}

extension APIGroup {
    public init(_ g: GroupSummary) {
        self.init(groupID: g.groupID, name: g.name, epoch: g.epoch, members: g.members.map { APIGroupMember(fingerprint: $0.fingerprint, nickname: $0.nickname) },
                  creator: g.creator)
    }
    public var summary: GroupSummary {
        GroupSummary(groupID: groupID, name: name, epoch: epoch, members: members.map { .init(fingerprint: $0.fingerprint, nickname: $0.nickname) },
                     creator: creator)
    }
}

extension APIRequest {
    public init(_ r: StrangerRequest) {
        self.init(npub: r.npub, publicKey: r.publicKey, firstAt: r.firstAt, lastAt: r.lastAt,
                  messages: r.messages.map { APIRequestMessage(text: $0.text, createdAt: $0.createdAt, wrapID: $0.wrapID) })
    }
    public var request: StrangerRequest {
        StrangerRequest(publicKey: publicKey, npub: npub,
                        messages: messages.map { .init(publicKey: publicKey, text: $0.text, createdAt: $0.createdAt, wrapID: $0.wrapID) },
                        firstAt: firstAt, lastAt: lastAt)
    }
}

extension APIPeerState {
    public init(_ s: StatelyEngine.PeerState) {
        self.init(peerID: s.senderID.description, name: s.name, state: s.state.rawValue, emoji: s.state.emoji, hops: s.hops, timestamp: s.timestamp)
    }
    public func peerState() throws -> StatelyEngine.PeerState {
        guard let kind = StateKind(rawValue: state) else { throw APIJSON.Unreadable("state \(state)") }
        return StatelyEngine.PeerState(senderID: try APIEvent.peer(peerID), name: name, state: kind, timestamp: timestamp, heardAt: 0, hops: hops)
    }
}

extension APIEvent.BoardPost {
    public init(_ e: BoardEntry, from: PeerID? = nil, hops: Int? = nil) {
        let p = e.post
        self.init(postID: p.postID.hexString, authorKey: p.authorKey.hexString, nickname: p.nickname, text: p.content, geohash: p.geohash,
                  urgent: p.isUrgent, createdAt: p.createdAt, expiresAt: p.expiresAt, flags: p.flags, signature: p.signature.hexString,
                  ours: e.ours, shownName: e.shownName, author: e.author, crossed: e.crossed ? true : nil, from: from?.description, hops: hops)
    }
    public func entry() throws -> BoardEntry {
        func bytes(_ hex: String, _ field: String) throws -> [UInt8] {
            guard let b = try? [UInt8](hex: hex) else { throw APIJSON.Unreadable(field) }
            return b
        }
        let post = BoardPost(postID: try bytes(postID, "postID"), geohash: geohash, content: text, authorKey: try bytes(authorKey, "authorKey"),
                             nickname: nickname, createdAt: createdAt, expiresAt: expiresAt, flags: flags, signature: try bytes(signature, "signature"))
        return BoardEntry(post: post, author: author, ours: ours, crossed: crossed ?? false)
    }
}

extension APIEvent {
    static func peer(_ s: String) throws -> PeerID {
        guard let p = PeerID(hex: s) else { throw APIJSON.Unreadable("peer ID \(s)") }
        return p
    }

    static func fingerprint(_ s: String) throws -> Fingerprint {
        guard let f = Fingerprint(hex: s) else { throw APIJSON.Unreadable("fingerprint \(s)") }
        return f
    }

    /// The objects a messenger event is (a history block is one a message; a
    /// channel's bridge traffic none: the node and the messenger take it).
    public static func of(_ e: MessengerEvent) -> [APIEvent] {
        switch e {
        case let .node(n): return APIEvent(n).map { [$0] } ?? []
        case let .publicHistory(burst): return burst.compactMap(APIEvent.init)
        case let .privateMessage(conversation, record, from, name, hops, via, sender):
            return [.privateMessage(PrivateMessage(conversation: conversation.description, from: from.description, fingerprint: sender.hex,
                                                   nickname: name, text: record.text, messageID: record.transportID ?? record.id.description,
                                                   hops: hops, via: via, message: APIMessage(record)))]
        case let .sent(conversation, record): return [.sent(MessageChange(conversation: conversation.description, message: APIMessage(record)))]
        case let .progress(conversation, record): return [.progress(MessageChange(conversation: conversation.description, message: APIMessage(record)))]
        case let .dropDeposited(conversation, record, couriers):
            return [.dropDeposited(DropDeposited(conversation: conversation.description, messageID: record.transportID ?? record.id.description,
                                                 couriers: couriers, message: APIMessage(record)))]
        case let .sendingWaiting(conversation, count): return [.sendingWaiting(SendingWaiting(conversation: conversation.description, count: count))]
        case let .peerJoined(peer, nickname, hops): return [.peer(Peer(peerID: peer.description, nickname: nickname, hops: hops))]
        case let .peerLeft(peer): return [.left(PeerGone(peerID: peer.description))]
        case let .sessionEstablished(peer, name, f): return [.session(Session(peerID: peer.description, nickname: name, fingerprint: f.hex))]
        case let .favorited(by, name, on, npub, overNostr):
            return [.favorited(Favorited(from: by.description, nickname: name, on: on, npub: npub, overNostr: overNostr))]
        case let .trustChanged(f, name, blocked, favorite, verified):
            return [.trust(Trust(fingerprint: f.hex, name: name, blocked: blocked, favorite: favorite, verified: verified))]
        case let .trustLoaded(contacts, pending): return [.store(Store(open: true, contacts: contacts, pending: pending))]
        case let .storeUnlocked(stored): return [.store(Store(open: true, storedMeanwhile: stored))]
        case let .storeLocked(reason): return [.store(Store(open: false, reason: reason))]
        case let .warning(text): return [.warning(Words(text: text))]
        case let .notSaved(text): return [.notSaved(Words(text: text))]
        case let .diagnostic(r):
            return [.rejected(Rejected(kind: r.kind.rawValue, reason: r.detail, peerID: r.peer?.description, diagnostic: true))]
        case let .channel(c):
            switch c {
            case let .message(m):
                return [.channelMessage(ChannelMessage(geohash: m.geohash, publicKey: m.publicKey, nickname: m.nickname, text: m.text,
                                                       createdAt: m.createdAt, eventID: m.eventID))]
            case let .presence(geohash, key): return [.channelPresence(ChannelPresence(geohash: geohash, publicKey: key))]
            case let .failed(why): return [.channelFailed(ChannelFailed(reason: why))]
            case .bridge, .drop, .request: return []
            }
        case let .request(r): return [.request(Request(APIRequest(r)))]
        }
    }

    /// A node event as the API says it; nil for the few the messenger always
    /// says itself (a private message and a courier drop need their conversation).
    public init?(_ e: NodeEvent) {
        switch e {
        case let .started(port, peerID, nickname): self = .started(Started(port: port, peerID: peerID.description, nickname: nickname))
        case let .linkUp(a): self = .linkUp(Link(address: a))
        case let .linkDown(a): self = .linkDown(Link(address: a))
        case let .peer(id, nickname, hops): self = .peer(Peer(peerID: id.description, nickname: nickname, hops: hops))
        case let .capabilities(id, caps): self = .capabilities(Capabilities(peerID: id.description, capabilities: caps?.names, bits: caps?.rawValue))
        case let .message(from, nickname, text, hops, timestamp, history):
            self = .message(PublicMessage(from: from.description, nickname: nickname, text: text, hops: hops, timestamp: timestamp,
                                          history: history ? true : nil))
        case .privateMessage, .dropOpened, .dropDeposited: return nil
        case let .gatewayMessage(m):
            self = .gatewayMessage(GatewayMessage(geohash: m.geohash, eventID: m.eventID, pubkey: m.pubkey, nickname: m.nickname, text: m.text,
                                                  createdAt: m.createdAt, hops: m.hops))
        case let .bridgedMessage(m):
            self = .bridgedMessage(BridgedMessage(cell: m.cell, eventID: m.eventID, pubkey: m.pubkey, nickname: m.nickname, text: m.text,
                                                  createdAt: m.createdAt, radioID: m.radioID, hops: m.hops))
        case let .sessionEstablished(peer, f): self = .session(Session(peerID: peer.description, nickname: peer.description, fingerprint: f))
        case let .delivered(id, by): self = .delivered(Receipt(messageID: id, by: by.description))
        case let .read(id, by): self = .read(Receipt(messageID: id, by: by.description))
        case let .sentOffMesh(id, to, via): self = .sentOffMesh(SentOffMesh(messageID: id, to: to.description, via: via))
        case let .failed(id, to): self = .failed(Failed(messageID: id, to: to.description))
        case let .held(id, peer): self = .held(Held(messageID: id, for: peer.description))
        case let .fileProgress(from, received, total): self = .fileProgress(FileProgress(from: from.description, received: received, total: total))
        case let .fileSending(id, to, sent, total): self = .fileSending(FileSending(transferID: id, to: to.description, sent: sent, total: total))
        case let .fileSent(id, to, fragments): self = .fileSent(FileSent(transferID: id, to: to.description, total: fragments))
        case let .fileOffered(from, id, name, size, mime):
            self = .fileOffered(FileOffered(from: from.description, transferID: id, name: name, size: size, mimeType: mime))
        case let .fileReceived(from, name, size, path, id):
            self = .fileReceived(FileReceived(from: from.description, name: name, size: size, path: path, transferID: id))
        case let .boardPost(entry, from, hops): self = .board(BoardPost(entry, from: from, hops: hops))
        case let .boardPostDeleted(postID, authorKey): self = .boardDeleted(BoardDeleted(postID: postID.hexString, authorKey: authorKey.hexString))
        case let .voiceNote(from, path, ms, isPrivate, id, size):
            self = .voice(Voice(from: from.description, path: path, durationMillis: ms, private: isPrivate,
                                text: "voice from \(from) (\(ms / 1000) s): \(path)", transferID: id, size: size))
        case let .groupMessage(m):
            self = .groupMessage(GroupMessage(group: APIGroup(m.group), messageID: m.messageID, fingerprint: m.sender, nickname: m.nickname,
                                              text: m.text, timestamp: m.timestamp, hops: m.hops, history: m.history))
        case let .groupChanged(g, change, by): self = .group(GroupChanged(group: APIGroup(g), change: change.rawValue, by: by, text: e.sentence))
        case let .recognized(peer, f, nickname, epoch):
            self = .recognized(Recognized(peerID: peer.description, fingerprint: f, nickname: nickname, epoch: epoch, text: e.sentence))
        case let .vouched(vouchee, voucher, name): self = .vouched(Vouched(fingerprint: vouchee, by: voucher, nickname: name, text: e.sentence))
        case let .left(peer): self = .left(PeerGone(peerID: peer.description))
        case let .stateExpired(peer): self = .stateExpired(PeerGone(peerID: peer.description))
        case let .rejected(r): self = .rejected(Rejected(kind: r.kind.rawValue, reason: r.detail, peerID: r.peer?.description, diagnostic: nil))
        case let .state(s): self = .state(APIPeerState(s))
        case let .sos(s): self = .sos(APIPeerState(s))
        case let .pong(from, rtt, hops): self = .pong(Pong(from: from.description, rttMillis: rtt, hops: hops))
        case let .favorited(by, nickname, on, npub):
            self = .favorited(Favorited(from: by.description, nickname: nickname ?? by.description, on: on, npub: npub, overNostr: false))
        case let .pinned(f, key): self = .pinned(Pinned(fingerprint: f.hex, signingKey: key.hexString))
        case let .notice(text): self = .notice(Words(text: text))
        }
    }

    /// The messenger's event this object stands for, as a face in process
    /// would have had it (nil: a `gap` is said in words; kinds with no such event are none).
    public func messengerEvent() throws -> MessengerEvent? {
        switch self {
        case let .store(s):
            if !s.open { return .storeLocked(reason: s.reason ?? "locked") }
            if let n = s.storedMeanwhile { return .storeUnlocked(storedMeanwhile: n) }
            return .trustLoaded(contacts: s.contacts ?? 0, pending: s.pending ?? 0)
        case let .privateMessage(p):
            return .privateMessage(conversation: try APIMessage.userID(p.conversation, "conversation"), record: try p.message.record(),
                                   from: try Self.peer(p.from), name: p.nickname, hops: p.hops, via: p.via, fingerprint: try Self.fingerprint(p.fingerprint))
        case let .sent(m): return .sent(conversation: try APIMessage.userID(m.conversation, "conversation"), record: try m.message.record())
        case let .progress(m): return .progress(conversation: try APIMessage.userID(m.conversation, "conversation"), record: try m.message.record())
        case let .dropDeposited(d):
            return .dropDeposited(conversation: try APIMessage.userID(d.conversation, "conversation"), record: try d.message.record(), couriers: d.couriers)
        case let .sendingWaiting(s): return .sendingWaiting(conversation: try APIMessage.userID(s.conversation, "conversation"), count: s.count)
        case let .peer(p): return .peerJoined(try Self.peer(p.peerID), nickname: p.nickname, hops: p.hops)
        case let .left(p): return .peerLeft(try Self.peer(p.peerID))
        case let .session(s): return .sessionEstablished(try Self.peer(s.peerID), name: s.nickname, fingerprint: try Self.fingerprint(s.fingerprint))
        case let .favorited(f): return .favorited(by: try Self.peer(f.from), name: f.nickname, on: f.on, npub: f.npub, overNostr: f.overNostr)
        case let .trust(t):
            return .trustChanged(try Self.fingerprint(t.fingerprint), name: t.name, blocked: t.blocked, favorite: t.favorite, verified: t.verified)
        case let .warning(w): return .warning(w.text)
        case let .notSaved(w): return .notSaved(w.text)
        case let .gap(g): return .warning("\(g.missed) events were missed while this client was away (the daemon keeps the last 10,000)")
        case let .channelMessage(m):
            return .channel(.message(NostrClientCore.ChannelMessage(geohash: m.geohash, publicKey: m.publicKey, nickname: m.nickname, text: m.text,
                                                                    createdAt: m.createdAt, eventID: m.eventID)))
        case let .channelPresence(p): return .channel(.presence(geohash: p.geohash, publicKey: p.publicKey))
        case let .channelFailed(f): return .channel(.failed(f.reason))
        case let .request(r): return .request(r.request.request)
        case let .rejected(r) where r.diagnostic == true:
            guard let kind = Rejection.Kind(rawValue: r.kind) else { throw APIJSON.Unreadable("kind \(r.kind)") }
            return .diagnostic(Rejection(kind, peer: r.peerID.flatMap(PeerID.init(hex:)), r.reason))
        default:
            let node = try nodeEvent()
            if case let .message(_, _, _, _, _, history) = node, history { return .publicHistory([node]) }
            return .node(node)
        }
    }

    /// The node's event this object stands for (the inverse of ``init(_:)``).
    public func nodeEvent() throws -> NodeEvent {
        switch self {
        case let .started(s): return .started(port: s.port, peerID: try Self.peer(s.peerID), nickname: s.nickname)
        case let .linkUp(l): return .linkUp(l.address)
        case let .linkDown(l): return .linkDown(l.address)
        case let .peer(p): return .peer(try Self.peer(p.peerID), nickname: p.nickname, hops: p.hops)
        case let .capabilities(c): return .capabilities(try Self.peer(c.peerID), c.bits.map(StarlingWire.Capabilities.init(rawValue:)))
        case let .message(m):
            return .message(from: try Self.peer(m.from), nickname: m.nickname, text: m.text, hops: m.hops, timestamp: m.timestamp, history: m.history ?? false)
        case let .gatewayMessage(m):
            return .gatewayMessage(StarlingNodeCore.GatewayMessage(geohash: m.geohash, eventID: m.eventID, pubkey: m.pubkey, nickname: m.nickname,
                                                                   text: m.text, createdAt: m.createdAt, hops: m.hops))
        case let .bridgedMessage(m):
            return .bridgedMessage(StarlingNodeCore.BridgedMessage(cell: m.cell, eventID: m.eventID, pubkey: m.pubkey, nickname: m.nickname, text: m.text,
                                                                   createdAt: m.createdAt, radioID: m.radioID, hops: m.hops))
        case let .session(s): return .sessionEstablished(try Self.peer(s.peerID), fingerprint: s.fingerprint)
        case let .delivered(r): return .delivered(messageID: r.messageID, by: try Self.peer(r.by))
        case let .read(r): return .read(messageID: r.messageID, by: try Self.peer(r.by))
        case let .sentOffMesh(s): return .sentOffMesh(messageID: s.messageID, to: try Self.peer(s.to), via: s.via)
        case let .failed(f): return .failed(messageID: f.messageID, to: try Self.peer(f.to))
        case let .held(h): return .held(messageID: h.messageID, for: try Self.peer(h.for))
        case let .fileProgress(f): return .fileProgress(from: try Self.peer(f.from), received: f.received, total: f.total)
        case let .fileSending(f): return .fileSending(transferID: f.transferID, to: try Self.peer(f.to), sent: f.sent, total: f.total)
        case let .fileSent(f): return .fileSent(transferID: f.transferID, to: try Self.peer(f.to), fragments: f.total)
        case let .fileOffered(f):
            return .fileOffered(from: try Self.peer(f.from), transferID: f.transferID, name: f.name, size: f.size, mimeType: f.mimeType)
        case let .fileReceived(f): return .fileReceived(from: try Self.peer(f.from), name: f.name, size: f.size, path: f.path, transferID: f.transferID)
        case let .board(b):
            return .boardPost(try b.entry(), from: try b.from.map(Self.peer) ?? PeerID(rawValue: 0), hops: b.hops ?? 0)
        case let .boardDeleted(d):
            guard let id = try? [UInt8](hex: d.postID), let key = try? [UInt8](hex: d.authorKey) else { throw APIJSON.Unreadable("boardDeleted") }
            return .boardPostDeleted(postID: id, authorKey: key)
        case let .voice(v): return .voiceNote(from: try Self.peer(v.from), path: v.path, durationMillis: v.durationMillis, isPrivate: v.private,
                                              id: v.transferID, size: v.size)
        case let .groupMessage(m):
            return .groupMessage(StarlingNodeCore.GroupMessage(group: m.summary.summary, messageID: m.messageID, sender: m.fingerprint, nickname: m.nickname,
                                                               text: m.text, timestamp: m.timestamp, hops: m.hops, history: m.history))
        case let .group(g):
            guard let change = GroupChange(rawValue: g.change) else { throw APIJSON.Unreadable("change \(g.change)") }
            return .groupChanged(g.summary.summary, change: change, by: g.by)
        case let .recognized(r): return .recognized(try Self.peer(r.peerID), fingerprint: r.fingerprint, nickname: r.nickname, epoch: r.epoch)
        case let .vouched(v): return .vouched(v.fingerprint, by: v.by, voucherName: v.nickname)
        case let .left(p): return .left(try Self.peer(p.peerID))
        case let .stateExpired(p): return .stateExpired(try Self.peer(p.peerID))
        case let .rejected(r):
            guard let kind = Rejection.Kind(rawValue: r.kind) else { throw APIJSON.Unreadable("kind \(r.kind)") }
            return .rejected(Rejection(kind, peer: r.peerID.flatMap(PeerID.init(hex:)), r.reason))
        case let .state(s): return .state(try s.peerState())
        case let .sos(s): return .sos(try s.peerState())
        case let .pong(p): return .pong(from: try Self.peer(p.from), rttMillis: p.rttMillis, hops: p.hops)
        case let .favorited(f): return .favorited(by: try Self.peer(f.from), nickname: f.nickname, on: f.on, npub: f.npub)
        case let .pinned(p):
            guard let f = Fingerprint(hex: p.fingerprint), let key = try? [UInt8](hex: p.signingKey) else { throw APIJSON.Unreadable("pinned") }
            return .pinned(fingerprint: f, signingKey: key)
        case let .notice(w): return .notice(w.text)
        case .store, .privateMessage, .sent, .progress, .dropDeposited, .sendingWaiting, .trust, .warning, .notSaved, .gap, .channelMessage,
             .channelPresence, .channelFailed, .request:
            throw APIJSON.Unreadable("\(name) is the messenger's, not a node event")
        }
    }
}
