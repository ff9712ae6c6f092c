/// A prekey bundle (message type 0x24; docs/PROTOCOL.md, "Prekey bundles
/// (0x24)"): up to 8 one-time Curve25519 keys a peer publishes so that others
/// can seal courier drops to it while it is away, as iOS 1.7 writes them
/// (bitchat PrekeyBundle.swift). TLVs of type u8, length u16 big-endian:
/// 01 the owner's Noise static key (32), 02 the prekeys (36 each: id u32 BE ‖
/// key 32), 03 generatedAt (u64 ms), 04 the signature (64) by the owner's
/// announce signing key over ``signingBytes``.
///
/// Read as iOS reads: unknown TLVs skipped, every length exact, 1 to 8
/// prekeys with no ID twice, all four fields present. The signature is
/// checked by StarlingCrypto's `PrekeySigning`, against the key the owner's
/// verified announce carries (a bundle is not self-authenticating).
public struct PrekeyBundle: Hashable, Sendable {
    public struct Prekey: Hashable, Sendable {
        public var id: UInt32
        public var key: [UInt8]
        public init(id: UInt32, key: [UInt8]) {
            self.id = id
            self.key = key
        }
    }

    public static let maxPrekeys = 8
    public static let context = Array("bitchat-prekey-bundle-v1".utf8)

    public var noiseStaticKey: [UInt8]
    public var prekeys: [Prekey]
    public var generatedAt: UInt64
    public var signature: [UInt8]

    public init(noiseStaticKey: [UInt8], prekeys: [Prekey], generatedAt: UInt64, signature: [UInt8] = []) {
        self.noiseStaticKey = noiseStaticKey
        self.prekeys = prekeys
        self.generatedAt = generatedAt
        self.signature = signature
    }

    /// `18 ‖ "bitchat-prekey-bundle-v1" ‖ noise key (32) ‖ count (u8) ‖ (id u32 BE ‖ key 32)… ‖ generatedAt u64 BE`.
    public var signingBytes: [UInt8] {
        var out = [UInt8(Self.context.count)] + Self.context + noiseStaticKey + [UInt8(prekeys.count)]
        for p in prekeys { out += p.id.bigEndianBytes + p.key }
        return out + generatedAt.bigEndianBytes
    }

    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.appendTLV(0x01, noiseStaticKey, length: .u16)
        out.appendTLV(0x02, prekeys.flatMap { $0.id.bigEndianBytes + $0.key }, length: .u16)
        out.appendTLV(0x03, generatedAt.bigEndianBytes, length: .u16)
        out.appendTLV(0x04, signature, length: .u16)
        return out
    }

    public init(decoding bytes: ArraySlice<UInt8>) throws(WireError) {
        let b = Array(bytes)
        var i = 0
        var key: [UInt8]?, keys: [Prekey]?, at: UInt64?, sig: [UInt8]?
        while i < b.count {
            guard i + 3 <= b.count else { throw WireError(.truncated(needed: i + 3, available: b.count), field: "prekeyBundle.tlv", offset: i) }
            let t = b[i], n = Int(b[i + 1]) << 8 | Int(b[i + 2])
            guard i + 3 + n <= b.count else { throw WireError(.truncated(needed: i + 3 + n, available: b.count), field: "prekeyBundle.tlv", offset: i) }
            let v = Array(b[(i + 3)..<(i + 3 + n)])
            func exact(_ size: Int, _ name: String) throws(WireError) {
                guard v.count == size else { throw WireError(.lengthOutOfRange(declared: v.count, limit: size), field: "prekeyBundle.\(name)", offset: i) }
            }
            switch t {
            case 0x01:
                try exact(32, "noiseStaticKey")
                key = v
            case 0x02:
                guard !v.isEmpty, v.count % 36 == 0, v.count / 36 <= Self.maxPrekeys else {
                    throw WireError(.invalidValue("\(v.count) bytes of prekeys"), field: "prekeyBundle.prekeys", offset: i)
                }
                var list: [Prekey] = []
                for j in stride(from: 0, to: v.count, by: 36) {
                    let id: UInt32 = v[j..<(j + 4)].reduce(0) { $0 << 8 | UInt32($1) }
                    list.append(Prekey(id: id, key: Array(v[(j + 4)..<(j + 36)])))
                }
                guard Set(list.map(\.id)).count == list.count else { throw WireError(.duplicateField, field: "prekeyBundle.prekeys", offset: i) }
                keys = list
            case 0x03:
                try exact(8, "generatedAt")
                at = v.reduce(0) { $0 << 8 | UInt64($1) }
            case 0x04:
                try exact(64, "signature")
                sig = v
            default:
                break // unknown: skipped
            }
            i += 3 + n
        }
        guard let key, let keys, let at, let sig else { throw WireError(.missingField, field: "prekeyBundle", offset: b.count) }
        noiseStaticKey = key
        prekeys = keys
        generatedAt = at
        signature = sig
    }
}

extension FixedWidthInteger {
    public var bigEndianBytes: [UInt8] { withUnsafeBytes(of: bigEndian) { Array($0) } }
}
