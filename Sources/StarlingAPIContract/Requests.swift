import Foundation

// What a client sends (request bodies), and the short answers that say what was done.

/// `POST /v1/contacts`: a contact code (`uri`, or a PNG of its QR code as `image`, base64), or an `npub`.
public struct APIAddContact: Codable, Hashable, Sendable {
    public var uri: String?
    public var npub: String?
    public var name: String?
    public var replace: Bool?
    public var image: String?
    public init(uri: String? = nil, npub: String? = nil, name: String? = nil, replace: Bool? = nil, image: String? = nil) {
        self.uri = uri
        self.npub = npub
        self.name = name
        self.replace = replace
        self.image = image
    }
}

/// `POST /v1/trust`: a decision (block, unblock, favourite, unfavourite, verify, unverify) and/or a Nostr variant.
public struct APITrustChange: Codable, Hashable, Sendable {
    public var fingerprint: String
    public var change: String?
    public var nickname: String?
    public var nostrVariant: String?
    public init(fingerprint: String, change: String? = nil, nickname: String? = nil, nostrVariant: String? = nil) {
        self.fingerprint = fingerprint
        self.change = change
        self.nickname = nickname
        self.nostrVariant = nostrVariant
    }
}

/// The decisions in effect about a key, after a change.
public struct APITrustState: Codable, Hashable, Sendable {
    public var fingerprint: String
    public var blocked: Bool
    public var favorite: Bool
    public var verified: Bool
    public init(fingerprint: String, blocked: Bool, favorite: Bool, verified: Bool) {
        self.fingerprint = fingerprint
        self.blocked = blocked
        self.favorite = favorite
        self.verified = verified
    }
}

/// `GET /v1/resolve?name=`: the conversation a name means, or the names it could mean.
public struct APIResolution: Codable, Hashable, Sendable {
    public var conversation: String?
    public var ambiguous: [String]?
    public init(conversation: String? = nil, ambiguous: [String]? = nil) {
        self.conversation = conversation
        self.ambiguous = ambiguous
    }
}

/// `POST /v1/conversations`: a peer here (`peerID`) or a key (`fingerprint`).
public struct APIOpenConversation: Codable, Hashable, Sendable {
    public var peerID: String?
    public var fingerprint: String?
    public init(peerID: String? = nil, fingerprint: String? = nil) {
        self.peerID = peerID
        self.fingerprint = fingerprint
    }
}

/// `POST /v1/conversations/ID/seen`: seen through this message's `id` (absent: everything).
public struct APISeen: Codable, Hashable, Sendable {
    public var through: String?
    public init(through: String? = nil) { self.through = through }
}

public struct APIUnread: Codable, Hashable, Sendable {
    public var unread: Int
    public init(unread: Int) { self.unread = unread }
}

/// `POST /v1/messages`: a private message to a name (a contact's or a peer's here).
public struct APISendMessage: Codable, Hashable, Sendable {
    public var to: String
    public var text: String
    public init(to: String, text: String) {
        self.to = to
        self.text = text
    }
}

/// A text to say (to everyone, to a group, in a location channel).
public struct APIText: Codable, Hashable, Sendable {
    public var text: String
    public init(text: String) { self.text = text }
}

public struct APISent: Codable, Hashable, Sendable {
    public var sent: Bool
    public init(sent: Bool) { self.sent = sent }
}

/// `POST /v1/files`: a small file, its bytes base64, to a peer here.
public struct APISendFile: Codable, Hashable, Sendable {
    public var to: String
    public var name: String
    public var content: String
    public init(to: String, name: String, content: String) {
        self.to = to
        self.name = name
        self.content = content
    }
}

/// A file on its way: its transfer ID (its receipts and events name it) and size.
public struct APITransfer: Codable, Hashable, Sendable {
    public var transferID: String
    public var size: Int
    public init(transferID: String, size: Int) {
        self.transferID = transferID
        self.size = size
    }
}

/// `POST /v1/groups`: a group made, its members invited (nicknames of peers here).
public struct APICreateGroup: Codable, Hashable, Sendable {
    public var name: String
    public var members: [String]?
    public init(name: String, members: [String]? = nil) {
        self.name = name
        self.members = members
    }
}

/// A nickname: a member to invite, or our new name.
public struct APINickname: Codable, Hashable, Sendable {
    public var nickname: String
    public init(nickname: String) { self.nickname = nickname }
}

public struct APIInvited: Codable, Hashable, Sendable {
    public var invited: String
    public init(invited: String) { self.invited = invited }
}

public struct APIRemoved: Codable, Hashable, Sendable {
    public var removed: String
    public init(removed: String) { self.removed = removed }
}

/// A group or a channel left.
public struct APILeft: Codable, Hashable, Sendable {
    public var left: String
    public init(left: String) { self.left = left }
}

/// `POST /v1/requests/NPUB/accept`: the contact's name.
public struct APIAcceptRequest: Codable, Hashable, Sendable {
    public var name: String
    public init(name: String) { self.name = name }
}

public struct APIAccepted: Codable, Hashable, Sendable {
    public var accepted: String
    public init(accepted: String) { self.accepted = accepted }
}

public struct APIBlocked: Codable, Hashable, Sendable {
    public var blocked: String
    public init(blocked: String) { self.blocked = blocked }
}

