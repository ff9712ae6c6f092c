import StarlingCrypto
import StarlingMesh
import StarlingStately
import StarlingWire

/// What a node tells its application. The node core produces most of these;
/// the runtime adds the ones that only it can know (``started``, links with
/// their addresses, where a file was saved).
///
/// Every event encodes to one JSON object with an `"event"` field naming it
/// (`starling listen --json` prints exactly these).
public enum NodeEvent: Sendable {
    case started(port: UInt16?, peerID: PeerID, nickname: String)
    case linkUp(String)
    case linkDown(String)
    /// A verified announce from a peer not seen before (or renamed).
    case peer(PeerID, nickname: String, hops: Int)
    /// What a peer's verified announce says it can do (TLV 0x05), when first
    /// heard or changed; nil: its announce carries no capabilities.
    case capabilities(PeerID, Capabilities?)
    /// A public message, signed by the key the sender's verified announce
    /// carries (docs/PROTOCOL.md, "Public messages"). `history`: replayed by a
    /// neighbour's gossip sync (sent before we heard it live; `hops` is then 1,
    /// the neighbour, as the path it first took is not known). `from` may be
    /// our own peer ID for history: one of ours, signed with our key.
    case message(from: PeerID, nickname: String?, text: String, hops: Int, timestamp: UInt64, history: Bool = false)
    /// A private message, decrypted; a delivered receipt went back already.
    /// `via`: the mailbox transport it came through ("nostr"); nil: the mesh.
    case privateMessage(from: PeerID, nickname: String?, text: String, messageID: String, hops: Int, via: String? = nil)
    case sessionEstablished(PeerID, fingerprint: String)
    /// A courier drop for us (0x04), opened with our key: a private message
    /// sealed one-way (Noise X) by the holder of `noiseKey` (its fingerprint
    /// `fingerprint`, which the seal proves), wherever that sender is now.
    /// JSON: `"event": "privateMessage"` with `"via": "courier"`, the
    /// fingerprint and the key.
    case dropOpened(from: PeerID, fingerprint: String, noiseKey: [UInt8], nickname: String?, text: String, messageID: String, hops: Int)
    /// Our private message for someone away, sealed as a courier drop and
    /// handed to `couriers` neighbours (0: none here to carry it), who hand
    /// it on when they meet the recipient.
    case dropDeposited(messageID: String, to: PeerID, couriers: Int)
    /// Our private message reached its recipient.
    case delivered(messageID: String, by: PeerID)
    /// Our private message went off the mesh (the peer had no mesh route):
    /// the mailbox transport `via` ("nostr") has it; its receipts follow.
    case sentOffMesh(messageID: String, to: PeerID, via: String)
    /// Our private message was not acknowledged within its retry budget.
    case failed(messageID: String, to: PeerID)
    /// Our message to a favourite was not acknowledged within the retry
    /// budget: it is held, and sent again when the favourite returns.
    case held(messageID: String, for: PeerID)
    /// A file for us is arriving, `received` of `total` fragments (bytes, for
    /// a file over the network: docs/BULK.md).
    case fileProgress(from: PeerID, received: Int, total: Int)
    /// Our file went out to the links (after the session it needed), in
    /// `fragments` pieces; its delivered receipt names `transferID`. 0
    /// fragments: offered over the network, and the peer has the offer.
    case fileSent(transferID: String, to: PeerID, fragments: Int)
    /// Our file over the network: `sent` of `total` bytes are on the peer's disk.
    case fileSending(transferID: String, to: PeerID, sent: Int, total: Int)
    /// A peer offers a file over the network larger than this node takes
    /// without asking: a face asks its person, then accepts or declines it
    /// (``MeshNode/answerFileOffer(_:accept:)``) before it is withdrawn.
    case fileOffered(from: PeerID, transferID: String, name: String, size: Int, mimeType: String?)
    /// A new post on the mesh board (0x23), signed by the key it carries
    /// (`post.authorKey`), with who wrote it as far as the node can tell
    /// (``BoardEntry/author``); `from`: the packet's sender, not proven to be its author.
    case boardPost(BoardEntry, from: PeerID, hops: Int)
    /// A post was deleted by its author (a signed tombstone).
    case boardPostDeleted(postID: [UInt8], authorKey: [UInt8])
    /// A live voice burst came (public, or privately to us), saved as an
    /// audio file (AAC in ADTS) at `path`.
    case voiceNote(from: PeerID, path: String, durationMillis: Int, isPrivate: Bool)
    /// A message in a group we belong to, opened with the group's key and
    /// signed by a member of its roster (docs/PROTOCOL.md, "Groups").
    case groupMessage(GroupMessage)
    /// A group we belong to changed: made by us, joined (`by` its creator's
    /// name), a new epoch or roster, or we were removed or left. The state's
    /// key never leaves the node core in an event.
    case groupChanged(GroupSummary, change: GroupChange, by: String?)
    /// An announce v2 (0x2C) whose recognition tag is the one this peer (by
    /// its Noise key's fingerprint) would make for us: it made it for this
    /// rotating ID within the hour; not proof that it is here now.
    case recognized(PeerID, fingerprint: String, nickname: String?, epoch: UInt32)
    /// A peer we verified vouches (Noise 0x12, signed) that it verified this
    /// fingerprint: one hop from our own verifications, not a verification.
    case vouched(String, by: String, voucherName: String?)
    /// A location channel's message a gateway carried into the mesh (0x28
    /// fromGateway), signed by its author's Nostr key. JSON: `"event":
    /// "gatewayMessage"` with `geohash`, `eventID`, `pubkey`, `nickname`
    /// (the `n` tag's claim), `text`, `createdAt`, `hops`.
    case gatewayMessage(GatewayMessage)
    /// A public message from another mesh that the bridges on a cell carried
    /// (0x28 fromBridge, or our own bridge's relays), signed by its author's
    /// Nostr key; not shown when its radio copy was heard here. JSON:
    /// `"event": "bridgedMessage"` with `cell`, `eventID`, `pubkey`,
    /// `nickname` (the `n` tag's claim), `text`, `createdAt`, `radioID`, `hops`.
    case bridgedMessage(BridgedMessage)
    /// A file arrived, was saved at `path`, and a delivered receipt went back.
    case fileReceived(from: PeerID, name: String, size: Int, path: String, transferID: String)
    /// Our private message was displayed to its recipient.
    case read(messageID: String, by: PeerID)
    case left(PeerID)
    /// Something from the network (or a transport) was refused, and why.
    case rejected(Rejection)
    /// A peer's Stately state is new or changed.
    case state(StatelyEngine.PeerState)
    /// An SOS arrived.
    case sos(StatelyEngine.PeerState)
    /// A peer's state expired (or it went invisible).
    case stateExpired(PeerID)
    /// A pong answered our ping: the round trip and how many hops it came.
    case pong(from: PeerID, rttMillis: UInt64, hops: Int)
    /// A peer made us a favourite, or no longer (its private message
    /// `[FAVORITED]:npub1…` / `[UNFAVORITED]:npub1…`), with its Nostr key when it gave one.
    case favorited(by: PeerID, nickname: String?, on: Bool, npub: String?)
    /// A signing key was pinned to a Noise key on first use (a verified
    /// announce): an application that keeps pins across restarts stores it
    /// and hands it back with `NodeCore.pinSigningKey`.
    case pinned(fingerprint: Fingerprint, signingKey: [UInt8])
    /// Something a person should know from a transport (a relay connected or
    /// lost, the proxy down): words only.
    case notice(String)
}

