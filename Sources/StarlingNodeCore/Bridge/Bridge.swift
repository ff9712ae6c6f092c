import StarlingCrypto
import StarlingMesh
import StarlingNostr
import StarlingWire

/// A public message from another mesh, carried by the mesh bridges on a
/// cell (docs/PROTOCOL.md, "Mesh bridges"): its event's signature checked,
/// so that who wrote it is its Nostr key (`pubkey`) and the name its `n` tag
/// claims; the mesh sender its `m` tag names is not authenticated and not
/// shown as its author.
public struct BridgedMessage: Hashable, Sendable, Codable {
    /// The rendezvous cell its event is tagged with.
    public var cell: String
    public var eventID: String
    public var pubkey: String
    public var nickname: String?
    public var text: String
    /// Unix seconds (the event's created_at).
    public var createdAt: Int64
    /// The radio message it names (recomputed from its `m` tag and text), if any.
    public var radioID: String?
    /// The carrier's hops; 0 when our own bridge read it from a relay.
    public var hops: Int
    /// The mesh peer ID its `m` tag names (not authenticated: used only to hide a blocked peer's lines, never shown).
    public var meshSender: String?
    public init(cell: String, eventID: String, pubkey: String, nickname: String?, text: String, createdAt: Int64, radioID: String?, hops: Int,
                meshSender: String? = nil) {
        self.cell = cell
        self.eventID = eventID
        self.pubkey = pubkey
        self.nickname = nickname
        self.text = text
        self.createdAt = createdAt
        self.radioID = radioID
        self.hops = hops
        self.meshSender = meshSender
    }
}

/// The mesh bridge's rules (docs/PROTOCOL.md, "Mesh bridges"), as iOS 1.7.1
/// keeps them (bitchat BridgeService.swift): a plain value, events, carriers
/// and milliseconds in; events to publish, carriers to broadcast and
/// messages to show out.
///
/// A bridge (`cell` set) follows its cell and the eight around it on the
/// relays. What a relay brings is taken once: on one of those cells, not
/// ours, a signature checked within a budget (720 a minute), within 600 a
/// minute in all and 120 of one signer, fresh (±15 min), a message of 1 to
/// 16,000 bytes or a presence. A message is shown, unless the radio message
/// it names was heard here (the radio copy wins), and waits for the mesh as a
/// broadcast `fromBridge` carrier (after 0.2–1.5 s, so that two bridges of
/// one mesh hear each other; 20 a minute; 30 waiting).
///
/// Mesh peers with no relay hand a bridge `toBridge` deposits, taken as a
/// gateway takes its own (10 a minute a depositor, a signature, 5 and 20
/// queued) and published as their authors signed them. Any node reads
/// `fromBridge` carriers: checked the same way, each shown once. Nothing
/// learned from the relays or from a carrier is published again, and nothing
/// we published comes back.
///
/// Every table is bounded: five ID sets of 512 and one of 1,337 (radio
/// messages), all oldest out; depositors (512), the queue (20), the downlink
/// (30), the inbound minute (600), participants (128, 10 min).
public struct BridgeCore: Sendable {
    public struct Limits: Hashable, Sendable {
        public var depositsPerMinute = 10
        public var queuedPerDepositor = 5
        public var queued = 20
        public var downlinkPerMinute = 20
        public var pendingDownlinks = 30
        /// With other bridges in the mesh, each whose peer ID is below ours adds
        /// this to our hold-off (3 at most): the first sends, the others hear its
        /// carrier and yield, and still send if it never comes.
        public var holdOffPerBridgeAhead: UInt64 = 3_000
        public var trackedIDs = 512
        public var trackedDepositors = 512
        /// Radio messages remembered (their stable IDs), so that their bridged copies are not shown.
        public var radioIDs = 1_337
        /// Events taken from relays and carriers a minute, in all and of one signer.
        public var inboundPerMinute = 600
        public var inboundPerSigner = 120
        /// Signatures checked a minute (a token bucket), for what the relays bring
        /// and, apart, for the carriers heard on the radio (one cannot starve the other).
        public var verifiesPerMinute = 720
        /// Events taken from the relays and from carriers, remembered: as many as
        /// are fresh (±15 min) at 600 a minute, so that none is shown twice.
        public var seenIDs = 18_000
        /// Messages shown from `fromBridge` carriers a minute, in all and of one
        /// Nostr key (anyone in radio range can sign with as many keys as they like).
        public var heardPerMinute = 60
        public var heardPerKey = 10
        public var participants = 128
        /// How long a participant across the bridge counts after its last event, ms.
        public var participantLife: UInt64 = 600_000
        /// How far an event's created_at may be from now, ms.
        public var maxAge: UInt64 = 900_000
        /// How often our bridge says it is there, ms.
        public var presenceEvery: UInt64 = 240_000
        /// Board posts and tombstones from the relays waiting for the mesh,
        /// and how many go into it a minute (a bridge that comes up reads 7 days of them).
        public var pendingBoard = 200
        public var boardDownlinkPerMinute = 20
        /// Board entries waiting from one author key, and from one Nostr signer.
        public var pendingBoardPerAuthor = 5
        public var pendingBoardPerSigner = 10
        /// Posts from the relays on the mesh's board at once, at most: the rest
        /// of it stays the mesh's own (a flood of free keys cannot push it out).
        public var crossedPostsOnBoard = 100
        /// At least this long between two board entries put on the mesh's board, ms (plus 0–1.5 s at random).
        public var boardSpacing: UInt64 = 3_000
        public init() {}
    }

