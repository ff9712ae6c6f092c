import StarlingWire

/// Starling's default: a self-pruned backbone with a coverage backstop.
///
/// - Forwarders (nodes that Wu–Dai self-pruning keeps: their neighbourhood is
///   not covered by a connected set of higher-priority neighbours) relay every
///   new packet after a short jitter. They form a connected dominating set
///   close to the greedy one, so a loss-free broadcast costs about one CDS of
///   transmissions.
/// - Every other node is a backstop: it waits `backstopDelay` (long enough for
///   the forwarders around it to have transmitted), counting which of its
///   neighbours the transmissions it heard reached, and relays only if some
///   neighbour still seems unreached. This repairs the holes that loss tears in
///   the backbone, which is how pruned flooding usually dies out.
///
/// Forwarders too stand down when the transmissions they heard already reached
/// all their neighbours (the dynamic form of self-pruning).
public struct BackbonePolicy: RelayPolicy {
    public var forwarderJitter: Millis
    public var backstopDelay: Millis
    public var backstopJitter: Millis
    /// Transmissions each neighbour should be seen to get before a backstop stands down.
    public var backstopCoverage: Int

    public init(forwarderJitter: Millis = 10, backstopDelay: Millis = 60, backstopJitter: Millis = 40,
                backstopCoverage: Int = 1) {
        self.forwarderJitter = forwarderJitter
        self.backstopDelay = backstopDelay
        self.backstopJitter = backstopJitter
        self.backstopCoverage = backstopCoverage
    }

    public var name: String { "backbone" }

    public func firstHeard(_ context: RelayContext, neighborhood: Neighborhood, tracking: inout RelayTracking,
                           rng: inout SeededGenerator) -> RelayDecision {
        guard let ttl = relayTTL(context.ttl) else { return .drop }
        let forwarder = neighborhood.isForwarder
        let delay = forwarder ? uniform(forwarderJitter, &rng) : backstopDelay + uniform(backstopJitter, &rng)
        guard let from = context.fromPeer, let theirs = neighborhood.neighbors(of: from) else {
            return .relay(delay: delay, ttl: ttl, links: .allButIncoming)
        }
        tracking.expect(neighborhood.neighborPeers, times: forwarder ? 1 : backstopCoverage, except: from)
        tracking.heard(from, reaching: theirs)
        guard tracking.uncoveredWeight > 0 else { return .drop }
        return .relay(delay: delay, ttl: ttl, links: .allButIncoming)
    }

    public func duplicateHeard(from peer: PeerID?, neighborhood: Neighborhood, tracking: inout RelayTracking) -> Bool {
        tracking.heard += 1
        guard let peer else { return false }
        tracking.heard(peer, reaching: neighborhood.neighbors(of: peer))
        return tracking.uncoveredWeight == 0
    }
}
