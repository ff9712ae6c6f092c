import Foundation

/// One event of the messenger as every face receives it: a JSON object whose
/// `"event"` names the kind, its other fields the kind's payload. The daemon's
/// event stream (with a `"seq"` beside them), `listen --json` in process and
/// through a daemon, and the page all carry exactly these.
public enum APIEvent: Hashable, Sendable {
    // The messenger's own.
    /// The store opened: its trust decisions known (`contacts`, `pending`), or
    /// opened again after a lock (`storedMeanwhile`).
    case store(Store)
    case privateMessage(PrivateMessage)
    /// Our private message recorded, and where it went (`message.via`; none: queued).
    case sent(MessageChange)
    /// One of our messages moved (sent, delivered, read, retrying, failed).
    case progress(MessageChange)
    /// Our message for someone away went as a courier drop to `couriers` neighbours.
    case dropDeposited(DropDeposited)
    /// Messages that waited for a route go now.
    case sendingWaiting(SendingWaiting)
    case peer(Peer)
    case left(PeerGone)
    case session(Session)
    case favorited(Favorited)
    case trust(Trust)
    case warning(Words)
    /// A change the store did not take.
    case notSaved(Words)
    /// Words from a transport (a relay connected or lost).
    case notice(Words)
    /// Events a client missed (the daemon keeps the last 10,000).
    case gap(Gap)
    case channelMessage(ChannelMessage)
    case channelPresence(ChannelPresence)
    case channelFailed(ChannelFailed)
    case request(Request)
    // The node's, as the messenger passes them on.
    case started(Started)
    case linkUp(Link)
    case linkDown(Link)
    case capabilities(Capabilities)
    case message(PublicMessage)
    case gatewayMessage(GatewayMessage)
    case bridgedMessage(BridgedMessage)
    case delivered(Receipt)
    case read(Receipt)
    case sentOffMesh(SentOffMesh)
    case failed(Failed)
    case held(Held)
    case fileProgress(FileProgress)
    case fileSending(FileSending)
    case fileSent(FileSent)
    case fileOffered(FileOffered)
    case fileReceived(FileReceived)
    case rejected(Rejected)
    case state(APIPeerState)
    case sos(APIPeerState)
    case stateExpired(PeerGone)
    case pong(Pong)
    case pinned(Pinned)
    case board(BoardPost)
    case boardDeleted(BoardDeleted)
    case voice(Voice)
    case groupMessage(GroupMessage)
    case group(GroupChanged)
    case recognized(Recognized)
    case vouched(Vouched)

    /// The store opened (`contacts`, `pending`; or `storedMeanwhile` after a lock), or closed (`open` false, `reason`).
    public struct Store: Codable, Hashable, Sendable {
        public var open: Bool
        public var contacts: Int?
        public var pending: Int?
        public var storedMeanwhile: Int?
        public var reason: String?
        public init(open: Bool, contacts: Int? = nil, pending: Int? = nil, storedMeanwhile: Int? = nil, reason: String? = nil) {
            self.open = open
            self.contacts = contacts
            self.pending = pending
            self.storedMeanwhile = storedMeanwhile
            self.reason = reason
        }
    }

    /// A private message for us, recorded in its conversation (`message`), from
    /// the holder of `fingerprint` (authenticated: its session, or a courier
    /// drop's seal); `via`: the way it came when not the mesh ("nostr", "courier").
    public struct PrivateMessage: Codable, Hashable, Sendable {
        public var conversation: String
        public var from: String
        public var fingerprint: String
        public var nickname: String
        public var text: String
        public var messageID: String
        public var hops: Int
        public var via: String?
        public var message: APIMessage
        public init(conversation: String, from: String, fingerprint: String, nickname: String, text: String, messageID: String, hops: Int,
                    via: String?, message: APIMessage) {
            self.conversation = conversation
            self.from = from
            self.fingerprint = fingerprint
            self.nickname = nickname
            self.text = text
            self.messageID = messageID
            self.hops = hops
            self.via = via
            self.message = message
        }
    }

