import StarlingCrypto
import StarlingMesh
import StarlingWire

/// Vouches' commands and queries on the node (``VouchesFeature`` holds what came).
extension NodeCore {
    /// Vouches for up to 16 of the peers we verified whose signing key we
    /// hold (the pinned one), to a peer in its Noise session (0x12): asked
    /// for, never sent on our own. Returns how many.
    @discardableResult
    public mutating func sendVouches(to peer: PeerID, now: Millis) throws -> Int {
        let recipient = present[peer]?.info.fingerprint ?? sessions.fingerprint(of: peer)
        let list = try VouchesFeature.batch(for: recipient, verified: verified, pins: pins.all, identity: identity, wall: wall(now))
        guard !list.isEmpty else { return 0 }
        try sendNoise(.unknown(type: NoisePayload.Kind.vouch, body: try VouchAttestation.encodeBatch(list)), to: peer, now: now, fresh: true)
        return list.count
    }

    /// Who vouches for a peer now: peers we still verify, within 30 days.
    public func vouchers(of f: Fingerprint, now: Millis) -> [Fingerprint] {
        vouchesFeature?.vouchers(of: f, verified: verified, wall: wall(now)) ?? []
    }
}
