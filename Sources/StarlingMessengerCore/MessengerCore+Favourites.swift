import StarlingCrypto
import StarlingMesh
import StarlingNodeCore
import StarlingWire
import StarlingYaOK

/// Favourites and Nostr: telling favourites our npub, their notices, and
/// which peers Nostr or the Ya OK server reaches.
extension MessengerCore {
    // MARK: Favourites and Nostr

    mutating func tell(_ peer: PeerID, favourite: Bool) {
        guard let npub = configuration.npub else { return }
        // A notice, not a conversation's message: its ID is its own.
        let id = Self.transportID(UserID.random())
        command(.sendPrivate((favourite ? "[FAVORITED]:" : "[UNFAVORITED]:") + npub, to: peer, messageID: id))
    }

    /// Peers kept only because they told us their npub (no decision of ours): 256 at most.
    public static let maxNoticedOnly = 256

    static func decided(_ t: TrustRecord) -> Bool { t.favorite || t.verified || t.blocked }

    mutating func favorited(by: PeerID, nickname: String?, on: Bool, npub: String?, now: Double) {
        guard let f = sessions[by] ?? trust.keys.first(where: { $0.peerID == by && trust[$0]?.npub != nil }) else { return }
        if trust[f] == nil, on, npub != nil {
            // A stranger's notice: kept, but the strangers' share is bounded (the
            // oldest goes), so that notices cannot crowd out our own decisions.
            let noticed = trust.filter { !Self.decided($0.value) && $0.value.npub != nil }
            if noticed.count >= Self.maxNoticedOnly, let oldest = noticed.min(by: { $0.value.updatedAt < $1.value.updatedAt }) {
                var gone = oldest.value
                gone.npub = nil
                trust[oldest.key] = nil
                write(.trust(gone)) // nothing decided and no npub: the store removes it
            }
        }
        var t = trust[f] ?? TrustRecord(fingerprint: f.hex, updatedAt: now)
        t.favoritesUs = on
        if on, let npub { t.npub = npub } else if !on { t.npub = nil }
        if let nickname { t.nickname = nickname }
        t.updatedAt = now
        trust[f] = t
        write(.trust(t))
        refreshNostr(f)
        emit(.favorited(by: by, name: nickname ?? displayName(by), on: on, npub: on ? npub : nil,
                        overNostr: on && npub != nil && configuration.nostr && isFavorite(f)))
        sendWaiting(now: now)
    }

    /// Nostr reaches a peer who told us its npub and is our favourite (mutual).
    mutating func refreshNostr(_ f: Fingerprint) {
        guard let t = trust[f] else { return }
        let mutual = t.npub != nil && t.favorite && !t.blocked
        let was = nostrReachable.contains(f)
        if mutual { nostrReachable.insert(f) } else { nostrReachable.remove(f) }
        if mutual || was {
            effects.append(.offMesh(.nostrContact(f.peerID, npub: mutual ? t.npub : nil, variant: t.nostrVariant ?? "bitchat")))
        }
    }

    /// How messages to a Nostr contact are wrapped: "bitchat" (the apps) or "standard" (NIP-17).
    public mutating func setNostrVariant(_ variant: String, for f: Fingerprint, now: Double) -> Bool {
        guard var t = trust[f], t.npub != nil else { return false }
        t.nostrVariant = variant
        t.updatedAt = now
        trust[f] = t
        write(.trust(t))
        nostrReachable.remove(f)
        refreshNostr(f)
        return true
    }

    /// The Ya OK server is registered (or not): contacts with cards are reachable through it.
    public mutating func serverChanged(up: Bool, now: Double) {
        serverUp = up
        if up { sendWaiting(now: now) }
    }
}
