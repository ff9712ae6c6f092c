import StarlingCrypto
import StarlingMesh
import StarlingWire

/// A feature the node core composes (the board, groups, voice …): a plain
/// value with its own state, caps and timers. It takes the packets of its
/// types and the node's facts through a ``NodeContext`` and asks the node for
/// what it cannot do itself (send, show, sync) through the same context, as a
/// NIO channel handler works through its `ChannelHandlerContext`.
///
/// ``NodeCore`` keeps identity, peers, sessions, routing and the dispatch: it
/// hands each feature what is addressed to it (by packet type, by private
/// payload kind, by command) and applies the effects, in order, once the
/// feature returns. A feature can be left out at construction: the node then
/// holds none of its state and relays its packets unread, as any unknown type.
protocol NodeFeature: Sendable {
    /// Its tables and their sizes, by the names ``NodeCore/tableSizes`` reports.
    var tableSizes: [String: Int] { get }
    /// When its own timer wants ``tick(_:)`` (the node's monotonic time); nil: nothing due.
    var nextDeadline: Millis? { get }
    /// Runs what is due at `context.now`.
    mutating func tick(_ context: inout NodeContext)
    /// Runs with the node's chores (every 1 to 30 s, ``NodeCore/Configuration/housekeepingInterval``).
    mutating func chores(_ context: inout NodeContext)
}

extension NodeFeature {
    var nextDeadline: Millis? { nil }
    mutating func tick(_ context: inout NodeContext) {}
    mutating func chores(_ context: inout NodeContext) {}
}

/// What a feature asks of its node. The node applies these in order when the
/// feature returns.
enum NodeEffect {
    case event(NodeEvent)
    case output(NodeCore.Output)
    /// Counts one refusal (docs/MESH.md, "Bounds").
    case refused(WritableKeyPath<NodeCore.Refusals, Int>)
    /// Sends a packet of ours into the mesh (the router routes it).
    case originate(Packet)
    /// These packets are what sync offers of this type now.
    case provide(MessageType, [Packet])
    /// A payload for a peer's Noise session (queued until one exists, a
    /// handshake started for it), as a fresh send: no receipt, no retry.
    case sendPrivately(NoisePayload, to: PeerID)
    case startHandshake(with: PeerID)
    /// Our announce goes now (not waiting for its interval).
    case announce
    /// The sync rounds of these types ask nothing for now (all others ask).
    case silenceSyncRounds(SyncTypes)
}

/// The node's facts a feature reads while it handles one thing, and the
/// effects it asks for. Made by the node for each call; read-only but for the
/// effects.
struct NodeContext {
    /// The node's monotonic time, and the wall clock's time at it.
    let now: Millis
    let wall: Millis
    let identity: Identity
    let peerID: PeerID
    let nickname: String
    /// Whether the application's blocks are loaded (until then nothing private is shown).
    let trustKnown: Bool
    let blocked: Set<Fingerprint>
    let favorites: Set<Fingerprint>
    /// Fingerprints the person verified (safety numbers compared).
    let verified: Set<Fingerprint>
    /// Each Noise key's fingerprint, with the signing key first seen with it.
    let pins: [Fingerprint: [UInt8]]
    /// The Noise static keys verified announces gave us, by fingerprint (1,024, the oldest going).
    let noiseKeys: [Fingerprint: [UInt8]]
    let present: PeerTable<NodeCore.PeerCard>
    let sessions: SessionManager
    private(set) var effects: [NodeEffect] = []

    init(now: Millis, wall: Millis, identity: Identity, peerID: PeerID, nickname: String, trustKnown: Bool, blocked: Set<Fingerprint>,
         favorites: Set<Fingerprint>, verified: Set<Fingerprint>, pins: [Fingerprint: [UInt8]], noiseKeys: [Fingerprint: [UInt8]],
         present: PeerTable<NodeCore.PeerCard>, sessions: SessionManager) {
        self.now = now
        self.wall = wall
        self.identity = identity
        self.peerID = peerID
        self.nickname = nickname
        self.trustKnown = trustKnown
        self.blocked = blocked
        self.favorites = favorites
        self.verified = verified
        self.pins = pins
        self.noiseKeys = noiseKeys
        self.present = present
        self.sessions = sessions
    }


    /// The verified announce's card of a peer present.
    func card(_ peer: PeerID) -> NodeCore.PeerCard? { present[peer]?.info }

    /// The peer present whose verified announce carries this fingerprint.
    func peer(with fingerprint: Fingerprint) -> PeerID? {
        present.entries.first { $0.value.info.fingerprint == fingerprint }?.key
    }

    /// Whether a peer is blocked: the fingerprint of its verified announce, or of its session.
    func isBlocked(_ peer: PeerID) -> Bool {
        guard !blocked.isEmpty else { return false }
        if let f = present[peer]?.info.fingerprint, blocked.contains(f) { return true }
        if let f = sessions.fingerprint(of: peer), blocked.contains(f) { return true }
        return false
    }

    mutating func emit(_ event: NodeEvent) { effects.append(.event(event)) }
    mutating func output(_ output: NodeCore.Output) { effects.append(.output(output)) }
    mutating func refuse(_ reason: WritableKeyPath<NodeCore.Refusals, Int>) { effects.append(.refused(reason)) }
    mutating func originate(_ packet: Packet) { effects.append(.originate(packet)) }
    mutating func provide(_ type: MessageType, packets: [Packet]) { effects.append(.provide(type, packets)) }
    mutating func sendPrivately(_ payload: NoisePayload, to peer: PeerID) { effects.append(.sendPrivately(payload, to: peer)) }
    mutating func startHandshake(with peer: PeerID) { effects.append(.startHandshake(with: peer)) }
    mutating func announce() { effects.append(.announce) }
    mutating func silenceSyncRounds(_ types: SyncTypes) { effects.append(.silenceSyncRounds(types)) }
}
