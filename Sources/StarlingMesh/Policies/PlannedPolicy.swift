import StarlingWire

/// Relays along a broadcast plan worked out from the announced topology, and
/// repairs where the plan was torn by loss.
///
/// - Every node computes the same ``BroadcastPlan`` for a packet's source from
///   the announces it holds. A planned relay relays on its first copy after a
///   short jitter.
/// - Every other node waits (`repairDelay` plus jitter, long enough for the
///   planned relays around it to have spoken) and estimates, for each
///   neighbour, the chance that it still lacks the packet: each transmission
///   heard that reaches it leaves a `loss` chance; each planned relay next to it
///   that we did not hear leaves more (a planned relay we should have heard but
///   did not probably lacks the packet itself, one out of earshot probably
///   spoke); a planned relay we did not hear is itself likely to be missing it.
///   When some neighbour's chance is above `threshold` it relays; every copy
///   heard meanwhile updates the estimate and may cancel the relay.
/// - Without a plan (the source or this node unknown to the topology), it
///   behaves as ``BackbonePolicy``.
public struct PlannedPolicy: RelayPolicy {
    public var plannedJitter: Millis
    public var repairDelay: Millis
    public var repairJitter: Millis
    /// Relay when a neighbour lacks the packet with at least this probability.
    public var threshold: Double
    /// The loss per reception the estimates assume.
    public var loss: Double
    /// How likely a planned neighbour we did not hear has the packet all the same.
    public var silentNeighborHas: Double
    /// How likely a planned relay out of our earshot has the packet.
    public var distantRelayHas: Double
    public var fallback: BackbonePolicy
    public let plans: BroadcastPlanCache

    public init(plannedJitter: Millis = 10, repairDelay: Millis = 50, repairJitter: Millis = 60,
                threshold: Double = 0.08, loss: Double = 0.05, silentNeighborHas: Double = 0.5,
                distantRelayHas: Double = 0.95, plans: BroadcastPlanCache? = nil, fallback: BackbonePolicy = .init()) {
        self.plannedJitter = plannedJitter
        self.repairDelay = repairDelay
        self.repairJitter = repairJitter
        self.threshold = threshold
        self.loss = loss
        self.silentNeighborHas = silentNeighborHas
        self.distantRelayHas = distantRelayHas
        self.plans = plans ?? BroadcastPlanCache(loss: loss)
        self.fallback = fallback
    }

    public var name: String { "planned" }
    public var usesTopology: Bool { true }

    public func firstHeard(_ context: RelayContext, neighborhood: Neighborhood, tracking: inout RelayTracking,
                           rng: inout SeededGenerator) -> RelayDecision {
        guard let me = neighborhood.localPeer, let source = context.source, let routes = context.routes,
              let from = context.fromPeer, let plan = plans.plan(from: source, routes: routes, maxHops: Int(context.originTTL)),
              routes.neighbors(of: me) != nil || routes.isNamed(me) else {
            return fallback.firstHeard(context, neighborhood: neighborhood, tracking: &tracking, rng: &rng)
        }
        guard let ttl = relayTTL(context.ttl) else { return .drop }
        tracking.plan = plan
        tracking.heardFrom = [from]
        if plan.relays.contains(me) {
            return .relay(delay: uniform(plannedJitter, &rng), ttl: ttl, links: .allButIncoming)
        }
        guard neighborAtRisk(neighborhood, tracking) else { return .drop }
        return .relay(delay: repairDelay + uniform(repairJitter, &rng), ttl: ttl, links: .allButIncoming)
    }

    public func duplicateHeard(from peer: PeerID?, neighborhood: Neighborhood, tracking: inout RelayTracking) -> Bool {
        guard let plan = tracking.plan else {
            return fallback.duplicateHeard(from: peer, neighborhood: neighborhood, tracking: &tracking)
        }
        tracking.heard += 1
        guard let peer, let me = neighborhood.localPeer, !plan.relays.contains(me) else { return false }
        tracking.heardFrom.insert(peer)
        return !neighborAtRisk(neighborhood, tracking)
    }

    /// Whether some neighbour lacks the packet with a probability above the threshold.
    func neighborAtRisk(_ neighborhood: Neighborhood, _ tracking: RelayTracking) -> Bool {
        guard let plan = tracking.plan, let me = neighborhood.localPeer else { return true }
        let heard = tracking.heardFrom
        let silentKeep = 1 - silentNeighborHas
        let distantKeep = 1 - distantRelayHas * (1 - loss)
        for x in neighborhood.neighborPeers where !heard.contains(x) {
            guard let around = neighborhood.neighbors(of: x) else { return true }
            var miss = 1.0
            for t in heard where neighborhood.neighbors(of: t)?.contains(x) ?? false { miss *= loss }
            for t in around where t != me && !heard.contains(t) && plan.relays.contains(t) {
                miss *= neighborhood.neighborPeers.contains(t) ? silentKeep : distantKeep
            }
            if plan.relays.contains(x) { miss /= miss + (1 - miss) * loss }
            if miss > threshold { return true }
        }
        return false
    }
}
