/// The 64-byte Ed25519 signature field, held inline (no heap allocation).
public struct Signature: Hashable, Sendable, CustomStringConvertible {
    public var storage: SIMD64<UInt8>

    public init(storage: SIMD64<UInt8>) { self.storage = storage }

    /// From exactly 64 bytes; nil for any other count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 64 else { return nil }
        var s = SIMD64<UInt8>()
        var i = 0
        for b in bytes { s[i] = b; i += 1 }
        storage = s
    }

    public var bytes: [UInt8] {
        withUnsafeBytes(of: storage) { Array($0) }
    }

    public var description: String { bytes.hexString }
}

/// Flag bits of the packet header.
public struct PacketFlags: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let hasRecipient = PacketFlags(rawValue: 0x01)
    public static let hasSignature = PacketFlags(rawValue: 0x02)
    public static let isCompressed = PacketFlags(rawValue: 0x04)
    /// Source route present (v2 only).
    public static let hasRoute = PacketFlags(rawValue: 0x08)
    /// Request-sync response: this packet answers a REQUEST_SYNC.
    public static let isRSR = PacketFlags(rawValue: 0x10)

    public static let defined: PacketFlags = [.hasRecipient, .hasSignature, .isCompressed, .hasRoute, .isRSR]
}

/// Limits a decoder enforces on top of the format's own.
public struct WireLimits: Hashable, Sendable {
    /// Largest payload accepted, compressed or inflated. Nothing larger can be
    /// reassembled (the reassembler stops at 1 MiB), so nothing larger is accepted.
    public var maxPayloadBytes: Int

    public init(maxPayloadBytes: Int = 1 << 20) {
        self.maxPayloadBytes = maxPayloadBytes
    }

    public static let `default` = WireLimits()
}

/// A bitchat packet: header, addresses, optional source route, payload and signature.
///
/// A decoded packet keeps the originator's compressed bytes, so re-encoding it
/// (as a relay does, with a lower TTL) reproduces exactly the bytes that were
/// signed. The payload seen by applications is always the inflated one.
public struct Packet: Hashable, Sendable {
    public static let v1HeaderSize = 14
    public static let v2HeaderSize = 16
    public static let peerIDSize = 8
    public static let signatureSize = 64
    /// The smallest packet: a v1 header and a sender ID.
    public static let minimumSize = v1HeaderSize + peerIDSize

    /// 1 (u16 payload length) or 2 (u32 payload length, source routes).
    public var version: UInt8
    public var type: MessageType
    public var ttl: UInt8
    /// Milliseconds since the Unix epoch.
    public var timestamp: UInt64
    public var senderID: PeerID
    /// nil, or ``PeerID/broadcast``, for everyone; both forms are kept as received.
    public var recipientID: PeerID?
    /// Intermediate hops of a source route (v2 only). An empty array is a
    /// hasRoute flag with a zero count, kept so the bytes re-encode exactly.
    public var route: [PeerID]?
    public var isRSR: Bool
    public var signature: Signature?

    /// An answer to a gossip-sync request: a stored packet sent again to the
    /// neighbour that asked (isRSR, TTL 0, relayed no further). Its TTL says
    /// nothing of how far its originator is, nor does the answering link.
    public var isSyncAnswer: Bool { isRSR && ttl == 0 }
    /// The application payload, inflated.
    public private(set) var payload: [UInt8]
    /// The raw DEFLATE bytes that travel on the wire when the payload is compressed.
    public private(set) var compressedPayload: [UInt8]?

    /// Builds a packet. With `compress` (the default), the payload is deflated
    /// when the deployed apps' rules say it pays off.
    public init(version: UInt8 = 1, type: MessageType, ttl: UInt8, timestamp: UInt64,
                senderID: PeerID, recipientID: PeerID? = nil, route: [PeerID]? = nil,
                isRSR: Bool = false, payload: [UInt8], compress: Bool = true,
                signature: Signature? = nil) {
        self.version = version
        self.type = type
        self.ttl = ttl
        self.timestamp = timestamp
        self.senderID = senderID
        self.recipientID = recipientID
        self.route = route
        self.isRSR = isRSR
        self.signature = signature
        self.payload = payload
        self.compressedPayload = nil
        setPayload(payload, compress: compress)
    }