    public enum Refusal: String, Error, Hashable, Sendable {
        case notAnEvent, wrongKind, wrongCell, stale, empty, seen, ours, heardOnRadio, rateLimited, overBudget, badSignature, depositorQueueFull,
             /// A board event whose payload is no board post or tombstone its author signed.
             badBoard
    }

    public enum Outcome: Hashable, Sendable {
        /// Publish it now (relays are up).
        case publish(GatewayCore.Upload)
        /// Kept until a relay is up.
        case queued
        case refused(Refusal)
    }

    public var limits: Limits
    /// Our rendezvous cell (nil: no bridge here; carriers are still read).
    public let cell: String?
    /// The cells followed: ours and its ring.
    public let cells: Set<String>
    private let key: Secp256k1.PrivateKey?
    private let ownKey: String?

    private var radioIDs: BoundedIDs
    private var meshBroadcastIDs: BoundedIDs, publishedIDs: BoundedIDs, receivedIDs: BoundedIDs, rebroadcastIDs: BoundedIDs
    private var book = DepositBook()
    private var pendingDownlinks: [(event: NostrEvent, cell: String, radioID: String?, notBefore: UInt64)] = []
    private var sent: [UInt64] = []
    private var inbound: [(signer: String, at: UInt64)] = []
    private var verifies: TokenBucket, radioVerifies: TokenBucket
    private var shownFromRadio: [(key: String, at: UInt64)] = []
    private var participantsSeen: [String: UInt64] = [:]
    private var lastPresence: UInt64?
    private var pendingBoard: [(packet: BoardPacket, signer: String, notBefore: UInt64)] = []
    private var boardSent: [UInt64] = []
    private var boardInHand: (packet: BoardPacket, signer: String)?
    /// Board entries that could not be sent when due, each put back (``boardNotSent(_:now:retryAfter:)``).
    public private(set) var unsentBoardEntries = 0
    private var boardNext: UInt64 = 0
    /// Board entries (``boardKey(_:)``: post or tombstone, author, post ID) we
    /// published or took as deposits, and those put on the mesh's board from the relays.
    private var boardOut: BoundedIDs, boardIn: BoundedIDs
    public private(set) var refusals: [Refusal: Int] = [:]
    /// `fromBridge` carriers sent, in all.
    public private(set) var downlinked = 0

    /// `key`: what our bridge signs its own messages and presence with (see ``MeshBridge/identity(seed:cell:)``).
    public init(cell: String?, key: Secp256k1.PrivateKey?, limits: Limits = Limits()) {
        self.limits = limits
        self.cell = cell
        self.cells = cell.map { Set(MeshBridge.cells(around: $0)) } ?? []
        self.key = key
        self.ownKey = key?.publicKey.hexString
        radioIDs = BoundedIDs(limits.radioIDs)
        meshBroadcastIDs = BoundedIDs(limits.seenIDs)
        publishedIDs = BoundedIDs(limits.trackedIDs)
        receivedIDs = BoundedIDs(limits.seenIDs)
        rebroadcastIDs = BoundedIDs(limits.trackedIDs)
        boardOut = BoundedIDs(limits.trackedIDs)
        boardIn = BoundedIDs(limits.trackedIDs)
        verifies = TokenBucket(perMinute: limits.verifiesPerMinute)
        radioVerifies = TokenBucket(perMinute: limits.verifiesPerMinute)
    }

