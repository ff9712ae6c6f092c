import Crypto
import StarlingWire

/// The one-way seal of courier drops, as iOS 1.7 makes it (bitchat
/// NoiseEncryptionService.swift, CourierEnvelope.swift): Noise
/// `Noise_X_25519_ChaChaPoly_SHA256` (`-> e, es, s, ss`, the recipient's
/// static key known beforehand), one message of 96 bytes plus the payload,
/// from the sender's Noise static key (carried inside, authenticated by
/// `ss`). Sealed to the recipient's static key (prologue
/// "bitchat-courier-v1") or to one of its one-time prekeys (prologue
/// "bitchat-prekey-v1" ‖ u32be(prekey ID): forward secret once the prekey is
/// gone). And the recipient tags envelopes are found by.
public enum CourierSeal {
    public static let protocolX = try! NoiseProtocol("Noise_X_25519_ChaChaPoly_SHA256")
    static let staticPrologue = Array("bitchat-courier-v1".utf8)

    static func prologue(prekeyID: UInt32?) -> [UInt8] {
        prekeyID.map { Array("bitchat-prekey-v1".utf8) + $0.bigEndianBytes } ?? staticPrologue
    }

    /// The UTC day number of a time.
    public static func epochDay(unixSeconds: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: unixSeconds / 86_400) }

    /// HMAC-SHA256(key = the recipient's Noise static public key, "bitchat-courier-tag-v1" ‖ u32be(day)), first 16 bytes.
    public static func recipientTag(noiseKey: [UInt8], day: UInt32) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array("bitchat-courier-tag-v1".utf8) + day.bigEndianBytes,
                                              using: SymmetricKey(data: noiseKey)).prefix(16))
    }

    /// The day before, the day and the day after (sealed near midnight, clocks apart).
    public static func candidateTags(noiseKey: [UInt8], day: UInt32) -> [[UInt8]] {
        [day == 0 ? 0 : day - 1, day, day &+ 1].map { recipientTag(noiseKey: noiseKey, day: $0) }
    }

    /// Seals `payload` (a typed Noise payload) for `recipient` (its Noise
    /// static key, or a one-time prekey's public key with its ID).
    /// `ephemeral`: for test vectors only.
    public static func seal(_ payload: [UInt8], from sender: X25519PrivateKey, to recipient: [UInt8], prekeyID: UInt32? = nil,
                            ephemeral: X25519PrivateKey? = nil) throws(NoiseError) -> [UInt8] {
        var hs = try HandshakeState(protocol: protocolX, initiator: true, prologue: prologue(prekeyID: prekeyID), localStatic: sender,
                                    localEphemeral: ephemeral, remoteStatic: recipient)
        return try hs.writeMessage(payload: payload)
    }

    /// Opens a seal with our static key (or the prekey's private key and its
    /// ID): the payload, and the sender's Noise static key it proves.
    public static func open(_ sealed: [UInt8], with key: X25519PrivateKey, prekeyID: UInt32? = nil) throws(NoiseError) -> (payload: [UInt8], sender: [UInt8]) {
        var hs = try HandshakeState(protocol: protocolX, initiator: false, prologue: prologue(prekeyID: prekeyID), localStatic: key)
        let payload = try hs.readMessage(sealed)
        guard let sender = hs.remoteStatic else { throw .missingKey("rs") }
        return (payload, sender)
    }
}
