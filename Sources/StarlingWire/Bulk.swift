/// Bulk transfer (Ya OK seed 002 §4.2, §6.2, §10.4; bitchat's `wifiBulk`
/// capability): a file larger than the mesh carries is offered over the Noise
/// session, then carried over TCP on the LAN, sealed chunk by chunk under a key
/// the offer carried. docs/PROTOCOL.md, "Bulk transfer", has every byte.

/// The offer, inner Noise payload 0x40 (Starling's; the apps ignore it): TLVs
/// of u8 type and u16 length.
///
/// 0x01 transfer ID (16), 0x02 name (UTF-8, 1 … 255 bytes), 0x03 size u64,
/// 0x04 SHA-256 of the file (32), 0x05 MIME type (optional), 0x06 transfer key
/// (32, secret: only the session's two ends see it), 0x07 an address the
/// sender listens on, `host:port` (1 … 8 of them), 0x08 chunk size u32
/// (1,024 … 65,536). Unknown types are skipped.
public struct BulkOffer: Hashable, Sendable {
    public static let maxChunkSize = 65_536
    public static let minChunkSize = 1_024
    /// The largest file offered (seed: 100 MB; room for a long video).
    public static let maxSize: UInt64 = 4 << 30
    public static let maxAddresses = 8

    public var transferID: [UInt8]
    public var name: String
    public var size: UInt64
    public var sha256: [UInt8]
    public var mimeType: String?
    public var key: [UInt8]
    public var addresses: [String]
    public var chunkSize: Int

    public init(transferID: [UInt8], name: String, size: UInt64, sha256: [UInt8], mimeType: String?, key: [UInt8],
                addresses: [String], chunkSize: Int = BulkOffer.maxChunkSize) {
        self.transferID = transferID
        self.name = name
        self.size = size
        self.sha256 = sha256
        self.mimeType = mimeType
        self.key = key
        self.addresses = addresses
        self.chunkSize = chunkSize
    }

    /// Chunks the file is carried in (the last may be short).
    public var chunkCount: Int { Int((size + UInt64(chunkSize) - 1) / UInt64(chunkSize)) }

    /// The length of chunk `index`.
    public func length(ofChunk index: Int) -> Int {
        let start = UInt64(index) * UInt64(chunkSize)
        return Int(min(UInt64(chunkSize), size - start))
    }

