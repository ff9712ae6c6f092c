import StarlingMesh
import StarlingWire

/// Private delivery's own tables (docs/MESH.md, "Bounds"): what waits for a
/// session, what we sent that is not yet acknowledged and its retries, the
/// handshakes we started, the peers we probed because we hold messages for
/// them, and the private messages already shown. The node seals, sends and
/// shakes hands; this value decides what waits, what goes again and what is
/// forgotten, and keeps every table bounded.
struct PrivateDelivery: Sendable {
    /// Payloads waiting for a session: 256 a peer (the oldest goes; a tracked
    /// one comes back at its retry), 1,024 peers at once.
    static let waitingPerPeer = 256
    static let waitingPeers = 1_024
    /// A handshake we started that has not completed in this long is looked at again.
    static let handshakeStall: Millis = 5_000
    /// A present peer we hold messages for is sent a fresh handshake at most this often.
    static let probeInterval: Millis = 30_000

    /// Private payloads waiting for a session, per peer.
    private(set) var waiting: [PeerID: [NoisePayload]] = [:]
    /// Our private messages and files not yet acknowledged, by message ID.
    private var unacknowledged: [String: NoisePayload] = [:]
    /// Retries, holds for favourites, and giving up.
    var tracker: DeliveryTracker<String>
    /// When each handshake we started began, to start over when one stalls.
    private(set) var handshakeStarted: [PeerID: Millis] = [:]
    /// When a present peer we hold messages for was last sent a fresh handshake
    /// (forgotten when it leaves, so no more than the peers present).
    private var heldProbes: [PeerID: Millis] = [:]
    /// Message IDs already shown (or offers handed on), so a retried one is shown once.
    var shown = BoundedSet<String>(capacity: 10_000)

    init(schedule: DeliveryTracker<String>.Schedule) {
        tracker = DeliveryTracker(schedule: schedule)
    }

    // MARK: Waiting for a session

    /// Keeps `payload` until `peer`'s session comes. A retry of one already
    /// waiting is not kept twice; a `fresh` send always is (the same file sent
    /// twice is two sends). Whether it was kept (not when 1,024 peers already wait).
    @discardableResult
    mutating func wait(_ payload: NoisePayload, for peer: PeerID, fresh: Bool) -> Bool {
        guard fresh || !(waiting[peer] ?? []).contains(payload) else { return true }
        guard waiting[peer] != nil || waiting.count < Self.waitingPeers else { return false }
        if waiting[peer, default: []].count >= Self.waitingPerPeer { waiting[peer]!.removeFirst() }
        waiting[peer, default: []].append(payload)
        return true
    }

    func hasWaiting(for peer: PeerID) -> Bool { !(waiting[peer] ?? []).isEmpty }

    /// What waited for `peer`'s session, taken out in the order it was sent.
    mutating func takeWaiting(for peer: PeerID) -> [NoisePayload] { waiting.removeValue(forKey: peer) ?? [] }

    var waitingCount: Int { waiting.values.reduce(0) { $0 + $1.count } }

    // MARK: Acknowledgement

    /// A payload sent that a delivered receipt acknowledges: kept until one comes.
    mutating func sent(_ payload: NoisePayload, id: String, to peer: PeerID, favorite: Bool, now: Millis) {
        unacknowledged[id] = payload
        tracker.sent(id, to: peer, now: now, favorite: favorite)
    }

    /// The payload sent under `id`, while it is not acknowledged.
    func payload(_ id: String) -> NoisePayload? { unacknowledged[id] }

    var unacknowledgedCount: Int { unacknowledged.count }

    /// The tracker gave up on `id`.
    mutating func failed(_ id: String) { unacknowledged[id] = nil }

    /// A delivered receipt for `id` from `sender`: whether it counts (only the
    /// recipient's, once; a duplicate or anyone else's counts for nothing).
    mutating func acknowledged(_ id: String, by sender: PeerID) -> Bool {
        guard tracker.recipient(of: id) == sender, tracker.acknowledged(id) != nil else { return false }
        if !tracker.isTracking(id) { unacknowledged[id] = nil }
        return true
    }

    /// `peer` is back (an announce after its absence, or a session): the
    /// tracker's steps for it, less what goes again from `flushed` (not twice).
    mutating func peerReturned(_ peer: PeerID, flushed: [NoisePayload] = [], now: Millis) -> [DeliveryTracker<String>.Step] {
        let steps = tracker.peerReturned(peer, now: now)
        guard !flushed.isEmpty else { return steps }
        return steps.filter {
            guard case let .resend(id, _, _) = $0, let p = unacknowledged[id] else { return true }
            return !flushed.contains(p)
        }
    }

    // MARK: Handshakes

    mutating func handshakeBegan(with peer: PeerID, now: Millis) { handshakeStarted[peer] = now }
    mutating func handshakeEnded(with peer: PeerID) { handshakeStarted[peer] = nil }
    var handshakesUnderWay: Bool { !handshakeStarted.isEmpty }

    /// The handshakes we started over 5 s ago, to be looked at again.
    func stalledHandshakes(now: Millis) -> [(peer: PeerID, started: Millis)] {
        handshakeStarted.filter { now > $0.value && now - $0.value > Self.handshakeStall }.map { ($0.key, $0.value) }
    }

    /// Whether a fresh handshake to `peer`, present while we hold messages for
    /// it, is due (at most every 30 s; a clock that went back makes it due).
    func probeDue(_ peer: PeerID, now: Millis) -> Bool {
        let last = heldProbes[peer] ?? 0
        return now >= last + Self.probeInterval || now < last
    }

    mutating func probed(_ peer: PeerID, now: Millis) { heldProbes[peer] = now }

    /// `peer` left (no announce for 60 s, or evicted): its probe is forgotten.
    mutating func peerGone(_ peer: PeerID) { heldProbes[peer] = nil }

    /// Panic: nothing waits, nothing is probed.
    mutating func wipe() {
        waiting = [:]
        heldProbes = [:]
    }

    /// Each table's size, by the names docs/MESH.md "Bounds" gives them.
    var tableSizes: [String: Int] {
        ["node.waitingPeers": waiting.count,
         "node.waitingPayloads": waitingCount,
         "node.unacknowledged": unacknowledged.count,
         "node.tracked": tracker.count,
         "node.handshakeStarted": handshakeStarted.count,
         "node.heldProbes": heldProbes.count,
         "node.privateShown": shown.count]
    }
}