    public struct MessageChange: Codable, Hashable, Sendable {
        public var conversation: String
        public var message: APIMessage
        public init(conversation: String, message: APIMessage) {
            self.conversation = conversation
            self.message = message
        }
    }

    public struct DropDeposited: Codable, Hashable, Sendable {
        public var conversation: String
        public var messageID: String
        public var couriers: Int
        public var message: APIMessage
        public init(conversation: String, messageID: String, couriers: Int, message: APIMessage) {
            self.conversation = conversation
            self.messageID = messageID
            self.couriers = couriers
            self.message = message
        }
    }

    public struct SendingWaiting: Codable, Hashable, Sendable {
        public var conversation: String
        public var count: Int
        public init(conversation: String, count: Int) {
            self.conversation = conversation
            self.count = count
        }
    }

    /// A peer's verified announce, first heard (or renamed).
    public struct Peer: Codable, Hashable, Sendable {
        public var peerID: String
        public var nickname: String
        public var hops: Int
        public init(peerID: String, nickname: String, hops: Int) {
            self.peerID = peerID
            self.nickname = nickname
            self.hops = hops
        }
    }

    public struct PeerGone: Codable, Hashable, Sendable {
        public var peerID: String
        public init(peerID: String) { self.peerID = peerID }
    }

    /// An encrypted session with a peer, whose key's fingerprint the handshake proved.
    public struct Session: Codable, Hashable, Sendable {
        public var peerID: String
        public var nickname: String
        public var fingerprint: String
        public init(peerID: String, nickname: String, fingerprint: String) {
            self.peerID = peerID
            self.nickname = nickname
            self.fingerprint = fingerprint
        }
    }

    /// A peer made us a favourite (`on`), or no longer; `overNostr`: both are favourites and Nostr carries it.
    public struct Favorited: Codable, Hashable, Sendable {
        public var from: String
        public var nickname: String
        public var on: Bool
        public var npub: String?
        public var overNostr: Bool
        public init(from: String, nickname: String, on: Bool, npub: String?, overNostr: Bool) {
            self.from = from
            self.nickname = nickname
            self.on = on
            self.npub = npub
            self.overNostr = overNostr
        }
    }

    public struct Trust: Codable, Hashable, Sendable {
        public var fingerprint: String
        public var name: String
        public var blocked: Bool
        public var favorite: Bool
        public var verified: Bool
        public init(fingerprint: String, name: String, blocked: Bool, favorite: Bool, verified: Bool) {
            self.fingerprint = fingerprint
            self.name = name
            self.blocked = blocked
            self.favorite = favorite
            self.verified = verified
        }
    }

    public struct Words: Codable, Hashable, Sendable {
        public var text: String
        public init(text: String) { self.text = text }
    }

    public struct Gap: Codable, Hashable, Sendable {
        public var missed: UInt64
        public init(missed: UInt64) { self.missed = missed }
    }

    /// A location channel's message over Nostr (signed by `publicKey`; `nickname` is its claim).
    public struct ChannelMessage: Codable, Hashable, Sendable {
        public var geohash: String
        public var publicKey: String
        public var nickname: String?
        public var text: String
        public var createdAt: Int64
        public var eventID: String
        public init(geohash: String, publicKey: String, nickname: String?, text: String, createdAt: Int64, eventID: String) {
            self.geohash = geohash
            self.publicKey = publicKey
            self.nickname = nickname
            self.text = text
            self.createdAt = createdAt
            self.eventID = eventID
        }
    }

    public struct ChannelPresence: Codable, Hashable, Sendable {
        public var geohash: String
        public var publicKey: String
        public init(geohash: String, publicKey: String) {
            self.geohash = geohash
            self.publicKey = publicKey
        }
    }

    public struct ChannelFailed: Codable, Hashable, Sendable {
        public var reason: String
        public init(reason: String) { self.reason = reason }
    }