    public func encoded() throws(WireError) -> [UInt8] {
        try validate(offset: 0)
        var out: [UInt8] = []
        func tlv(_ type: UInt8, _ value: [UInt8]) {
            out.append(type)
            out.appendBE(UInt16(value.count))
            out += value
        }
        func be(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * $0)) } }
        func be(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - 8 * $0)) } }
        tlv(0x01, transferID)
        tlv(0x02, Array(name.utf8))
        tlv(0x03, be(size))
        tlv(0x04, sha256)
        if let mimeType { tlv(0x05, Array(mimeType.utf8)) }
        tlv(0x06, key)
        for a in addresses { tlv(0x07, Array(a.utf8)) }
        tlv(0x08, be(UInt32(chunkSize)))
        return out
    }

    public init(decoding bytes: ArraySlice<UInt8>, errorBase: Int = 0) throws(WireError) {
        var r = ByteReader(Array(bytes))
        var fields: [UInt8: [UInt8]] = [:]
        var addresses: [String] = []
        while !r.isAtEnd {
            let at = errorBase + r.position
            let type = try r.u8("bulkOffer.type")
            let length = Int(try r.u16("bulkOffer.length"))
            let value = try r.read(length, "bulkOffer[0x\(String(type, radix: 16))]")
            switch type {
            case 0x07:
                guard addresses.count < Self.maxAddresses else {
                    throw WireError(.lengthOutOfRange(declared: addresses.count + 1, limit: Self.maxAddresses), field: "bulkOffer.address", offset: at)
                }
                guard let a = String(validating: value, as: UTF8.self), !a.isEmpty else { throw WireError(.invalidUTF8, field: "bulkOffer.address", offset: at) }
                addresses.append(a)
            case 0x01...0x08:
                guard fields[type] == nil else { throw WireError(.duplicateField, field: "bulkOffer[0x0\(type)]", offset: at) }
                fields[type] = value
            default:
                continue // unknown: skipped
            }
        }
        func required(_ type: UInt8, _ name: String) throws(WireError) -> [UInt8] {
            guard let v = fields[type] else { throw WireError(.missingField, field: "bulkOffer.\(name)", offset: errorBase) }
            return v
        }
        func text(_ v: [UInt8], _ name: String) throws(WireError) -> String {
            guard let s = String(validating: v, as: UTF8.self) else { throw WireError(.invalidUTF8, field: "bulkOffer.\(name)", offset: errorBase) }
            return s
        }
        func integer(_ v: [UInt8], _ width: Int, _ name: String) throws(WireError) -> UInt64 {
            guard v.count == width else { throw WireError(.invalidValue("\(name) is \(width) bytes"), field: "bulkOffer.\(name)", offset: errorBase) }
            return v.reduce(0) { $0 << 8 | UInt64($1) }
        }
        transferID = try required(0x01, "transferID")
        name = try text(try required(0x02, "name"), "name")
        size = try integer(try required(0x03, "size"), 8, "size")
        sha256 = try required(0x04, "sha256")
        mimeType = try fields[0x05].map { v throws(WireError) in try text(v, "mimeType") }
        key = try required(0x06, "key")
        self.addresses = addresses
        chunkSize = Int(try integer(try required(0x08, "chunkSize"), 4, "chunkSize"))
        try validate(offset: errorBase)
    }

    func validate(offset: Int) throws(WireError) {
        func check(_ ok: Bool, _ field: String, _ why: String) throws(WireError) {
            guard ok else { throw WireError(.invalidValue(why), field: "bulkOffer.\(field)", offset: offset) }
        }
        try check(transferID.count == 16, "transferID", "16 bytes")
        try check((1...255).contains(name.utf8.count), "name", "1 … 255 bytes")
        try check((1...Self.maxSize).contains(size), "size", "1 … \(Self.maxSize) bytes")
        try check(sha256.count == 32, "sha256", "32 bytes")
        try check(key.count == 32, "key", "32 bytes")
        try check((1...Self.maxAddresses).contains(addresses.count), "address", "1 … \(Self.maxAddresses) addresses")
        try check(addresses.allSatisfy { (1...255).contains($0.utf8.count) }, "address", "1 … 255 bytes each")
        try check((Self.minChunkSize...Self.maxChunkSize).contains(chunkSize), "chunkSize", "\(Self.minChunkSize) … \(Self.maxChunkSize)")
        try check(mimeType.map { (1...255).contains($0.utf8.count) } ?? true, "mimeType", "1 … 255 bytes")
    }
}

/// The answer to an offer, inner Noise payload 0x41: transfer ID (16) ‖
/// accepted u8 (1 or 0) ‖ reason (UTF-8, the rest; empty when accepted).
/// Accepting is also said by connecting; a decline lets the sender forget it.
public struct BulkAnswer: Hashable, Sendable {
    public var transferID: [UInt8]
    public var accepted: Bool
    public var reason: String

    public init(transferID: [UInt8], accepted: Bool, reason: String = "") {
        self.transferID = transferID
        self.accepted = accepted
        self.reason = reason
    }

    public func encoded() throws(WireError) -> [UInt8] {
        guard transferID.count == 16 else { throw WireError(.invalidValue("16 bytes"), field: "bulkAnswer.transferID", offset: 0) }
        return transferID + [accepted ? 1 : 0] + Array(reason.utf8.prefix(255))
    }

    public init(decoding bytes: ArraySlice<UInt8>, errorBase: Int = 0) throws(WireError) {
        var r = ByteReader(Array(bytes))
        transferID = try r.read(16, "bulkAnswer.transferID")
        let a = try r.u8("bulkAnswer.accepted")
        guard a <= 1 else { throw WireError(.invalidValue("0 or 1"), field: "bulkAnswer.accepted", offset: errorBase + 16) }
        accepted = a == 1
        guard r.remaining <= 255, let why = String(validating: r.rest, as: UTF8.self) else {
            throw WireError(.invalidValue("UTF-8, at most 255 bytes"), field: "bulkAnswer.reason", offset: errorBase + 17)
        }
        reason = why
    }
}

