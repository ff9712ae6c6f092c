import Crypto

/// The 16-byte packet ID used by gossip sync and duplicate suppression:
/// the first 16 bytes of SHA-256(type u8 ‖ senderID ‖ timestamp u64 BE ‖ payload),
/// where the payload is the inflated one. Relays, TTL and signature do not change it.
public struct PacketID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        var h: UInt64 = 0, l: UInt64 = 0
        for (i, b) in bytes.enumerated() {
            if i < 8 { h = h << 8 | UInt64(b) } else { l = l << 8 | UInt64(b) }
        }
        high = h
        low = l
    }

    public init(type: MessageType, senderID: PeerID, timestamp: UInt64, payload: [UInt8]) {
        var hasher = SHA256()
        var head = [UInt8]()
        head.reserveCapacity(17)
        head.append(type.rawValue)
        head.append(senderID)
        head.appendBE(timestamp)
        hasher.update(data: head)
        hasher.update(data: payload)
        let digest = hasher.finalize()
        self = digest.withUnsafeBytes { PacketID(bytes: $0.prefix(16))! }
    }

    public init(_ packet: Packet) {
        self.init(type: packet.type, senderID: packet.senderID, timestamp: packet.timestamp, payload: packet.payload)
    }

    public var bytes: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(16)
        out.appendBE(high)
        out.appendBE(low)
        return out
    }

    public var description: String { bytes.hexString }

    public static func < (a: PacketID, b: PacketID) -> Bool { (a.high, a.low) < (b.high, b.low) }
}
