import StarlingWire

/// Gossip sync: what a node keeps of the recent public traffic, so that a
/// neighbour that missed some of it (it was away, or the mesh was split) can
/// ask with a GCS filter of what it has and get the rest.
///
/// Kept: the latest announce of each sender (for `announceRetention`) and
/// public messages (for `messageRetention`), at most `capacity` packets; and,
/// when `fragmentRetention` is set, broadcast fragments (at most
/// `maxFragments` of them, within the same capacity), so that a neighbour
/// whose reassembly stalled can ask for its stream by ID.
public struct GossipStore: Sendable {
    public struct Configuration: Hashable, Sendable {
        /// Between sync requests to all links (a random part is added, up to the same again).
        public var interval: Millis = 15_000
        /// After a link comes up, a first request to it.
        public var initialDelay: Millis = 5_000
        public var messageRetention: Millis = 300_000
        /// How long broadcast fragments are kept for stalled-stream requests
        /// (iOS: 900 s); nil: not kept (the simulator's default).
        public var fragmentRetention: Millis? = nil
        /// Fragments kept at most (the oldest go first).
        public var maxFragments = 256
        public var announceRetention: Millis = 60_000
        public var capacity = 1_000
        /// Bytes kept at most (payloads as inflated, plus compressed copies and
        /// ~128 bytes a packet): past it the oldest go, so a flood of large
        /// messages cannot fill memory through the store.
        public var maxBytes = 4 << 20
        /// Sync requests answered per link within `answerWindow` (the apps: 8 in 30 s).
        public var answersPerWindow = 8
        public var answerWindow: Millis = 30_000
        public var filterBudget = GCSFilter.defaultBudget
        public var falsePositiveRate = GCSFilter.defaultFalsePositiveRate
        /// Packets sent back for one request at most.
        public var maxReplies = 200
        /// An answer of at most this many packets sends twice those that the
        /// last answer on the same link carried and the asker still lacks
        /// (they were lost); 0: never.
        public var resendLostBelow = 16
        /// A public packet learnt from a sync reply whose timestamp is within
        /// this of now is relayed on (with the full TTL); older ones are kept
        /// and not relayed (other nodes may have forgotten them, and a relay
        /// would flood the whole mesh again). nil: never relay them. Kept below
        /// the router's dedup retention (5 minutes).
        public var repairRelayWindow: Millis? = 240_000
        /// A node that learns something new from a sync (a repair under way)
        /// sends its own next request within this (plus as much jitter), no
        /// sooner than `initialDelay` after its last one.
        public var repairHint: Millis = 2_000
        /// Rounds of their own for packets another store keeps and hands the
        /// router (``MeshRouter/provide(_:packets:)``: the board), as iOS asks
        /// for board posts every 60 s apart from messages.
        public var rounds: [Round] = []
        public init() {}
    }

    /// A sync round of its own: a REQUEST_SYNC naming `types`, sent every
    /// `interval` (plus up to a tenth of it at random) and to a link that
    /// comes up, its filter holding the newest `capacity` of those packets.
    public struct Round: Hashable, Sendable {
        public var types: SyncTypes
        public var interval: Millis
        public var capacity: Int
        public init(types: SyncTypes, interval: Millis, capacity: Int) {
            self.types = types
            self.interval = interval
            self.capacity = capacity
        }
    }

    struct Entry {
        var id: PacketID
        var packet: Packet
        var receivedAt: Millis
        /// A fragment's stream ID and index.
        var stream: (id: UInt64, index: UInt16)? = nil
    }

    public let configuration: Configuration
    private var entries: [UInt64: Entry] = [:]
    private var latestAnnounce: [PeerID: UInt64] = [:]
    private var fragmentCount = 0
    /// What the packets kept cost, as ``Configuration/maxBytes`` counts it.
    public private(set) var bytes = 0

    static func cost(_ p: Packet) -> Int { p.payload.count + (p.compressedPayload?.count ?? 0) + 128 }

    public init(configuration: Configuration = Configuration()) { self.configuration = configuration }

    public var count: Int { entries.count }