    /// Replaces the payload, compressing it under the deployed rules when asked.
    public mutating func setPayload(_ bytes: [UInt8], compress: Bool = true) {
        payload = bytes
        let representable = version == 1 ? bytes.count <= Int(UInt16.max) : bytes.count <= Int(UInt32.max)
        compressedPayload = compress && representable
            ? Compression.compressIfUseful(bytes) : nil
    }

    public var isBroadcast: Bool { recipientID == nil || recipientID == .broadcast }

    public var flags: PacketFlags {
        var f: PacketFlags = []
        if recipientID != nil { f.insert(.hasRecipient) }
        if signature != nil { f.insert(.hasSignature) }
        if compressedPayload != nil { f.insert(.isCompressed) }
        if route != nil { f.insert(.hasRoute) }
        if isRSR { f.insert(.isRSR) }
        return f
    }

    /// The value of the payloadLength field: the payload as sent, including the
    /// original-size prefix when compressed. The route is not counted.
    public var payloadLengthField: Int {
        if let c = compressedPayload { return c.count + (version == 2 ? 4 : 2) }
        return payload.count
    }

    /// Bytes this packet takes on the wire, unpadded.
    public var encodedSize: Int {
        (version == 2 ? Self.v2HeaderSize : Self.v1HeaderSize) + Self.peerIDSize
            + (recipientID == nil ? 0 : Self.peerIDSize)
            + (route.map { 1 + $0.count * Self.peerIDSize } ?? 0)
            + payloadLengthField
            + (signature == nil ? 0 : Self.signatureSize)
    }
}

// MARK: - Encoding

extension Packet {
    /// The wire bytes. `padded` applies ``Padding`` (the apps pad Noise packets only).
    public func encoded(padded: Bool = false) throws(EncodingError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(padded ? max(encodedSize, 256) : encodedSize)
        try encode(into: &out, ttl: ttl, isRSR: isRSR, signature: signature)
        if padded { Padding.pad(&out) }
        return out
    }

    /// The bytes an Ed25519 signature covers: this packet re-encoded with TTL 0,
    /// no signature (hasSignature cleared), isRSR cleared, and padded. Recipient,
    /// route and the payload as sent (compressed when compressed) are included.
    public func signingPreimage() throws(EncodingError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(max(encodedSize, 256))
        try encode(into: &out, ttl: 0, isRSR: false, signature: nil)
        Padding.pad(&out)
        return out
    }

    func encode(into out: inout [UInt8], ttl: UInt8, isRSR: Bool, signature: Signature?) throws(EncodingError) {
        guard version == 1 || version == 2 else {
            throw EncodingError(field: "version", problem: "\(version) is not 1 or 2")
        }
        if let route {
            guard version == 2 else {
                throw EncodingError(field: "route", problem: "source routes need a v2 header")
            }
            guard route.count <= 255 else {
                throw EncodingError(field: "route", problem: "\(route.count) hops; at most 255")
            }
        }
        let length = payloadLengthField
        let maxLength = version == 2 ? Int(UInt32.max) : Int(UInt16.max)
        guard length <= maxLength else {
            throw EncodingError(field: "payload", problem: "\(length) bytes do not fit a v\(version) length field")
        }
        if compressedPayload != nil, payload.count > maxLength {
            throw EncodingError(field: "payload", problem: "original size \(payload.count) does not fit a v\(version) size prefix")
        }

        var flags = self.flags
        if !isRSR { flags.remove(.isRSR) }
        if signature == nil { flags.remove(.hasSignature) }

        out.append(version)
        out.append(type.rawValue)
        out.append(ttl)
        out.appendBE(timestamp)
        out.append(flags.rawValue)
        if version == 2 { out.appendBE(UInt32(length)) } else { out.appendBE(UInt16(length)) }
        out.append(senderID)
        if let recipientID { out.append(recipientID) }
        if let route {
            out.append(UInt8(route.count))
            for hop in route { out.append(hop) }
        }
        if let compressed = compressedPayload {
            if version == 2 { out.appendBE(UInt32(payload.count)) } else { out.appendBE(UInt16(payload.count)) }
            out.append(contentsOf: compressed)
        } else {
            out.append(contentsOf: payload)
        }
        if let signature {
            withUnsafeBytes(of: signature.storage) { out.append(contentsOf: $0) }
        }
    }
}

