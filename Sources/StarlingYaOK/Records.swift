import StarlingCrypto
import StarlingWire

/// A contact: their signed card and what we decided about them.
public struct ContactRecord: Codable, Hashable, Sendable {
    public var cardBytes: [UInt8]
    public var verified: Bool
    public var favorite: Bool
    public var blocked: Bool
    public var addedAt: Double

    public init(card: ContactCard, verified: Bool = false, favorite: Bool = false, blocked: Bool = false, addedAt: Double) {
        cardBytes = card.bytes
        self.verified = verified
        self.favorite = favorite
        self.blocked = blocked
        self.addedAt = addedAt
    }

    /// The card, verified again on every read (a value that does not verify
    /// never reaches a person).
    public var card: ContactCard? { try? ContactCard(bytes: cardBytes) }
}

/// A trust decision about a mesh peer known by its fingerprint (SHA-256 of
/// its Noise key), whether or not it is a Ya OK contact.
public struct TrustRecord: Codable, Hashable, Sendable {
    public var fingerprint: String
    public var nickname: String?
    public var verified: Bool
    public var favorite: Bool
    public var blocked: Bool
    public var updatedAt: Double
    /// The Nostr key this peer told us (`[FAVORITED]:npub1…` over its Noise
    /// session), and how messages to it are wrapped there ("bitchat", the
    /// apps' envelope, or "standard" NIP-17); nil: none told.
    public var npub: String?
    public var nostrVariant: String?
    /// Whether this peer made us a favourite (its last notice said so).
    public var favoritesUs: Bool?

    public init(fingerprint: String, nickname: String? = nil, verified: Bool = false, favorite: Bool = false,
                blocked: Bool = false, updatedAt: Double, npub: String? = nil, nostrVariant: String? = nil, favoritesUs: Bool? = nil) {
        self.fingerprint = fingerprint
        self.nickname = nickname
        self.verified = verified
        self.favorite = favorite
        self.blocked = blocked
        self.updatedAt = updatedAt
        self.npub = npub
        self.nostrVariant = nostrVariant
        self.favoritesUs = favoritesUs
    }
}

/// A private conversation with a mesh peer who is not a contact, known by
/// the Noise key of its sessions: kept so that its history outlives a restart.
public struct ConversationRecord: Codable, Hashable, Sendable {
    /// The conversation's ID, which its messages are stored under.
    public var id: UserID
    /// The peer's fingerprint (hex).
    public var fingerprint: String
    public var nickname: String
    /// When a message last came or went, Unix seconds.
    public var updatedAt: Double
    /// The peer's Noise static key (hashing to `fingerprint`), when a verified
    /// announce or a drop's seal gave it: a message for them while they are
    /// away is sealed to it as a courier drop. nil in records kept before.
    public var noiseKey: [UInt8]?

    public init(id: UserID, fingerprint: String, nickname: String, updatedAt: Double, noiseKey: [UInt8]? = nil) {
        self.id = id
        self.fingerprint = fingerprint
        self.nickname = nickname
        self.updatedAt = updatedAt
        self.noiseKey = noiseKey
    }
}

/// A message as a conversation's history gives it: the record, and where this
/// node stored it (its place in the conversation's order of storing). A page
/// of older messages is the one before the smallest `position` held.
public struct HistoryEntry: Hashable, Sendable {
    public var position: Int64
    public var record: MessageRecord

    public init(position: Int64, record: MessageRecord) {
        self.position = position
        self.record = record
    }
}

/// A message in a conversation with a contact.
public struct MessageRecord: Codable, Hashable, Sendable {
    public var id: UserID
    public var contact: UserID
    public var outgoing: Bool
    public var text: String
    /// The sender's timestamp, Unix milliseconds.
    public var timestamp: UInt64
    /// When it arrived (incoming) or was written (outgoing), Unix seconds.
    public var recordedAt: Double
    /// Outgoing messages: where they are.
    public var progress: MessageProgress?
    /// How it came or went, by the route's name (``route`` reads it typed).
    public var transport: String?
    /// The transport's own ID for it (a bitchat message ID), so that its
    /// receipts find it after a restart.
    public var transportID: String?
    /// Incoming messages: when the person saw it (nil: not yet); a read
    /// receipt goes then, not on arrival.
    public var readAt: Double?
    /// Incoming group messages: who wrote it, as the roster named them when
    /// it came (`name? 03a107bf` when only claimed); nil in a private
    /// conversation (its peer is the author) and in records kept before.
    public var author: String?
    /// A file sent or received in this conversation (its text is the file's
    /// name); nil for a text message and in records kept before.
    public var file: FileAttachment?

