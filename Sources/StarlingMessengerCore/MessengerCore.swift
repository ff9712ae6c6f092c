import StarlingCrypto
import StarlingMesh
import StarlingNodeCore
import StarlingWire
import StarlingYaOK

/// The messenger without I/O: what a person means by "send this to bob",
/// "block carol", "I have read this", decided as one plain value, as
/// `NodeCore` decides for the mesh.
///
/// In: the node's events (with its view of the peers), the store's contents
/// when it opens, what the person does (send, seen, block …) and the time.
/// Out: ``Effect``s: commands for the node, writes for the store, contacts for
/// the off-mesh transports, and ``MessengerEvent``s for the faces (terminal,
/// web, daemon API), which render them and decide nothing.
///
/// The rules it keeps (docs/MESSENGER.md):
/// - Trust first. Nothing a block could hide is shown or acknowledged before
///   the store's trust decisions are known: it waits (1,000 events at most;
///   the node holds private messages unacknowledged). A blocked key is blocked
///   whatever arrives first.
/// - Every private conversation is kept, with a contact or not (1,024
///   conversations with peers who are not contacts; the store's 10,000
///   messages), with the seed's message states.
/// - One route rule for contacts and favourites: the mesh, else an off-mesh
///   transport that reaches them (Nostr, then the Ya OK server), else the
///   store's queue until one does.
/// - Read receipts go when the person has seen the message (``markSeen``), never
///   on arrival.
public struct MessengerCore: Sendable {
    public struct Configuration: Sendable {
        /// Whether Nostr carries messages for mutual favourites (the Nostr transport is there).
        public var nostr = false
        /// The Ya OK server's name, when there is one.
        public var server: String?
        /// Whether favourites that appear are told our npub (not for a one-shot send).
        public var tellsFavourites = true
        /// Events held while trust is not known.
        public var maxHeld = 1_000
        /// Store writes held while the store is locked.
        public var maxHeldWrites = 1_000
        /// Conversations with peers who are not contacts, kept in memory.
        public var maxConversations = 1_024
        /// Messages of each conversation kept in memory (the store keeps more).
        public var recentPerConversation = 200
        /// Our npub, told to favourites (nil: no Nostr key).
        public var npub: String?
        public init() {}
    }

    public enum Effect: Sendable {
        case node(NodeCommand)
        case store(StoreWrite)
        case offMesh(OffMeshCommand)
        case event(MessengerEvent)
    }

    public enum NodeCommand: Sendable, Equatable {
        case sendPrivate(String, to: PeerID, messageID: String)
        case sendReadReceipt(String, to: PeerID)
        case block(Fingerprint)
        case unblock(Fingerprint)
        case setFavorite(Fingerprint, Bool)
        case setVerified(Fingerprint, Bool)
        case pin([UInt8], for: Fingerprint)
        /// Trust decisions are loaded: what the node held for them goes on.
        case trustDecided
        /// An offer of a large file from a blocked person: declined, never asked about.
        case declineFileOffer(String)
        /// The groups the store kept go to the node (which checks them again).
        case restoreGroups([GroupRecord])
        /// A message for someone away, sealed to their Noise key as a courier
        /// drop and handed to the neighbours here (``NodeEvent/dropDeposited`` says how many).
        case sendDrop(String, toNoiseKey: [UInt8], messageID: String)
    }

    public enum OffMeshCommand: Sendable, Equatable {
        /// Nostr reaches this peer at this npub (nil: no longer), wrapped this way.
        case nostrContact(PeerID, npub: String?, variant: String)
        /// The Ya OK server reaches this peer as this contact (nil: no longer).
        case serverContact(PeerID, card: [UInt8]?)
        /// These gift wraps were answered (a request accepted or blocked): kept as opened.
        case nostrOpened([String])
    }

    public enum StoreWrite: Sendable, Equatable {
        case insertMessage(MessageRecord)
        case updateMessage(MessageRecord)
        case trust(TrustRecord)
        case contact(ContactRecord)
        case conversation(ConversationRecord)
        case pin(Fingerprint, [UInt8])
        /// The node's groups changed: the store keeps them as they are now
        /// (their states, keys included, and the groups left; the runtime reads them from the node).
        case groups
        /// A receipt for one of our messages no longer among the conversation's
        /// recent ones in memory: the store moves it up to `state` (never down).
        case receipt(UserID, conversation: UserID, MessageState, at: Double)
        /// One person, one conversation: the messages of the first conversation
        /// move to the second, and the first's record goes.
        case mergeConversation(UserID, into: UserID)
    }

