import StarlingCrypto
import StarlingNostr
import StarlingYaOK

/// Contacts known only by a Nostr key (`starling contact add npub1…`):
/// someone on a standard NIP-17 client (Amethyst, 0xchat), with no mesh
/// identity. Each is kept as a trust record under a key of its own derived
/// from the npub (SHA-256 of `"starling nostr contact"` ‖ the x-only key), a
/// favourite whose messages go as standard NIP-17 over Nostr.
public enum NostrContacts {
    /// The key a Nostr-only contact is kept under (its conversation and peer ID derive from it).
    public static func key(npub: String) throws -> Fingerprint {
        let publicKey = try Bech32.publicKey(npub: npub)
        return Fingerprint(noiseStaticKey: Array("starling nostr contact".utf8) + publicKey)
    }

    /// The trust record of a new Nostr-only contact: our favourite; whether
    /// they favour us is not known (they never said so: issue 52).
    public static func record(npub: String, name: String, now: Double) throws -> TrustRecord {
        TrustRecord(fingerprint: try key(npub: npub).hex, nickname: name, favorite: true, updatedAt: now, npub: npub,
                    nostrVariant: GiftWrap.Variant.standard.rawValue, favoritesUs: nil)
    }
}
