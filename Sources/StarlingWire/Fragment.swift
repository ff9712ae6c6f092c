/// The payload of a FRAGMENT packet (type 0x20): a 13-byte header, then a slice
/// of the encoded original packet.
///
/// fragmentID (8 random bytes) ‖ index u16 BE ‖ total u16 BE ‖ originalType u8 ‖ data.
/// Index 0 starts a message and index total − 1 ends it (the seed's
/// FRAGMENT_START / CONTINUE / END are this one type).
public struct Fragment: Hashable, Sendable {
    public static let headerSize = 13

    public var fragmentID: UInt64
    public var index: UInt16
    public var total: UInt16
    public var originalType: MessageType
    public var data: [UInt8]

    public init(fragmentID: UInt64, index: UInt16, total: UInt16, originalType: MessageType, data: [UInt8]) {
        self.fragmentID = fragmentID
        self.index = index
        self.total = total
        self.originalType = originalType
        self.data = data
    }

    public func encoded() -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(Self.headerSize + data.count)
        out.appendBE(fragmentID)
        out.appendBE(index)
        out.appendBE(total)
        out.append(originalType.rawValue)
        out.append(contentsOf: data)
        return out
    }

    public init(decoding bytes: [UInt8], errorBase: Int = 0) throws(WireError) {
        var r = ByteReader(bytes, errorBase: errorBase)
        fragmentID = try r.u64("fragment.fragmentID")
        let indexAt = r.position
        index = try r.u16("fragment.index")
        let totalAt = r.position
        total = try r.u16("fragment.total")
        originalType = MessageType(rawValue: try r.u8("fragment.originalType"))
        guard total >= 1 else {
            throw WireError(.invalidValue("total is 0"), field: "fragment.total", offset: totalAt)
        }
        guard index < total else {
            throw WireError(.invalidValue("index \(index) is not below total \(total)"), field: "fragment.index", offset: indexAt)
        }
        data = Array(r.rest)
    }
}

/// Splits packets too large for a link into FRAGMENT packets.
public enum Fragmenter {
    /// Data bytes per fragment when the link does not say otherwise.
    public static let defaultChunkSize = 469
    public static let minimumChunkSize = 64

    /// Bytes a fragment packet adds around its data for this original packet:
    /// header, sender, recipient and route as copied, and the fragment header.
    public static func overhead(for packet: Packet) -> Int {
        let routeBytes = packet.route.map { 1 + 8 * $0.count } ?? 0
        let header = packet.route == nil ? Packet.v1HeaderSize : Packet.v2HeaderSize
        return header + 8 + (packet.recipientID == nil ? 0 : 8) + routeBytes + Fragment.headerSize
    }

    /// The data size per fragment so that each fragment packet fits `linkLimit`
    /// bytes (at least 64); 469 when there is no limit.
    public static func chunkSize(for packet: Packet, linkLimit: Int?) -> Int {
        guard let linkLimit else { return defaultChunkSize }
        return max(minimumChunkSize, linkLimit - overhead(for: packet))
    }

    /// Splits `packet` into fragment packets of at most `chunkSize` data bytes each.
    ///
    /// Fragments copy sender, recipient, timestamp, TTL, route and isRSR; they are
    /// unsigned, uncompressed (so each fits its link exactly) and v1 unless a route
    /// needs v2. The data is the whole encoded
    /// packet, signature included.
    public static func fragment(_ packet: Packet, chunkSize: Int, fragmentID: UInt64,
                                maxFragments: Int = Reassembler.Limits.default.maxFragmentsPerMessage)
        throws(EncodingError) -> [Packet]
    {
        guard chunkSize > 0 else { throw EncodingError(field: "chunkSize", problem: "must be positive") }
        let whole = try packet.encoded()
        let count = (whole.count + chunkSize - 1) / chunkSize
        guard count <= maxFragments, count <= Int(UInt16.max) else {
            throw EncodingError(field: "fragments",
                                problem: "\(whole.count) bytes need \(count) fragments of \(chunkSize); receivers accept at most \(maxFragments)")
        }
        var out = [Packet]()
        out.reserveCapacity(count)
        for i in 0..<count {
            let start = i * chunkSize
            let piece = Fragment(fragmentID: fragmentID, index: UInt16(i), total: UInt16(count),
                                 originalType: packet.type,
                                 data: Array(whole[start..<min(start + chunkSize, whole.count)]))
            out.append(Packet(version: packet.route == nil ? 1 : 2, type: .fragment, ttl: packet.ttl,
                              timestamp: packet.timestamp, senderID: packet.senderID,
                              recipientID: packet.recipientID, route: packet.route, isRSR: packet.isRSR,
                              payload: piece.encoded(), compress: false))
        }
        return out
    }
}

/// Why the reassembler refused a fragment.
public enum ReassemblyError: Error, Hashable, Sendable, CustomStringConvertible {
    case tooManyFragments(total: Int, limit: Int)
    case tooLarge(bytes: Int, limit: Int)
    /// A fragment's total or original type differs from the earlier fragments of its ID.
    case inconsistent(field: String)

    public var description: String {
        switch self {
        case let .tooManyFragments(total, limit): "message of \(total) fragments; at most \(limit)"
        case let .tooLarge(bytes, limit): "message of \(bytes) bytes; at most \(limit)"
        case let .inconsistent(field): "fragment \(field) differs from earlier fragments of the same ID"
        }
    }
}

