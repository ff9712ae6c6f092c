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
    public private(set) var trustKnown = false
    /// Whether the store is open now.
    public private(set) var storeOpen = false
    private var held: [(NodeEvent, [PeerID: NodeCore.PeerInfo])] = []
    public private(set) var heldDropped = 0
    private var heldWrites: [StoreWrite] = []
    var effects: [Effect] = []
    /// Strangers' messages over Nostr, waiting for the person's answer (``StrangerRequests``).
    public internal(set) var requests = StrangerRequests()

    /// Contacts (Ya OK cards), by conversation ID (their user ID).
    public private(set) var contacts: [UserID: ContactRecord] = [:] {
        didSet { reindexContacts(from: oldValue) }
    }
    /// Each contact's card, verified once when it came in (``ContactRecord/card``
    /// verifies the signature on every read: a lookup by key over every contact cost a
    /// signature check each, for every message; 1,100 contacts took minutes to add).
    private var contactCards: [UserID: ContactCard] = [:]
    private var contactByKey: [Fingerprint: UserID] = [:]

    private mutating func reindexContacts(from old: [UserID: ContactRecord]) {
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
    public private(set) var trust: [Fingerprint: TrustRecord] = [:]
    /// Conversations with peers who are not contacts, by ID.
    public private(set) var peerConversations: [UserID: ConversationRecord] = [:]
    /// Recent messages of each conversation, oldest first.
    public private(set) var recent: [UserID: [MessageRecord]] = [:]
    /// Outgoing messages by their transport ID: the conversation (10,000 at most, oldest forgotten).
    private var outgoing: [String: UserID] = [:]
    /// The location channels the person joined (lowercase geohashes).
    public private(set) var channels: Set<String> = []
    /// Channel events shown (512 IDs, oldest forgotten): one event is shown once,
    /// through a gateway or a relay.
    private var channelShown = BoundedIDs(512)

    public mutating func joinedChannel(_ geohash: String) { channels.insert(geohash.lowercased()) }
    public mutating func leftChannel(_ geohash: String) { channels.remove(geohash.lowercased()) }
    /// Whether a channel event is new (remembered from now on).
    public mutating func channelEventShown(_ eventID: String) -> Bool { channelShown.insert(eventID) }

    /// Our waiting messages already handed to couriers (by transport ID; 4,096 at most, oldest forgotten).
    private var dropsMade: Set<String> = []
    private var dropOrder: [String] = []
    /// Messages shown whose write failed (1,024 at most): a retry stores them.
    private var unstoredIncoming: Set<UserID> = []
    private var outgoingOrder: [String] = []
    /// Peers present (the node's view), and fingerprints of our sessions.
    public private(set) var peers: [PeerID: NodeCore.PeerInfo] = [:]
    private var sessions: [PeerID: Fingerprint] = [:]
    /// Peers Nostr or the Ya OK server reaches.
    private var nostrReachable: Set<Fingerprint> = []
    public private(set) var serverUp = false
    /// Favourites told our npub in this run.
    private var told: Set<PeerID> = []
    /// The node event being handled (passed on to the face when it is not the messenger's).
    private var passing: NodeEvent?
    /// Public messages a sync replays (history): gathered, and given to the
    /// faces as one block, oldest first, without what was shown already, once
    /// the burst has been quiet 600 ms (500 wait at most; 4,096 shown remembered).
    private var history = HistoryCollector<NodeEvent>()

    /// The time (Unix s) the runtime should call ``tick(now:)`` next, when history waits.
    public var wantsTick: Bool { history.waitingCount > 0 }

    /// The clock: a burst of history that has gone quiet is given to the faces.
    public mutating func tick(now: Double) {
        let burst = history.take(now: UInt64(now * 1000))
        if !burst.isEmpty { emit(.publicHistory(burst)) }
    }

    public init(identity: Identity, configuration: Configuration = Configuration()) {
        self.identity = identity
        self.configuration = configuration
    }

    public mutating func takeEffects() -> [Effect] {
        defer { effects = [] }
        return effects
    }

    mutating func emit(_ event: MessengerEvent) { effects.append(.event(event)) }
    private mutating func command(_ c: NodeCommand) { effects.append(.node(c)) }

    private mutating func write(_ w: StoreWrite) {
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

    private func isPresent(_ f: Fingerprint) -> Bool { peers.values.contains { $0.fingerprint == f } }

    /// Unread incoming messages in a conversation (of the recent ones).
    public func unreadCount(_ conversation: UserID) -> Int {
        (recent[conversation] ?? []).filter { !$0.outgoing && $0.readAt == nil }.count
    }

    /// Our messages waiting for a route (those the core will send when one appears).
    public var pendingCount: Int { recent.values.reduce(0) { $0 + $1.filter { $0.outgoing && $0.isPending }.count } }

    private mutating func remember(_ record: MessageRecord) {
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

    private mutating func index(_ transportID: String, _ conversation: UserID) {
        if outgoing[transportID] == nil {
            outgoingOrder.append(transportID)
            if outgoingOrder.count > 10_000 { outgoing[outgoingOrder.removeFirst()] = nil }
        }
        outgoing[transportID] = conversation
    }

    private func record(_ transportID: String) -> MessageRecord? {
        guard let c = outgoing[transportID] else { return nil }
        let id = Self.recordID(transportID)
        return recent[c]?.first { $0.id == id }
    }

    /// Makes sure a peer who is not a contact has its conversation kept.
    private mutating func keepConversation(_ id: UserID, fingerprint: Fingerprint, nickname: String, now: Double, noiseKey: [UInt8]? = nil) {
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

    // MARK: The store

    /// The store opened: its trust decisions go to the node, what waited for
    /// them is shown or dropped, the writes held while it was locked are made,
    /// and waiting messages go where they can.
    public mutating func storeOpened(_ contents: StoreContents, peers: [PeerID: NodeCore.PeerInfo], now: Double) {
        self.peers = peers
        storeOpen = true
        let first = !trustKnown
        contacts = Dictionary(contents.contacts.compactMap { r in r.card.map { ($0.userID, r) } }, uniquingKeysWith: { a, _ in a })
        trust = Dictionary(contents.trust.compactMap { r in Fingerprint(hex: r.fingerprint.lowercased()).map { ($0, r) } },
                           uniquingKeysWith: { a, _ in a })
        for r in contents.conversations { peerConversations[r.id] = r }
        // Decisions made while the store was locked are newer than what it holds.
        for w in heldWrites {
            switch w {
            case let .trust(t): if let f = Fingerprint(hex: t.fingerprint.lowercased()) { trust[f] = t }
            case let .contact(c): if let id = c.card?.userID { contacts[id] = c }
            default: break
            }
        }
        for f in contents.favorites where trust[f]?.favorite != true {
            var t = trust[f] ?? TrustRecord(fingerprint: f.hex, updatedAt: now)
            t.favorite = true
            trust[f] = t
        }
        for (c, list) in contents.messages {
            var merged = list.sorted { ($0.timestamp, $0.recordedAt) < ($1.timestamp, $1.recordedAt) }
            for m in recent[c] ?? [] where !merged.contains(where: { $0.id == m.id }) { merged.append(m) }
            recent[c] = Array(merged.suffix(configuration.recentPerConversation))
            for m in merged where m.outgoing { if let t = m.transportID { index(t, c) } }
        }
        // Trust to the node: pins kept, then contacts' cards over them.
        for (f, key) in contents.pins { command(.pin(key, for: f)) }
        for (f, r) in trust {
            if r.blocked { command(.block(f)) }
            if r.favorite { command(.setFavorite(f, true)) }
            if r.verified { command(.setVerified(f, true)) }
        }
        for r in contacts.values {
            guard let card = r.card else { continue }
            mergePeerConversation(into: card) // kept apart by an earlier version
            command(.pin(card.signingKey, for: card.meshFingerprint))
            if r.blocked { command(.block(card.meshFingerprint)) }
            if r.favorite { command(.setFavorite(card.meshFingerprint, true)) }
            if r.verified { command(.setVerified(card.meshFingerprint, true)) }
            if configuration.server != nil, !r.blocked {
                effects.append(.offMesh(.serverContact(card.meshFingerprint.peerID, card: card.bytes)))
            }
        }
        for f in trust.keys { refreshNostr(f) }
        if first, !contents.groups.isEmpty { command(.restoreGroups(contents.groups)) }
        // Messages an earlier run handed to the node with no receipt since:
        // that run's retries are gone, so they wait to be sent again (at least
        // once; a duplicate is possible, a loss is not).
        var pending = contents.pending
        for (c, list) in recent where first {
            for var m in list where m.outgoing && m.progress?.state == .sending {
                try? m.progress?.move(to: .retrying, at: now)
                recent[c] = recent[c]?.map { $0.id == m.id ? m : $0 }
                write(.updateMessage(m))
                if !pending.contains(where: { $0.id == m.id }) { pending.append(m) }
            }
        }
        let writes = heldWrites
        heldWrites = []
        for w in writes { effects.append(.store(w)) }
        if first {
            trustKnown = true
            command(.trustDecided)
            emit(.trustLoaded(contacts: contacts.count, pending: pending.count))
            let waiting = held
            held = []
            for (event, view) in waiting { handle(event, peers: view, now: now) }
            self.peers = peers
        } else {
            emit(.storeUnlocked(storedMeanwhile: writes.count))
        }
        for m in pending { remember(m) }
        sendWaiting(now: now)
        dropWaiting(now: now)
    }

    /// The store closed (locked): its writes wait in memory until it opens.
    public mutating func storeClosed() {
        storeOpen = false
    }

    /// A write the store did not make: the person is told.
    public mutating func storeFailed(_ write: StoreWrite, reason: String) {
        switch write {
        case let .insertMessage(m) where m.outgoing:
            emit(.notSaved("your message to \(name(of: m.contact)) was not stored (\(reason)); it is still being sent"))
        case let .insertMessage(m):
            // Its sender gets no receipt and tries again: that copy is stored then.
            if unstoredIncoming.count < 1_024 { unstoredIncoming.insert(m.id) }
            emit(.notSaved("a message from \(name(of: m.contact)) was not stored (\(reason)); it is shown, and stored when its sender tries again"))
        case .updateMessage, .receipt:
            emit(.notSaved("a message's new state was not stored (\(reason))"))
        case .trust, .contact:
            emit(.notSaved("a trust decision was not stored (\(reason)): it holds until this program stops; try again"))
        case .conversation, .pin:
            emit(.notSaved("the store did not take a change (\(reason))"))
        case .mergeConversation:
            emit(.notSaved("a contact's earlier messages were not moved into their conversation (\(reason)); they move at the next start"))
        case .groups:
            emit(.notSaved("your groups were not stored (\(reason)): they hold until this program stops; free space and change one to store them"))
        }
    }

    // MARK: The node

    /// Whether an event is something a block could hide.
    private static func hideable(_ event: NodeEvent) -> PeerID? {
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

    private func conversationIfAny(_ f: Fingerprint) -> UserID? {
        let id = conversation(for: f)
        return contacts[id] != nil || peerConversations[id] != nil ? id : nil
    }

    /// Nicknames peers announced, kept after they leave (a face says "alice
    /// left", not her peer ID): the newest 4,096.
    private var lastNames: [PeerID: String] = [:]
    private var lastNameOrder: [PeerID] = []

    private mutating func rememberName(_ peer: PeerID, _ nickname: String) {
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

    private mutating func receivePrivate(from: PeerID, fingerprint known: Fingerprint? = nil, noiseKey: [UInt8]? = nil, nickname: String?,
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

    private mutating func receiveFile(from: PeerID, attachment: FileAttachment, now: Double) {
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

    /// Receipts for IDs no record holds yet (a file's transfer can be
    /// delivered before the face that sent it records it): the newest 256.
    private var earlyReceipts: [String: MessageState] = [:]
    private var earlyOrder: [String] = []

    private mutating func earlyReceipt(_ id: String, _ state: MessageState) {
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

    private mutating func progress(_ transportID: String, now: Double, via: String? = nil, receipt: MessageState? = nil,
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
    private mutating func failed(_ transportID: String, now: Double) {
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

    // MARK: Favourites and Nostr

    private mutating func tell(_ peer: PeerID, favourite: Bool) {
        guard let npub = configuration.npub else { return }
        // A notice, not a conversation's message: its ID is its own.
        let id = Self.transportID(UserID.random())
        command(.sendPrivate((favourite ? "[FAVORITED]:" : "[UNFAVORITED]:") + npub, to: peer, messageID: id))
    }

    /// Peers kept only because they told us their npub (no decision of ours): 256 at most.
    public static let maxNoticedOnly = 256

    private static func decided(_ t: TrustRecord) -> Bool { t.favorite || t.verified || t.blocked }

    private mutating func favorited(by: PeerID, nickname: String?, on: Bool, npub: String?, now: Double) {
        guard let f = sessions[by] ?? trust.keys.first(where: { $0.peerID == by && trust[$0]?.npub != nil }) else { return }
        if trust[f] == nil, on, npub != nil {
            // A stranger's notice: kept, but the strangers' share is bounded (the
            // oldest goes), so that notices cannot crowd out our own decisions.
            let noticed = trust.filter { !Self.decided($0.value) && $0.value.npub != nil }
            if noticed.count >= Self.maxNoticedOnly, let oldest = noticed.min(by: { $0.value.updatedAt < $1.value.updatedAt }) {
                var gone = oldest.value
                gone.npub = nil
                trust[oldest.key] = nil
                write(.trust(gone)) // nothing decided and no npub: the store removes it
            }
        }
        var t = trust[f] ?? TrustRecord(fingerprint: f.hex, updatedAt: now)
        t.favoritesUs = on
        if on, let npub { t.npub = npub } else if !on { t.npub = nil }
        if let nickname { t.nickname = nickname }
        t.updatedAt = now
        trust[f] = t
        write(.trust(t))
        refreshNostr(f)
        emit(.favorited(by: by, name: nickname ?? displayName(by), on: on, npub: on ? npub : nil,
                        overNostr: on && npub != nil && configuration.nostr && isFavorite(f)))
        sendWaiting(now: now)
    }

    /// Nostr reaches a peer who told us its npub and is our favourite (mutual).
    private mutating func refreshNostr(_ f: Fingerprint) {
        guard let t = trust[f] else { return }
        let mutual = t.npub != nil && t.favorite && !t.blocked
        let was = nostrReachable.contains(f)
        if mutual { nostrReachable.insert(f) } else { nostrReachable.remove(f) }
        if mutual || was {
            effects.append(.offMesh(.nostrContact(f.peerID, npub: mutual ? t.npub : nil, variant: t.nostrVariant ?? "bitchat")))
        }
    }

    /// How messages to a Nostr contact are wrapped: "bitchat" (the apps) or "standard" (NIP-17).
    public mutating func setNostrVariant(_ variant: String, for f: Fingerprint, now: Double) -> Bool {
        guard var t = trust[f], t.npub != nil else { return false }
        t.nostrVariant = variant
        t.updatedAt = now
        trust[f] = t
        write(.trust(t))
        nostrReachable.remove(f)
        refreshNostr(f)
        return true
    }

    /// The Ya OK server is registered (or not): contacts with cards are reachable through it.
    public mutating func serverChanged(up: Bool, now: Double) {
        serverUp = up
        if up { sendWaiting(now: now) }
    }

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
    private mutating func receiveGroup(_ m: GroupMessage, now: Double) {
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
    private mutating func hand(_ record: inout MessageRecord, to f: Fingerprint, now: Double) {
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
    private mutating func sendWaiting(now: Double) {
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
    private mutating func dropWaiting(now: Double) {
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
    private mutating func mergePeerConversation(into card: ContactCard) {
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

    /// Conversations merged into another (a face may still name the old one): the newest 1,024.
    private var mergedInto: [UserID: UserID] = [:]

    /// The conversation an ID names now: itself, or the one it merged into.
    public func current(_ conversation: UserID) -> UserID { mergedInto[conversation] ?? conversation }
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

