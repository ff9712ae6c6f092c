/// A Nostr event carried over the mesh (message type 0x28; docs/PROTOCOL.md,
/// "Nostr carriers (0x28)"), as iOS 1.7 writes it (bitchat
/// NostrCarrierPacket.swift): to a gateway or bridge peer that has a way to
/// the relays (directed, signed by the depositor), or from one into the mesh
/// (broadcast, unsigned: only the event's own Schnorr signature counts).
/// TLVs of type u8, length u16 BE, always in this order: 01 direction (1
/// byte, 1–4), 02 geohash (UTF-8, 1–12 bytes), 03 the signed event as a JSON
/// object (1–16,384 bytes).
///
/// Read as iOS reads: unknown types skipped, a later copy replacing an
/// earlier one, all three required; a direction of another size or value,
/// a value past the end or 1–2 trailing bytes refuse the whole carrier.
/// The geohash's alphabet and the event itself are the reader's to check.
public struct NostrCarrier: Hashable, Sendable {
    public enum Direction: UInt8, Hashable, Sendable, CaseIterable {
        case toGateway = 1, fromGateway = 2, toBridge = 3, fromBridge = 4
        /// Deposits go to one peer (directed, signed); the others are broadcast, unsigned.
        public var isDirected: Bool { self == .toGateway || self == .toBridge }
    }

    public static let maxEventJSON = 16 * 1_024
    public static let maxGeohash = 12

    public var direction: Direction
    public var geohash: String
    public var eventJSON: [UInt8]

    public init(direction: Direction, geohash: String, eventJSON: [UInt8]) throws(EncodingError) {
        guard (1...Self.maxGeohash).contains(geohash.utf8.count) else {
            throw EncodingError(field: "carrier.geohash", problem: "\(geohash.utf8.count) bytes; 1 to 12")
        }
        guard (1...Self.maxEventJSON).contains(eventJSON.count) else {
            throw EncodingError(field: "carrier.eventJSON", problem: "\(eventJSON.count) bytes; 1 to 16,384")
        }
        self.direction = direction
        self.geohash = geohash
        self.eventJSON = eventJSON
    }

    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.appendTLV(0x01, [direction.rawValue], length: .u16)
        out.appendTLV(0x02, Array(geohash.utf8), length: .u16)
        out.appendTLV(0x03, eventJSON, length: .u16)
        return out
    }

    /// Whether a geohash is one iOS's gateway takes: 1–12 characters of the
    /// lowercase base-32 alphabet.
    public static func isValidGeohash(_ g: String) -> Bool {
        (1...maxGeohash).contains(g.utf8.count) && g.utf8.allSatisfy { Array("0123456789bcdefghjkmnpqrstuvwxyz".utf8).contains($0) }
    }

    public init(decoding bytes: ArraySlice<UInt8>) throws(WireError) {
        var r = ByteReader(Array(bytes))
        var direction: Direction?, geohash: String?, json: [UInt8]?
        while !r.isAtEnd {
            let t = try r.tlv("carrier") { _ in .u16 }
            let v = Array(t.value)
            switch t.type {
            case 0x01:
                guard v.count == 1, let d = Direction(rawValue: v[0]) else {
                    throw WireError(.invalidValue("direction \(v.map { String($0) }.joined(separator: " ")); 1 to 4"), field: "carrier.direction",
                                    offset: t.valueOffset)
                }
                direction = d
            case 0x02:
                guard let g = String(validating: v, as: UTF8.self) else { throw WireError(.invalidUTF8, field: "carrier.geohash", offset: t.valueOffset) }
                guard (1...Self.maxGeohash).contains(v.count) else {
                    throw WireError(.lengthOutOfRange(declared: v.count, limit: Self.maxGeohash), field: "carrier.geohash", offset: t.valueOffset)
                }
                geohash = g
            case 0x03:
                guard (1...Self.maxEventJSON).contains(v.count) else {
                    throw WireError(.lengthOutOfRange(declared: v.count, limit: Self.maxEventJSON), field: "carrier.eventJSON", offset: t.valueOffset)
                }
                json = v
            default:
                break
            }
        }
        guard let direction, let geohash, let json else { throw WireError(.missingField, field: "carrier", offset: r.position) }
        self.direction = direction
        self.geohash = geohash
        self.eventJSON = json
    }
}
