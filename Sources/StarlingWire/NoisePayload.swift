/// A private chat message: the TLV body of inner Noise payload type 0x01.
///
/// TLVs of u8 type + u8 length: 0x00 message ID, 0x01 content, both UTF-8 and
/// required, so content is at most 255 bytes. Unknown TLVs are skipped and kept.
public struct PrivateMessage: Hashable, Sendable {
    public static let maxFieldBytes = 255

    public var messageID: String
    public var content: String
    public var unknown: [UnknownTLV]

    public init(messageID: String, content: String, unknown: [UnknownTLV] = []) {
        self.messageID = messageID
        self.content = content
        self.unknown = unknown
    }

    public func encoded() throws(EncodingError) -> [UInt8] {
        let id = Array(messageID.utf8), text = Array(content.utf8)
        try checkLength(id.count, .u8, field: "privateMessage.messageID")
        try checkLength(text.count, .u8, field: "privateMessage.content")
        var out = [UInt8]()
        out.reserveCapacity(4 + id.count + text.count)
        out.appendTLV(0x00, id, length: .u8)
        out.appendTLV(0x01, text, length: .u8)
        for tlv in unknown {
            try checkLength(tlv.value.count, .u8, field: "privateMessage.unknown")
            out.appendTLV(tlv.type, tlv.value, length: .u8)
        }
        return out
    }

    public init(decoding bytes: [UInt8], errorBase: Int = 0) throws(WireError) {
        var r = ByteReader(bytes, errorBase: errorBase)
        var id: String?, text: String?
        var unknown: [UnknownTLV] = []
        while !r.isAtEnd {
            let start = r.position
            let (type, at, value) = try r.tlv("privateMessage.tlv") { _ in .u8 }
            switch type {
            case 0x00:
                guard id == nil else { throw WireError(.duplicateField, field: "privateMessage.messageID", offset: start) }
                id = try utf8Value(value, field: "privateMessage.messageID", offset: at)
            case 0x01:
                guard text == nil else { throw WireError(.duplicateField, field: "privateMessage.content", offset: start) }
                text = try utf8Value(value, field: "privateMessage.content", offset: at)
            default:
                unknown.append(UnknownTLV(type: type, value: Array(value)))
            }
        }
        guard let id else { throw WireError(.missingField, field: "privateMessage.messageID", offset: r.position) }
        guard let text else { throw WireError(.missingField, field: "privateMessage.content", offset: r.position) }
        self.init(messageID: id, content: text, unknown: unknown)
    }
}

/// The plaintext inside a Noise transport frame (packet type 0x11): one type
/// byte, then a body that depends on it.
///
/// Delivery and read receipts live here, not in packet types, so relays cannot
/// see who acknowledges what.
public enum NoisePayload: Hashable, Sendable {
    public enum Kind {
        public static let privateMessage: UInt8 = 0x01
        public static let readReceipt: UInt8 = 0x02
        public static let delivered: UInt8 = 0x03
        public static let verifyChallenge: UInt8 = 0x10
        public static let verifyResponse: UInt8 = 0x11
        public static let privateFile: UInt8 = 0x20
        /// An older code for private files, accepted on decode only.
        public static let privateFileLegacy: UInt8 = 0x09
        // Codes the apps use in 2026 whose bodies Starling carries but does not
        // act on (kept whole as `.unknown`, named by `name(of:)`).
        public static let groupInvite: UInt8 = 0x06
        public static let groupKeyUpdate: UInt8 = 0x07
        public static let voiceFrame: UInt8 = 0x08
        public static let vouch: UInt8 = 0x12
        public static let authenticatedPeerState: UInt8 = 0x21
        /// Starling's large-file offer and its answer (docs/PROTOCOL.md, "Bulk transfer").
        public static let bulkOffer: UInt8 = 0x40
        public static let bulkAnswer: UInt8 = 0x41

        /// The apps' name for a payload type byte, or nil for one nobody defines.
        public static func name(of type: UInt8) -> String? {
            switch type {
            case privateMessage: "privateMessage"
            case readReceipt: "readReceipt"
            case delivered: "delivered"
            case groupInvite: "groupInvite"
            case groupKeyUpdate: "groupKeyUpdate"
            case voiceFrame: "voiceFrame"
            case privateFileLegacy: "privateFile (prerelease 0x09)"
            case verifyChallenge: "verifyChallenge"
            case verifyResponse: "verifyResponse"
            case vouch: "vouch"
            case privateFile: "privateFile"
            case authenticatedPeerState: "authenticatedPeerState"
            case bulkOffer: "bulkOffer"
            case bulkAnswer: "bulkAnswer"
            default: nil
            }
        }
    }