    /// A stranger's request as it is now (as `GET /v1/requests` lists it), with its
    /// newest message's `text` and `createdAt`, and how many are `waiting`.
    public struct Request: Codable, Hashable, Sendable {
        public var npub: String
        public var publicKey: String
        public var firstAt: Double
        public var lastAt: Double
        public var messages: [APIRequestMessage]
        public var text: String
        public var createdAt: Int64
        public var waiting: Int
        public init(_ r: APIRequest) {
            npub = r.npub
            publicKey = r.publicKey
            firstAt = r.firstAt
            lastAt = r.lastAt
            messages = r.messages
            text = r.messages.last?.text ?? ""
            createdAt = r.messages.last?.createdAt ?? 0
            waiting = r.messages.count
        }
        public var request: APIRequest { APIRequest(npub: npub, publicKey: publicKey, firstAt: firstAt, lastAt: lastAt, messages: messages) }
    }

    public struct Started: Codable, Hashable, Sendable {
        public var port: UInt16?
        public var peerID: String
        public var nickname: String
        public init(port: UInt16?, peerID: String, nickname: String) {
            self.port = port
            self.peerID = peerID
            self.nickname = nickname
        }
    }

    public struct Link: Codable, Hashable, Sendable {
        public var address: String
        public init(address: String) { self.address = address }
    }

    /// What a peer's announce says it can do: names and bits (absent: it announces none).
    public struct Capabilities: Codable, Hashable, Sendable {
        public var peerID: String
        public var capabilities: [String]?
        public var bits: UInt64?
        public init(peerID: String, capabilities: [String]?, bits: UInt64?) {
            self.peerID = peerID
            self.capabilities = capabilities
            self.bits = bits
        }
    }

    /// A public message, signed by the key the sender's verified announce carries;
    /// `history`: replayed by a neighbour's sync.
    public struct PublicMessage: Codable, Hashable, Sendable {
        public var from: String
        public var nickname: String?
        public var text: String
        public var hops: Int
        public var timestamp: UInt64
        public var history: Bool?
        public init(from: String, nickname: String?, text: String, hops: Int, timestamp: UInt64, history: Bool?) {
            self.from = from
            self.nickname = nickname
            self.text = text
            self.hops = hops
            self.timestamp = timestamp
            self.history = history
        }
    }

    /// A location channel's message a gateway carried into the mesh.
    public struct GatewayMessage: Codable, Hashable, Sendable {
        public var geohash: String
        public var eventID: String
        public var pubkey: String
        public var nickname: String?
        public var text: String
        public var createdAt: Int64
        public var hops: Int
        public init(geohash: String, eventID: String, pubkey: String, nickname: String?, text: String, createdAt: Int64, hops: Int) {
            self.geohash = geohash
            self.eventID = eventID
            self.pubkey = pubkey
            self.nickname = nickname
            self.text = text
            self.createdAt = createdAt
            self.hops = hops
        }
    }

    /// A public message from another mesh that bridges carried.
    public struct BridgedMessage: Codable, Hashable, Sendable {
        public var cell: String
        public var eventID: String
        public var pubkey: String
        public var nickname: String?
        public var text: String
        public var createdAt: Int64
        public var radioID: String?
        public var hops: Int
        public init(cell: String, eventID: String, pubkey: String, nickname: String?, text: String, createdAt: Int64, radioID: String?, hops: Int) {
            self.cell = cell
            self.eventID = eventID
            self.pubkey = pubkey
            self.nickname = nickname
            self.text = text
            self.createdAt = createdAt
            self.radioID = radioID
            self.hops = hops
        }
    }

    /// A receipt: `messageID` reached (delivered) or was shown to (read) `by`.
    public struct Receipt: Codable, Hashable, Sendable {
        public var messageID: String
        public var by: String
        public init(messageID: String, by: String) {
            self.messageID = messageID
            self.by = by
        }
    }

    public struct SentOffMesh: Codable, Hashable, Sendable {
        public var messageID: String
        public var to: String
        public var via: String
        public init(messageID: String, to: String, via: String) {
            self.messageID = messageID
            self.to = to
            self.via = via
        }
    }

