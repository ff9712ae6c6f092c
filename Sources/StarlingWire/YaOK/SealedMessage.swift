/// Ya OK's sealed message: a message for one contact that can wait in a relay
/// server's queue (store and forward), readable only by its recipient and
/// signed by its sender. Big-endian integers.
///
/// ```
/// version 0x01
/// message ID 16            UUID v4
/// timestamp u64            Unix milliseconds, the sender's clock
/// sender user ID 16
/// recipient user ID 16
/// ephemeral X25519 key 32  fresh for this message
/// nonce 24                 random
/// sealed length u16        bytes of the sealed box that follow: 32 × n + 16, 48 … 10,288
/// sealed box               XChaCha20-Poly1305(key, nonce, AD = all 115 bytes above, body) ‖ tag 16
/// signature 64             Ed25519 by the sender's signing key over every byte before it
///
/// body = kind u8 ‖ length u16 ‖ content ‖ zero bytes up to a multiple of 32
/// kind 0x01 text (UTF-8, at most 10,240 bytes) · 0x02 delivered (message ID 16) · 0x03 read (message ID 16)
/// key  = HKDF-SHA256(X25519(ephemeral, recipient), salt = ephemeral key ‖ recipient's X25519 key,
///                    info = "yaok sealed message v1", 32 bytes)
/// ```
///
/// This type knows the bytes; StarlingYaOK seals, signs, verifies and opens.
public struct SealedMessageBytes: Hashable, Sendable {
    public static let version: UInt8 = 0x01
    public static let headerByteCount = 115
    public static let maxTextBytes = 10_240
    /// The largest sealed box: a padded text body and its tag.
    public static let maxSealedByteCount = paddedBodyLength(3 + maxTextBytes) + 16
    public static let maxByteCount = headerByteCount + maxSealedByteCount + 64

    public var messageID: UserID
    public var timestamp: UInt64
    public var sender: UserID
    public var recipient: UserID
    public var ephemeralKey: [UInt8]
    public var nonce: [UInt8]
    public var sealed: [UInt8]
    public var signature: [UInt8]

    public init(messageID: UserID, timestamp: UInt64, sender: UserID, recipient: UserID, ephemeralKey: [UInt8],
                nonce: [UInt8], sealed: [UInt8] = [], signature: [UInt8] = []) {
        self.messageID = messageID
        self.timestamp = timestamp
        self.sender = sender
        self.recipient = recipient
        self.ephemeralKey = ephemeralKey
        self.nonce = nonce
        self.sealed = sealed
        self.signature = signature
    }

    /// The 115 header bytes (the AEAD's associated data), for a sealed box of
    /// `sealedLength` bytes.
    public func header(sealedLength: Int) -> [UInt8] {
        var out = [Self.version] + messageID.bytes
        out += (0..<8).map { UInt8(truncatingIfNeeded: timestamp >> (56 - 8 * UInt64($0))) }
        out += sender.bytes + recipient.bytes + ephemeralKey + nonce
        out += [UInt8(sealedLength >> 8), UInt8(sealedLength & 0xFF)]
        return out
    }

    /// Header and sealed box: what the signature covers.
    public func signedBytes() -> [UInt8] { header(sealedLength: sealed.count) + sealed }

    public func encode() -> [UInt8] { signedBytes() + signature }

    public static func decode(_ bytes: [UInt8]) throws(WireError) -> SealedMessageBytes {
        let p = try parts(bytes)
        return SealedMessageBytes(messageID: p.id, timestamp: p.timestamp, sender: p.sender, recipient: p.recipient,
                                  ephemeralKey: Array(p.ephemeral), nonce: Array(p.nonce), sealed: Array(p.sealed),
                                  signature: Array(p.signature))
    }

    /// What a relay reads of a sealed message: its ID and both user IDs,
    /// after the same checks of its layout as ``decode(_:)``, copying nothing.
    public static func route(_ bytes: [UInt8]) throws(WireError) -> (messageID: UserID, sender: UserID, recipient: UserID) {
        let p = try parts(bytes)
        return (p.id, p.sender, p.recipient)
    }

