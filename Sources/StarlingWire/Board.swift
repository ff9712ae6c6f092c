/// The mesh board (message type 0x23; docs/PROTOCOL.md, "Board"): signed
/// posts, and tombstones that delete them, as the iOS app (1.7.1) writes and
/// reads them. The payload is a list of TLVs (type u8, length u16 big-endian,
/// value). A post or a tombstone is signed with Ed25519 by the key it carries
/// (the author's announce signing key); StarlingCrypto's `BoardSigning` signs
/// and verifies ``BoardPost/signingBytes`` and ``BoardTombstone/signingBytes``.
///
/// The decoder reads as iOS reads (bitchat BoardPackets.swift): unknown TLVs
/// are skipped, a repeated TLV's last copy counts, one or two bytes after the
/// last whole TLV are ignored; a length past the end, a field of the wrong
/// size, text that is not UTF-8 or too long, a geohash outside the alphabet,
/// an empty content, or a post that expires before it is made or more than
/// 7 days after it is refused.
public enum BoardPacket: Hashable, Sendable {
    case post(BoardPost)
    case tombstone(BoardTombstone)

    public static let postIDLength = 16
    public static let keyLength = 32
    public static let signatureLength = 64
    public static let maxContentBytes = 512
    public static let maxNicknameBytes = 64
    public static let maxGeohashLength = 12
    /// The longest a post may live: 7 days, in ms.
    public static let maxLifetime: UInt64 = 604_800_000
    /// Flags bit 1 (a Starling extension; iOS reads bit 0, urgent, only): its
    /// author lets the post cross to other meshes through the bridges
    /// (docs/PROTOCOL.md, "Board posts across bridges"). Signed, as all flags.
    public static let mayCrossFlag: UInt8 = 0x02
    static let geohashAlphabet = Set("0123456789bcdefghjkmnpqrstuvwxyz".utf8)

    public var postID: [UInt8] {
        switch self {
        case let .post(p): p.postID
        case let .tombstone(t): t.postID
        }
    }

    public var authorKey: [UInt8] {
        switch self {
        case let .post(p): p.authorKey
        case let .tombstone(t): t.authorKey
        }
    }

    public var signature: [UInt8] {
        switch self {
        case let .post(p): p.signature
        case let .tombstone(t): t.signature
        }
    }

    /// What the signature covers.
    public var signingBytes: [UInt8] {
        switch self {
        case let .post(p): p.signingBytes
        case let .tombstone(t): t.signingBytes
        }
    }

    public func encoded() -> [UInt8] {
        switch self {
        case let .post(p): p.encoded()
        case let .tombstone(t): t.encoded()
        }
    }

    public init(decoding bytes: ArraySlice<UInt8>) throws(WireError) {
        var r = ByteReader(Array(bytes))
        var kind: UInt8?, postID: [UInt8]?, geohash: String?, content: String?, key: [UInt8]?, nickname: String?
        var created: UInt64?, expires: UInt64?, deleted: UInt64?, flags: UInt8?, signature: [UInt8]?
        func exact(_ v: ArraySlice<UInt8>, _ n: Int, _ field: String, _ at: Int) throws(WireError) -> [UInt8] {
            guard v.count == n else { throw WireError(.invalidValue("\(n) bytes, not \(v.count)"), field: field, offset: at) }
            return Array(v)
        }
        func text(_ v: ArraySlice<UInt8>, max: Int, _ field: String, _ at: Int) throws(WireError) -> String {
            guard v.count <= max else { throw WireError(.lengthOutOfRange(declared: v.count, limit: max), field: field, offset: at) }
            guard let s = String(validating: v, as: UTF8.self) else { throw WireError(.invalidUTF8, field: field, offset: at) }
            return s
        }
        func time(_ v: ArraySlice<UInt8>) -> UInt64? {
            // A time of another size is absent, as iOS reads it (then the post is incomplete).
            v.count == 8 ? v.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } : nil
        }
        while r.remaining >= 3 {
            let (type, at, v) = try r.tlv("board", length: { _ in .u16 })
            switch type {
            case 0x01: kind = try exact(v, 1, "board.kind", at)[0]
            case 0x02: postID = try exact(v, Self.postIDLength, "board.postID", at)
            case 0x03: geohash = try text(v, max: Self.maxGeohashLength, "board.geohash", at)
            case 0x04: content = try text(v, max: Self.maxContentBytes, "board.content", at)
            case 0x05: key = try exact(v, Self.keyLength, "board.authorKey", at)
            case 0x06: nickname = try text(v, max: Self.maxNicknameBytes, "board.nickname", at)
            case 0x07: created = time(v)
            case 0x08: expires = time(v)
            case 0x09: flags = try exact(v, 1, "board.flags", at)[0]
            case 0x0A: signature = try exact(v, Self.signatureLength, "board.signature", at)
            case 0x0B: deleted = time(v)
            default: continue // unknown: skipped, as iOS does
            }
        }
        guard let postID, let key, let signature else { throw WireError(.missingField, field: "board.postID/authorKey/signature", offset: 0) }
        switch kind {
        case 0x01?:
            guard let geohash, let content, let nickname, let created, let expires, let flags else {
                throw WireError(.missingField, field: "board.post", offset: 0)
            }
            guard !content.isEmpty else { throw WireError(.invalidValue("an empty post"), field: "board.content", offset: 0) }
            guard geohash.utf8.allSatisfy(Self.geohashAlphabet.contains) else {
                throw WireError(.invalidValue("a geohash of 0123456789bcdefghjkmnpqrstuvwxyz"), field: "board.geohash", offset: 0)
            }
            guard expires > created, expires - created <= Self.maxLifetime else {
                throw WireError(.invalidValue("expiresAt after createdAt, by at most 7 days"), field: "board.expiresAt", offset: 0)
            }
            self = .post(BoardPost(postID: postID, geohash: geohash, content: content, authorKey: key, nickname: nickname,
                                   createdAt: created, expiresAt: expires, flags: flags, signature: signature))
        case 0x02?:
            guard let deleted else { throw WireError(.missingField, field: "board.deletedAt", offset: 0) }
            self = .tombstone(BoardTombstone(postID: postID, authorKey: key, deletedAt: deleted, signature: signature))
        default:
            throw WireError(.invalidValue("kind 1 (post) or 2 (tombstone)"), field: "board.kind", offset: 0)
        }
    }
}

