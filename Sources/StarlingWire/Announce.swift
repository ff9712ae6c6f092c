/// The payload of an ANNOUNCE packet (type 0x01): who a peer is.
///
/// TLVs of u8 type + u8 length. Nickname, Noise static key and Ed25519 key are
/// required; neighbours, capabilities and bridge geohash are optional; unknown
/// TLVs are skipped and kept, and written back after the known ones.
public struct Announce: Hashable, Sendable {
    public enum Tag {
        public static let nickname: UInt8 = 0x01
        public static let noisePublicKey: UInt8 = 0x02
        public static let signingPublicKey: UInt8 = 0x03
        public static let directNeighbors: UInt8 = 0x04
        public static let capabilities: UInt8 = 0x05
        public static let bridgeGeohash: UInt8 = 0x06
    }

    public static let maxNeighbors = 10
    public static let maxGeohashLength = 12

    public var nickname: String
    /// Curve25519 static public key (32 bytes).
    public var noisePublicKey: [UInt8]
    /// Ed25519 public key (32 bytes).
    public var signingPublicKey: [UInt8]
    /// Up to 10 directly connected peers; nil when the TLV is absent.
    public var directNeighbors: [PeerID]?
    /// Capability bits; nil when the TLV is absent.
    public var capabilities: UInt64?
    /// Geohash of a bridge this peer offers; nil when absent.
    public var bridgeGeohash: String?
    public var unknown: [UnknownTLV]

    public init(nickname: String, noisePublicKey: [UInt8], signingPublicKey: [UInt8],
                directNeighbors: [PeerID]? = nil, capabilities: UInt64? = nil,
                bridgeGeohash: String? = nil, unknown: [UnknownTLV] = []) {
        self.nickname = nickname
        self.noisePublicKey = noisePublicKey
        self.signingPublicKey = signingPublicKey
        self.directNeighbors = directNeighbors
        self.capabilities = capabilities
        self.bridgeGeohash = bridgeGeohash
        self.unknown = unknown
    }

    public func encoded() throws(EncodingError) -> [UInt8] {
        let name = Array(nickname.utf8)
        try checkLength(name.count, .u8, field: "announce.nickname")
        guard noisePublicKey.count == 32 else {
            throw EncodingError(field: "announce.noisePublicKey", problem: "\(noisePublicKey.count) bytes; must be 32")
        }
        guard signingPublicKey.count == 32 else {
            throw EncodingError(field: "announce.signingPublicKey", problem: "\(signingPublicKey.count) bytes; must be 32")
        }
        var out = [UInt8]()
        out.reserveCapacity(70 + name.count)
        out.appendTLV(Tag.nickname, name, length: .u8)
        out.appendTLV(Tag.noisePublicKey, noisePublicKey, length: .u8)
        out.appendTLV(Tag.signingPublicKey, signingPublicKey, length: .u8)
        if let directNeighbors {
            guard directNeighbors.count <= Self.maxNeighbors else {
                throw EncodingError(field: "announce.directNeighbors", problem: "\(directNeighbors.count) peers; at most 10")
            }
            out.appendTLV(Tag.directNeighbors, directNeighbors.flatMap(\.bytes), length: .u8)
        }
        if let capabilities {
            out.appendTLV(Tag.capabilities, Self.capabilityBytes(capabilities), length: .u8)
        }
        if let bridgeGeohash {
            let g = Array(bridgeGeohash.utf8)
            guard g.count <= Self.maxGeohashLength else {
                throw EncodingError(field: "announce.bridgeGeohash", problem: "\(g.count) bytes; at most 12")
            }
            out.appendTLV(Tag.bridgeGeohash, g, length: .u8)
        }
        for tlv in unknown {
            try checkLength(tlv.value.count, .u8, field: "announce.unknown[0x\(String(tlv.type, radix: 16))]")
            out.appendTLV(tlv.type, tlv.value, length: .u8)
        }
        return out
    }

    /// u64 little-endian with trailing zero bytes dropped (zero is one byte 0x00).
    static func capabilityBytes(_ value: UInt64) -> [UInt8] {
        var bytes = (0..<8).map { UInt8(truncatingIfNeeded: value >> UInt64(8 * $0)) }
        while bytes.count > 1, bytes.last == 0 { bytes.removeLast() }
        return bytes
    }

