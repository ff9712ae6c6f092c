import Crypto

/// A Golomb-coded set of packet IDs, as REQUEST_SYNC carries it.
///
/// - h64 = first 8 bytes of SHA-256(packet ID), big-endian, top bit cleared;
/// - P = ceil(log2(1/fpr)) (7 at 1%), or more from a spare budget (up to 16);
///   N ≤ budget × 8 / (P + 2); M = N · 2^P + spread
///   (`spread` 0 in the deployed apps; a Starling requester changes it from one
///   request to the next, so that an ID that collides in one filter does not
///   collide in the next: a receiver reads M from the request);
/// - each ID maps to h64 mod M, with 0 mapped to 1; values sorted and deduplicated;
/// - deltas x ≥ 1 (the first from 0) are written as Golomb-Rice codes of x − 1:
///   q one-bits, a zero, then P remainder bits, MSB first; the last byte is zero-padded;
/// - over budget, the oldest 10% of the IDs are dropped, again and again.
public struct GCSFilter: Hashable, Sendable {
    public static let defaultBudget = 400
    public static let defaultFalsePositiveRate = 0.01
    public static let maxFilterBytes = 1024
    /// The largest P a filter takes from a spare budget (M stays within a u32).
    public static let maxSparedP = 16

    /// Golomb-Rice parameter.
    public var p: UInt8
    /// Hash range.
    public var m: UInt32
    /// The encoded bit stream.
    public var data: [UInt8]

    public init(p: UInt8, m: UInt32, data: [UInt8]) {
        self.p = p
        self.m = m
        self.data = data
    }

    public static func parameter(falsePositiveRate fpr: Double) -> Int {
        let f = min(max(fpr, 0.000_001), 0.25)
        return max(1, Int((Double(1) / f).log2Ceil))
    }

    /// The 63-bit hash of a packet ID.
    @inline(__always)
    public static func hash(_ id: PacketID) -> UInt64 {
        let digest = withUnsafeBytes(of: (id.high.bigEndian, id.low.bigEndian)) {
            SHA256.hash(data: $0)
        }
        return digest.withUnsafeBytes { raw in
            UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self)) & 0x7FFF_FFFF_FFFF_FFFF
        }
    }

    /// Builds a filter from IDs ordered newest first, within `budget` bytes;
    /// `spread` is added to M (N · 2^P). With `spendSpareBudget`, fewer IDs
    /// than the budget holds get a larger P (at most 16), as far as N · (P + 3)
    /// bits fit the budget: fewer false positives, within the same budget.
    public init(ids: [PacketID], budget: Int = defaultBudget,
                falsePositiveRate: Double = defaultFalsePositiveRate, spread: UInt32 = 0,
                spendSpareBudget: Bool = false) {
        var p = Self.parameter(falsePositiveRate: falsePositiveRate)
        let budget = min(max(budget, 1), Self.maxFilterBytes)
        let capacity = max(1, budget * 8 / (p + 2))
        let hashes = ids.prefix(capacity).map(Self.hash)
        if spendSpareBudget, !hashes.isEmpty {
            // A value costs about P + 2 bits; one more to spare.
            p = max(p, min(budget * 8 / hashes.count - 3, Self.maxSparedP))
        }
        var n = hashes.count
        while true {
            // M must fit a u32.
            let m = UInt32(clamping: (max(1, n) << p) + Int(spread))
            var values = hashes.prefix(n).map { h -> UInt64 in
                let v = h % UInt64(m)
                return v == 0 ? 1 : v
            }
            values.sort()
            let encoded = Self.encode(sorted: values, p: p)
            if encoded.count <= budget || n == 0 {
                self.init(p: UInt8(p), m: m, data: encoded)
                return
            }
            n = n * 9 / 10
        }
    }

    static func encode(sorted values: [UInt64], p: Int) -> [UInt8] {
        var w = BitWriter()
        var previous: UInt64 = 0
        let mask: UInt64 = (1 << UInt64(p)) - 1
        for v in values where v != previous { // deduplicate
            let x = v - previous - 1
            previous = v
            w.writeOnes(Int(x >> UInt64(p)))
            w.writeBits(x & mask, count: p + 1) // the 0 that ends the unary part, then r
        }
        return w.finish()
    }

    /// The sorted set of values the filter holds. Decoding stops at the end of the
    /// data or at the first value ≥ M, so at most 8 × data.count values come out.
    public func values() -> [UInt64] {
        var out: [UInt64] = []
        let p = Int(self.p)
        guard p >= 1, p <= 32 else { return out }
        var r = BitReader(data)
        var acc: UInt64 = 0
        while let q = r.readUnary(), let rem = r.readBits(p) {
            let x = (UInt64(q) << UInt64(p)) + rem + 1
            acc &+= x
            if acc >= UInt64(m) { break }
            out.append(acc)
        }
        return out
    }

    /// Whether a packet ID may be in the set (false positives at about 2^−P).
    public func contains(_ id: PacketID) -> Bool {
        Self.contains(sortedValues: values(), id, m: m)
    }

    /// Membership against values decoded once with ``values()``.
    public static func contains(sortedValues: [UInt64], _ id: PacketID, m: UInt32) -> Bool {
        guard m > 0 else { return false }
        var v = hash(id) % UInt64(m)
        if v == 0 { v = 1 }
        var lo = 0, hi = sortedValues.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if sortedValues[mid] < v { lo = mid + 1 } else { hi = mid }
        }
        return lo < sortedValues.count && sortedValues[lo] == v
    }
}