    public var queue: [GatewayCore.Upload] { book.queue }
    public var pending: Int { pendingDownlinks.count }
    /// People across the bridge heard from in the last `participantLife`.
    public func participants(now: UInt64) -> Int { participantsSeen.values.filter { now < $0 + limits.participantLife }.count }

    /// Table sizes, for bounds and `/stats`.
    public var sizes: [String: Int] {
        ["bridge.queue": book.queue.count, "bridge.pending": pendingDownlinks.count, "bridge.depositors": book.depositors,
         "bridge.radioIDs": radioIDs.count, "bridge.meshBroadcastIDs": meshBroadcastIDs.count, "bridge.publishedIDs": publishedIDs.count,
         "bridge.receivedIDs": receivedIDs.count, "bridge.rebroadcastIDs": rebroadcastIDs.count, "bridge.inbound": inbound.count, "bridge.shownFromRadio": shownFromRadio.count,
         "bridge.participants": participantsSeen.count, "bridge.pendingBoard": pendingBoard.count, "bridge.boardOut": boardOut.count,
         "bridge.boardIn": boardIn.count]
    }

    // MARK: Memory across a restart

    /// What a bridge remembers across a restart (kept in the data directory's
    /// `bridge`): after one, the relays send the last 15 minutes (and 7 days
    /// of board events) again, and without it the bridge would show them
    /// again, carry them into the mesh again, and show its own mesh's lines
    /// that another bridge published. The most recent of each set, oldest first.
    public struct Memory: Codable, Hashable, Sendable {
        public var taken: [String] = []
        public var heardOnRadio: [String] = []
        public var published: [String] = []
        public var carriedDown: [String] = []
        public var heardOnMesh: [String] = []
        public var boardOut: [String] = []
        public var boardIn: [String] = []
        /// Deletions of our crossed board notices made while no bridge was near
        /// (each the tombstone's 0x23 payload in hex), sent when one is: kept by the node, not the bridge.
        public var deletionsToCross: [String] = []
        public init() {}