// MARK: - Decoding

extension Packet {
    /// Decodes one packet. Bytes after the packet must be verified PKCS#7
    /// padding (see ``Padding``); anything else is an error.
    public init(decoding bytes: [UInt8], limits: WireLimits = .default) throws(WireError) {
        var reader = ByteReader(bytes)
        self = try Packet.decodeFields(&reader, limits: limits)
        let trailing = reader.remaining
        if trailing > 0 {
            guard let pad = Padding.verifiedPadLength(reader.rest), pad == trailing else {
                throw reader.error(.trailingBytes(count: trailing), "padding")
            }
        }
    }

    static func decodeFields(_ r: inout ByteReader, limits: WireLimits) throws(WireError) -> Packet {
        let versionAt = r.position
        let version = try r.u8("version")
        guard version == 1 || version == 2 else {
            throw r.error(.unsupportedVersion(version), "version", at: versionAt)
        }
        let type = MessageType(rawValue: try r.u8("type"))
        let ttl = try r.u8("ttl")
        let timestamp = try r.u64("timestamp")
        let flagsAt = r.position
        let flags = PacketFlags(rawValue: try r.u8("flags"))
        guard flags.isSubset(of: .defined), version == 2 || !flags.contains(.hasRoute) else {
            throw r.error(.invalidFlags(flags.rawValue), "flags", at: flagsAt)
        }
        let lengthAt = r.position
        let length = version == 2 ? Int(try r.u32("payloadLength")) : Int(try r.u16("payloadLength"))
        let senderID = try r.peerID("senderID")
        let recipientID = flags.contains(.hasRecipient) ? try r.peerID("recipientID") : nil

        var route: [PeerID]? = nil
        if flags.contains(.hasRoute) {
            let count = Int(try r.u8("route.count"))
            try r.require(count * peerIDSize, "route.hops")
            var hops = [PeerID]()
            hops.reserveCapacity(count)
            for _ in 0..<count { hops.append(try r.peerID("route.hops")) }
            route = hops
        }

        // The declared length must fit what is left (payload, then signature),
        // and the type's limit (docs/PROTOCOL.md, "Payload limits").
        let signatureLength = flags.contains(.hasSignature) ? signatureSize : 0
        let limit = min(limits.maxPayloadBytes, type.maxPayloadBytes)
        guard length <= limit else {
            throw r.error(.lengthOutOfRange(declared: length, limit: limit), "payloadLength", at: lengthAt)
        }
        try r.require(length, "payload")
        try r.require(length + signatureLength, "signature")

        let payload: [UInt8]
        var compressed: [UInt8]? = nil
        if flags.contains(.isCompressed) {
            let prefix = version == 2 ? 4 : 2
            guard length > prefix else {
                throw r.error(.lengthOutOfRange(declared: length, limit: prefix + 1), "payloadLength", at: lengthAt)
            }
            let sizeAt = r.position
            let originalSize = version == 2 ? Int(try r.u32("originalSize")) : Int(try r.u16("originalSize"))
            guard originalSize <= limit else {
                throw r.error(.lengthOutOfRange(declared: originalSize, limit: limit), "originalSize", at: sizeAt)
            }
            let dataAt = r.position
            let deflated = try r.slice(length - prefix, "payload")
            payload = try Compression.inflate(deflated, originalSize: originalSize, field: "payload", offset: dataAt)
            compressed = Array(deflated)
        } else {
            payload = try r.read(length, "payload")
        }

        var signature: Signature? = nil
        if flags.contains(.hasSignature) {
            let raw = try r.slice(signatureSize, "signature")
            signature = raw.withUnsafeBytes { buf in
                Signature(storage: buf.loadUnaligned(as: SIMD64<UInt8>.self))
            }
        }

        var packet = Packet(version: version, type: type, ttl: ttl, timestamp: timestamp,
                            senderID: senderID, recipientID: recipientID, route: route,
                            isRSR: flags.contains(.isRSR), payload: [], compress: false,
                            signature: signature)
        packet.payload = payload
        packet.compressedPayload = compressed
        return packet
    }
}