    case privateMessage(PrivateMessage)
    /// The recipient displayed the message with this ID.
    case readReceipt(messageID: String)
    /// The message with this ID reached the recipient.
    case delivered(messageID: String)
    case verifyChallenge([UInt8])
    case verifyResponse([UInt8])
    case privateFile(FileTransfer)
    /// A file too large for the mesh, offered over TCP (its key is in here:
    /// never shown, never logged).
    case bulkOffer(BulkOffer)
    case bulkAnswer(BulkAnswer)
    /// A type this version does not know, kept whole.
    case unknown(type: UInt8, body: [UInt8])

    public var typeByte: UInt8 {
        switch self {
        case .privateMessage: Kind.privateMessage
        case .readReceipt: Kind.readReceipt
        case .delivered: Kind.delivered
        case .verifyChallenge: Kind.verifyChallenge
        case .verifyResponse: Kind.verifyResponse
        case .privateFile: Kind.privateFile
        case .bulkOffer: Kind.bulkOffer
        case .bulkAnswer: Kind.bulkAnswer
        case let .unknown(type, _): type
        }
    }

    public func encoded() throws(EncodingError) -> [UInt8] {
        var out: [UInt8] = [typeByte]
        switch self {
        case let .privateMessage(m): out += try m.encoded()
        case let .readReceipt(id), let .delivered(id): out += Array(id.utf8)
        case let .verifyChallenge(b), let .verifyResponse(b), let .unknown(_, b): out += b
        case let .privateFile(f): out += try f.encoded()
        case let .bulkOffer(o):
            do { out += try o.encoded() } catch { throw EncodingError(field: error.field, problem: "\(error.reason)") }
        case let .bulkAnswer(a):
            do { out += try a.encoded() } catch { throw EncodingError(field: error.field, problem: "\(error.reason)") }
        }
        return out
    }

    public init(decoding bytes: [UInt8], errorBase: Int = 0) throws(WireError) {
        guard let type = bytes.first else {
            throw WireError(.truncated(needed: 1, available: 0), field: "noisePayload.type", offset: errorBase)
        }
        let body = Array(bytes.dropFirst())
        let base = errorBase + 1
        switch type {
        case Kind.privateMessage:
            self = .privateMessage(try PrivateMessage(decoding: body, errorBase: base))
        case Kind.readReceipt:
            self = .readReceipt(messageID: try utf8Value(body[...], field: "readReceipt.messageID", offset: base))
        case Kind.delivered:
            self = .delivered(messageID: try utf8Value(body[...], field: "delivered.messageID", offset: base))
        case Kind.verifyChallenge:
            self = .verifyChallenge(body)
        case Kind.verifyResponse:
            self = .verifyResponse(body)
        case Kind.privateFile, Kind.privateFileLegacy:
            self = .privateFile(try FileTransfer(decoding: body, errorBase: base))
        case Kind.bulkOffer:
            self = .bulkOffer(try BulkOffer(decoding: body[...], errorBase: base))
        case Kind.bulkAnswer:
            self = .bulkAnswer(try BulkAnswer(decoding: body[...], errorBase: base))
        default:
            self = .unknown(type: type, body: body)
        }
    }
}

/// Starling's protocol version negotiation (seed §7.1 and §18), carried as
/// extension packet types 0x2D (hello) and 0x2E (ack). A peer that never answers
/// a hello is treated as speaking v1 only.
public enum VersionNegotiation {
    /// VERSION_HELLO payload: count u8, then that many distinct version bytes.
    public static func encodeHello(_ versions: [UInt8]) throws(EncodingError) -> [UInt8] {
        try checkLength(versions.count, .u8, field: "versionHello.versions")
        guard !versions.isEmpty else {
            throw EncodingError(field: "versionHello.versions", problem: "at least one version")
        }
        return [UInt8(versions.count)] + versions
    }

    public static func decodeHello(_ bytes: [UInt8], errorBase: Int = 0) throws(WireError) -> [UInt8] {
        var r = ByteReader(bytes, errorBase: errorBase)
        let countAt = r.position
        let count = Int(try r.u8("versionHello.count"))
        guard count > 0 else {
            throw WireError(.lengthOutOfRange(declared: 0, limit: 255), field: "versionHello.count", offset: countAt)
        }
        let versions = try r.read(count, "versionHello.versions")
        guard r.isAtEnd else { throw r.error(.trailingBytes(count: r.remaining), "versionHello") }
        return versions
    }

    /// VERSION_ACK payload: one byte, the agreed version, or 0 for "no common version".
    public static func encodeAck(_ agreed: UInt8?) -> [UInt8] { [agreed ?? 0] }

    public static func decodeAck(_ bytes: [UInt8], errorBase: Int = 0) throws(WireError) -> UInt8? {
        var r = ByteReader(bytes, errorBase: errorBase)
        let v = try r.u8("versionAck.version")
        guard r.isAtEnd else { throw r.error(.trailingBytes(count: r.remaining), "versionAck") }
        return v == 0 ? nil : v
    }

    /// The highest version both sides support, or nil.
    public static func agree(local: [UInt8], remote: [UInt8]) -> UInt8? {
        Set(local).intersection(remote).max()
    }
}
