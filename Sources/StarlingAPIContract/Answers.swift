import Foundation

// The daemon's answers (docs/API.md, "Calls"), one type each.

/// `GET /v1/status`: who this node is and what it holds now.
public struct APIStatus: Codable, Hashable, Sendable {
    public var peerID: String
    public var fingerprint: String
    public var nickname: String
    public var peers: Int
    public var sessions: Int
    public var storeOpen: Bool
    public var trustKnown: Bool
    /// The API's version (1).
    public var version: Int
    /// The last event's sequence number: `GET /v1/events?since=` it for what comes next.
    public var events: UInt64
    public var nostr: Bool
    public var udpPort: UInt16?
    /// Our messages waiting for a route (absent: the store is locked).
    public var pending: Int?
    /// The Ya OK server, when the node has one.
    public var server: String?
    public var npub: String?
    /// Seconds with no activity from any face after which a store with a PIN or passphrase closes (0: never).
    public var lockAfter: Double
    public init(peerID: String, fingerprint: String, nickname: String, peers: Int, sessions: Int, storeOpen: Bool, trustKnown: Bool, version: Int,
                events: UInt64, nostr: Bool, udpPort: UInt16?, pending: Int?, server: String?, npub: String?, lockAfter: Double) {
        self.lockAfter = lockAfter
        self.peerID = peerID
        self.fingerprint = fingerprint
        self.nickname = nickname
        self.peers = peers
        self.sessions = sessions
        self.storeOpen = storeOpen
        self.trustKnown = trustKnown
        self.version = version
        self.events = events
        self.nostr = nostr
        self.udpPort = udpPort
        self.pending = pending
        self.server = server
        self.npub = npub
    }
}

/// A peer the node hears (`GET /v1/peers`).
public struct APIPeer: Codable, Hashable, Sendable {
    public var peerID: String
    public var nickname: String
    public var fingerprint: String
    public var hops: Int
    public var neighbour: Bool
    public var blocked: Bool
    public var favorite: Bool
    public var verified: Bool
    public var capabilities: [String]?
    /// Peers we verified who vouch for this one (absent: none).
    public var vouchedBy: [String]?
    public init(peerID: String, nickname: String, fingerprint: String, hops: Int, neighbour: Bool, blocked: Bool, favorite: Bool, verified: Bool,
                capabilities: [String]?, vouchedBy: [String]?) {
        self.peerID = peerID
        self.nickname = nickname
        self.fingerprint = fingerprint
        self.hops = hops
        self.neighbour = neighbour
        self.blocked = blocked
        self.favorite = favorite
        self.verified = verified
        self.capabilities = capabilities
        self.vouchedBy = vouchedBy
    }
}

/// A peer known by its session only (`GET /v1/peers/ID/identity`).
public struct APIIdentity: Codable, Hashable, Sendable {
    public var fingerprint: String
    public var conversation: String
    public var name: String
    public var verified: Bool
    public init(fingerprint: String, conversation: String, name: String, verified: Bool) {
        self.fingerprint = fingerprint
        self.conversation = conversation
        self.name = name
        self.verified = verified
    }
}

/// A contact (`GET /v1/contacts`); with a card, the safety number we share.
public struct APIContact: Codable, Hashable, Sendable {
    /// card (a Ya OK contact code), nostr (an npub), peer (met on the mesh).
    public var kind: String
    public var conversation: String
    public var name: String
    public var fingerprint: String
    public var peerID: String
    public var verified: Bool
    public var favorite: Bool
    public var blocked: Bool
    public var favoritesUs: Bool
    public var userID: String?
    /// The contact code (yaok://…).
    public var card: String?
    public var safetyNumber: String?
    public var npub: String?
    public var nostrVariant: String?
    public init(kind: String, conversation: String, name: String, fingerprint: String, peerID: String, verified: Bool, favorite: Bool, blocked: Bool,
                favoritesUs: Bool, userID: String?, card: String?, safetyNumber: String?, npub: String?, nostrVariant: String?) {
        self.kind = kind
        self.conversation = conversation
        self.name = name
        self.fingerprint = fingerprint
        self.peerID = peerID
        self.verified = verified
        self.favorite = favorite
        self.blocked = blocked
        self.favoritesUs = favoritesUs
        self.userID = userID
        self.card = card
        self.safetyNumber = safetyNumber
        self.npub = npub
        self.nostrVariant = nostrVariant
    }
}

