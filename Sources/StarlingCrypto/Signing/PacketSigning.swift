import Crypto
import StarlingWire

/// Ed25519 signatures over bitchat packets, with the deployed apps' preimage:
/// the packet re-encoded with TTL 0, no signature, isRSR cleared, and padded
/// (``Packet/signingPreimage()``).
public enum PacketSigning {
    /// Signs `packet` in place (replacing any signature).
    ///
    /// The payload is first put in the form an iPhone makes of it (compressed
    /// exactly when ``Compression`` says so): bitchat iOS verifies a signature
    /// by encoding the payload it decoded again, so a packet signed in any other
    /// form is dropped there. docs/PROTOCOL.md, "Compression".
    public static func sign(_ packet: inout Packet, with key: Curve25519.Signing.PrivateKey) throws {
        packet.setPayload(packet.payload)
        packet.signature = nil
        let preimage = try packet.signingPreimage()
        let raw = try key.signature(for: preimage)
        packet.signature = Signature(bytes: Array(raw))
    }

    /// A signed copy of `packet`.
    public static func signed(_ packet: Packet, with key: Curve25519.Signing.PrivateKey) throws -> Packet {
        var copy = packet
        try sign(&copy, with: key)
        return copy
    }

    /// Whether `packet` carries a valid signature by `publicKey` (32 bytes).
    public static func isValid(_ packet: Packet, publicKey: [UInt8]) -> Bool {
        guard let signature = packet.signature,
              let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey),
              let preimage = try? packet.signingPreimage() else { return false }
        return key.isValidSignature(signature.bytes, for: preimage)
    }
}

/// Why an announce was refused.
public enum AnnounceError: Error, Hashable, Sendable, CustomStringConvertible {
    case notAnAnnounce
    case malformed(WireError)
    /// The sender ID is not the peer ID of the announced Noise key.
    case senderMismatch(sender: PeerID, expected: PeerID)
    /// Older (or further in the future) than the 900-second limit.
    case stale(ageMillis: Int64)
    case unsigned
    case badSignature

    public var description: String {
        switch self {
        case .notAnAnnounce: "not an announce packet"
        case let .malformed(e): "malformed announce: \(e)"
        case let .senderMismatch(s, e): "sender \(s) is not the peer ID \(e) of the announced Noise key"
        case let .stale(age): "announce is \(age / 1000) s away from now; the limit is 900 s"
        case .unsigned: "announce is not signed"
        case .badSignature: "announce signature is not valid"
        }
    }
}

/// Signed announces: who a peer is, bound to its keys.
public enum Announcement {
    public static let maxAgeMillis: UInt64 = 900_000
    public static let ttl: UInt8 = 7

    /// Builds and signs an announce for `identity`.
    public static func make(identity: Identity, nickname: String, timestamp: UInt64,
                            directNeighbors: [PeerID]? = nil, capabilities: UInt64? = nil, bridgeGeohash: String? = nil) throws -> Packet {
        let body = Announce(nickname: nickname, noisePublicKey: identity.noisePublicKey,
                            signingPublicKey: identity.signingPublicKey,
                            directNeighbors: directNeighbors, capabilities: capabilities, bridgeGeohash: bridgeGeohash)
        var packet = Packet(type: .announce, ttl: ttl, timestamp: timestamp, senderID: identity.peerID,
                            payload: try body.encoded())
        try PacketSigning.sign(&packet, with: identity.signingKey)
        return packet
    }

    /// Checks an announce: type, payload, sender ID = peer ID of its Noise key,
    /// within 900 s of `now` (either way), and signed by its own Ed25519 key.
    public static func verify(_ packet: Packet, now: UInt64) throws(AnnounceError) -> Announce {
        guard packet.type == .announce else { throw .notAnAnnounce }
        let announce: Announce
        do { announce = try Announce(decoding: packet.payload) } catch { throw .malformed(error) }
        let expected = Fingerprint(noiseStaticKey: announce.noisePublicKey).peerID
        guard packet.senderID == expected else { throw .senderMismatch(sender: packet.senderID, expected: expected) }
        let age = Int64(bitPattern: now &- packet.timestamp)
        guard age.magnitude <= maxAgeMillis else { throw .stale(ageMillis: age) }
        guard packet.signature != nil else { throw .unsigned }
        guard PacketSigning.isValid(packet, publicKey: announce.signingPublicKey) else { throw .badSignature }
        return announce
    }
}