/// Collects fragments until a message is whole. A plain value: time comes in.
///
/// Bounded in every direction: at most 128 messages in progress (the oldest is
/// dropped for a new one), 30 s from first fragment to last, 1 MiB and 256
/// fragments per message. Duplicates and any arrival order are fine.
public struct Reassembler: Sendable {
    public struct Limits: Hashable, Sendable {
        public var maxInProgress = 128
        public var timeoutMillis: UInt64 = 30_000
        public var maxMessageBytes = 1 << 20
        public var maxFragmentsPerMessage = 256
        /// Bytes held by every message in progress together: past it, the
        /// oldest messages are dropped to make room (a flood of fragment sets
        /// cannot hold 128 × 1 MiB).
        public var maxTotalBytes = 4 << 20
        public init() {}
        public static let `default` = Limits()
    }

    public enum Event: Hashable, Sendable {
        /// Stored; `received` of `total` pieces are here.
        case waiting(received: Int, total: Int)
        /// This piece was already here; nothing changed.
        case duplicate
        /// The message is whole: the encoded original packet.
        case complete([UInt8])
    }

    struct Key: Hashable { var sender: PeerID; var fragmentID: UInt64 }

    struct Assembly {
        var started: UInt64
        var total: Int
        var type: MessageType
        var pieces: [[UInt8]?]
        var received = 0
        var bytes = 0
        /// When the last new piece came.
        var progressed: UInt64 = 0
        /// A broadcast's (not a packet addressed to us): one a stalled reassembly may ask the mesh for.
        var broadcast = false
    }

    /// Broadcast messages in progress with no new piece for `stall` ms: their
    /// fragment IDs, oldest progress first (the apps ask for such a stream by ID).
    public func stalled(now: UInt64, stall: UInt64) -> [UInt64] {
        inProgress.filter { $0.value.broadcast && now >= $0.value.progressed && now - $0.value.progressed >= stall }
            .sorted { $0.value.progressed < $1.value.progressed }.map(\.key.fragmentID)
    }

    /// When the stalled-stream check is next worth running (nil: no broadcast in progress).
    public func nextStall(stall: UInt64) -> UInt64? {
        inProgress.values.filter(\.broadcast).map { $0.progressed + stall }.min()
    }

    public let limits: Limits
    private var inProgress: [Key: Assembly] = [:]
    /// Messages being reassembled.
    public var count: Int { inProgress.count }
    /// Bytes held by the messages in progress.
    public private(set) var totalBytes = 0
    /// Messages dropped unfinished (timeout or eviction), for statistics.
    public private(set) var dropped = 0
    /// No message in progress can be stale before this time.
    private var nextExpiry: UInt64 = 0

    public init(limits: Limits = .default) { self.limits = limits }

    public var inProgressCount: Int { inProgress.count }

    public mutating func receive(_ fragment: Fragment, from sender: PeerID, now: UInt64,
                                 broadcast: Bool = false) throws(ReassemblyError) -> Event {
        expire(now: now)
        let total = Int(fragment.total)
        guard total <= limits.maxFragmentsPerMessage else {
            throw .tooManyFragments(total: total, limit: limits.maxFragmentsPerMessage)
        }
        let key = Key(sender: sender, fragmentID: fragment.fragmentID)
        if total == 1 {
            guard fragment.data.count <= limits.maxMessageBytes else {
                throw .tooLarge(bytes: fragment.data.count, limit: limits.maxMessageBytes)
            }
            return .complete(fragment.data)
        }
        var assembly: Assembly
        if let existing = inProgress.removeValue(forKey: key) { // unique ownership: no copy on write
            assembly = existing
            totalBytes -= assembly.bytes
            guard assembly.total == total, assembly.type == fragment.originalType else {
                put(assembly, key) // the earlier fragments stay; this one is refused
                throw .inconsistent(field: assembly.total == total ? "originalType" : "total")
            }
        } else {
            if inProgress.count >= limits.maxInProgress { dropOldest() }
            assembly = Assembly(started: now, total: total, type: fragment.originalType,
                                pieces: Array(repeating: nil, count: total))
        }
        let index = Int(fragment.index)
        if assembly.pieces[index] != nil {
            put(assembly, key)
            return .duplicate
        }
        let bytes = assembly.bytes + fragment.data.count
        guard bytes <= limits.maxMessageBytes, bytes <= limits.maxTotalBytes else {
            dropped += 1
            throw .tooLarge(bytes: bytes, limit: min(limits.maxMessageBytes, limits.maxTotalBytes))
        }
        // Room for this piece: the oldest other messages go first.
        while totalBytes + bytes > limits.maxTotalBytes, !inProgress.isEmpty { dropOldest() }
        assembly.pieces[index] = fragment.data
        assembly.bytes = bytes
        assembly.received += 1
        assembly.progressed = now
        assembly.broadcast = assembly.broadcast || broadcast
        if assembly.received == total {
            var whole = [UInt8]()
            whole.reserveCapacity(bytes)
            for piece in assembly.pieces { whole.append(contentsOf: piece!) }
            return .complete(whole)
        }
        put(assembly, key)
        return .waiting(received: assembly.received, total: total)
    }

    private mutating func put(_ a: Assembly, _ key: Key) {
        inProgress[key] = a
        totalBytes += a.bytes
    }

    private mutating func dropOldest() {
        guard let oldest = inProgress.min(by: { $0.value.started < $1.value.started }) else { return }
        inProgress.removeValue(forKey: oldest.key)
        totalBytes -= oldest.value.bytes
        dropped += 1
    }

    /// Drops messages whose first fragment came more than the timeout ago.
    public mutating func expire(now: UInt64) {
        // Runs for every fragment: look at the messages only once one can be stale.
        guard now > nextExpiry else { return }
        let timeout = limits.timeoutMillis
        let stale = inProgress.compactMap { key, a in now > a.started && now - a.started > timeout ? key : nil }
        for key in stale { totalBytes -= inProgress.removeValue(forKey: key)?.bytes ?? 0 }
        dropped += stale.count
        nextExpiry = (inProgress.values.map(\.started).min() ?? now) &+ timeout
    }
}