    public init(id: UserID, contact: UserID, outgoing: Bool, text: String, timestamp: UInt64, recordedAt: Double,
                progress: MessageProgress? = nil, transport: String? = nil, transportID: String? = nil) {
        self.id = id
        self.contact = contact
        self.outgoing = outgoing
        self.text = text
        self.timestamp = timestamp
        self.recordedAt = recordedAt
        self.progress = progress
        self.transport = transport
        self.transportID = transportID
    }

    /// Waiting for a transport to take it: never handed over yet
    /// (routing), or to be tried again (retrying). A message in `sending` is
    /// the transport's until its receipt or failure.
    public var isPending: Bool {
        guard outgoing, let state = progress?.state else { return false }
        return state == .composing || state == .encrypting || state == .routing || state == .retrying
    }
}

/// A file in a conversation's history: what it was, which transfer carried
/// it, and where the received copy was saved.
public struct FileAttachment: Codable, Hashable, Sendable {
    public var name: String
    public var size: Int
    public var mimeType: String?
    /// The transfer's ID (its receipts name it).
    public var transferID: String
    /// Received files: where the copy was saved.
    public var path: String?
    /// A voice note's length (its file is AAC in ADTS, `audio/aac`); nil for any other file.
    public var durationMillis: Int?

    public init(name: String, size: Int, mimeType: String? = nil, transferID: String, path: String? = nil) {
        self.name = name
        self.size = size
        self.mimeType = mimeType
        self.transferID = transferID
        self.path = path
    }
}

/// A message that failed its signature or did not decrypt (seed §8.2).
public struct Incident: Codable, Hashable, Sendable {
    public enum Kind: String, Codable, Sendable { case badSignature, decryptionFailed }
    /// Who it claimed to come from (a user ID or fingerprint, as text).
    public var sender: String
    public var kind: Kind
    /// BLAKE3 of the packet, hex.
    public var packetHash: String
    public var at: Double

    public init(sender: String, kind: Kind, packet: [UInt8], at: Double) {
        self.sender = sender
        self.kind = kind
        packetHash = BLAKE3.hash(packet).hexString
        self.at = at
    }
}

/// A private group as the store keeps it: the creator-signed state we hold
/// (its key included; docs/PROTOCOL.md, "Groups"), or, for a group we left,
/// only the epoch we left at.
public struct GroupRecord: Codable, Hashable, Sendable {
    public var groupID: [UInt8]
    /// The state payload (Noise 0x06's body); nil for a group we left.
    public var state: [UInt8]?
    public var leftAtEpoch: UInt32?

    public init(groupID: [UInt8], state: [UInt8]? = nil, leftAtEpoch: UInt32? = nil) {
        self.groupID = groupID
        self.state = state
        self.leftAtEpoch = leftAtEpoch
    }
}

/// The way a message went or came: one type for every face to test and word
/// (its `name` is what the store and the API keep).
public enum MessageRoute: Hashable, Sendable, CustomStringConvertible {
    case mesh
    case nostr
    /// The Ya OK server.
    case yaokServer
    /// A courier drop, carried by neighbours.
    case courier
    /// An off-mesh transport an application added, by its name.
    case other(String)

    public init(name: String) {
        switch name {
        case "mesh": self = .mesh
        case "nostr": self = .nostr
        case "yaok-server": self = .yaokServer
        case "courier": self = .courier
        default: self = .other(name)
        }
    }

    public var name: String {
        switch self {
        case .mesh: "mesh"
        case .nostr: "nostr"
        case .yaokServer: "yaok-server"
        case .courier: "courier"
        case let .other(n): n
        }
    }

    /// In words, after "via".
    public var description: String {
        switch self {
        case .yaokServer: "the Ya OK server"
        default: name
        }
    }

    /// Which attempt counter a try on it advances: the mesh, Nostr, the others.
    public var attemptIndex: Int {
        switch self {
        case .mesh: 0
        case .nostr: 1
        default: 2
        }
    }
}

extension MessageRecord {
    /// ``transport`` as a route.
    public var route: MessageRoute? {
        get { transport.map(MessageRoute.init(name:)) }
        set { transport = newValue?.name }
    }
}