/// Why something was refused: a kind a program can switch on, the peer it
/// came from when known, and the words for a person.
public struct Rejection: Hashable, Sendable, Error, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable, Codable, CaseIterable {
        /// An announce that does not verify (signature, key binding, age).
        case badAnnounce
        /// A public message whose payload is not UTF-8 text.
        case notText
        /// A Noise transport frame that no session of ours opens.
        case undecryptable
        /// A Noise handshake message that failed, or was rate-limited.
        case handshakeFailed
        /// A decrypted private payload that does not decode.
        case malformedPrivatePayload
        /// A file we do not accept (no download directory).
        case fileRefused
        /// A file we accepted but could not write.
        case fileNotSaved
        /// A Stately packet refused.
        case stately
        /// A transport failed (Bluetooth unreachable, adapter off …).
        case transport
        /// A group state refused (not the creator's, not signed, older than the one held).
        case group
    }

    public var kind: Kind
    public var peer: PeerID?
    public var detail: String

    public init(_ kind: Kind, peer: PeerID? = nil, _ detail: String) {
        self.kind = kind
        self.peer = peer
        self.detail = detail
    }

    public var description: String { detail }
}

extension NodeEvent: Encodable {
    enum Key: String, CodingKey {
        case event, port, peerID, nickname, address, hops, from, text, timestamp, messageID, fingerprint, by, to
        case history, via, `for`, received, total, name, size, path, transferID, reason, kind, state, emoji, rttMillis, on, npub, signingKey, sent
        case capabilities, bits, mimeType
        case postID, authorKey, geohash, createdAt, expiresAt, urgent, flags, signature, durationMillis, `private`, author, ours, crossed, shownName
        case group, groupID, epoch, members, creator, change
        case noiseKey, couriers
        case eventID, pubkey, cell, radioID
    }