    /// Keeps a public packet (announces, messages and, when configured,
    /// fragments; others are ignored).
    public mutating func keep(_ packet: Packet, id: PacketID, now: Millis) {
        guard packet.isBroadcast else { return }
        var stream: (id: UInt64, index: UInt16)?
        if packet.type == .fragment, configuration.fragmentRetention != nil, configuration.maxFragments > 0,
           let f = try? Fragment(decoding: packet.payload) {
            stream = (f.fragmentID, f.index)
        } else {
            guard packet.type == .announce || packet.type == .message else { return }
        }
        if packet.type == .announce {
            if let old = latestAnnounce[packet.senderID], let oldEntry = entries[old] {
                guard oldEntry.packet.timestamp <= packet.timestamp else { return }
                forget(old)
            }
            latestAnnounce[packet.senderID] = id.high
        }
        let cost = Self.cost(packet)
        guard cost <= configuration.maxBytes else { return }
        if entries[id.high] != nil { forget(id.high) }
        entries[id.high] = Entry(id: id, packet: packet, receivedAt: now, stream: stream)
        bytes += cost
        if stream != nil { fragmentCount += 1 }
        while fragmentCount > configuration.maxFragments,
              let oldest = entries.filter({ $0.value.stream != nil }).min(by: { $0.value.receivedAt < $1.value.receivedAt }) {
            forget(oldest.key)
        }
        while entries.count > configuration.capacity || bytes > configuration.maxBytes,
              let oldest = entries.min(by: { $0.value.receivedAt < $1.value.receivedAt }) {
            forget(oldest.key)
        }
    }

    /// A LEAVE: the sender's announce goes at once.
    public mutating func senderLeft(_ sender: PeerID) {
        if let key = latestAnnounce[sender] { forget(key) }
    }

    public mutating func expire(now: Millis) {
        let stale = entries.filter { _, e in
            let keep = e.stream != nil ? configuration.fragmentRetention ?? 0
                : e.packet.type == .announce ? configuration.announceRetention : configuration.messageRetention
            return now > e.receivedAt && now - e.receivedAt > keep
        }.keys
        for key in stale { forget(key) }
    }

    private mutating func forget(_ key: UInt64) {
        guard let e = entries.removeValue(forKey: key) else { return }
        bytes -= Self.cost(e.packet)
        if e.stream != nil { fragmentCount -= 1 }
        if e.packet.type == .announce, latestAnnounce[e.packet.senderID] == key { latestAnnounce[e.packet.senderID] = nil }
    }

    /// A filter of what we have, newest first within the budget (a budget
    /// to spare buys fewer false positives). Each request should pass a
    /// different `spread` (``GCSFilter``): a packet that is a false positive
    /// of one filter, and so never sent back, is then not one of the next.
    /// Fragments are left out (they would spend the budget of the messages),
    /// unless `streams` names some: then it holds just their fragments (the
    /// filter of a stalled-stream request).
    public func filter(spread: UInt32 = 0, streams: Set<UInt64>? = nil) -> GCSFilter {
        let ids = entries.values.filter { e in
            guard let streams else { return e.stream == nil }
            return e.stream.map { streams.contains($0.id) } ?? false
        }
            .sorted { ($0.receivedAt, $0.id.high) > ($1.receivedAt, $1.id.high) }.map(\.id)
        return GCSFilter(ids: ids, budget: configuration.filterBudget, falsePositiveRate: configuration.falsePositiveRate,
                         spread: spread, spendSpareBudget: true)
    }

    /// What the asker's filter lacks, as packets to send back (TTL 0, isRSR),
    /// with their IDs.
    public func missing(from filter: GCSFilter) -> [(id: PacketID, packet: Packet)] {
        let values = filter.values()
        var out: [(id: PacketID, packet: Packet)] = []
        for e in entries.values.sorted(by: { ($0.receivedAt, $0.id.high) > ($1.receivedAt, $1.id.high) })
        where !GCSFilter.contains(sortedValues: values, e.id, m: filter.m) {
            var p = e.packet
            p.ttl = 0
            p.isRSR = true
            out.append((e.id, p))
            if out.count >= configuration.maxReplies { break }
        }
        return out
    }

    /// The fragments of these streams that the asker's filter lacks, in
    /// stream and index order (TTL 0, isRSR), for a stalled-stream request.
    public func missingFragments(of streams: Set<UInt64>, from filter: GCSFilter) -> [(id: PacketID, packet: Packet)] {
        let values = filter.values()
        return entries.values.compactMap { e -> (UInt64, UInt16, PacketID, Packet)? in
            guard let s = e.stream, streams.contains(s.id), !GCSFilter.contains(sortedValues: values, e.id, m: filter.m) else { return nil }
            var p = e.packet
            p.ttl = 0
            p.isRSR = true
            return (s.id, s.index, e.id, p)
        }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.prefix(configuration.maxReplies).map { ($0.2, $0.3) }
    }
}