extension Double {
    /// ceil(log2(self)), exact for powers of two.
    var log2Ceil: Double {
        var e = 0.0, v = 1.0
        while v < self { v *= 2; e += 1 }
        return e
    }
}

struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private var current: UInt64 = 0
    private var used = 0 // bits in `current`

    mutating func writeOnes(_ count: Int) {
        var left = count
        while left > 0 {
            let n = min(left, 32)
            writeBits((1 << UInt64(n)) - 1, count: n)
            left -= n
        }
    }

    /// Writes the low `count` bits of `value`, most significant first (count ≤ 33).
    mutating func writeBits(_ value: UInt64, count: Int) {
        current = current << UInt64(count) | (value & ((1 << UInt64(count)) - 1))
        used += count
        while used >= 8 {
            used -= 8
            bytes.append(UInt8(truncatingIfNeeded: current >> UInt64(used)))
        }
        current &= (1 << UInt64(used)) - 1
    }

    mutating func finish() -> [UInt8] {
        if used > 0 {
            bytes.append(UInt8(truncatingIfNeeded: current << UInt64(8 - used)))
            used = 0
            current = 0
        }
        return bytes
    }
}

struct BitReader {
    let bytes: [UInt8]
    var bit = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var bitsLeft: Int { bytes.count * 8 - bit }

    mutating func readBit() -> UInt64? {
        guard bit < bytes.count * 8 else { return nil }
        defer { bit += 1 }
        return UInt64(bytes[bit >> 3] >> UInt8(7 - (bit & 7)) & 1)
    }

    mutating func readUnary() -> Int? {
        var q = 0
        while let b = readBit() {
            if b == 0 { return q }
            q += 1
        }
        return nil
    }

    mutating func readBits(_ count: Int) -> UInt64? {
        guard bitsLeft >= count else { return nil }
        var v: UInt64 = 0
        for _ in 0..<count { v = v << 1 | readBit()! }
        return v
    }
}

/// Which packet types a REQUEST_SYNC asks for (TLV 0x04, little-endian, 1–8
/// bytes, trailing zero bytes trimmed). Absent: announces and public messages.
public struct SyncTypes: OptionSet, Hashable, Sendable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// The bit of each type, as the apps number them; then Starling's own:
    /// bit 40, `fromBridge` Nostr carriers (0x28), which the apps do not sync
    /// (they drop bits they do not know: iOS's `SyncTypeFlags.decode`, Android's mask).
    public static let bits: [(MessageType, Int)] = [
        (.announce, 0), (.message, 1), (.leave, 2), (.noiseHandshake, 3), (.noiseEncrypted, 4), (.fragment, 5),
        (.requestSync, 6), (.fileTransfer, 7), (.boardPost, 8), (.prekeyBundle, 9), (.groupMessage, 10),
        (.nostrCarrier, 40),
    ]
    /// What a request without the TLV asks for.
    public static let `default` = SyncTypes([.announce, .message])

    public init(_ types: [MessageType]) {
        rawValue = types.reduce(0) { acc, t in acc | (Self.bits.first { $0.0 == t }.map { 1 << UInt64($0.1) } ?? 0) }
    }

    public func includes(_ type: MessageType) -> Bool {
        guard let bit = Self.bits.first(where: { $0.0 == type })?.1 else { return false }
        return rawValue & (1 << UInt64(bit)) != 0
    }

    /// Little-endian with trailing zero bytes trimmed (at least one byte).
    public var encoded: [UInt8] {
        var out = (0..<8).map { UInt8(truncatingIfNeeded: rawValue >> (8 * UInt64($0))) }
        while out.count > 1, out.last == 0 { out.removeLast() }
        return out
    }

    public init?(decoding bytes: ArraySlice<UInt8>) {
        guard (1...8).contains(bytes.count) else { return nil }
        rawValue = bytes.enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
    }
}