    public struct Failed: Codable, Hashable, Sendable {
        public var messageID: String
        public var to: String
        public init(messageID: String, to: String) {
            self.messageID = messageID
            self.to = to
        }
    }

    public struct Held: Codable, Hashable, Sendable {
        public var messageID: String
        public var `for`: String
        public init(messageID: String, for peer: String) {
            self.messageID = messageID
            self.for = peer
        }
    }

    public struct FileProgress: Codable, Hashable, Sendable {
        public var from: String
        public var received: Int
        public var total: Int
        public init(from: String, received: Int, total: Int) {
            self.from = from
            self.received = received
            self.total = total
        }
    }

    public struct FileSending: Codable, Hashable, Sendable {
        public var transferID: String
        public var to: String
        public var sent: Int
        public var total: Int
        public init(transferID: String, to: String, sent: Int, total: Int) {
            self.transferID = transferID
            self.to = to
            self.sent = sent
            self.total = total
        }
    }

    /// Our file went out in `total` fragments (0: offered over the network).
    public struct FileSent: Codable, Hashable, Sendable {
        public var transferID: String
        public var to: String
        public var total: Int
        public init(transferID: String, to: String, total: Int) {
            self.transferID = transferID
            self.to = to
            self.total = total
        }
    }

    public struct FileOffered: Codable, Hashable, Sendable {
        public var from: String
        public var transferID: String
        public var name: String
        public var size: Int
        public var mimeType: String?
        public init(from: String, transferID: String, name: String, size: Int, mimeType: String?) {
            self.from = from
            self.transferID = transferID
            self.name = name
            self.size = size
            self.mimeType = mimeType
        }
    }

    public struct FileReceived: Codable, Hashable, Sendable {
        public var from: String
        public var name: String
        public var size: Int
        public var path: String
        public var transferID: String
        public init(from: String, name: String, size: Int, path: String, transferID: String) {
            self.from = from
            self.name = name
            self.size = size
            self.path = path
            self.transferID = transferID
        }
    }

    /// Something refused, and why; `diagnostic`: internals for a log, not for a person's screen.
    public struct Rejected: Codable, Hashable, Sendable {
        public var kind: String
        public var reason: String
        public var peerID: String?
        public var diagnostic: Bool?
        public init(kind: String, reason: String, peerID: String?, diagnostic: Bool?) {
            self.kind = kind
            self.reason = reason
            self.peerID = peerID
            self.diagnostic = diagnostic
        }
    }

    public struct Pong: Codable, Hashable, Sendable {
        public var from: String
        public var rttMillis: UInt64
        public var hops: Int
        public init(from: String, rttMillis: UInt64, hops: Int) {
            self.from = from
            self.rttMillis = rttMillis
            self.hops = hops
        }
    }

    public struct Pinned: Codable, Hashable, Sendable {
        public var fingerprint: String
        public var signingKey: String
        public init(fingerprint: String, signingKey: String) {
            self.fingerprint = fingerprint
            self.signingKey = signingKey
        }
    }

    /// A post on the mesh board, signed by `authorKey`; `author`: the verified
    /// name (absent when the key is no peer's we know), `shownName` what a face shows.
    public struct BoardPost: Codable, Hashable, Sendable {
        public var postID: String
        public var authorKey: String
        public var nickname: String
        public var text: String
        public var geohash: String
        public var urgent: Bool
        public var createdAt: UInt64
        public var expiresAt: UInt64
        public var flags: UInt8
        public var signature: String
        public var ours: Bool
        public var shownName: String
        public var author: String?
        /// It came from another mesh through our bridge (absent otherwise).
        public var crossed: Bool?
        /// The packet's sender (not proven to be its author) and its hops; absent in lists.
        public var from: String?
        public var hops: Int?
        public init(postID: String, authorKey: String, nickname: String, text: String, geohash: String, urgent: Bool, createdAt: UInt64,
                    expiresAt: UInt64, flags: UInt8, signature: String, ours: Bool, shownName: String, author: String?, crossed: Bool?,
                    from: String?, hops: Int?) {
            self.postID = postID
            self.authorKey = authorKey
            self.nickname = nickname
            self.text = text
            self.geohash = geohash
            self.urgent = urgent
            self.createdAt = createdAt
            self.expiresAt = expiresAt
            self.flags = flags
            self.signature = signature
            self.ours = ours
            self.shownName = shownName
            self.author = author
            self.crossed = crossed
            self.from = from
            self.hops = hops
        }
    }

