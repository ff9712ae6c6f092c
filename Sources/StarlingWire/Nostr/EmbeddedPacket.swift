/// A bitchat packet carried in a Nostr private message's content, as the
/// apps send one to a favourite off the mesh (docs/PROTOCOL.md, "Nostr"):
/// `"bitchat1:"` + base64url without padding of a packet of type 0x11,
/// TTL 7, unsigned, whose payload is a Noise payload in the clear (a type
/// byte, then its body: the gift wrap around it is the encryption).
///
/// The sender ID is ours on the mesh (the apps' favourite messages carry it);
/// receivers do not rely on it: the Nostr key that signed the seal says who
/// wrote it. The recipient ID, when there is one, is informative too.
public enum EmbeddedPacket {
    public static let prefix = "bitchat1:"
    /// The longest content taken in: the base64 of a packet of at most
    /// 64 KiB (a Nostr layer's limit).
    public static let maxContentBytes = prefix.utf8.count + (65_536 + 2) / 3 * 4

    public struct Contents: Hashable, Sendable {
        public var senderID: PeerID
        public var recipientID: PeerID?
        public var timestamp: UInt64
        public var payload: NoisePayload

        public init(senderID: PeerID, recipientID: PeerID?, timestamp: UInt64, payload: NoisePayload) {
            self.senderID = senderID
            self.recipientID = recipientID
            self.timestamp = timestamp
            self.payload = payload
        }
    }

    /// The content string for `contents` (the packet padded as iOS pads it).
    public static func encode(_ contents: Contents) throws(EncodingError) -> String {
        let packet = Packet(type: .noiseEncrypted, ttl: 7, timestamp: contents.timestamp, senderID: contents.senderID,
                            recipientID: contents.recipientID, payload: try contents.payload.encoded())
        return prefix + Base64.encode(try packet.encoded(padded: true), url: true, padded: false)
    }

    /// The packet in a content string: nil for text that is not one (plain
    /// text, another app's prefix); an error for one that is, but is broken.
    public static func decode(_ content: String) throws(WireError) -> Contents? {
        guard content.hasPrefix(prefix) else { return nil }
        guard content.utf8.count <= maxContentBytes else {
            throw WireError(.invalidValue("\(content.utf8.count) bytes of content, over \(maxContentBytes)"), field: "bitchat1", offset: 0)
        }
        guard let bytes = Base64.decode(String(content.dropFirst(prefix.count))) else {
            throw WireError(.invalidValue("not base64url"), field: "bitchat1", offset: prefix.utf8.count)
        }
        let packet = try Packet(decoding: bytes)
        guard packet.type == .noiseEncrypted else {
            throw WireError(.invalidValue("packet type \(packet.type), not 0x11"), field: "bitchat1.type", offset: 1)
        }
        return Contents(senderID: packet.senderID, recipientID: packet.recipientID, timestamp: packet.timestamp,
                        payload: try NoisePayload(decoding: packet.payload))
    }
}
