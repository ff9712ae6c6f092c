import StarlingWire

/// Relays along a broadcast plan worked out from the announced topology, and
/// repairs where the plan was torn by loss.
///
/// - Every node computes the same ``BroadcastPlan`` for a packet's source from
///   the announces it holds. A planned relay relays on its first copy after a
///   short jitter.
/// - Every other node waits (`repairDelay` plus jitter, long enough for the
///   planned relays around it to have spoken) and estimates, for each
///   neighbour, the chance that it still lacks the packet:
///   - each transmission we heard that reaches it leaves a `loss` chance;
///   - each planned relay next to it that we did not hear may or may not have
///     spoken: it has the packet with `1 − (1 − prior) × loss^k`, where k
///     counts the transmissions we heard next to it and the prior is
///     `distantRelayHas`, or `downstreamRelayHas` when it is further from the
///     source than we are (it may be waiting for us); if it is our neighbour,
///     its silence is evidence too (Bayes: we would have heard it but for a
///     `loss` chance);
///   - a planned neighbour we did not hear is itself likely to lack the packet
///     (the same Bayes), and weighs as much as the nodes that depend on it in
///     the plan's tree, itself included.
///   When some neighbour's chance, so weighed, is above `threshold`, it relays;
///   every copy heard meanwhile updates the estimate and may cancel the relay.
/// - Without a plan (the source or this node unknown to the topology), it
///   behaves as ``BackbonePolicy``.
public struct PlannedPolicy: RelayPolicy {
    public var plannedJitter: Millis
    public var repairDelay: Millis
    public var repairJitter: Millis
    /// Relay when a neighbour lacks the packet with at least this (weighed) probability.
    public var threshold: Double
    /// The loss per reception the estimates assume.
    public var loss: Double
    /// How likely a planned relay no further from the source than us has the packet, before evidence.
    public var distantRelayHas: Double
    /// How likely a planned relay further from the source than us has it, before evidence.
    public var downstreamRelayHas: Double
    public var fallback: BackbonePolicy
    public let plans: BroadcastPlanCache

    public init(plannedJitter: Millis = 10, repairDelay: Millis = 50, repairJitter: Millis = 60,
                threshold: Double = 0.6, loss: Double = 0.05, distantRelayHas: Double = 0.9,
                downstreamRelayHas: Double = 0.5, plans: BroadcastPlanCache? = nil, fallback: BackbonePolicy = .init()) {
        self.plannedJitter = plannedJitter
        self.repairDelay = repairDelay
        self.repairJitter = repairJitter
        self.threshold = threshold
        self.loss = loss
        self.distantRelayHas = distantRelayHas
        self.downstreamRelayHas = downstreamRelayHas
        self.plans = plans ?? BroadcastPlanCache(loss: loss)
        self.fallback = fallback
    }

    public var name: String { "planned" }
    public var usesTopology: Bool { true }

    public func firstHeard(_ context: RelayContext, neighborhood: Neighborhood, tracking: inout RelayTracking,
                           rng: inout SeededGenerator) -> RelayDecision {
        guard let me = neighborhood.localPeer, let source = context.source, let routes = context.routes,
              let from = context.fromPeer, let plan = plans.plan(from: source, routes: routes, maxHops: Int(context.originTTL)),
              plan.hops[me] != nil else {
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

    /// Whether some neighbour lacks the packet with a (weighed) probability above the threshold.
    func neighborAtRisk(_ neighborhood: Neighborhood, _ tracking: RelayTracking) -> Bool {
        guard let plan = tracking.plan, let me = neighborhood.localPeer else { return true }
        let heard = tracking.heardFrom
        let myHops = plan.hops[me] ?? 0
        // How many of the transmissions we heard reached each peer (counted once, read often).
        var reached: [PeerID: Int] = [:]
        for u in heard { for w in neighborhood.neighbors(of: u) ?? [] { reached[w, default: 0] += 1 } }
        func missedAll(_ peer: PeerID) -> Double {
            (0..<(reached[peer] ?? 0)).reduce(1.0) { m, _ in m * loss }
        }
        // The chance that planned relay t, not heard, has the packet.
        func has(_ t: PeerID) -> Double {
            let lacks = (1 - ((plan.hops[t] ?? .max) > myHops ? downstreamRelayHas : distantRelayHas)) * missedAll(t)
            let p = 1 - lacks
            // Our neighbour: we would have heard it, but for a loss.
            return neighborhood.neighborPeers.contains(t) ? p * loss / (p * loss + (1 - p)) : p
        }
        for x in neighborhood.neighborPeers where !heard.contains(x) {
            guard let around = neighborhood.neighbors(of: x) else { return true }
            var miss = missedAll(x)
            for t in around where t != me && !heard.contains(t) && plan.relays.contains(t) {
                miss *= 1 - has(t) * (1 - loss)
            }
            var weight = 1.0
            if plan.relays.contains(x) {
                miss /= miss + (1 - miss) * loss
                weight += Double(plan.dependents[x] ?? 0)
            }
            if miss * weight > threshold { return true }
        }
        return false
    }
}
