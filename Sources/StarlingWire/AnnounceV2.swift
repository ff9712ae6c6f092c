/// The second announce (message type 0x2C; docs/PROTOCOL.md, "Announce v2
/// (0x2C) and vouches (Noise 0x12)"), as iOS 1.7 defines it (bitchat
/// AnnounceV2Packet.swift) though neither app sends it yet: **unsigned**, a
/// rotating peer ID's "somebody is here", with recognition tags only peers who
/// know the sender's Noise key can match. TLVs of type u8, length **u8**:
/// 01 epoch (u32 BE), 02 tag block (8 slots of 8 bytes), 03 capabilities
/// (canonical: little-endian, no trailing zero byte), 04 bridge geohash (≤ 12
/// bytes UTF-8). Read as iOS reads: unknown types skipped, epoch and tag block
/// required, every length exact.
public struct AnnounceV2: Hashable, Sendable {
    public static let tagSlots = 8, tagLength = 8

    public var epoch: UInt32
    /// 64 bytes: 8 recognition tags (unused slots random), shuffled.
    public var tagBlock: [UInt8]
    public var capabilities: UInt64?
    public var bridgeGeohash: String?

    public init(epoch: UInt32, tagBlock: [UInt8], capabilities: UInt64? = nil, bridgeGeohash: String? = nil) {
        self.epoch = epoch
        self.tagBlock = tagBlock
        self.capabilities = capabilities
        self.bridgeGeohash = bridgeGeohash
    }

    public var tags: [[UInt8]] {
        stride(from: 0, to: tagBlock.count, by: Self.tagLength).map { Array(tagBlock[$0..<min($0 + Self.tagLength, tagBlock.count)]) }
    }

    public func encoded() throws(EncodingError) -> [UInt8] {
        guard tagBlock.count == Self.tagSlots * Self.tagLength else {
            throw EncodingError(field: "announceV2.tagBlock", problem: "\(tagBlock.count) bytes; must be 64")
        }
        var out: [UInt8] = []
        out.appendTLV(0x01, epoch.bigEndianBytes, length: .u8)
        out.appendTLV(0x02, tagBlock, length: .u8)
        if let capabilities { out.appendTLV(0x03, Announce.capabilityBytes(capabilities), length: .u8) }
        if let g = bridgeGeohash, !g.isEmpty {
            try checkLength(g.utf8.count, .u8, field: "announceV2.bridgeGeohash")
            out.appendTLV(0x04, Array(g.utf8), length: .u8)
        }
        return out
    }

    public init(decoding bytes: ArraySlice<UInt8>) throws(WireError) {
        var r = ByteReader(Array(bytes))
        var epoch: UInt32?, block: [UInt8]?, caps: UInt64?, geohash: String?
        while !r.isAtEnd {
            let t = try r.tlv("announceV2") { _ in .u8 }
            let v = Array(t.value)
            switch t.type {
            case 0x01:
                guard v.count == 4 else { throw WireError(.lengthOutOfRange(declared: v.count, limit: 4), field: "announceV2.epoch", offset: t.valueOffset) }
                epoch = v.reduce(0) { $0 << 8 | UInt32($1) }
            case 0x02:
                guard v.count == Self.tagSlots * Self.tagLength else {
                    throw WireError(.lengthOutOfRange(declared: v.count, limit: 64), field: "announceV2.tagBlock", offset: t.valueOffset)
                }
                block = v
            case 0x03:
                var value: UInt64 = 0
                for (i, b) in v.prefix(8).enumerated() { value |= UInt64(b) << UInt64(8 * i) }
                // Canonical only (iOS): what re-encodes to the same bytes.
                guard (1...8).contains(v.count), Announce.capabilityBytes(value) == v else {
                    throw WireError(.invalidValue("capabilities not in their canonical form"), field: "announceV2.capabilities", offset: t.valueOffset)
                }
                caps = value
            case 0x04:
                guard (1...12).contains(v.count) else {
                    throw WireError(.lengthOutOfRange(declared: v.count, limit: 12), field: "announceV2.bridgeGeohash", offset: t.valueOffset)
                }
                geohash = try utf8Value(v[...], field: "announceV2.bridgeGeohash", offset: t.valueOffset)
            default:
                break
            }
        }
        guard let epoch, let block else { throw WireError(.missingField, field: "announceV2", offset: r.position) }
        self.init(epoch: epoch, tagBlock: block, capabilities: caps, bridgeGeohash: geohash)
    }
}