/// The payload of REQUEST_SYNC (type 0x21): TLVs of u8 type + **u16 BE** length.
/// 0x01 P (1 byte), 0x02 M (u32 BE), 0x03 filter data (at most 1024 bytes), all
/// required; then the apps' 2026 options: 0x04 types (``SyncTypes``), 0x05 since
/// (u64 BE, ms), 0x06 fragment filter (comma-separated 16-hex-digit fragment
/// IDs, at most 60). Android's earlier numbering (0x05 types as one byte, 0x06
/// since, 0x07 fragment filter) is read too, and told apart by the TLVs and
/// their lengths (docs/PROTOCOL.md). Other TLVs are skipped and kept. Sent with
/// TTL 0 and signed.
public struct RequestSync: Hashable, Sendable {
    public enum Tag {
        public static let p: UInt8 = 0x01
        public static let m: UInt8 = 0x02
        public static let data: UInt8 = 0x03
        public static let types: UInt8 = 0x04
        public static let since: UInt8 = 0x05
        public static let fragmentIDs: UInt8 = 0x06
    }

    /// Which numbering a decoded request used for its options.
    public enum Numbering: Hashable, Sendable {
        /// iOS (and Android's newest): 0x04 types, 0x05 since, 0x06 fragment filter.
        case ios
        /// Android's earlier: 0x05 types (one byte), 0x06 since, 0x07 fragment filter.
        case androidLegacy
    }

    public static let maxFragmentIDs = 60

    public var filter: GCSFilter
    /// Types asked for; nil: the default (announces and public messages).
    public var types: SyncTypes?
    /// Only packets stamped at or after this (ms).
    public var since: UInt64?
    /// Fragment streams asked for by ID (a reassembly that stalled).
    public var fragmentIDs: [UInt64]?
    public var numbering: Numbering = .ios
    public var unknown: [UnknownTLV]

    public init(filter: GCSFilter, types: SyncTypes? = nil, since: UInt64? = nil, fragmentIDs: [UInt64]? = nil,
                unknown: [UnknownTLV] = []) {
        self.filter = filter
        self.types = types
        self.since = since
        self.fragmentIDs = fragmentIDs
        self.unknown = unknown
    }