    /// What a person is told of the events the node words itself (group
    /// changes, recognized IDs, vouches); the same in JSON `"text"` and in lines.
    public var sentence: String? {
        switch self {
        case let .recognized(peer, fingerprint, nickname, _):
            "\(nickname.map(DisplayText.clean) ?? String(fingerprint.prefix(16))) made rotating ID \(peer) (announce v2, recognized by its tag; not proof that they are here now)"
        case let .vouched(vouchee, voucher, name):
            "\(name.map(DisplayText.clean) ?? String(voucher.prefix(16))), whom you verified, vouches for \(vouchee.prefix(16))… (vouched, not verified by you)"
        case let .groupChanged(g, change, by):
            change.sentence(group: g.name, by: by, members: g.members.map(\.nickname))
        default:
            nil
        }
    }

    /// The event's name, as the JSON `"event"` field gives it.
    public var name: String {
        switch self {
        case .started: "started"
        case .linkUp: "linkUp"
        case .linkDown: "linkDown"
        case .peer: "peer"
        case .capabilities: "capabilities"
        case .message: "message"
        case .privateMessage, .dropOpened: "privateMessage"
        case .dropDeposited: "dropDeposited"
        case .gatewayMessage: "gatewayMessage"
        case .bridgedMessage: "bridgedMessage"
        case .sessionEstablished: "session"
        case .delivered: "delivered"
        case .sentOffMesh: "sentOffMesh"
        case .failed: "failed"
        case .held: "held"
        case .fileProgress: "fileProgress"
        case .fileSending: "fileSending"
        case .fileSent: "fileSent"
        case .fileOffered: "fileOffered"
        case .fileReceived: "fileReceived"
        case .read: "read"
        case .left: "left"
        case .rejected: "rejected"
        case .state: "state"
        case .sos: "sos"
        case .stateExpired: "stateExpired"
        case .pong: "pong"
        case .favorited: "favorited"
        case .pinned: "pinned"
        case .notice: "notice"
        case .boardPost: "board"
        case .boardPostDeleted: "boardDeleted"
        case .voiceNote: "voice"
        case .groupMessage: "groupMessage"
        case .groupChanged: "group"
        case .recognized: "recognized"
        case .vouched: "vouched"
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(name, forKey: .event)
        switch self {
        case let .started(port, peerID, nickname):
            try c.encodeIfPresent(port, forKey: .port)
            try c.encode(peerID.description, forKey: .peerID)
            try c.encode(nickname, forKey: .nickname)
        case let .linkUp(a), let .linkDown(a):
            try c.encode(a, forKey: .address)
        case let .peer(id, nickname, hops):
            try c.encode(id.description, forKey: .peerID)
            try c.encode(nickname, forKey: .nickname)
            try c.encode(hops, forKey: .hops)
        case let .capabilities(id, caps):
            try c.encode(id.description, forKey: .peerID)
            try c.encode(caps?.names, forKey: .capabilities) // null: none announced
            try c.encode(caps?.rawValue, forKey: .bits)
        case let .message(from, nickname, text, hops, timestamp, history):
            try c.encode(from.description, forKey: .from)
            try c.encode(nickname, forKey: .nickname) // null when unknown
            try c.encode(text, forKey: .text)
            try c.encode(hops, forKey: .hops)
            try c.encode(timestamp, forKey: .timestamp)
            if history { try c.encode(true, forKey: .history) }
        case let .privateMessage(from, nickname, text, id, hops, via):
            try c.encode(from.description, forKey: .from)
            try c.encode(nickname, forKey: .nickname)
            try c.encode(text, forKey: .text)
            try c.encode(id, forKey: .messageID)
            try c.encode(hops, forKey: .hops)
            try c.encodeIfPresent(via, forKey: .via)
        case let .dropOpened(from, fingerprint, key, nickname, text, id, hops):
            try c.encode(from.description, forKey: .from)
            try c.encode(nickname, forKey: .nickname)
            try c.encode(text, forKey: .text)
            try c.encode(id, forKey: .messageID)
            try c.encode(hops, forKey: .hops)
            try c.encode("courier", forKey: .via)
            try c.encode(fingerprint, forKey: .fingerprint)
            try c.encode(key.hexString, forKey: .noiseKey)
        case let .gatewayMessage(m):
            try c.encode(m.geohash, forKey: .geohash)
            try c.encode(m.eventID, forKey: .eventID)
            try c.encode(m.pubkey, forKey: .pubkey)
            try c.encodeIfPresent(m.nickname, forKey: .nickname)
            try c.encode(m.text, forKey: .text)
            try c.encode(m.createdAt, forKey: .createdAt)
            try c.encode(m.hops, forKey: .hops)
        case let .bridgedMessage(m):
            try c.encode(m.cell, forKey: .cell)
            try c.encode(m.eventID, forKey: .eventID)
            try c.encode(m.pubkey, forKey: .pubkey)
            try c.encodeIfPresent(m.nickname, forKey: .nickname)
            try c.encode(m.text, forKey: .text)
            try c.encode(m.createdAt, forKey: .createdAt)
            try c.encodeIfPresent(m.radioID, forKey: .radioID)
            try c.encode(m.hops, forKey: .hops)
        case let .dropDeposited(id, to, couriers):
            try c.encode(id, forKey: .messageID)
            try c.encode(to.description, forKey: .to)
            try c.encode(couriers, forKey: .couriers)
        case let .sentOffMesh(id, to, via):
            try c.encode(id, forKey: .messageID)
            try c.encode(to.description, forKey: .to)
            try c.encode(via, forKey: .via)
        case let .sessionEstablished(peer, fingerprint):
            try c.encode(peer.description, forKey: .peerID)
            try c.encode(fingerprint, forKey: .fingerprint)
        case let .delivered(id, by), let .read(id, by):
            try c.encode(id, forKey: .messageID)
            try c.encode(by.description, forKey: .by)
        case let .failed(id, to):
            try c.encode(id, forKey: .messageID)
            try c.encode(to.description, forKey: .to)
        case let .held(id, peer):
            try c.encode(id, forKey: .messageID)
            try c.encode(peer.description, forKey: .for)
        case let .fileProgress(from, received, total):
            try c.encode(from.description, forKey: .from)
            try c.encode(received, forKey: .received)
            try c.encode(total, forKey: .total)
        case let .fileSending(id, to, sent, total):
            try c.encode(id, forKey: .transferID)
            try c.encode(to.description, forKey: .to)
            try c.encode(sent, forKey: .sent)
            try c.encode(total, forKey: .total)
        case let .fileSent(id, to, fragments):
            try c.encode(id, forKey: .transferID)
            try c.encode(to.description, forKey: .to)
            try c.encode(fragments, forKey: .total)
        case let .fileOffered(from, id, name, size, mimeType):
            try c.encode(from.description, forKey: .from)
            try c.encode(id, forKey: .transferID)
            try c.encode(name, forKey: .name)
            try c.encode(size, forKey: .size)
            try c.encodeIfPresent(mimeType, forKey: .mimeType)
        case let .fileReceived(from, name, size, path, id):
            try c.encode(from.description, forKey: .from)
            try c.encode(name, forKey: .name)
            try c.encode(size, forKey: .size)
            try c.encode(path, forKey: .path)
            try c.encode(id, forKey: .transferID)
        case let .pong(from, rtt, hops):
            try c.encode(from.description, forKey: .from)
            try c.encode(rtt, forKey: .rttMillis)
            try c.encode(hops, forKey: .hops)
        case let .favorited(by, nickname, on, npub):
            try c.encode(by.description, forKey: .from)
            try c.encode(nickname, forKey: .nickname)
            try c.encode(on, forKey: .on)
            try c.encode(npub, forKey: .npub)
        case let .pinned(fingerprint, key):
            try c.encode(fingerprint.hex, forKey: .fingerprint)
            try c.encode(key.hexString, forKey: .signingKey)
        case let .notice(text):
            try c.encode(text, forKey: .text)
        case let .boardPost(entry, from, hops):
            let post = entry.post
            try c.encodeIfPresent(entry.author, forKey: .author)
            try c.encode(entry.ours, forKey: .ours)
            if entry.crossed { try c.encode(true, forKey: .crossed) }
            try c.encode(entry.shownName, forKey: .shownName)
            try c.encode(from.description, forKey: .from)
            try c.encode(hops, forKey: .hops)
            try c.encode(post.nickname, forKey: .nickname)
            try c.encode(post.content, forKey: .text)
            try c.encode(post.geohash, forKey: .geohash)
            try c.encode(post.isUrgent, forKey: .urgent)
            try c.encode(post.createdAt, forKey: .createdAt)
            try c.encode(post.expiresAt, forKey: .expiresAt)
            try c.encode(post.postID.hexString, forKey: .postID)
            try c.encode(post.authorKey.hexString, forKey: .authorKey)
            try c.encode(post.flags, forKey: .flags)
            try c.encode(post.signature.hexString, forKey: .signature)
        case let .voiceNote(from, path, ms, isPrivate):
            try c.encode(from.description, forKey: .from)
            try c.encode(path, forKey: .path)
            try c.encode(ms, forKey: .durationMillis)
            try c.encode(isPrivate, forKey: .private)
            try c.encode("voice from \(from) (\(ms / 1000) s): \(path)", forKey: .text)
        case let .groupMessage(m):
            try c.encode(m.group.name, forKey: .group)
            try c.encode(m.group.groupID, forKey: .groupID)
            try c.encode(m.group.epoch, forKey: .epoch)
            try c.encode(m.group.members, forKey: .members)
            try c.encode(m.group.creator, forKey: .creator)
            try c.encode(m.messageID, forKey: .messageID)
            try c.encode(m.sender, forKey: .fingerprint)
            try c.encode(m.nickname, forKey: .nickname)
            try c.encode(m.text, forKey: .text)
            try c.encode(m.timestamp, forKey: .timestamp)
            try c.encode(m.hops, forKey: .hops)
            try c.encode(m.history, forKey: .history)
        case let .recognized(peer, fingerprint, nickname, epoch):
            try c.encode(peer.description, forKey: .peerID)
            try c.encode(fingerprint, forKey: .fingerprint)
            try c.encodeIfPresent(nickname, forKey: .nickname)
            try c.encode(epoch, forKey: .epoch)
            try c.encodeIfPresent(sentence, forKey: .text)
        case let .vouched(vouchee, voucher, name):
            try c.encode(vouchee, forKey: .fingerprint)
            try c.encode(voucher, forKey: .by)
            try c.encodeIfPresent(name, forKey: .nickname)
            try c.encodeIfPresent(sentence, forKey: .text)
        case let .groupChanged(g, change, by):
            try c.encode(g.name, forKey: .group)
            try c.encode(g.groupID, forKey: .groupID)
            try c.encode(g.epoch, forKey: .epoch)
            try c.encode(g.members, forKey: .members)
            try c.encode(g.creator, forKey: .creator)
            try c.encode(change.rawValue, forKey: .change)
            try c.encodeIfPresent(by, forKey: .by)
            try c.encodeIfPresent(sentence, forKey: .text)
        case let .boardPostDeleted(postID, authorKey):
            try c.encode(postID.hexString, forKey: .postID)
            try c.encode(authorKey.hexString, forKey: .authorKey)
        case let .left(peer), let .stateExpired(peer):
            try c.encode(peer.description, forKey: .peerID)
        case let .rejected(r):
            try c.encode(r.kind, forKey: .kind)
            try c.encode(r.detail, forKey: .reason)
            try c.encodeIfPresent(r.peer?.description, forKey: .peerID)
        case let .state(s), let .sos(s):
            try c.encode(s.senderID.description, forKey: .peerID)
            try c.encode(s.name, forKey: .name)
            try c.encode(s.state.rawValue, forKey: .state)
            try c.encode(s.state.emoji, forKey: .emoji)
            try c.encode(s.hops, forKey: .hops)
            try c.encode(s.timestamp, forKey: .timestamp)
        }
    }
}

extension NodeEvent: Decodable {
    /// Not a node event this version knows, or a field that does not parse.
    public struct Undecodable: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    /// The inverse of ``encode(to:)``: what another process printed (a daemon's
    /// event stream, `listen --json`) as the event it was. An unknown event
    /// name is an error, never a guess.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        let name = try c.decode(String.self, forKey: .event)
        func peer(_ key: Key) throws -> PeerID {
            let text = try c.decode(String.self, forKey: key)
            guard let p = PeerID(hex: text) else { throw Undecodable(description: "\(key.rawValue): not a peer ID: \(text)") }
            return p
        }
        func text(_ key: Key) throws -> String { try c.decode(String.self, forKey: key) }
        func int(_ key: Key) throws -> Int { try c.decode(Int.self, forKey: key) }
        func peerState() throws -> StatelyEngine.PeerState {
            let raw = try text(.state)
            guard let kind = StateKind(rawValue: raw) else { throw Undecodable(description: "state: \(raw)") }
            return StatelyEngine.PeerState(senderID: try peer(.peerID), name: try text(.name), state: kind,
                                           timestamp: try c.decode(UInt64.self, forKey: .timestamp), heardAt: 0, hops: try int(.hops))
        }
        switch name {
        case "started":
            self = .started(port: try c.decodeIfPresent(UInt16.self, forKey: .port), peerID: try peer(.peerID), nickname: try text(.nickname))
        case "linkUp": self = .linkUp(try text(.address))
        case "linkDown": self = .linkDown(try text(.address))
        case "peer": self = .peer(try peer(.peerID), nickname: try text(.nickname), hops: try int(.hops))
        case "capabilities":
            self = .capabilities(try peer(.peerID), try c.decodeIfPresent(UInt64.self, forKey: .bits).map(Capabilities.init(rawValue:)))
        case "message":
            self = .message(from: try peer(.from), nickname: try c.decodeIfPresent(String.self, forKey: .nickname), text: try text(.text),
                            hops: try int(.hops), timestamp: try c.decode(UInt64.self, forKey: .timestamp),
                            history: try c.decodeIfPresent(Bool.self, forKey: .history) ?? false)
        case "privateMessage" where try c.decodeIfPresent(String.self, forKey: .via) == "courier":
            let hex = try text(.noiseKey)
            guard let key = try? [UInt8](hex: hex), key.count == 32 else { throw Undecodable(description: "noiseKey: \(hex)") }
            self = .dropOpened(from: try peer(.from), fingerprint: try text(.fingerprint), noiseKey: key,
                               nickname: try c.decodeIfPresent(String.self, forKey: .nickname), text: try text(.text),
                               messageID: try text(.messageID), hops: try int(.hops))
        case "gatewayMessage":
            self = .gatewayMessage(GatewayMessage(geohash: try text(.geohash), eventID: try text(.eventID), pubkey: try text(.pubkey),
                                                  nickname: try c.decodeIfPresent(String.self, forKey: .nickname), text: try text(.text),
                                                  createdAt: try c.decode(Int64.self, forKey: .createdAt), hops: try int(.hops)))
        case "bridgedMessage":
            self = .bridgedMessage(BridgedMessage(cell: try text(.cell), eventID: try text(.eventID), pubkey: try text(.pubkey),
                                                  nickname: try c.decodeIfPresent(String.self, forKey: .nickname), text: try text(.text),
                                                  createdAt: try c.decode(Int64.self, forKey: .createdAt),
                                                  radioID: try c.decodeIfPresent(String.self, forKey: .radioID), hops: try int(.hops)))
        case "dropDeposited": self = .dropDeposited(messageID: try text(.messageID), to: try peer(.to), couriers: try int(.couriers))
        case "privateMessage":
            self = .privateMessage(from: try peer(.from), nickname: try c.decodeIfPresent(String.self, forKey: .nickname), text: try text(.text),
                                   messageID: try text(.messageID), hops: try int(.hops), via: try c.decodeIfPresent(String.self, forKey: .via))
        case "session": self = .sessionEstablished(try peer(.peerID), fingerprint: try text(.fingerprint))
        case "delivered": self = .delivered(messageID: try text(.messageID), by: try peer(.by))
        case "read": self = .read(messageID: try text(.messageID), by: try peer(.by))
        case "sentOffMesh": self = .sentOffMesh(messageID: try text(.messageID), to: try peer(.to), via: try text(.via))
        case "failed": self = .failed(messageID: try text(.messageID), to: try peer(.to))
        case "held": self = .held(messageID: try text(.messageID), for: try peer(.for))
        case "fileProgress": self = .fileProgress(from: try peer(.from), received: try int(.received), total: try int(.total))
        case "fileSending": self = .fileSending(transferID: try text(.transferID), to: try peer(.to), sent: try int(.sent), total: try int(.total))
        case "fileSent": self = .fileSent(transferID: try text(.transferID), to: try peer(.to), fragments: try int(.total))
        case "fileOffered":
            self = .fileOffered(from: try peer(.from), transferID: try text(.transferID), name: try text(.name), size: try int(.size),
                                mimeType: try c.decodeIfPresent(String.self, forKey: .mimeType))
        case "fileReceived":
            self = .fileReceived(from: try peer(.from), name: try text(.name), size: try int(.size), path: try text(.path),
                                 transferID: try text(.transferID))
        case "pong": self = .pong(from: try peer(.from), rttMillis: try c.decode(UInt64.self, forKey: .rttMillis), hops: try int(.hops))
        case "favorited":
            self = .favorited(by: try peer(.from), nickname: try c.decodeIfPresent(String.self, forKey: .nickname), on: try c.decode(Bool.self, forKey: .on),
                              npub: try c.decodeIfPresent(String.self, forKey: .npub))
        case "pinned":
            let hex = try text(.fingerprint), keyHex = try text(.signingKey)
            guard let f = Fingerprint(hex: hex), let key = try? [UInt8](hex: keyHex) else { throw Undecodable(description: "pinned: \(hex) \(keyHex)") }
            self = .pinned(fingerprint: f, signingKey: key)
        case "notice": self = .notice(try text(.text))
        case "board":
            func bytes(_ key: Key) throws -> [UInt8] {
                let hex = try text(key)
                guard let b = try? [UInt8](hex: hex) else { throw Undecodable(description: "\(key.rawValue): not hex: \(hex)") }
                return b
            }
            let post = BoardPost(postID: try bytes(.postID), geohash: try text(.geohash), content: try text(.text), authorKey: try bytes(.authorKey),
                                 nickname: try text(.nickname), createdAt: try c.decode(UInt64.self, forKey: .createdAt),
                                 expiresAt: try c.decode(UInt64.self, forKey: .expiresAt), flags: try c.decode(UInt8.self, forKey: .flags),
                                 signature: try bytes(.signature))
            self = .boardPost(BoardEntry(post: post, author: try c.decodeIfPresent(String.self, forKey: .author),
                                         ours: try c.decodeIfPresent(Bool.self, forKey: .ours) ?? false),
                              from: try peer(.from), hops: try int(.hops))
        case "voice":
            self = .voiceNote(from: try peer(.from), path: try text(.path), durationMillis: try int(.durationMillis),
                              isPrivate: try c.decode(Bool.self, forKey: .private))
        case "groupMessage":
            let summary = GroupSummary(groupID: try text(.groupID), name: try text(.group), epoch: try c.decode(UInt32.self, forKey: .epoch),
                                       members: try c.decode([GroupSummary.Member].self, forKey: .members), creator: try text(.creator))
            self = .groupMessage(GroupMessage(group: summary, messageID: try text(.messageID), sender: try text(.fingerprint),
                                              nickname: try text(.nickname), text: try text(.text),
                                              timestamp: try c.decode(UInt64.self, forKey: .timestamp), hops: try int(.hops),
                                              history: try c.decode(Bool.self, forKey: .history)))
        case "recognized":
            self = .recognized(try peer(.peerID), fingerprint: try text(.fingerprint), nickname: try c.decodeIfPresent(String.self, forKey: .nickname),
                               epoch: try c.decode(UInt32.self, forKey: .epoch))
        case "vouched":
            self = .vouched(try text(.fingerprint), by: try text(.by), voucherName: try c.decodeIfPresent(String.self, forKey: .nickname))
        case "group":
            guard let change = GroupChange(rawValue: try text(.change)) else { throw Undecodable(description: "group: change \(try text(.change))") }
            let summary = GroupSummary(groupID: try text(.groupID), name: try text(.group), epoch: try c.decode(UInt32.self, forKey: .epoch),
                                       members: try c.decode([GroupSummary.Member].self, forKey: .members), creator: try text(.creator))
            self = .groupChanged(summary, change: change, by: try c.decodeIfPresent(String.self, forKey: .by))
        case "boardDeleted":
            let id = try text(.postID), key = try text(.authorKey)
            guard let a = try? [UInt8](hex: id), let b = try? [UInt8](hex: key) else { throw Undecodable(description: "boardDeleted: \(id) \(key)") }
            self = .boardPostDeleted(postID: a, authorKey: b)
        case "left": self = .left(try peer(.peerID))
        case "stateExpired": self = .stateExpired(try peer(.peerID))
        case "rejected":
            let peerText = try c.decodeIfPresent(String.self, forKey: .peerID)
            self = .rejected(Rejection(try c.decode(Rejection.Kind.self, forKey: .kind), peer: peerText.flatMap(PeerID.init(hex:)), try text(.reason)))
        case "state": self = .state(try peerState())
        case "sos": self = .sos(try peerState())
        default: throw Undecodable(description: "not a node event: \(name)")
        }
    }
}

/// How a group we belong to changed (``NodeEvent/groupChanged(_:change:by:)``).
public enum GroupChange: String, Hashable, Sendable, Codable {
    case created, joined, updated, removed, left

    /// What a person is told.
    public func sentence(group name: String, by: String?, members: [String] = []) -> String {
        let group = "'\(DisplayText.clean(name))'"
        let who = members.isEmpty ? "" : ": " + members.map(DisplayText.clean).joined(separator: ", ")
        switch self {
        case .created: return "you made group \(group)"
        case .joined: return "you were added to group \(group)" + (by.map { " by \(DisplayText.clean($0))" } ?? "") + who
        case .updated: return "group \(group) has a new key" + (members.isEmpty ? "" : " and is now" + who.dropFirst())
        case .removed: return "you were removed from group \(group)"
        case .left: return "you left group \(group)"
        }
    }
}
