import StarlingCrypto
import StarlingNodeCore
import StarlingNostr
import StarlingWire
import StarlingYaOK

/// What the messenger tells its faces. A face renders these and decides
/// nothing: trust has been applied, names resolved, states moved.
public enum MessengerEvent: Sendable {
    /// The store's trust decisions are known (the first time it opened):
    /// `contacts` kept, `pending` messages waiting for a route.
    case trustLoaded(contacts: Int, pending: Int)
    /// The store opened again after a lock; `storedMeanwhile` changes written now.
    case storeUnlocked(storedMeanwhile: Int)
    /// The store closed (a face's lock, or the messenger's auto-lock: `reason`
    /// says which): history is closed, messages still arrive and wait in memory.
    case storeLocked(reason: String)
    /// A private message for us, recorded in its conversation (not yet read:
    /// ``MessengerCore/markSeen(_:now:)`` when the person sees it), from the
    /// holder of `fingerprint` (its session proved it, or a courier drop's seal).
    case privateMessage(conversation: UserID, record: MessageRecord, from: PeerID, name: String, hops: Int, via: String?, fingerprint: Fingerprint)
    /// Our private message, recorded; its `transport` says where it went
    /// ("mesh", "nostr", "yaok-server") or nil: queued until a route appears.
    case sent(conversation: UserID, record: MessageRecord)
    /// Messages that waited for a route (`count` in this conversation) go now.
    case sendingWaiting(conversation: UserID, count: Int)
    /// One of our messages moved (sent, delivered, read, retrying, failed, handed on).
    case progress(conversation: UserID, record: MessageRecord)
    /// Our message for someone away went as a courier drop with `couriers`
    /// neighbours, who hand it on if they meet the recipient within 24 hours.
    /// It stays queued: it goes directly too when the recipient is back.
    case dropDeposited(conversation: UserID, record: MessageRecord, couriers: Int)
    case peerJoined(PeerID, nickname: String, hops: Int)
    case peerLeft(PeerID)
    /// An encrypted session with a peer, whose key (`fingerprint`) its handshake proved.
    case sessionEstablished(PeerID, name: String, fingerprint: Fingerprint)
    /// A peer made us a favourite, or no longer; `overNostr`: both are favourites and Nostr carries it.
    case favorited(by: PeerID, name: String, on: Bool, npub: String?, overNostr: Bool)
    case trustChanged(Fingerprint, name: String, blocked: Bool, favorite: Bool, verified: Bool)
    /// Something a person should know that the messenger found (a message it
    /// could not hand to the node). Refusals from the network a person should
    /// know of (a refused announce, a transport down) come as `.node(.rejected)`.
    case warning(String)
    /// A change the store did not take: said, never dropped in silence.
    case notSaved(String)
    /// Refusals that are internals (a session lost in a restart, bad bytes):
    /// for a log or statistics, not for a person's screen.
    case diagnostic(Rejection)
    /// Public messages a neighbour's sync replayed (sent before we were here):
    /// one block, oldest first, each a `.message` with `history` set, none shown before.
    case publicHistory([NodeEvent])
    /// A location channel (a geohash over Nostr, as the apps run them): a
    /// message, someone's presence, or a line of ours that did not go.
    case channel(NostrChannelEvent)
    /// Someone who is not a contact wrote over Nostr: their request as it is now (its newest
    /// message last), for the person to accept or block (docs/NOSTR.md, "Requests").
    case request(StrangerRequest)
    /// Everything else the node said, for the face to render as it is
    /// (public messages, files, Stately, pongs, links): already filtered for blocks.
    case node(NodeEvent)
}