    static func fragmentFilter(_ ids: [UInt64]) -> [UInt8] {
        Array(ids.map { id in
            let hex = String(id, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined(separator: ",").utf8)
    }

    /// Comma-separated 16-hex-digit IDs; nil when malformed (the apps then ignore the filter).
    static func fragmentFilter(decoding bytes: ArraySlice<UInt8>) -> [UInt64]? {
        guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count <= maxFragmentIDs else { return nil }
        var out: [UInt64] = []
        for part in parts {
            guard part.count == 16, let v = UInt64(part, radix: 16) else { return nil }
            out.append(v)
        }
        return out
    }

    public func encoded() throws(EncodingError) -> [UInt8] {
        guard filter.data.count <= GCSFilter.maxFilterBytes else {
            throw EncodingError(field: "requestSync.data", problem: "\(filter.data.count) bytes; at most 1024")
        }
        var out = [UInt8]()
        out.reserveCapacity(filter.data.count + 14)
        out.appendTLV(Tag.p, [filter.p], length: .u16)
        var m = [UInt8](); m.appendBE(filter.m)
        out.appendTLV(Tag.m, m, length: .u16)
        out.appendTLV(Tag.data, filter.data, length: .u16)
        // In the numbering the request came in (ours: iOS's).
        let tags = Self.tags(numbering)
        if let types { out.appendTLV(tags.types, types.encoded, length: .u16) }
        if let since {
            var b = [UInt8](); b.appendBE(since)
            out.appendTLV(tags.since, b, length: .u16)
        }
        if let fragmentIDs {
            guard fragmentIDs.count <= Self.maxFragmentIDs else {
                throw EncodingError(field: "requestSync.fragmentIDs", problem: "\(fragmentIDs.count) IDs; at most 60")
            }
            out.appendTLV(tags.fragmentIDs, Self.fragmentFilter(fragmentIDs), length: .u16)
        }
        for tlv in unknown {
            try checkLength(tlv.value.count, .u16, field: "requestSync.unknown")
            out.appendTLV(tlv.type, tlv.value, length: .u16)
        }
        return out
    }

    public init(decoding bytes: [UInt8], errorBase: Int = 0) throws(WireError) {
        var r = ByteReader(bytes, errorBase: errorBase)
        var p: UInt8?, m: UInt32?, data: [UInt8]?
        var unknown: [UnknownTLV] = []
        while !r.isAtEnd {
            let start = r.position
            let (type, at, value) = try r.tlv("requestSync.tlv") { _ in .u16 }
            switch type {
            case Tag.p:
                guard p == nil else { throw WireError(.duplicateField, field: "requestSync.p", offset: start) }
                guard value.count == 1, let v = value.first, (1...32).contains(v) else {
                    throw WireError(.invalidValue("P must be one byte, 1 to 32"), field: "requestSync.p", offset: at)
                }
                p = v
            case Tag.m:
                guard m == nil else { throw WireError(.duplicateField, field: "requestSync.m", offset: start) }
                guard value.count == 4 else {
                    throw WireError(.invalidValue("M must be 4 bytes, got \(value.count)"), field: "requestSync.m", offset: at)
                }
                m = value.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            case Tag.data:
                guard data == nil else { throw WireError(.duplicateField, field: "requestSync.data", offset: start) }
                guard value.count <= GCSFilter.maxFilterBytes else {
                    throw WireError(.lengthOutOfRange(declared: value.count, limit: GCSFilter.maxFilterBytes),
                                    field: "requestSync.data", offset: at)
                }
                data = Array(value)
            default:
                unknown.append(UnknownTLV(type: type, value: Array(value)))
            }
        }
        guard let p else { throw WireError(.missingField, field: "requestSync.p", offset: r.position) }
        guard let m else { throw WireError(.missingField, field: "requestSync.m", offset: r.position) }
        guard let data else { throw WireError(.missingField, field: "requestSync.data", offset: r.position) }
        self.init(filter: GCSFilter(p: p, m: m, data: data))
        // The options: iOS numbering unless the TLVs say Android's earlier one
        // (a 0x07, or a 0x05 that is not an 8-byte timestamp). A malformed
        // option is ignored, as the apps ignore it (the filter still counts),
        // and kept as an unknown TLV, so that the request re-encodes as it came.
        var rest = unknown
        func take(_ t: UInt8, _ parse: ([UInt8]) -> Bool) {
            guard let i = rest.firstIndex(where: { $0.type == t }), parse(rest[i].value) else { return }
            rest.remove(at: i)
        }
        func first(_ t: UInt8) -> [UInt8]? { rest.first { $0.type == t }?.value }
        let legacy = first(0x04) == nil && (first(0x07) != nil || (first(0x05).map { $0.count != 8 } ?? false))
        numbering = legacy ? .androidLegacy : .ios
        let tags = Self.tags(numbering)
        take(tags.types) { v in
            types = SyncTypes(decoding: v[...])
            return types != nil
        }
        take(tags.since) { v in
            guard v.count == 8 else { return false }
            since = v.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return true
        }
        take(tags.fragmentIDs) { v in
            fragmentIDs = Self.fragmentFilter(decoding: v[...])
            return fragmentIDs != nil
        }
        self.unknown = rest
    }

    /// The option tags of a numbering.
    static func tags(_ n: Numbering) -> (types: UInt8, since: UInt8, fragmentIDs: UInt8) {
        n == .ios ? (0x04, 0x05, 0x06) : (0x05, 0x06, 0x07)
    }
}