    public struct BoardDeleted: Codable, Hashable, Sendable {
        public var postID: String
        public var authorKey: String
        public init(postID: String, authorKey: String) {
            self.postID = postID
            self.authorKey = authorKey
        }
    }

    /// A voice burst, saved as AAC (ADTS) at `path`, `size` bytes; its bytes
    /// are `GET /v1/files/{transferID}`.
    public struct Voice: Codable, Hashable, Sendable {
        public var from: String
        public var path: String
        public var durationMillis: Int
        public var `private`: Bool
        public var text: String
        public var transferID: String
        public var size: Int
        public init(from: String, path: String, durationMillis: Int, private isPrivate: Bool, text: String, transferID: String, size: Int) {
            self.transferID = transferID
            self.size = size
            self.from = from
            self.path = path
            self.durationMillis = durationMillis
            self.private = isPrivate
            self.text = text
        }
    }

    /// A message in a group we belong to, signed by the member `fingerprint`
    /// (`nickname`: the roster's name); the group's fields beside it (`group` is its name).
    public struct GroupMessage: Codable, Hashable, Sendable {
        public var group: String
        public var groupID: String
        public var epoch: UInt32
        public var members: [APIGroupMember]
        public var creator: String
        public var messageID: String
        public var fingerprint: String
        public var nickname: String
        public var text: String
        public var timestamp: UInt64
        public var hops: Int
        public var history: Bool
        public init(group: APIGroup, messageID: String, fingerprint: String, nickname: String, text: String, timestamp: UInt64, hops: Int,
                    history: Bool) {
            self.group = group.name
            groupID = group.groupID
            epoch = group.epoch
            members = group.members
            creator = group.creator
            self.messageID = messageID
            self.fingerprint = fingerprint
            self.nickname = nickname
            self.text = text
            self.timestamp = timestamp
            self.hops = hops
            self.history = history
        }
        public var summary: APIGroup { APIGroup(groupID: groupID, name: group, epoch: epoch, members: members, creator: creator) }
    }

    /// A group we belong to changed (created, joined, updated, removed, left); `text` says it in words.
    public struct GroupChanged: Codable, Hashable, Sendable {
        public var group: String
        public var groupID: String
        public var epoch: UInt32
        public var members: [APIGroupMember]
        public var creator: String
        public var change: String
        public var by: String?
        public var text: String?
        public init(group: APIGroup, change: String, by: String?, text: String?) {
            self.group = group.name
            groupID = group.groupID
            epoch = group.epoch
            members = group.members
            creator = group.creator
            self.change = change
            self.by = by
            self.text = text
        }
        public var summary: APIGroup { APIGroup(groupID: groupID, name: group, epoch: epoch, members: members, creator: creator) }
    }

    public struct Recognized: Codable, Hashable, Sendable {
        public var peerID: String
        public var fingerprint: String
        public var nickname: String?
        public var epoch: UInt32
        public var text: String?
        public init(peerID: String, fingerprint: String, nickname: String?, epoch: UInt32, text: String?) {
            self.peerID = peerID
            self.fingerprint = fingerprint
            self.nickname = nickname
            self.epoch = epoch
            self.text = text
        }
    }

    public struct Vouched: Codable, Hashable, Sendable {
        public var fingerprint: String
        public var by: String
        public var nickname: String?
        public var text: String?
        public init(fingerprint: String, by: String, nickname: String?, text: String?) {
            self.fingerprint = fingerprint
            self.by = by
            self.nickname = nickname
            self.text = text
        }
    }
}