    /// What the store holds when it opens.
    public struct StoreContents: Sendable {
        public var contacts: [ContactRecord] = []
        public var trust: [TrustRecord] = []
        public var pins: [(Fingerprint, [UInt8])] = []
        public var conversations: [ConversationRecord] = []
        /// Each conversation's recent messages, oldest first.
        public var messages: [UserID: [MessageRecord]] = [:]
        public var pending: [MessageRecord] = []
        /// Private groups, and groups left.
        public var groups: [GroupRecord] = []
        /// Favourites the node was started with (besides the store's): kept as trust decisions.
        public var favorites: Set<Fingerprint> = []
        public init() {}
    }

    public let identity: Identity
    public var configuration: Configuration

    // MARK: State

    /// Whether the store's trust decisions are known (it has opened once).
    public internal(set) var trustKnown = false
    /// Whether the store is open now.
    public internal(set) var storeOpen = false
    var held: [(NodeEvent, [PeerID: NodeCore.PeerInfo])] = []
    public internal(set) var heldDropped = 0
    var heldWrites: [StoreWrite] = []
    var effects: [Effect] = []
    /// Strangers' messages over Nostr, waiting for the person's answer (``StrangerRequests``).
    public internal(set) var requests = StrangerRequests()

    /// Contacts (Ya OK cards), by conversation ID (their user ID).
    public internal(set) var contacts: [UserID: ContactRecord] = [:] {
        didSet { reindexContacts(from: oldValue) }
    }
    /// Each contact's card, verified once when it came in (``ContactRecord/card``
    /// verifies the signature on every read: a lookup by key over every contact cost a
    /// signature check each, for every message; 1,100 contacts took minutes to add).
    var contactCards: [UserID: ContactCard] = [:]
    var contactByKey: [Fingerprint: UserID] = [:]

    mutating func reindexContacts(from old: [UserID: ContactRecord]) {
        for id in old.keys where contacts[id] == nil {
            if let f = contactCards.removeValue(forKey: id)?.meshFingerprint, contactByKey[f] == id { contactByKey[f] = nil }
        }
        for (id, r) in contacts where contactCards[id] == nil || old[id]?.cardBytes != r.cardBytes {
            if let f = contactCards[id]?.meshFingerprint, contactByKey[f] == id { contactByKey[f] = nil }
            contactCards[id] = r.card
            if let f = contactCards[id]?.meshFingerprint { contactByKey[f] = id }
        }
    }
    /// Trust decisions and Nostr keys about mesh peers, by fingerprint.
    public internal(set) var trust: [Fingerprint: TrustRecord] = [:]
    /// Conversations with peers who are not contacts, by ID.
    public internal(set) var peerConversations: [UserID: ConversationRecord] = [:]
    /// Recent messages of each conversation, oldest first.
    public internal(set) var recent: [UserID: [MessageRecord]] = [:]
    /// Outgoing messages by their transport ID: the conversation (10,000 at most, oldest forgotten).
    var outgoing: [String: UserID] = [:]
    /// The location channels the person joined (lowercase geohashes).
    public internal(set) var channels: Set<String> = []
    /// Channel events shown (512 IDs, oldest forgotten): one event is shown once,
    /// through a gateway or a relay.
    var channelShown = BoundedIDs(512)

    public mutating func joinedChannel(_ geohash: String) { channels.insert(geohash.lowercased()) }
    public mutating func leftChannel(_ geohash: String) { channels.remove(geohash.lowercased()) }
    /// Whether a channel event is new (remembered from now on).
    public mutating func channelEventShown(_ eventID: String) -> Bool { channelShown.insert(eventID) }