/// `POST /v1/board`: a post for `days` (1 to 7), `urgent` shown first.
public struct APIBoardPostRequest: Codable, Hashable, Sendable {
    public var text: String
    public var urgent: Bool?
    public var days: Int?
    public init(text: String, urgent: Bool? = nil, days: Int? = nil) {
        self.text = text
        self.urgent = urgent
        self.days = days
    }
}

public struct APIDeleted: Codable, Hashable, Sendable {
    public var deleted: String
    public init(deleted: String) { self.deleted = deleted }
}

/// `POST /v1/files/offers/ID`: fetch the file, or decline it.
public struct APIOfferAnswer: Codable, Hashable, Sendable {
    public var accept: Bool
    public init(accept: Bool) { self.accept = accept }
}

public struct APIOfferAnswered: Codable, Hashable, Sendable {
    public var transferID: String
    public var accepted: Bool
    public init(transferID: String, accepted: Bool) {
        self.transferID = transferID
        self.accepted = accepted
    }
}

/// `PUT /v1/settings`: absent fields stay as saved; `server` "" means none.
public struct APISettingsChange: Codable, Hashable, Sendable {
    public var server: String?
    public var nostr: Bool?
    public var proxy: String?
    public init(server: String? = nil, nostr: Bool? = nil, proxy: String? = nil) {
        self.server = server
        self.nostr = nostr
        self.proxy = proxy
    }
}

/// `POST /v1/store/unlock`: the PIN or passphrase (absent: the key file).
public struct APIUnlock: Codable, Hashable, Sendable {
    public var secret: String?
    public init(secret: String? = nil) { self.secret = secret }
}

public struct APIStoreState: Codable, Hashable, Sendable {
    public var storeOpen: Bool
    public init(storeOpen: Bool) { self.storeOpen = storeOpen }
}

/// `POST /v1/stately`: a state's name, or "clear" (an SOS ended); the answer: the state now.
public struct APIStateChange: Codable, Hashable, Sendable {
    public var state: String
    public init(state: String) { self.state = state }
}

public struct APIPinged: Codable, Hashable, Sendable {
    public var pinged: String
    public init(pinged: String) { self.pinged = pinged }
}

/// A location channel joined: its geohash.
/// A location channel joined.
public struct APIChannel: Codable, Hashable, Sendable {
    public var geohash: String
    public init(geohash: String) { self.geohash = geohash }
}

public struct APIJoined: Codable, Hashable, Sendable {
    public var joined: String
    public init(joined: String) { self.joined = joined }
}

/// A line `send --json` writes of its own, beside the events its message
/// causes: `sent` (what went: a message's `text` and `messageID`; a board post's
/// `postID`; a group's `group`; a file's `file`, `transferID`, `resumed`),
/// `queued` (at the Ya OK server: `via`, `online`), `kept` (`reason`: sent again later).
public struct APISendLine: Codable, Hashable, Sendable {
    public var event: String
    public var text: String?
    public var messageID: String?
    public var board: Bool?
    public var postID: String?
    public var group: String?
    public var file: String?
    public var transferID: String?
    public var resumed: Bool?
    public var via: String?
    public var online: Bool?
    public var reason: String?
    public init(event: String, text: String? = nil, messageID: String? = nil, board: Bool? = nil, postID: String? = nil, group: String? = nil,
                file: String? = nil, transferID: String? = nil, resumed: Bool? = nil, via: String? = nil, online: Bool? = nil, reason: String? = nil) {
        self.event = event
        self.text = text
        self.messageID = messageID
        self.board = board
        self.postID = postID
        self.group = group
        self.file = file
        self.transferID = transferID
        self.resumed = resumed
        self.via = via
        self.online = online
        self.reason = reason
    }
}

/// `PUT /v1/store/protection`: `protection` pin, passphrase or none (the key
/// file), its `secret`, and the `current` PIN or passphrase when there is one.
public struct APIProtectionChange: Codable, Hashable, Sendable {
    public var protection: String
    public var secret: String?
    public var current: String?
    public init(protection: String, secret: String? = nil, current: String? = nil) {
        self.protection = protection
        self.secret = secret
        self.current = current
    }
}

/// What protects the store now: pin, passphrase or none.
public struct APIProtection: Codable, Hashable, Sendable {
    public var protection: String
    public init(protection: String) { self.protection = protection }
}

/// A backup made: its file, and how many are kept (7 at most).
/// `POST /v1/store/restore`: a backup file (none: the newest good one), and the store's PIN or passphrase when it has one.
public struct APIRestore: Codable, Hashable, Sendable {
    public var from: String?
    public var secret: String?
    public init(from: String? = nil, secret: String? = nil) {
        self.from = from
        self.secret = secret
    }
}

/// The backup the store was restored from (messages after it are gone; the identity stays).
public struct APIRestored: Codable, Hashable, Sendable {
    public var restoredFrom: String
    public init(restoredFrom: String) { self.restoredFrom = restoredFrom }
}

public struct APIBackup: Codable, Hashable, Sendable {
    public var path: String
    public var kept: Int
    public init(path: String, kept: Int) {
        self.path = path
        self.kept = kept
    }
}