/// A vouch (iOS 1.7, bitchat VouchAttestation.swift): "I verified this
/// fingerprint, with this signing key", signed by the voucher's Ed25519 key
/// at `timestamp`. TLVs of type u8, length u8: 01 vouchee fingerprint (32),
/// 02 vouchee signing key (32), 03 timestamp (u64 BE ms), 04 signature (64);
/// a wrong size refuses the attestation. The voucher is not named: it is the
/// peer whose Noise session carried it.
public struct VouchAttestation: Hashable, Sendable {
    public static let domain = Array("bitchat-vouch-v1".utf8)
    public static let maxBatch = 16

    public var voucheeFingerprint: [UInt8]
    public var voucheeSigningKey: [UInt8]
    public var timestamp: UInt64
    public var signature: [UInt8]

    public init(voucheeFingerprint: [UInt8], voucheeSigningKey: [UInt8], timestamp: UInt64, signature: [UInt8] = []) {
        self.voucheeFingerprint = voucheeFingerprint
        self.voucheeSigningKey = voucheeSigningKey
        self.timestamp = timestamp
        self.signature = signature
    }

    /// `"bitchat-vouch-v1" ‖ fingerprint ‖ signing key ‖ u64be(timestamp)`: 88 bytes.
    public var signingBytes: [UInt8] { Self.domain + voucheeFingerprint + voucheeSigningKey + timestamp.bigEndianBytes }

    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.appendTLV(0x01, voucheeFingerprint, length: .u8)
        out.appendTLV(0x02, voucheeSigningKey, length: .u8)
        out.appendTLV(0x03, timestamp.bigEndianBytes, length: .u8)
        out.appendTLV(0x04, signature, length: .u8)
        return out
    }

    public init(decoding bytes: ArraySlice<UInt8>) throws(WireError) {
        var r = ByteReader(Array(bytes))
        var f: [UInt8]?, k: [UInt8]?, at: UInt64?, sig: [UInt8]?
        while !r.isAtEnd {
            let t = try r.tlv("vouch") { _ in .u8 }
            let v = Array(t.value)
            func exact(_ n: Int, _ name: String) throws(WireError) {
                guard v.count == n else { throw WireError(.lengthOutOfRange(declared: v.count, limit: n), field: "vouch.\(name)", offset: t.valueOffset) }
            }
            switch t.type {
            case 0x01: try exact(32, "voucheeFingerprint"); f = v
            case 0x02: try exact(32, "voucheeSigningKey"); k = v
            case 0x03: try exact(8, "timestamp"); at = v.reduce(0) { $0 << 8 | UInt64($1) }
            case 0x04: try exact(64, "signature"); sig = v
            default: break
            }
        }
        guard let f, let k, let at, let sig else { throw WireError(.missingField, field: "vouch", offset: r.position) }
        self.init(voucheeFingerprint: f, voucheeSigningKey: k, timestamp: at, signature: sig)
    }

    /// A batch (the Noise 0x12 payload's body): count u8 (1–16), then each
    /// attestation as length u16 BE ‖ bytes.
    public static func encodeBatch(_ list: [VouchAttestation]) throws(EncodingError) -> [UInt8] {
        guard (1...maxBatch).contains(list.count) else { throw EncodingError(field: "vouch.batch", problem: "\(list.count) vouches; 1 to 16") }
        var out = [UInt8(list.count)]
        for a in list {
            let b = a.encoded()
            out += UInt16(b.count).bigEndianBytes + b
        }
        return out
    }

    /// Reads a batch as iOS reads it: at most 16 entries, an entry that does
    /// not decode skipped, a truncated one ending the list.
    public static func decodeBatch(_ bytes: [UInt8]) -> [VouchAttestation] {
        guard bytes.count > 1 else { return [] }
        var out: [VouchAttestation] = []
        var i = 1
        for _ in 0..<min(Int(bytes[0]), maxBatch) {
            guard i + 2 <= bytes.count else { break }
            let n = Int(bytes[i]) << 8 | Int(bytes[i + 1])
            guard i + 2 + n <= bytes.count else { break }
            if let a = try? VouchAttestation(decoding: bytes[(i + 2)..<(i + 2 + n)]) { out.append(a) }
            i += 2 + n
        }
        return out
    }
}
