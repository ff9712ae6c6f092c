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
public struct BackbonePolicy: RelayPolicy {
    public var forwarderJitter: Millis
    public var backstopDelay: Millis
    public var backstopJitter: Millis
    /// Transmissions each neighbour should be seen to get before a backstop stands down.
    public var backstopCoverage: Int

    /// Forwarders too stand down when the transmissions they heard already
    /// reached all their neighbours (the dynamic form of self-pruning).
    public var forwardersPrune: Bool
    /// Extra delay per higher-priority neighbour, for forwarders.
    public var rankStep: Millis = 0
    /// Forwarders wait `coverageSlot / w` more when they would reach w
    /// neighbours the transmissions heard so far did not: those who would add
    /// most go first, the others mostly hear them and stand down.
    public var coverageSlot: Millis = 0

    public init(forwarderJitter: Millis = 10, backstopDelay: Millis = 60, backstopJitter: Millis = 40,
                backstopCoverage: Int = 1, forwardersPrune: Bool = true) {
        self.forwardersPrune = forwardersPrune
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
        if forwarder && !forwardersPrune {
            return .relay(delay: uniform(forwarderJitter, &rng), ttl: ttl, links: .allButIncoming)
        }
        // Forwarders go in priority order (a local maximum first), so that lower
        // ones can hear higher ones and stand down.
        let delay = forwarder ? rankStep * Millis(neighborhood.priorityRank) + uniform(forwarderJitter, &rng)
                              : backstopDelay + uniform(backstopJitter, &rng)
        guard let from = context.fromPeer, let theirs = neighborhood.neighbors(of: from) else {
            return .relay(delay: delay, ttl: ttl, links: .allButIncoming)
        }
        for x in neighborhood.neighborPeers where x != from { tracking.need[x] = forwarder ? 1 : backstopCoverage }
        Self.cover(theirs, &tracking)
        let weight = tracking.uncoveredWeight
        guard weight > 0 else { return .drop }
        let extra = forwarder && coverageSlot > 0 ? coverageSlot / Millis(weight) : 0
        return .relay(delay: delay + extra, ttl: ttl, links: .allButIncoming)
    }

    public func duplicateHeard(from peer: PeerID?, neighborhood: Neighborhood, tracking: inout RelayTracking) -> Bool {
        tracking.heard += 1
        // Without dynamic pruning forwarders keep their relay: the backbone must hold.
        guard forwardersPrune || !neighborhood.isForwarder, let peer else { return false }
        tracking.need[peer] = nil
        if let theirs = neighborhood.neighbors(of: peer) { Self.cover(theirs, &tracking) }
        return tracking.uncoveredWeight == 0
    }

    static func cover(_ reached: Set<PeerID>, _ tracking: inout RelayTracking) {
        for x in reached {
            if let n = tracking.need[x] { tracking.need[x] = n <= 1 ? nil : n - 1 }
        }
    }
}
