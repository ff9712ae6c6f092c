import Foundation

// The API's objects (docs/API.md): what every face of the messenger reads and
// writes — the daemon's answers and event stream, `listen --json` in process
// and through a daemon, the page, the Swift client. Plain Codable values with
// no I/O, written once: the JSON is what the compiler synthesizes from them.

/// A message as a conversation's history keeps it.
public struct APIMessage: Codable, Hashable, Sendable {
    /// The record's ID (a UUID): a face names it to mark it seen.
    public var id: String
    public var conversation: String
    public var outgoing: Bool
    public var text: String
    /// The sender's time, milliseconds since 1970.
    public var timestamp: UInt64
    /// When this node recorded it, seconds since 1970.
    public var recordedAt: Double
    /// The ID the network knows it by (its receipts name it).
    public var messageID: String?
    /// The way it went or came: "mesh", "nostr", "courier", "yaok-server".
    public var via: String?
    /// Ours: queued, sending, sent, delivered, read, retrying, failed.
    public var state: String?
    /// Theirs: whether the person saw it.
    public var read: Bool?
    /// A group message's author as shown (the roster's name).
    public var author: String?
    public var file: APIFile?
    /// In a conversation's history: where this node stored it (its order of
    /// storing); the page of older messages is `?before=` the smallest held.
    public var position: Int64?

    public init(id: String, conversation: String, outgoing: Bool, text: String, timestamp: UInt64, recordedAt: Double, messageID: String? = nil,
                via: String? = nil, state: String? = nil, read: Bool? = nil, author: String? = nil, file: APIFile? = nil, position: Int64? = nil) {
        self.position = position
        self.id = id
        self.conversation = conversation
        self.outgoing = outgoing
        self.text = text
        self.timestamp = timestamp
        self.recordedAt = recordedAt
        self.messageID = messageID
        self.via = via
        self.state = state
        self.read = read
        self.author = author
        self.file = file
    }
}

/// A file a message carries (sent or received).
public struct APIFile: Codable, Hashable, Sendable {
    public var name: String
    public var size: Int
    public var transferID: String
    public var mimeType: String?
    /// Where it was saved (received files).
    public var path: String?
    /// A voice note's length (`mimeType` audio/aac); absent for any other file.
    public var durationMillis: Int?

    public init(name: String, size: Int, transferID: String, mimeType: String? = nil, path: String? = nil, durationMillis: Int? = nil) {
        self.durationMillis = durationMillis
        self.name = name
        self.size = size
        self.transferID = transferID
        self.mimeType = mimeType
        self.path = path
    }
}

/// A private group's member: their key's fingerprint and the roster's name.
public struct APIGroupMember: Codable, Hashable, Sendable {
    public var fingerprint: String
    public var nickname: String
    public init(fingerprint: String, nickname: String) {
        self.fingerprint = fingerprint
        self.nickname = nickname
    }
}

/// A private group (no key ever leaves the node).
public struct APIGroup: Codable, Hashable, Sendable {
    public var groupID: String
    public var name: String
    public var epoch: UInt32
    public var members: [APIGroupMember]
    public var creator: String
    public init(groupID: String, name: String, epoch: UInt32, members: [APIGroupMember], creator: String) {
        self.groupID = groupID
        self.name = name
        self.epoch = epoch
        self.members = members
        self.creator = creator
    }
}

/// One message of a stranger's request over Nostr.
public struct APIRequestMessage: Codable, Hashable, Sendable {
    public var text: String
    public var createdAt: Int64
    public var wrapID: String
    public init(text: String, createdAt: Int64, wrapID: String) {
        self.text = text
        self.createdAt = createdAt
        self.wrapID = wrapID
    }
}

/// A stranger's request over Nostr: who (npub and key) and what they wrote, oldest first.
public struct APIRequest: Codable, Hashable, Sendable {
    public var npub: String
    public var publicKey: String
    /// When the first and the newest came, seconds since 1970.
    public var firstAt: Double
    public var lastAt: Double
    public var messages: [APIRequestMessage]
    public init(npub: String, publicKey: String, firstAt: Double, lastAt: Double, messages: [APIRequestMessage]) {
        self.npub = npub
        self.publicKey = publicKey
        self.firstAt = firstAt
        self.lastAt = lastAt
        self.messages = messages
    }
}

/// A Stately state a peer broadcast (or our own).
public struct APIPeerState: Codable, Hashable, Sendable {
    public var peerID: String
    public var name: String
    /// The state's name (ok, help, sos …) and its emoji.
    public var state: String
    public var emoji: String
    public var hops: Int
    /// The sender's time, milliseconds since 1970.
    public var timestamp: UInt64
    public init(peerID: String, name: String, state: String, emoji: String, hops: Int, timestamp: UInt64) {
        self.peerID = peerID
        self.name = name
        self.state = state
        self.emoji = emoji
        self.hops = hops
        self.timestamp = timestamp
    }
}

/// The JSON every face writes: keys sorted, slashes as they are.
public enum APIJSONCoding {
    public static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }

    /// One value as a line of JSON (no newline).
    public static func data<T: Encodable>(_ value: T) throws -> Data { try encoder().encode(value) }
}