/// A frame on a bulk transfer's TCP connection: length u32 (big-endian, of
/// what follows, at most ``maxBody``) ‖ type u8 ‖ body. Authentication tags
/// are computed by `StarlingBulk`; here they are 16 opaque bytes.
public enum BulkFrame: Hashable, Sendable {
    /// 0x01, receiver → sender: transfer ID (16) ‖ connection nonce (32) ‖
    /// first chunk wanted u32 ‖ tag (16). Resuming is asking from a later chunk.
    case hello(transferID: [UInt8], nonce: [UInt8], from: UInt32, tag: [UInt8])
    /// 0x02, sender → receiver: chunk index u32 ‖ sealed chunk (its bytes ‖ tag).
    case chunk(index: UInt32, sealed: [UInt8])
    /// 0x03, receiver → sender: chunk index u32 ‖ tag (16): written to disk.
    /// The index one past the last says the whole file verified and is saved.
    case ack(index: UInt32, tag: [UInt8])
    /// 0x04, either way: the transfer cannot go on; UTF-8 words (at most 255
    /// bytes, not authenticated: a reason shown, never acted on beyond closing).
    case refused(String)

    /// The largest body: a sealed chunk of 64 KiB and its header.
    public static let maxBody = 1 + 4 + BulkOffer.maxChunkSize + 16

    public func encoded() -> [UInt8] {
        // The length first (filled in at the end), then the body, in one buffer.
        var out: [UInt8] = [0, 0, 0, 0]
        switch self {
        case let .hello(id, nonce, from, tag):
            out.append(0x01)
            out += id
            out += nonce
            out.appendBE(from)
            out += tag
        case let .chunk(index, sealed):
            out.reserveCapacity(9 + sealed.count)
            out.append(0x02)
            out.appendBE(index)
            out += sealed
        case let .ack(index, tag):
            out.append(0x03)
            out.appendBE(index)
            out += tag
        case let .refused(why):
            out.append(0x04)
            out += why.utf8.prefix(255)
        }
        let length = UInt32(out.count - 4)
        out[0] = UInt8(length >> 24)
        out[1] = UInt8(truncatingIfNeeded: length >> 16)
        out[2] = UInt8(truncatingIfNeeded: length >> 8)
        out[3] = UInt8(truncatingIfNeeded: length)
        return out
    }

    /// Decodes one frame's body (after its length).
    public init(body: ArraySlice<UInt8>) throws(WireError) {
        guard body.count <= Self.maxBody else {
            throw WireError(.lengthOutOfRange(declared: body.count, limit: Self.maxBody), field: "bulkFrame.length", offset: 0)
        }
        var r = ByteReader(Array(body))
        let type = try r.u8("bulkFrame.type")
        switch type {
        case 0x01:
            let id = try r.read(16, "hello.transferID"), nonce = try r.read(32, "hello.nonce")
            let from = try r.u32("hello.from")
            self = .hello(transferID: id, nonce: nonce, from: from, tag: try r.read(16, "hello.tag"))
        case 0x02:
            let index = try r.u32("chunk.index")
            guard r.remaining >= 16 else { throw WireError(.truncated(needed: 16, available: r.remaining), field: "chunk.sealed", offset: 5) }
            self = .chunk(index: index, sealed: Array(r.rest))
            r = ByteReader([])
        case 0x03:
            let index = try r.u32("ack.index")
            self = .ack(index: index, tag: try r.read(16, "ack.tag"))
        case 0x04:
            guard let why = String(validating: r.rest, as: UTF8.self), r.remaining <= 255 else {
                throw WireError(.invalidValue("UTF-8, at most 255 bytes"), field: "refused.reason", offset: 1)
            }
            self = .refused(why)
            r = ByteReader([])
        default:
            throw WireError(.invalidValue("unknown frame type 0x\(String(type, radix: 16))"), field: "bulkFrame.type", offset: 0)
        }
        guard r.isAtEnd else { throw WireError(.trailingBytes(count: r.remaining), field: "bulkFrame.end", offset: r.position) }
    }
}