        /// A set missing from the file (one written before it existed) is empty.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            taken = try c.decodeIfPresent([String].self, forKey: .taken) ?? []
            heardOnRadio = try c.decodeIfPresent([String].self, forKey: .heardOnRadio) ?? []
            published = try c.decodeIfPresent([String].self, forKey: .published) ?? []
            carriedDown = try c.decodeIfPresent([String].self, forKey: .carriedDown) ?? []
            heardOnMesh = try c.decodeIfPresent([String].self, forKey: .heardOnMesh) ?? []
            boardOut = try c.decodeIfPresent([String].self, forKey: .boardOut) ?? []
            boardIn = try c.decodeIfPresent([String].self, forKey: .boardIn) ?? []
            deletionsToCross = try c.decodeIfPresent([String].self, forKey: .deletionsToCross) ?? []
        }
    }

    /// At most this many of each set are kept on disk.
    public static let memoryKept = 2_048

    /// Moves on every change to what ``memory()`` holds.
    public var memoryChanges: Int {
        receivedIDs.inserted + radioIDs.inserted + publishedIDs.inserted + rebroadcastIDs.inserted + meshBroadcastIDs.inserted
            + boardOut.inserted + boardIn.inserted
    }

    /// Moves when the board entries that crossed out change (all a node that only crosses keeps).
    public var boardOutChanges: Int { boardOut.inserted }

    /// What a node that only crosses keeps: its board entries that crossed out.
    public func crossingMemory() -> Memory {
        var m = Memory()
        m.boardOut = boardOut.recent(Self.memoryKept)
        return m
    }

    public func memory() -> Memory {
        var m = Memory()
        m.taken = receivedIDs.recent(Self.memoryKept)
        m.heardOnRadio = radioIDs.recent(Self.memoryKept)
        m.published = publishedIDs.recent(Self.memoryKept)
        m.carriedDown = rebroadcastIDs.recent(Self.memoryKept)
        m.heardOnMesh = meshBroadcastIDs.recent(Self.memoryKept)
        m.boardOut = boardOut.recent(Self.memoryKept)
        m.boardIn = boardIn.recent(Self.memoryKept)
        return m
    }

    /// Takes back what a bridge remembered: only IDs as we write them (1 to
    /// 64 lowercase hex digits; a board key, "p" or "t" and 96), at most ``memoryKept`` of each.
    public mutating func remember(_ m: Memory) {
        func ids(_ list: [String]) -> ArraySlice<String> {
            list.suffix(Self.memoryKept).filter { id in
                let boardKey = id.utf8.first.map { $0 == UInt8(ascii: "p") || $0 == UInt8(ascii: "t") } == true && id.utf8.count == 97
                let hex = boardKey ? id.utf8.dropFirst() : id.utf8[...]
                return (boardKey || (1...64).contains(hex.count)) && hex.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
            }[...]
        }
        for id in ids(m.taken) { receivedIDs.insert(id) }
        for id in ids(m.heardOnRadio) { radioIDs.insert(id) }
        for id in ids(m.published) { publishedIDs.insert(id) }
        for id in ids(m.carriedDown) { rebroadcastIDs.insert(id) }
        for id in ids(m.heardOnMesh) { meshBroadcastIDs.insert(id) }
        for id in ids(m.boardOut) { boardOut.insert(id) }
        for id in ids(m.boardIn) { boardIn.insert(id) }
    }

    // MARK: Our own

    /// A public message heard (or sent) on the radio, by its stable ID: its
    /// bridged copies are neither shown nor carried into the mesh.
    public mutating func heardOnRadio(_ stableID: String) {
        radioIDs.insert(stableID)
        pendingDownlinks.removeAll { $0.radioID == stableID }
    }

    /// An event of ours (published by our bridge, or handed to another): never shown or carried back.
    public mutating func published(_ event: NostrEvent) {
        publishedIDs.insert(event.id)
        if let b = MeshBridge.boardPacket(of: event) { boardOut.insert(Self.boardKey(b)) }
    }

    /// A board entry's key: "p" (post) or "t" (tombstone), its author's key
    /// and its post ID, in hex: one author's post ID is not another's.
    public static func boardKey(_ b: BoardPacket) -> String {
        if case .post = b { return "p" + b.authorKey.hexString + b.postID.hexString }
        return "t" + b.authorKey.hexString + b.postID.hexString
    }

    /// Whether this post came into this mesh through our bridge.
    public func crossedIn(_ post: BoardPost) -> Bool { boardIn.contains(Self.boardKey(.post(post))) }

    /// Whether we sent this post to the other meshes (so its deletion should follow it).
    public func crossedOut(_ postID: [UInt8], author: [UInt8]) -> Bool { boardOut.contains("p" + author.hexString + postID.hexString) }

    /// Our bridge's own message while no relay is up: it waits with the deposits.
    public mutating func queueOwn(_ upload: GatewayCore.Upload) -> Bool {
        publishedIDs.insert(upload.event.id)
        return book.enqueue(upload, perDepositor: limits.queuedPerDepositor, total: limits.queued)
    }

    /// Our presence on the cell, when it is time (a relay up; every `presenceEvery`).
    public mutating func presenceDue(now: UInt64, wall: UInt64, relaysUp: Bool) -> NostrEvent? {
        guard relaysUp, let cell, let key, lastPresence.map({ now >= $0 + limits.presenceEvery }) ?? true,
              let e = MeshBridge.presence(cell: cell, key: key, now: Int64(wall / 1_000)) else { return nil }
        lastPresence = now
        publishedIDs.insert(e.id)
        return e
    }

    // MARK: Deposits

    /// A `toBridge` deposit from `depositor` (the caller checked that it was
    /// directed to us and signed by the depositor's announced key,
    /// `signingKey`: a board post or tombstone crosses only when it is the
    /// depositor's own, so that no one makes another's notice leave the mesh).
    public mutating func deposit(_ carrier: NostrCarrier, from depositor: PeerID, signingKey: [UInt8]? = nil, relaysUp: Bool, now: UInt64,
                                 wall: UInt64) -> Outcome {
        guard cell != nil, carrier.direction == .toBridge else { return .refused(refuse(.wrongCell)) }
        let event: NostrEvent
        switch check(carrier, wall: wall) {
        case let .success(e): event = e
        case let .failure(r): return .refused(refuse(r))
        }
        // Nothing learned from the relays or a carrier is published again.
        guard !meshBroadcastIDs.contains(event.id), !publishedIDs.contains(event.id), !receivedIDs.contains(event.id),
              !rebroadcastIDs.contains(event.id), !book.isQueued(event.id) else { return .refused(refuse(.seen)) }
        guard book.charge(depositor, now: now, perMinute: limits.depositsPerMinute, tracked: limits.trackedDepositors) else {
            return .refused(refuse(.rateLimited))
        }
        guard radioVerifies.take(now: now) else { return .refused(refuse(.overBudget)) }
        guard (try? event.verify()) != nil else { return .refused(refuse(.badSignature)) }
        if event.kind == MeshBridge.boardKind {
            // Fresh as any deposit, the depositor's own, willing to cross, its author's signature inside, and not one that came from the relays.
            guard fresh(event, wall: wall) else { return .refused(refuse(.stale)) }
            guard let b = MeshBridge.boardPacket(of: event), b.authorKey == signingKey, Self.mayCross(b), BoardSigning.isValid(b) else {
                return .refused(refuse(.badBoard))
            }
            guard !boardIn.contains(Self.boardKey(b)) else { return .refused(refuse(.seen)) }
        }
        let upload = GatewayCore.Upload(event: event, geohash: carrier.geohash, depositor: depositor)
        if relaysUp {
            published(event)
            return .publish(upload)
        }
        guard book.enqueue(upload, perDepositor: limits.queuedPerDepositor, total: limits.queued) else { return .refused(refuse(.depositorQueueFull)) }
        published(event)
        return .queued
    }

    /// A relay is up: what was queued goes (oldest first), each once.
    public mutating func relaysUp() -> [GatewayCore.Upload] {
        let out = book.flush()
        for u in out { published(u.event) }
        return out
    }

    // MARK: From the relays

    /// An event our subscription brought: the message to show (nil: nothing
    /// to show), which also waits for the mesh from `now + jitter`.
    public mutating func fromRelay(_ event: NostrEvent, now: UInt64, wall: UInt64, jitter: UInt64) -> BridgedMessage? {
        guard cell != nil else { return nil }
        guard let r = event.tags.first(where: { $0.count >= 2 && $0[0] == "r" })?[1], cells.contains(r) else { return none(.wrongCell) }
        // Ours (published by us, or signed by our key: from before a restart too), never shown or carried down.
        if publishedIDs.contains(event.id) || event.pubkey == ownKey { return none(.ours) }
        guard !receivedIDs.contains(event.id) else { return none(.seen) }
        guard event.tags.count <= 64, event.tags.allSatisfy({ $0.count <= 16 && $0.allSatisfy { $0.utf8.count <= 1_024 } }),
              Self.fitsCarrier(event) else { return none(.notAnEvent) }
        guard verifies.take(now: now) else { return none(.overBudget) }
        guard (try? event.verify()) != nil else { return none(.badSignature) }
        guard admit(event.pubkey, now: now) else { return none(.rateLimited) }
        receivedIDs.insert(event.id) // after the signature and the budgets: neither a forgery nor a flood marks a real one seen
        switch classify(event, cell: r, wall: wall) {
        case let .failure(why): return none(why)
        case .success(.presence):
            see(event.pubkey, now: now)
            return nil
        case let .success(.board(b)):
            see(event.pubkey, now: now)
            return boardFromRelay(b, signer: event.pubkey, now: now, wall: wall, jitter: jitter)
        case .success(.message): break
        }
        see(event.pubkey, now: now)
        let hint = MeshBridge.radioHint(of: event)
        if let hint, radioIDs.contains(hint) { return none(.heardOnRadio) }
        if meshBroadcastIDs.contains(event.id) { return nil } // another bridge carried it here: shown then
        if !rebroadcastIDs.contains(event.id), !pendingDownlinks.contains(where: { $0.event.id == event.id }) {
            if pendingDownlinks.count >= limits.pendingDownlinks { pendingDownlinks.removeFirst() }
            pendingDownlinks.append((event, r, hint, now + jitter))
        }
        return message(event, cell: r, radioID: hint, hops: 0)
    }

    /// The `fromBridge` carriers to broadcast now: as many as the minute's
    /// budget allows, each one's hold-off past, still fresh, not carried here
    /// by another bridge meanwhile.
    public mutating func due(now: UInt64, wall: UInt64) -> [NostrCarrier] {
        sent.removeAll { now >= $0 + 60_000 }
        var out: [NostrCarrier] = []
        while sent.count < limits.downlinkPerMinute, let i = pendingDownlinks.indices.filter({ pendingDownlinks[$0].notBefore <= now }).first {
            let d = pendingDownlinks.remove(at: i)
            guard !meshBroadcastIDs.contains(d.event.id), !rebroadcastIDs.contains(d.event.id), d.radioID.map({ !radioIDs.contains($0) }) ?? true,
                  fresh(d.event, wall: wall),
                  let c = try? NostrCarrier(direction: .fromBridge, geohash: d.cell, eventJSON: Array(d.event.json.utf8)) else { continue }
            rebroadcastIDs.insert(d.event.id)
            sent.append(now)
            downlinked += 1
            out.append(c)
        }
        return out
    }

    /// Whether a board entry may cross: a tombstone always (it only deletes
    /// its author's post), a post only when its author set the signed flag
    /// ``BoardPacket/mayCrossFlag`` (so nobody else can make it leave its mesh).
    public static func mayCross(_ b: BoardPacket) -> Bool {
        if case let .post(p) = b { return p.flags & BoardPacket.mayCrossFlag != 0 }
        return true
    }

    /// A board post or tombstone from the relays, its author's signature
    /// checked: it waits for the mesh (``nextBoard(now:spacing:)``), unless it
    /// is expired, not allowed to cross, ours, on the board from us already,
    /// or past its author's or signer's share of the queue.
    private mutating func boardFromRelay(_ b: BoardPacket, signer: String, now: UInt64, wall: UInt64, jitter: UInt64) -> BridgedMessage? {
        guard Self.mayCross(b), BoardSigning.isValid(b) else { return none(.badBoard) }
        if case let .post(p) = b, p.expiresAt <= wall { return none(.stale) }
        let key = Self.boardKey(b)
        if boardOut.contains(key) { return none(.ours) }
        guard !boardIn.contains(key), !pendingBoard.contains(where: { $0.packet == b }) else { return none(.seen) }
        guard pendingBoard.filter({ $0.packet.authorKey == b.authorKey }).count < limits.pendingBoardPerAuthor,
              pendingBoard.filter({ $0.signer == signer }).count < limits.pendingBoardPerSigner else { return none(.rateLimited) }
        if case .tombstone = b { pendingBoard.removeAll { $0.packet.postID == b.postID && $0.packet.authorKey == b.authorKey } }
        if pendingBoard.count >= limits.pendingBoard { pendingBoard.removeFirst() }
        pendingBoard.append((b, signer, now + jitter))
        return nil
    }

    /// The next board entry from the relays to put on the mesh's board, if
    /// one is due and the minute's budget and the spacing allow (nil: none
    /// now). The caller tries it and says ``boardTaken(_:now:spacing:)`` when
    /// the board took it: only then does it count.
    public mutating func nextBoard(now: UInt64) -> BoardPacket? {
        boardSent.removeAll { now >= $0 + 60_000 }
        guard boardSent.count < limits.boardDownlinkPerMinute, now >= boardNext,
              let i = pendingBoard.firstIndex(where: { $0.notBefore <= now }) else { return nil }
        let entry = pendingBoard.remove(at: i)
        boardInHand = (entry.packet, entry.signer)
        return entry.packet
    }

    /// The entry ``nextBoard(now:)`` gave last could not be sent (signing it
    /// failed): it waits `retryAfter` at the head of the queue, its signer's
    /// share kept, and is counted in ``unsentBoardEntries``.
    public mutating func boardNotSent(_ b: BoardPacket, now: UInt64, retryAfter: UInt64) {
        unsentBoardEntries += 1
        guard let hand = boardInHand, hand.packet == b, !pendingBoard.contains(where: { $0.packet == b }) else { return }
        if pendingBoard.count >= limits.pendingBoard { pendingBoard.removeLast() }
        pendingBoard.insert((b, hand.signer, now + retryAfter), at: 0)
        boardInHand = nil
    }


    /// The board took `b` (put on the mesh's board by us): counted, marked as
    /// crossed in, and the next waits `spacing` (``Limits/boardSpacing`` and a random part).
    public mutating func boardTaken(_ b: BoardPacket, now: UInt64, spacing: UInt64) {
        boardSent.append(now)
        boardIn.insert(Self.boardKey(b))
        boardNext = now + spacing
    }

    /// When ``due(now:wall:)``, ``nextBoard(now:)`` or ``presenceDue(now:wall:relaysUp:)`` has something next (nil: nothing).
    public func nextDeadline(relaysUp: Bool) -> UInt64? {
        var next: UInt64?
        if let first = pendingDownlinks.map(\.notBefore).min() {
            next = sent.count >= limits.downlinkPerMinute ? max(first, (sent.first ?? 0) + 60_000) : first
        }
        if let first = pendingBoard.map(\.notBefore).min() {
            let b = boardSent.count >= limits.boardDownlinkPerMinute ? max(first, (boardSent.first ?? 0) + 60_000) : first
            next = min(next ?? .max, max(b, boardNext))
        }
        if relaysUp, cell != nil, key != nil {
            let p = lastPresence.map { $0 + limits.presenceEvery } ?? 0
            next = min(next ?? .max, p)
        }
        return next
    }

    // MARK: From the mesh

    /// A `fromBridge` carrier heard on the mesh (no bridge needed): its
    /// message, when it is one to show, once.
    public mutating func heard(_ carrier: NostrCarrier, hops: Int, now: UInt64, wall: UInt64) -> BridgedMessage? {
        guard carrier.direction == .fromBridge else { return nil }
        let event: NostrEvent
        switch check(carrier, wall: wall) {
        case let .success(e): event = e
        case let .failure(r): return none(r)
        }
        // Board events never come as carriers (a bridge puts them on the board as 0x23): one that does is
        // refused before it can mark the real one's ID as taken.
        guard event.kind != MeshBridge.boardKind else { return none(.wrongKind) }
        if publishedIDs.contains(event.id) || event.pubkey == ownKey { return none(.ours) }
        guard !meshBroadcastIDs.contains(event.id) else { return none(.seen) }
        // One our relays brought (shown then) is checked still when our downlink of it waits: another bridge served this mesh.
        let waiting = pendingDownlinks.contains { $0.event.id == event.id }
        guard !receivedIDs.contains(event.id) || waiting else { return none(.seen) }
        guard radioVerifies.take(now: now) else { return none(.overBudget) }
        guard (try? event.verify()) != nil else { return none(.badSignature) }
        pendingDownlinks.removeAll { $0.event.id == event.id } // another bridge served this mesh (its signature holds)
        if waiting || receivedIDs.contains(event.id) {
            meshBroadcastIDs.insert(event.id)
            return nil // shown when our relays brought it
        }
        shownFromRadio.removeAll { now >= $0.at + 60_000 }
        guard shownFromRadio.count < limits.heardPerMinute, shownFromRadio.filter({ $0.key == event.pubkey }).count < limits.heardPerKey else {
            return none(.rateLimited)
        }
        meshBroadcastIDs.insert(event.id) // after the signature and the budget: a forgery cannot take an ID's place
        receivedIDs.insert(event.id)
        see(event.pubkey, now: now)
        guard event.kind == LocationChannel.messageKind else { return nil }
        shownFromRadio.append((event.pubkey, now))
        let hint = MeshBridge.radioHint(of: event)
        if let hint, radioIDs.contains(hint) { return none(.heardOnRadio) }
        return message(event, cell: carrier.geohash, radioID: hint, hops: hops)
    }

    // MARK: Checks

    private func message(_ e: NostrEvent, cell: String, radioID: String?, hops: Int) -> BridgedMessage {
        let nickname = e.tags.first { $0.count >= 2 && $0[0] == "n" }
            .map { String(String.UnicodeScalarView(MeshBridge.trimmed($0[1]).unicodeScalars.prefix(64))) }
        let m = e.tags.first { $0.count >= 4 && $0[0] == "m" }
        return BridgedMessage(cell: cell, eventID: e.id, pubkey: e.pubkey, nickname: nickname?.isEmpty == false ? nickname : nil,
                              text: e.content, createdAt: e.created_at, radioID: radioID, hops: hops, meshSender: m.map { $0[2].lowercased() })
    }

    /// Whether `signer` may have one more event this minute (600 in all, 120 each).
    private mutating func admit(_ signer: String, now: UInt64) -> Bool {
        inbound.removeAll { now >= $0.at + 60_000 }
        guard inbound.count < limits.inboundPerMinute, inbound.filter({ $0.signer == signer }).count < limits.inboundPerSigner else { return false }
        inbound.append((signer, now))
        return true
    }

    /// A participant heard now. Those past their life are counted out by
    /// ``participants(now:)`` and dropped when the table is full (not on every event).
    private mutating func see(_ signer: String, now: UInt64) {
        if participantsSeen[signer] == nil, participantsSeen.count >= limits.participants {
            participantsSeen = participantsSeen.filter { now < $0.value + limits.participantLife }
            if participantsSeen.count >= limits.participants,
               let oldest = participantsSeen.min(by: { ($0.value, $0.key) < ($1.value, $1.key) }) {
                participantsSeen[oldest.key] = nil
            }
        }
        participantsSeen[signer] = now
    }

    /// Whether the event's JSON is within a carrier's 16 KiB: without
    /// serialising it when its fields are small enough that no escaping
    /// (at most 6 bytes a byte, `\u00XX`) could take it past.
    public static func fitsCarrier(_ e: NostrEvent) -> Bool {
        let fields = e.content.utf8.count + e.tags.reduce(0) { $0 + $1.reduce(4) { $0 + $1.utf8.count + 3 } }
        if 400 + 6 * fields <= NostrCarrier.maxEventJSON { return true }
        return e.json.utf8.count <= NostrCarrier.maxEventJSON
    }

    private func fresh(_ e: NostrEvent, wall: UInt64) -> Bool {
        let nowSeconds = Int64(wall / 1_000), age = Int64(limits.maxAge / 1_000)
        return e.created_at >= nowSeconds - age && e.created_at <= nowSeconds + age
    }

    private enum Kind {
        case message, presence, board(BoardPacket)
    }

    /// A message, a presence, a board post or tombstone (its payload read,
    /// its author's signature not yet checked), or why none. A board event may
    /// be as old as a post lives (7 days), the others ±15 minutes.
    private func classify(_ e: NostrEvent, cell: String, wall: UInt64) -> Result<Kind, Refusal> {
        if e.kind == MeshBridge.boardKind {
            let nowSeconds = Int64(wall / 1_000), skew = Int64(limits.maxAge / 1_000)
            guard e.created_at >= nowSeconds - MeshBridge.boardLookback - skew, e.created_at <= nowSeconds + skew else { return .failure(.stale) }
        } else {
            guard fresh(e, wall: wall) else { return .failure(.stale) }
        }
        guard NostrCarrier.isValidGeohash(cell), e.tags.contains(where: { $0.count >= 2 && $0[0] == "r" && $0[1] == cell }) else { return .failure(.wrongCell) }
        switch e.kind {
        case LocationChannel.presenceKind: return .success(.presence)
        case LocationChannel.messageKind:
            guard !MeshBridge.trimmed(e.content).isEmpty, e.content.utf8.count <= MeshBridge.maxContent else {
                return .failure(.empty)
            }
            return .success(.message)
        case MeshBridge.boardKind:
            guard let b = MeshBridge.boardPacket(of: e) else { return .failure(.badBoard) }
            return .success(.board(b))
        default: return .failure(.wrongKind)
        }
    }

    /// The structural checks of a carrier's event, no cryptography.
    private func check(_ c: NostrCarrier, wall: UInt64) -> Result<NostrEvent, Refusal> {
        guard let e = try? NostrEvent.decode(String(decoding: c.eventJSON, as: UTF8.self)), e.tags.count <= 64,
              e.tags.allSatisfy({ $0.count <= 16 && $0.allSatisfy { $0.utf8.count <= 1_024 } }) else { return .failure(.notAnEvent) }
        return classify(e, cell: c.geohash, wall: wall).map { _ in e }
    }

    private mutating func refuse(_ r: Refusal) -> Refusal {
        refusals[r, default: 0] += 1
        return r
    }

    private mutating func none(_ r: Refusal) -> BridgedMessage? {
        _ = refuse(r)
        return nil
    }
}