    /// Our waiting messages already handed to couriers (by transport ID; 4,096 at most, oldest forgotten).
    var dropsMade: Set<String> = []
    var dropOrder: [String] = []
    /// Messages shown whose write failed (1,024 at most): a retry stores them.
    var unstoredIncoming: Set<UserID> = []
    var outgoingOrder: [String] = []
    /// Peers present (the node's view), and fingerprints of our sessions.
    public internal(set) var peers: [PeerID: NodeCore.PeerInfo] = [:]
    var sessions: [PeerID: Fingerprint] = [:]
    /// Peers Nostr or the Ya OK server reaches.
    var nostrReachable: Set<Fingerprint> = []
    public internal(set) var serverUp = false
    /// Favourites told our npub in this run.
    var told: Set<PeerID> = []
    /// The node event being handled (passed on to the face when it is not the messenger's).
    var passing: NodeEvent?
    /// Public messages a sync replays (history): gathered, and given to the
    /// faces as one block, oldest first, without what was shown already, once
    /// the burst has been quiet 600 ms (500 wait at most; 4,096 shown remembered).
    var history = HistoryCollector<NodeEvent>()

    /// The time (Unix s) the runtime should call ``tick(now:)`` next, when history waits.
    public var wantsTick: Bool { history.waitingCount > 0 }

    /// The clock: a burst of history that has gone quiet is given to the faces.
    public mutating func tick(now: Double) {
        let burst = history.take(now: UInt64(now * 1000))
        if !burst.isEmpty { emit(.publicHistory(burst)) }
    }

    /// Nicknames peers announced, kept after they leave (a face says "alice
    /// left", not her peer ID): the newest 4,096.
    var lastNames: [PeerID: String] = [:]
    var lastNameOrder: [PeerID] = []

    /// Receipts for IDs no record holds yet (a file's transfer can be
    /// delivered before the face that sent it records it): the newest 256.
    var earlyReceipts: [String: MessageState] = [:]
    var earlyOrder: [String] = []

    /// Conversations merged into another (a face may still name the old one): the newest 1,024.
    var mergedInto: [UserID: UserID] = [:]

    public init(identity: Identity, configuration: Configuration = Configuration()) {
        self.identity = identity
        self.configuration = configuration
    }

    public mutating func takeEffects() -> [Effect] {
        defer { effects = [] }
        return effects
    }

    mutating func emit(_ event: MessengerEvent) { effects.append(.event(event)) }
    mutating func command(_ c: NodeCommand) { effects.append(.node(c)) }

    mutating func write(_ w: StoreWrite) {
        guard storeOpen else {
            if heldWrites.count < configuration.maxHeldWrites {
                heldWrites.append(w)
            } else {
                emit(.notSaved("the store is locked and \(configuration.maxHeldWrites) changes wait: unlock it to keep more"))
            }
            return
        }
        effects.append(.store(w))
    }

    public var heldWriteCount: Int { heldWrites.count }
    public var heldEventCount: Int { held.count }

    // MARK: Conversations

    /// The conversation with a mesh peer who is not a contact: an ID derived
    /// from its Noise key (the same in every run).
    public static func conversationID(for fingerprint: Fingerprint) -> UserID {
        UserID(bytes: BLAKE3.hash(Array("starling conversation".utf8) + fingerprint.bytes, byteCount: 16))!
    }

    /// A bitchat message ID as a record ID: the UUID it is, or 16 bytes of its BLAKE3 hash.
    public static func recordID(_ messageID: String) -> UserID {
        UserID(string: messageID) ?? UserID(bytes: BLAKE3.hash(Array(messageID.utf8), byteCount: 16))!
    }

    /// The transport ID a record goes under (the apps' upper-case UUID).
    public static func transportID(_ id: UserID) -> String { id.description.uppercased() }

    /// The contact whose card carries this Noise key.
    public func contact(for fingerprint: Fingerprint) -> ContactRecord? {
        contactByKey[fingerprint].flatMap { contacts[$0] }
    }

    /// The conversation a mesh peer's messages go in: its contact's, or its own.
    public func conversation(for fingerprint: Fingerprint) -> UserID {
        contactByKey[fingerprint] ?? Self.conversationID(for: fingerprint)
    }

    /// The Noise static key of a conversation's peer, when known: its
    /// contact card's, or the one its conversation kept (each checked against
    /// the fingerprint it must hash to).
    public func noiseKey(of conversation: UserID) -> [UInt8]? {
        if let card = contactCards[conversation] { return card.agreementKey }
        guard let r = peerConversations[conversation], let key = r.noiseKey, let f = Fingerprint(hex: r.fingerprint),
              Fingerprint(noiseStaticKey: key) == f else { return nil }
        return key
    }

    /// The Noise key of a conversation.
    public func fingerprint(of conversation: UserID) -> Fingerprint? {
        if let card = contactCards[conversation] { return card.meshFingerprint }
        return peerConversations[conversation].flatMap { Fingerprint(hex: $0.fingerprint) }
    }