    /// The layout's checks, and its fields as slices of `bytes` (nothing copied).
    private static func parts(_ bytes: [UInt8]) throws(WireError)
        -> (id: UserID, timestamp: UInt64, sender: UserID, recipient: UserID,
            ephemeral: ArraySlice<UInt8>, nonce: ArraySlice<UInt8>, sealed: ArraySlice<UInt8>, signature: ArraySlice<UInt8>)
    {
        guard bytes.count <= maxByteCount else {
            throw WireError(.lengthOutOfRange(declared: bytes.count, limit: maxByteCount), field: "message", offset: 0)
        }
        var r = ByteReader(bytes)
        let version = try r.u8("version")
        guard version == Self.version else { throw WireError(.unsupportedVersion(version), field: "version", offset: 0) }
        let id = UserID(bytes: try r.slice(16, "messageID"))!
        let timestamp = try r.u64("timestamp")
        let sender = UserID(bytes: try r.slice(16, "sender"))!
        let recipient = UserID(bytes: try r.slice(16, "recipient"))!
        let ephemeral = try r.slice(32, "ephemeralKey")
        let nonce = try r.slice(24, "nonce")
        let lengthOffset = r.position
        let length = Int(try r.u16("sealedLength"))
        guard length >= 48, length <= maxSealedByteCount, (length - 16) % 32 == 0 else {
            throw WireError(.lengthOutOfRange(declared: length, limit: maxSealedByteCount), field: "sealedLength",
                            offset: lengthOffset)
        }
        let sealed = try r.slice(length, "sealed")
        let signature = try r.slice(64, "signature")
        guard r.isAtEnd else { throw WireError(.trailingBytes(count: r.remaining), field: "signature", offset: r.position) }
        return (id, timestamp, sender, recipient, ephemeral, nonce, sealed, signature)
    }

    static func paddedBodyLength(_ n: Int) -> Int { (n + 31) / 32 * 32 }
}

/// What a sealed message says, once opened.
public enum SealedBody: Hashable, Sendable {
    case text(String)
    case delivered(UserID)
    case read(UserID)

    public var kind: UInt8 {
        switch self {
        case .text: 0x01
        case .delivered: 0x02
        case .read: 0x03
        }
    }

    public func encode() throws(WireError) -> [UInt8] {
        let content: [UInt8]
        switch self {
        case let .text(text):
            content = Array(text.utf8)
            guard content.count <= SealedMessageBytes.maxTextBytes else {
                throw WireError(.lengthOutOfRange(declared: content.count, limit: SealedMessageBytes.maxTextBytes),
                                field: "body.text", offset: 3)
            }
        case let .delivered(id), let .read(id):
            content = id.bytes
        }
        let raw = [kind, UInt8(content.count >> 8), UInt8(content.count & 0xFF)] + content
        return raw + [UInt8](repeating: 0, count: SealedMessageBytes.paddedBodyLength(raw.count) - raw.count)
    }

    public static func decode(_ bytes: [UInt8]) throws(WireError) -> SealedBody {
        var r = ByteReader(bytes)
        let kind = try r.u8("body.kind")
        let length = Int(try r.u16("body.length"))
        let body: SealedBody
        switch kind {
        case 0x01:
            guard length <= SealedMessageBytes.maxTextBytes else {
                throw WireError(.lengthOutOfRange(declared: length, limit: SealedMessageBytes.maxTextBytes),
                                field: "body.length", offset: 1)
            }
            body = .text(try r.utf8(length, "body.text"))
        case 0x02, 0x03:
            guard length == 16 else {
                throw WireError(.lengthOutOfRange(declared: length, limit: 16), field: "body.length", offset: 1)
            }
            let id = UserID(bytes: try r.read(16, "body.messageID"))!
            body = kind == 0x02 ? .delivered(id) : .read(id)
        default:
            throw WireError(.invalidValue("unknown kind 0x\(String(kind, radix: 16))"), field: "body.kind", offset: 0)
        }
        // Exactly the padding `encode` writes: zero bytes up to the next multiple
        // of 32, and no further (a longer run would not re-encode to these bytes).
        guard r.rest.allSatisfy({ $0 == 0 }),
              bytes.count == SealedMessageBytes.paddedBodyLength(r.position) else {
            throw WireError(.invalidValue("padding is not zero bytes to the next multiple of 32"),
                            field: "body.padding", offset: r.position)
        }
        return body
    }
}
