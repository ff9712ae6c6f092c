import StarlingWire

/// The packets that carry Noise on the bitchat mesh: handshake messages in type
/// 0x10, transport frames in type 0x11, both addressed, unsigned and padded on
/// the air (see docs/PROTOCOL.md, "Noise sessions").
public enum NoisePackets {
    public static let ttl: UInt8 = 7

    public static func handshake(_ message: [UInt8], from sender: PeerID, to recipient: PeerID,
                                 timestamp: UInt64, ttl: UInt8 = ttl) -> Packet {
        Packet(type: .noiseHandshake, ttl: ttl, timestamp: timestamp, senderID: sender,
               recipientID: recipient, payload: message, compress: false)
    }

    /// Frames over 65,535 bytes (files) need the v2 header's 4-byte length.
    public static func encrypted(_ frame: [UInt8], from sender: PeerID, to recipient: PeerID,
                                 timestamp: UInt64, ttl: UInt8 = ttl) -> Packet {
        Packet(version: frame.count > Int(UInt16.max) ? 2 : 1, type: .noiseEncrypted, ttl: ttl, timestamp: timestamp,
               senderID: sender, recipientID: recipient, payload: frame, compress: false)
    }
}