    /// The peer ID that reaches a Noise key now: present, with a session, or its own.
    public func peer(for fingerprint: Fingerprint) -> PeerID {
        if let p = peers.first(where: { $0.value.fingerprint == fingerprint })?.key { return p }
        if let p = sessions.first(where: { $0.value == fingerprint })?.key { return p }
        return fingerprint.peerID
    }

    /// The fingerprint of a peer: its verified announce, else the session it opened.
    public func fingerprint(ofPeer peer: PeerID) -> Fingerprint? {
        peers[peer]?.fingerprint ?? sessions[peer] ?? trust.keys.first { $0.peerID == peer }
            ?? contactByKey.keys.first { $0.peerID == peer }
            ?? peerConversations.values.compactMap { Fingerprint(hex: $0.fingerprint) }.first { $0.peerID == peer }
    }

    /// A conversation's name as shown: the contact's, the peer's announce, what was kept.
    public func name(of conversation: UserID) -> String {
        if let card = contactCards[conversation] { return card.displayName }
        if let f = fingerprint(of: conversation), let info = peers.values.first(where: { $0.fingerprint == f }) { return info.nickname }
        if let r = peerConversations[conversation] { return r.nickname }
        return conversation.description.prefix(8).description
    }

    /// Whether the person behind a peer ID (as the node knows it) is blocked.
    public func blocks(_ peer: PeerID) -> Bool {
        fingerprint(ofPeer: peer).map(isBlocked) ?? false
    }

    public func isBlocked(_ fingerprint: Fingerprint) -> Bool {
        trust[fingerprint]?.blocked == true || contact(for: fingerprint)?.blocked == true
    }

    public func isFavorite(_ fingerprint: Fingerprint) -> Bool {
        trust[fingerprint]?.favorite == true || contact(for: fingerprint)?.favorite == true
    }

    public func isVerified(_ fingerprint: Fingerprint) -> Bool {
        trust[fingerprint]?.verified == true || contact(for: fingerprint)?.verified == true
    }

    /// The most a private message carries over the mesh and Nostr (bitchat's TLV: 255 bytes).
    public static let meshTextLimit = PrivateMessage.maxFieldBytes

    /// Where a message to this Noise key can go now (the one rule: every face
    /// shows what it decides), or nil: queued until a route appears. The mesh
    /// first, then Nostr, then the Ya OK server; a text longer than the
    /// mesh carries goes only through the server.
    public func route(to fingerprint: Fingerprint, bytes: Int = 0) -> MessageRoute? {
        let long = bytes > Self.meshTextLimit
        if !long, peers.values.contains(where: { $0.fingerprint == fingerprint }) { return .mesh }
        if !long, configuration.nostr, nostrReachable.contains(fingerprint) { return .nostr }
        if let server = configuration.server, serverUp, contact(for: fingerprint) != nil, !long || !isPresent(fingerprint) {
            return MessageRoute(name: server)
        }
        return nil
    }

    func isPresent(_ f: Fingerprint) -> Bool { peers.values.contains { $0.fingerprint == f } }

    /// Unread incoming messages in a conversation (of the recent ones).
    public func unreadCount(_ conversation: UserID) -> Int {
        (recent[conversation] ?? []).filter { !$0.outgoing && $0.readAt == nil }.count
    }

    /// Our messages waiting for a route (those the core will send when one appears).
    public var pendingCount: Int { recent.values.reduce(0) { $0 + $1.filter { $0.outgoing && $0.isPending }.count } }

    mutating func remember(_ record: MessageRecord) {
        var list = recent[record.contact] ?? []
        if let i = list.firstIndex(where: { $0.id == record.id }) {
            list[i] = record
        } else {
            list.append(record)
            if list.count > configuration.recentPerConversation { list.removeFirst(list.count - configuration.recentPerConversation) }
        }
        recent[record.contact] = list
        if record.outgoing, let t = record.transportID { index(t, record.contact) }
    }

    mutating func index(_ transportID: String, _ conversation: UserID) {
        if outgoing[transportID] == nil {
            outgoingOrder.append(transportID)
            if outgoingOrder.count > 10_000 { outgoing[outgoingOrder.removeFirst()] = nil }
        }
        outgoing[transportID] = conversation
    }

