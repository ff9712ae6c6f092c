import StarlingCrypto
import StarlingMesh
import StarlingWire

/// The person's decisions about peers on the node (``Trust``), signing keys pinned to Noise keys
/// (``Pins``), and the Noise keys verified announces gave.
extension NodeCore {
    /// Marks a peer a favourite, or not: its messages are held while it is
    /// away, and this node holds what it relays for it.
    public mutating func setFavorite(_ fingerprint: Fingerprint, _ on: Bool) {
        trust.setFavorite(fingerprint, on)
        router.favorites = Set(trust.favorites.map(\.peerID))
    }

    public var favoriteFingerprints: Set<Fingerprint> { trust.favorites }

    /// Marks a fingerprint verified (compared out of band), or not.
    public mutating func setVerified(_ fingerprint: Fingerprint, _ on: Bool) {
        trust.setVerified(fingerprint, on)
    }

    public var verified: Set<Fingerprint> { trust.verified }

    public mutating func block(_ fingerprint: Fingerprint) {
        trust.setBlocked(fingerprint, true)
        updateBlockedSenders()
    }

    public mutating func unblock(_ fingerprint: Fingerprint) {
        trust.setBlocked(fingerprint, false)
        updateBlockedSenders()
    }

    public var blockedFingerprints: Set<Fingerprint> { trust.blocked }

    /// Whether what `peer` sends is dropped: the Noise key of its verified
    /// announce, or of the session it opened (a private message can come
    /// before the announce), is blocked.
    public func isBlocked(_ peer: PeerID) -> Bool {
        let blocked = trust.blocked
        guard !blocked.isEmpty else { return false }
        if let f = present[peer]?.info.fingerprint, blocked.contains(f) { return true }
        if let f = sessions.fingerprint(of: peer), blocked.contains(f) { return true }
        return false
    }

    /// The router drops packets from blocked peers before anything else: not
    /// processed, not relayed, not answered.
    mutating func updateBlockedSenders() {
        router.blockedSenders = Set(present.entries.filter { trust.blocked.contains($0.value.info.fingerprint) }.keys)
    }

    /// Trust decisions are loaded: what waited for them is taken now (a
    /// blocked sender's dropped unanswered, the rest shown and acknowledged).
    public mutating func trustDecided(now: Millis) {
        guard let held = trust.decided() else { return }
        for w in held where !isBlocked(w.from) { inner(w.payload, from: w.from, hops: w.hops, via: w.via, now: now) }
        // Drops for us and group messages that came meanwhile: read now, the blocks known.
        using(\.courierFeature, now: now) { courier, context in courier.trustDecided(&context) }
        using(\.groupsFeature, now: now) { groups, context in groups.readKept(context: &context) }
    }

    /// Private payloads waiting for trust decisions.
    public var awaitingTrustCount: Int { trust.heldCount }

    /// Pins on first use (``Pins``: 4,096, the newest going), and says so to the application.
    mutating func pin(_ fingerprint: Fingerprint, _ key: [UInt8]) {
        guard pins.pinFirst(fingerprint, key) else { return }
        emit(.pinned(fingerprint: fingerprint, signingKey: key))
    }

    /// Pins a signing key to a Noise key from a source the application
    /// trusts: a pin kept from an earlier run, or a Ya OK contact card (signed,
    /// scanned in person). It replaces a pin made on first use in this run;
    /// announces with another signing key for that Noise key are refused.
    public mutating func pinSigningKey(_ key: [UInt8], for fingerprint: Fingerprint) {
        guard key.count == 32 else { return }
        pins.set(key, for: fingerprint)
    }

    /// The signing key pinned to a Noise key, if any.
    public func pinnedSigningKey(for fingerprint: Fingerprint) -> [UInt8]? { pins[fingerprint] }

    /// Remembers the Noise key a verified announce (or a contact's card) gave
    /// (1,024, the oldest going, with what announce v2 recognized by it).
    mutating func rememberNoiseKey(_ f: Fingerprint, _ key: [UInt8]) {
        if noiseKeys[f] == key { return }
        if noiseKeys[f] == nil { noiseKeyOrder.append(f) }
        noiseKeys[f] = key
        recognitionFeature?.forget(f)
        while noiseKeyOrder.count > 1_024 {
            let gone = noiseKeyOrder.removeFirst()
            noiseKeys[gone] = nil
            recognitionFeature?.forget(gone)
        }
    }
}
