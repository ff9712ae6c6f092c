/// The 8-byte peer ID that names a sender, a recipient or a route hop on the wire.
///
/// bitchat derives it from the first 8 bytes of SHA-256 of the Noise static key;
/// on the wire it is just 8 bytes, kept here big-endian in a `UInt64` so that it
/// is cheap to compare, hash and copy.
public struct PeerID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// The all-0xFF recipient that means "everyone".
    public static let broadcast = PeerID(rawValue: .max)

    /// From exactly 8 bytes; nil for any other count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 8 else { return nil }
        var v: UInt64 = 0
        for b in bytes { v = v << 8 | UInt64(b) }
        rawValue = v
    }

    /// From 16 hexadecimal digits, as bitchat shows peer IDs.
    public init?(hex: String) {
        guard hex.utf8.count == 16, let v = UInt64(hex, radix: 16) else { return nil }
        rawValue = v
    }

    public var bytes: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(8)
        out.appendBE(rawValue)
        return out
    }

    public var isBroadcast: Bool { rawValue == .max }

    /// 16 lowercase hex digits.
    public var description: String {
        let s = String(rawValue, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }

    public static func < (a: PeerID, b: PeerID) -> Bool { a.rawValue < b.rawValue }
}

extension ByteReader {
    @inline(__always)
    public mutating func peerID(_ field: @autoclosure () -> String) throws(WireError) -> PeerID {
        PeerID(rawValue: try u64(field()))
    }
}

extension Array where Element == UInt8 {
    @inline(__always) mutating func append(_ id: PeerID) { appendBE(id.rawValue) }
}