/// A board post: what an author says, where (a geohash; "" is the mesh's own
/// board), until when.
public struct BoardPost: Hashable, Sendable {
    public var postID: [UInt8]
    public var geohash: String
    public var content: String
    public var authorKey: [UInt8]
    public var nickname: String
    /// Unix ms.
    public var createdAt: UInt64
    public var expiresAt: UInt64
    /// Bit 0: urgent; the others are carried and signed.
    public var flags: UInt8
    public var signature: [UInt8]

    public init(postID: [UInt8], geohash: String, content: String, authorKey: [UInt8], nickname: String,
                createdAt: UInt64, expiresAt: UInt64, flags: UInt8 = 0, signature: [UInt8] = []) {
        self.postID = postID
        self.geohash = geohash
        self.content = content
        self.authorKey = authorKey
        self.nickname = nickname
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.flags = flags
        self.signature = signature
    }

    public var isUrgent: Bool { flags & 0x01 != 0 }

    /// u8 16 ‖ "bitchat-board-v1" ‖ postID ‖ u16 len ‖ geohash ‖ u16 len ‖
    /// content ‖ authorKey ‖ u16 len ‖ nickname ‖ createdAt u64 ‖ expiresAt u64 ‖ flags.
    public var signingBytes: [UInt8] {
        var out: [UInt8] = [16] + Array("bitchat-board-v1".utf8) + postID
        for (i, s) in [geohash, content].enumerated() {
            out.appendBE(UInt16(s.utf8.count))
            out += Array(s.utf8)
            if i == 1 { out += authorKey }
        }
        out.appendBE(UInt16(nickname.utf8.count))
        out += Array(nickname.utf8)
        out.appendBE(createdAt)
        out.appendBE(expiresAt)
        out.append(flags)
        return out
    }

    /// The TLVs in the order iOS writes them.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.appendTLV(0x01, [0x01], length: .u16)
        out.appendTLV(0x02, postID, length: .u16)
        out.appendTLV(0x03, Array(geohash.utf8), length: .u16)
        out.appendTLV(0x04, Array(content.utf8), length: .u16)
        out.appendTLV(0x05, authorKey, length: .u16)
        out.appendTLV(0x06, Array(nickname.utf8), length: .u16)
        out.appendTLV(0x07, Self.be(createdAt), length: .u16)
        out.appendTLV(0x08, Self.be(expiresAt), length: .u16)
        out.appendTLV(0x09, [flags], length: .u16)
        out.appendTLV(0x0A, signature, length: .u16)
        return out
    }

    static func be(_ v: UInt64) -> [UInt8] { (0..<8).reversed().map { UInt8(truncatingIfNeeded: v >> (UInt64($0) * 8)) } }
}

/// A tombstone: the author deletes a post (only the key that signed it may).
public struct BoardTombstone: Hashable, Sendable {
    public var postID: [UInt8]
    public var authorKey: [UInt8]
    /// Unix ms.
    public var deletedAt: UInt64
    public var signature: [UInt8]

    public init(postID: [UInt8], authorKey: [UInt8], deletedAt: UInt64, signature: [UInt8] = []) {
        self.postID = postID
        self.authorKey = authorKey
        self.deletedAt = deletedAt
        self.signature = signature
    }

    /// u8 20 ‖ "bitchat-board-del-v1" ‖ postID ‖ deletedAt u64.
    public var signingBytes: [UInt8] {
        var out: [UInt8] = [20] + Array("bitchat-board-del-v1".utf8) + postID
        out.appendBE(deletedAt)
        return out
    }

    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.appendTLV(0x01, [0x02], length: .u16)
        out.appendTLV(0x02, postID, length: .u16)
        out.appendTLV(0x05, authorKey, length: .u16)
        out.appendTLV(0x0B, BoardPost.be(deletedAt), length: .u16)
        out.appendTLV(0x0A, signature, length: .u16)
        return out
    }
}
