import StarlingCrypto
import StarlingMesh
import StarlingWire

/// The person's decisions about peers, by the fingerprint of their Noise key:
/// blocked, verified (safety numbers compared), favourites; and what came while
/// those decisions were not loaded yet (a daemon reading its store), held until
/// they are: 256 private payloads at most, the oldest going unacknowledged (its
/// sender tries again).
struct Trust: Sendable {
    static let heldCapacity = 256

    /// A private payload that waits for the decisions.
    struct Held: Sendable {
        let payload: NoisePayload
        let from: PeerID
        let hops: Int
        let via: String?
    }

    /// Whether the decisions are loaded.
    private(set) var known: Bool
    private(set) var blocked: Set<Fingerprint> = []
    private(set) var verified: Set<Fingerprint> = []
    private(set) var favorites: Set<Fingerprint>
    private var held: [Held] = []

    init(known: Bool, favorites: Set<Fingerprint>) {
        self.known = known
        self.favorites = favorites
    }

    mutating func setBlocked(_ f: Fingerprint, _ on: Bool) {
        if on { blocked.insert(f) } else { blocked.remove(f) }
    }

    mutating func setVerified(_ f: Fingerprint, _ on: Bool) {
        if on { verified.insert(f) } else { verified.remove(f) }
    }

    mutating func setFavorite(_ f: Fingerprint, _ on: Bool) {
        if on { favorites.insert(f) } else { favorites.remove(f) }
    }

    /// Keeps a payload that must wait for the decisions: what a person reads
    /// (messages, files, offers) and a group's state (a blocked creator's is not
    /// taken). Whether it was kept (false once they are known, or for other kinds).
    mutating func holds(_ payload: NoisePayload, from sender: PeerID, hops: Int, via: String?) -> Bool {
        guard !known else { return false }
        switch payload {
        case .privateMessage, .privateFile, .bulkOffer: break
        case let .unknown(type, _) where type == NoisePayload.Kind.groupInvite || type == NoisePayload.Kind.groupKeyUpdate: break
        default: return false
        }
        if held.count >= Self.heldCapacity { held.removeFirst() }
        held.append(Held(payload: payload, from: sender, hops: hops, via: via))
        return true
    }

    var heldCount: Int { held.count }

    /// The decisions are loaded: what waited, in the order it came (nil when they were already).
    mutating func decided() -> [Held]? {
        guard !known else { return nil }
        known = true
        defer { held = [] }
        return held
    }
}
