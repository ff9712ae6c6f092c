/// Stately's state packet (seed 000): its own service with its own frames,
/// never inside a bitchat packet.
///
/// ```
/// version u8 (1) ‖ type u8 (0x0A) ‖ ttl u8 ‖ timestamp u64 BE ‖ payloadLength u16 BE
/// ‖ senderID 8 bytes ‖ box (payloadLength bytes: AES-256-GCM nonce 12 ‖ ciphertext ‖ tag 16)
/// ```
///
/// The header is 13 bytes (the seed says 12 and lists 13). This type knows the
/// bytes only; the box is sealed and opened with a key elsewhere.
public struct StatePacket: Hashable, Sendable {
    public static let version: UInt8 = 1
    public static let type: UInt8 = 0x0A
    public static let headerSize = 13
    /// Header and sender ID.
    public static let overhead = headerSize + 8
    /// A box holds at least a nonce and a tag.
    public static let minimumBox = 12 + 16
    /// The TTL of ordinary states: three hops.
    public static let defaultTTL: UInt8 = 3
    /// The TTL of SOS states: the mesh's maximum.
    public static let sosTTL: UInt8 = 7

    public var ttl: UInt8
    /// Milliseconds since the Unix epoch.
    public var timestamp: UInt64
    public var senderID: PeerID
    /// The sealed JSON state report.
    public var box: [UInt8]

    public init(ttl: UInt8 = defaultTTL, timestamp: UInt64, senderID: PeerID, box: [UInt8]) {
        self.ttl = ttl
        self.timestamp = timestamp
        self.senderID = senderID
        self.box = box
    }

    public init(decoding bytes: [UInt8]) throws(WireError) {
        var r = ByteReader(bytes)
        let version = try r.u8("state.version")
        guard version == Self.version else {
            throw r.error(.invalidValue("state packet version \(version); only 1 exists"), "state.version", at: 0)
        }
        let type = try r.u8("state.type")
        guard type == Self.type else {
            throw r.error(.invalidValue("type 0x\(String(type, radix: 16)) is not a state update (0x0a)"), "state.type", at: 1)
        }
        ttl = try r.u8("state.ttl")
        timestamp = try r.u64("state.timestamp")
        let lengthAt = r.position
        let length = Int(try r.u16("state.payloadLength"))
        guard length >= Self.minimumBox else {
            throw r.error(.lengthOutOfRange(declared: length, limit: Self.minimumBox), "state.payloadLength", at: lengthAt)
        }
        senderID = PeerID(bytes: try r.slice(8, "state.senderID"))!
        box = try r.read(length, "state.box")
        guard r.isAtEnd else { throw r.error(.trailingBytes(count: r.remaining), "state.box", at: r.position) }
    }

    public func encoded() throws(EncodingError) -> [UInt8] {
        guard box.count >= Self.minimumBox, box.count <= Int(UInt16.max) else {
            throw EncodingError(field: "state.box", problem: "\(box.count) bytes; a box has \(Self.minimumBox) to 65,535")
        }
        var out: [UInt8] = []
        out.reserveCapacity(Self.overhead + box.count)
        out.append(Self.version)
        out.append(Self.type)
        out.append(ttl)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: timestamp >> UInt64(shift))) }
        out.append(UInt8(box.count >> 8))
        out.append(UInt8(box.count & 0xFF))
        out.append(senderID)
        out += box
        return out
    }

    /// Whether bytes look like a state packet (version 1, type 0x0A), before decoding.
    public static func looksLike(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 2 && bytes[0] == version && bytes[1] == type
    }
}