/// A trust decision kept about a key (`GET /v1/trust`).
public struct APITrust: Codable, Hashable, Sendable {
    public var fingerprint: String
    public var verified: Bool
    public var favorite: Bool
    public var blocked: Bool
    /// Seconds since 1970.
    public var updatedAt: Double
    public var nickname: String?
    public var npub: String?
    public var nostrVariant: String?
    public var favoritesUs: Bool?
    public init(fingerprint: String, verified: Bool, favorite: Bool, blocked: Bool, updatedAt: Double, nickname: String?, npub: String?,
                nostrVariant: String?, favoritesUs: Bool?) {
        self.fingerprint = fingerprint
        self.verified = verified
        self.favorite = favorite
        self.blocked = blocked
        self.updatedAt = updatedAt
        self.nickname = nickname
        self.npub = npub
        self.nostrVariant = nostrVariant
        self.favoritesUs = favoritesUs
    }
}

/// A conversation (`GET /v1/conversations`): a person's or a group's.
public struct APIConversation: Codable, Hashable, Sendable {
    public var id: String
    public var name: String
    public var unread: Int
    /// person or group.
    public var kind: String
    public var fingerprint: String?
    public var last: APIMessage?
    public var group: APIGroup?
    public init(id: String, name: String, unread: Int, kind: String, fingerprint: String?, last: APIMessage?, group: APIGroup?) {
        self.id = id
        self.name = name
        self.unread = unread
        self.kind = kind
        self.fingerprint = fingerprint
        self.last = last
        self.group = group
    }
}

/// Our contact card (`GET /v1/card`), its QR code as an SVG picture.
public struct APICard: Codable, Hashable, Sendable {
    public var uri: String
    public var userID: String
    public var displayName: String
    public var fingerprint: String
    public var qrSVG: String?
    public init(uri: String, userID: String, displayName: String, fingerprint: String, qrSVG: String?) {
        self.uri = uri
        self.userID = userID
        self.displayName = displayName
        self.fingerprint = fingerprint
        self.qrSVG = qrSVG
    }
}

/// The mesh as announces draw it (`GET /v1/mesh`): each peer's neighbours.
public struct APIMesh: Codable, Hashable, Sendable {
    public var me: String
    public var neighbours: [String: [String]]
    public init(me: String, neighbours: [String: [String]]) {
        self.me = me
        self.neighbours = neighbours
    }
}

/// A Stately state a face offers.
public struct APIStateKind: Codable, Hashable, Sendable {
    public var name: String
    public var emoji: String
    public var displayName: String
    public init(name: String, emoji: String, displayName: String) {
        self.name = name
        self.emoji = emoji
        self.displayName = displayName
    }
}

/// Our Stately state and the peers' (`GET /v1/stately`).
public struct APIStately: Codable, Hashable, Sendable {
    public var state: String
    public var intervalMillis: UInt64
    public var powerMode: String
    public var board: [APIPeerState]
    public var states: [APIStateKind]
    public init(state: String, intervalMillis: UInt64, powerMode: String, board: [APIPeerState], states: [APIStateKind]) {
        self.state = state
        self.intervalMillis = intervalMillis
        self.powerMode = powerMode
        self.board = board
        self.states = states
    }
}

/// A large file a peer offers over the network, waiting for an answer (`GET /v1/files/offers`).
public struct APIFileOffer: Codable, Hashable, Sendable {
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

/// The node's settings: a Ya OK server (absent: none), Nostr, the proxy.
public struct APISettings: Codable, Hashable, Sendable {
    public var server: String?
    public var nostr: Bool
    public var proxy: String
    public init(server: String?, nostr: Bool, proxy: String) {
        self.server = server
        self.nostr = nostr
        self.proxy = proxy
    }
}

/// `GET /v1/settings`: what runs, what is saved, what the command line set, and whether a restart is needed.
public struct APISettingsAnswer: Codable, Hashable, Sendable {
    public var inEffect: APISettings
    public var saved: APISettings?
    public var setOnCommandLine: [String]
    public var restartNeeded: Bool
    public init(inEffect: APISettings, saved: APISettings?, setOnCommandLine: [String], restartNeeded: Bool) {
        self.inEffect = inEffect
        self.saved = saved
        self.setOnCommandLine = setOnCommandLine
        self.restartNeeded = restartNeeded
    }
}

/// A refusal: `{"error": {"status": 404, "message": "…"}}`, its message one sentence that says what to do.
public struct APIErrorAnswer: Codable, Hashable, Sendable {
    public struct Body: Codable, Hashable, Sendable {
        public var status: Int
        public var message: String
        public init(status: Int, message: String) {
            self.status = status
            self.message = message
        }
    }
    public var error: Body
    public init(status: Int, message: String) { error = Body(status: status, message: message) }
}
