import StarlingCrypto
import StarlingMesh
import StarlingWire

/// Live voice on the node (``VoiceFeature`` puts bursts back together).
extension NodeCore {
    /// Sends a live voice burst packet: to everyone (a signed voiceFrame, TTL 7,
    /// as the apps send them), or privately to `peer` in its Noise session
    /// (payload 0x08; no receipt, no retry: live audio late is no use).
    public mutating func sendVoice(_ burst: VoiceBurst, to peer: PeerID? = nil, now: Millis) throws {
        if let peer {
            try sendNoise(.unknown(type: NoisePayload.Kind.voiceFrame, body: burst.encoded()), to: peer, now: now, fresh: true)
            return
        }
        var packet = Packet(type: .voiceFrame, ttl: 7, timestamp: wall(now), senderID: peerID, payload: burst.encoded())
        try PacketSigning.sign(&packet, with: identity.signingKey)
        perform(router.originate(packet, now: now), now: now)
    }

    mutating func takeVoice(_ bytes: [UInt8], from sender: PeerID, isPrivate: Bool, now: Millis) {
        using(\.voiceFeature, now: now) { voice, context in voice.take(bytes, from: sender, isPrivate: isPrivate, context: &context) }
    }
}