    func record(_ transportID: String) -> MessageRecord? {
        guard let c = outgoing[transportID] else { return nil }
        let id = Self.recordID(transportID)
        return recent[c]?.first { $0.id == id }
    }

    /// Makes sure a peer who is not a contact has its conversation kept.
    mutating func keepConversation(_ id: UserID, fingerprint: Fingerprint, nickname: String, now: Double, noiseKey: [UInt8]? = nil) {
        guard contacts[id] == nil else { return }
        // The key is kept only when it hashes to the fingerprint (it is its own proof).
        let key = [noiseKey, peers.values.first { $0.fingerprint == fingerprint }?.noiseKey, peerConversations[id]?.noiseKey]
            .compactMap { $0 }.first { Fingerprint(noiseStaticKey: $0) == fingerprint }
        let record = ConversationRecord(id: id, fingerprint: fingerprint.hex, nickname: nickname, updatedAt: now, noiseKey: key)
        if peerConversations[id] == nil, peerConversations.count >= configuration.maxConversations,
           let oldest = peerConversations.values.min(by: { $0.updatedAt < $1.updatedAt }) {
            peerConversations[oldest.id] = nil
            recent[oldest.id] = nil
        }
        peerConversations[id] = record
        write(.conversation(record))
    }

}

extension MessengerCore.TrustChange: Equatable {}

/// A contact as one record: whatever the store keeps of them in its two
/// tables (a Ya OK card, a trust record with their Nostr key), merged by
/// their mesh key. What a face lists and an API returns.
public struct Contact: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable, Codable {
        /// Added from their Ya OK card (QR code): a mesh key, a user ID for the server.
        case card
        /// Known by an npub alone (a standard NIP-17 client): Nostr only.
        case nostr
        /// A mesh peer we made a favourite (and who may have told us their npub).
        case favourite
    }
    public var kind: Kind
    /// The conversation their messages are kept in.
    public var conversation: UserID
    public var name: String
    /// Their mesh Noise key (for a Nostr-only contact, the key derived from their npub).
    public var fingerprint: Fingerprint
    public var card: ContactCard?
    public var npub: String?
    /// How messages to them over Nostr are wrapped: "bitchat" or "standard".
    public var nostrVariant: String?
    public var verified: Bool
    public var favorite: Bool
    public var blocked: Bool
    /// They made us a favourite (their last notice said so).
    public var favoritesUs: Bool

    public init(kind: Kind, conversation: UserID, name: String, fingerprint: Fingerprint, card: ContactCard?, npub: String?,
                nostrVariant: String?, verified: Bool, favorite: Bool, blocked: Bool, favoritesUs: Bool) {
        self.kind = kind
        self.conversation = conversation
        self.name = name
        self.fingerprint = fingerprint
        self.card = card
        self.npub = npub
        self.nostrVariant = nostrVariant
        self.verified = verified
        self.favorite = favorite
        self.blocked = blocked
        self.favoritesUs = favoritesUs
    }
}

extension MessengerCore {
    /// Every contact, one record each, by name: card contacts, Nostr-only
    /// contacts, and favourites.
    public var contactList: [Contact] {
        var out: [Contact] = []
        var seen: Set<Fingerprint> = []
        for id in contacts.keys {
            guard let card = contactCards[id] else { continue }
            let f = card.meshFingerprint
            seen.insert(f)
            let t = trust[f]
            out.append(Contact(kind: .card, conversation: card.userID, name: card.displayName, fingerprint: f, card: card,
                               npub: t?.npub, nostrVariant: t?.nostrVariant, verified: isVerified(f), favorite: isFavorite(f),
                               blocked: isBlocked(f), favoritesUs: t?.favoritesUs ?? false))
        }
        for (f, t) in trust where !seen.contains(f) && t.favorite {
            let nostrOnly = t.npub.map { (try? NostrContacts.key(npub: $0)) == f } ?? false
            out.append(Contact(kind: nostrOnly ? .nostr : .favourite, conversation: conversation(for: f),
                               name: t.nickname ?? f.peerID.description, fingerprint: f, card: nil, npub: t.npub,
                               nostrVariant: t.nostrVariant, verified: t.verified, favorite: t.favorite, blocked: t.blocked,
                               favoritesUs: t.favoritesUs ?? false))
        }
        return out.sorted { ($0.name.lowercased(), $0.fingerprint) < ($1.name.lowercased(), $1.fingerprint) }
    }
}

