/// A courier drop (message type 0x04; docs/PROTOCOL.md, "Courier drops
/// (0x04)"), as iOS 1.7 writes it (bitchat CourierEnvelope.swift): a message
/// sealed one-way (Noise X) for someone who is away, handed from courier to
/// courier until its recipient appears. TLVs of type u8, length u16 BE:
/// 01 recipient tag (16), 02 expiry (u64 BE ms), 03 ciphertext (1–16,384
/// bytes), 04 copies (u8, written only when over 1), 05 prekey ID (u32 BE,
/// written only when sealed to a one-time prekey).
///
/// Read as iOS reads: any order, unknown types skipped, a later copy
/// replacing an earlier one, a known type of the wrong size refusing the
/// whole envelope; tag, expiry and ciphertext required; copies missing is 1,
/// and is clamped to 1–8.
public struct CourierEnvelope: Hashable, Sendable {
    public static let tagLength = 16
    public static let maxCiphertext = 16 * 1_024
    public static let maxCopies: UInt8 = 8
    /// The longest an envelope lives (iOS: 24 hours), ms.
    public static let maxLifetime: UInt64 = 86_400_000

    public var recipientTag: [UInt8]
    public var expiry: UInt64
    public var ciphertext: [UInt8]
    public var copies: UInt8 { didSet { copies = min(max(copies, 1), Self.maxCopies) } }
    public var prekeyID: UInt32?

    public init(recipientTag: [UInt8], expiry: UInt64, ciphertext: [UInt8], copies: UInt8 = 1, prekeyID: UInt32? = nil) {
        self.recipientTag = recipientTag
        self.expiry = expiry
        self.ciphertext = ciphertext
        self.copies = min(max(copies, 1), Self.maxCopies)
        self.prekeyID = prekeyID
    }

    public func isExpired(at nowMillis: UInt64) -> Bool { nowMillis >= expiry }

    public func encoded() throws(EncodingError) -> [UInt8] {
        guard recipientTag.count == Self.tagLength else {
            throw EncodingError(field: "courier.recipientTag", problem: "\(recipientTag.count) bytes; must be 16")
        }
        guard (1...Self.maxCiphertext).contains(ciphertext.count) else {
            throw EncodingError(field: "courier.ciphertext", problem: "\(ciphertext.count) bytes; 1 to 16,384")
        }
        var out: [UInt8] = []
        out.appendTLV(0x01, recipientTag, length: .u16)
        out.appendTLV(0x02, expiry.bigEndianBytes, length: .u16)
        out.appendTLV(0x03, ciphertext, length: .u16)
        if copies > 1 { out.appendTLV(0x04, [copies], length: .u16) }
        if let prekeyID { out.appendTLV(0x05, prekeyID.bigEndianBytes, length: .u16) }
        return out
    }

    public init(decoding bytes: ArraySlice<UInt8>) throws(WireError) {
        var r = ByteReader(Array(bytes))
        var tag: [UInt8]?, expiry: UInt64?, sealed: [UInt8]?, copies: UInt8 = 1, prekey: UInt32?
        while !r.isAtEnd {
            let t = try r.tlv("courier") { _ in .u16 }
            let v = Array(t.value)
            func exact(_ n: Int, _ name: String) throws(WireError) {
                guard v.count == n else { throw WireError(.lengthOutOfRange(declared: v.count, limit: n), field: "courier.\(name)", offset: t.valueOffset) }
            }
            switch t.type {
            case 0x01: try exact(16, "recipientTag"); tag = v
            case 0x02: try exact(8, "expiry"); expiry = v.reduce(0) { $0 << 8 | UInt64($1) }
            case 0x03:
                guard (1...Self.maxCiphertext).contains(v.count) else {
                    throw WireError(.lengthOutOfRange(declared: v.count, limit: Self.maxCiphertext), field: "courier.ciphertext", offset: t.valueOffset)
                }
                sealed = v
            case 0x04: try exact(1, "copies"); copies = v[0]
            case 0x05: try exact(4, "prekeyID"); prekey = v.reduce(0) { $0 << 8 | UInt32($1) }
            default: break
            }
        }
        guard let tag, let expiry, let sealed else { throw WireError(.missingField, field: "courier", offset: r.position) }
        self.init(recipientTag: tag, expiry: expiry, ciphertext: sealed, copies: copies, prekeyID: prekey)
    }
}