    /// Decodes an announce payload. `errorBase` is the payload's offset in the
    /// packet, so errors point into the packet.
    public init(decoding bytes: [UInt8], errorBase: Int = 0) throws(WireError) {
        var r = ByteReader(bytes, errorBase: errorBase)
        var nickname: String?
        var noiseKey: [UInt8]?
        var signingKey: [UInt8]?
        var neighbors: [PeerID]?
        var capabilities: UInt64?
        var geohash: String?
        var unknown: [UnknownTLV] = []
        var seen = SeenTLVTypes()

        while !r.isAtEnd {
            let start = r.position
            let (type, at, value) = try r.tlv("announce.tlv") { _ in .u8 }
            if (Tag.nickname...Tag.bridgeGeohash).contains(type) {
                try seen.insert(type, context: "announce.tlv", offset: start)
            }
            switch type {
            case Tag.nickname:
                nickname = try utf8Value(value, field: "announce.nickname", offset: at)
            case Tag.noisePublicKey:
                guard value.count == 32 else {
                    throw WireError(.invalidValue("Noise key of \(value.count) bytes; must be 32"),
                                    field: "announce.noisePublicKey", offset: at)
                }
                noiseKey = Array(value)
            case Tag.signingPublicKey:
                guard value.count == 32 else {
                    throw WireError(.invalidValue("Ed25519 key of \(value.count) bytes; must be 32"),
                                    field: "announce.signingPublicKey", offset: at)
                }
                signingKey = Array(value)
            case Tag.directNeighbors:
                guard value.count % 8 == 0, value.count <= 8 * Self.maxNeighbors else {
                    throw WireError(.invalidValue("\(value.count) bytes; must be a multiple of 8, at most 80"),
                                    field: "announce.directNeighbors", offset: at)
                }
                neighbors = stride(from: value.startIndex, to: value.endIndex, by: 8).map {
                    PeerID(bytes: value[$0..<$0 + 8])!
                }
            case Tag.capabilities:
                guard (1...8).contains(value.count) else {
                    throw WireError(.invalidValue("\(value.count) bytes; must be 1 to 8"),
                                    field: "announce.capabilities", offset: at)
                }
                var v: UInt64 = 0
                for (i, b) in value.enumerated() { v |= UInt64(b) << UInt64(8 * i) }
                capabilities = v
            case Tag.bridgeGeohash:
                guard value.count <= Self.maxGeohashLength else {
                    throw WireError(.lengthOutOfRange(declared: value.count, limit: Self.maxGeohashLength),
                                    field: "announce.bridgeGeohash", offset: at)
                }
                geohash = try utf8Value(value, field: "announce.bridgeGeohash", offset: at)
            default:
                unknown.append(UnknownTLV(type: type, value: Array(value)))
            }
        }
        guard let nickname else { throw WireError(.missingField, field: "announce.nickname", offset: r.position) }
        guard let noiseKey else { throw WireError(.missingField, field: "announce.noisePublicKey", offset: r.position) }
        guard let signingKey else { throw WireError(.missingField, field: "announce.signingPublicKey", offset: r.position) }
        self.init(nickname: nickname, noisePublicKey: noiseKey, signingPublicKey: signingKey,
                  directNeighbors: neighbors, capabilities: capabilities, bridgeGeohash: geohash,
                  unknown: unknown)
    }
}

/// What an announce says its sender can do: TLV 0x05, a little-endian
/// bitfield with trailing zero bytes trimmed (docs/PROTOCOL.md, "Announce").
/// Bits as the apps define them; unknown bits are kept.
public struct Capabilities: OptionSet, Hashable, Sendable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static let prekeys = Capabilities(rawValue: 1 << 0)
    public static let wifiBulk = Capabilities(rawValue: 1 << 1)
    public static let gateway = Capabilities(rawValue: 1 << 2)
    public static let groups = Capabilities(rawValue: 1 << 3)
    public static let board = Capabilities(rawValue: 1 << 4)
    public static let vouch = Capabilities(rawValue: 1 << 5)
    /// Answers ping (0x26) with pong (0x27).
    public static let meshDiagnostics = Capabilities(rawValue: 1 << 6)
    public static let bridge = Capabilities(rawValue: 1 << 7)
    public static let privateMedia = Capabilities(rawValue: 1 << 8)
    public static let privateMediaReceipts = Capabilities(rawValue: 1 << 9)
    /// Android only, so far.
    public static let peerIDRotation = Capabilities(rawValue: 1 << 14)

    static let named: [(Capabilities, String)] = [
        (.prekeys, "prekeys"), (.wifiBulk, "wifiBulk"), (.gateway, "gateway"), (.groups, "groups"), (.board, "board"),
        (.vouch, "vouch"), (.meshDiagnostics, "meshDiagnostics"), (.bridge, "bridge"), (.privateMedia, "privateMedia"),
        (.privateMediaReceipts, "privateMediaReceipts"), (.peerIDRotation, "peerIDRotation"),
    ]

    /// The names of the bits set; unknown ones as "bit N".
    public var names: [String] {
        var out = Self.named.filter { contains($0.0) }.map(\.1)
        let known = Self.named.reduce(UInt64(0)) { $0 | $1.0.rawValue }
        for bit in 0..<64 where rawValue & ~known & (1 << UInt64(bit)) != 0 { out.append("bit \(bit)") }
        return out
    }
}
