import StarlingWire

/// Relays along a broadcast plan worked out from the announced topology, and
/// repairs where the plan was torn by loss.
///
/// - Every node computes the same ``BroadcastPlan`` for a packet's source from
///   the announces it holds. A planned relay relays on its first copy after a
///   short jitter, or `lateCopyWait` later when that copy came by a path up
///   to `lateCopyHops` longer than the shortest and the TTL it leaves falls
///   short of the plan's furthest node (the copy along the shortest path may
///   still come, and the router relays the copy with the most TTL).
/// - **Watchers.** Each planned relay has up to two watchers, nodes outside the
///   plan next to it that get the packet without it (``BroadcastPlan/watchers``).
///   A relay never sends a packet back where it came from, so nobody upstream
///   can hear that it relayed; its watchers can. A watcher that has not heard
///   its relay `repairDelay` (plus 0–`watchJitter`) after its own first copy
///   relays the packet itself, the second watcher `watchStagger` later, when
///   the first one's repair has had time to make the relay speak. A relay
///   answers a repair on every link but the repairer's, so only the other
///   watcher can tell whether it got it: a first watcher that then hears the
///   second one repair, and still not the relay within `followUpDelay`, sends
///   once more (the relay missed both repairs), where the nodes that depend
///   on the relay make that worth it (`loss` × (1 + dependents) above
///   `threshold`).
/// - **Vouching.** Hearing a planned relay that can get the packet from one
///   planned relay only (``BroadcastPlan/soleUpstream``) counts as hearing that
///   one too: it spoke, even if we missed it.
/// - **Copies.** A planned relay whose loss could go unnoticed (a bridge,
///   which nobody can watch, or one whose watchers have few ways in) and
///   that many nodes depend on gets its parent in the plan to send the packet
///   again, up to ``BroadcastPlan/sends`` times, unless it hears the relay.
/// - **Everything else** is estimated: every other node waits `repairDelay`
///   plus 0–`repairJitter` and estimates, for each neighbour, the chance that it
///   still lacks the packet:
///   - each transmission we heard that reaches it leaves a `loss` chance;
///   - each planned relay next to it that we did not hear may or may not have
///     spoken: it has the packet with `1 − (1 − prior) × loss^k`, where k
///     counts the transmissions we heard next to it and the prior is
///     `distantRelayHas`, or `downstreamRelayHas` when it is further from the
///     source than we are (it may be waiting for us); if it is our neighbour,
///     its silence is evidence too (Bayes: we would have heard it but for a
///     `loss` chance);
///   - a planned neighbour that has no watcher, not heard, is itself likely to
///     lack the packet (the same Bayes), and weighs as much as the nodes that
///     depend on it in the plan's tree, itself included.
///   When some neighbour's chance, so weighed, is above `threshold`, it relays;
///   every copy heard meanwhile updates the estimate and may cancel the relay.
/// - Without a plan (the source or this node unknown to the topology), it
///   behaves as ``BackbonePolicy``.
public struct PlannedPolicy: RelayPolicy {
    public var plannedJitter: Millis
    /// How long a watcher, or any other node, waits after its first copy before it repairs.
    public var repairDelay: Millis
    public var repairJitter: Millis
    /// How much later a relay's second watcher acts than its first.
    public var watchStagger: Millis
    public var watchJitter: Millis
    /// How long after its transmission a node sends its next copy (``BroadcastPlan/sends``).
    public var repeatDelay: Millis
    /// How long a watcher listens after its repair for a later watcher's
    /// repair and the relay's answer to it.
    public var followUpDelay: Millis
    /// How much longer a planned relay waits when its first copy came by a
    /// longer path than the shortest and left too little TTL for the rest of
    /// the plan (the TTL binds: the deployed apps' 7 hops).
    public var lateCopyWait: Millis
    /// How many hops longer than the shortest path a first copy may have come
    /// for that wait (a copy that went much further round, where the TTL is
    /// large, is not racing a shorter one any more).
    public var lateCopyHops: Int
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

    public init(plannedJitter: Millis = 10, repairDelay: Millis = 120, repairJitter: Millis = 60,
                watchStagger: Millis = 50, watchJitter: Millis = 20, repeatDelay: Millis = 15, followUpDelay: Millis = 150,
                lateCopyWait: Millis = 60, lateCopyHops: Int = 3,
                threshold: Double = 0.6, loss: Double = 0.05, distantRelayHas: Double = 0.9,
                downstreamRelayHas: Double = 0.5, plans: BroadcastPlanCache? = nil, fallback: BackbonePolicy = .init()) {
        self.plannedJitter = plannedJitter
        self.repairDelay = repairDelay
        self.repairJitter = repairJitter
        self.watchStagger = watchStagger
        self.watchJitter = watchJitter
        self.repeatDelay = repeatDelay
        self.followUpDelay = followUpDelay
        self.lateCopyWait = lateCopyWait
        self.lateCopyHops = lateCopyHops
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
              let from = context.fromPeer, let plan = plans.plan(from: source, routes: routes, maxHops: Int(context.originTTL), now: context.now),
              plan.hops[me] != nil, !outdated(routes, around: me, neighborhood) else {
            return fallback.firstHeard(context, neighborhood: neighborhood, tracking: &tracking, rng: &rng)
        }
        guard let ttl = relayTTL(context.ttl) else { return .drop }
        tracking.plan = plan
        heard(from, plan, &tracking)
        if plan.relays.contains(me) {
            var delay = uniform(plannedJitter, &rng)
            // A copy that came a little the long way round (up to
            // `lateCopyHops` more than the shortest path), where the TTL it
            // leaves is too short for the rest of the plan: the copy along the
            // shortest path (a slower relay, or a repair of it) may still come,
            // and the router relays the one with the most TTL.
            if let d = plan.hops[me], case let longer = Int(context.originTTL) - d + 1 - Int(context.ttl),
               longer > 0, longer <= lateCopyHops, Int(ttl) < plan.reach - d {
                delay += lateCopyWait
            }
            return .relay(delay: delay, ttl: ttl, links: .allButIncoming)
        }
        guard neighborAtRisk(neighborhood, tracking) else { return .drop }
        // A watcher answers for its relays in turn: the first has repaired (and
        // the relay relayed) before the next decides.
        if let rank = neighborhood.neighborPeers.compactMap({ liveWatchers(of: $0, plan, neighborhood).firstIndex(of: me) }).min() {
            return .relay(delay: repairDelay + Millis(rank) * watchStagger + uniform(watchJitter, &rng), ttl: ttl, links: .allButIncoming)
        }
        return .relay(delay: repairDelay + uniform(repairJitter, &rng), ttl: ttl, links: .allButIncoming)
    }

    public func duplicateHeard(from peer: PeerID?, neighborhood: Neighborhood, tracking: inout RelayTracking) -> Bool {
        guard let plan = tracking.plan else {
            return fallback.duplicateHeard(from: peer, neighborhood: neighborhood, tracking: &tracking)
        }
        tracking.heard += 1
        guard let peer, let me = neighborhood.localPeer else { return false }
        heard(peer, plan, &tracking)
        if tracking.watching { return tracking.awaiting.isEmpty && tracking.followUps.isEmpty }
        guard !plan.relays.contains(me) else { return false }
        return !neighborAtRisk(neighborhood, tracking)
    }

    /// A node the plan asks for copies (``BroadcastPlan/sends``), or a sole
    /// watcher after its repair (sent twice: nobody would back it up), sends
    /// again until its copies are out, unless it hears meanwhile the relays
    /// they are for.
    public func transmitted(_ context: RelayContext, neighborhood: Neighborhood, tracking: inout RelayTracking,
                            rng: inout SeededGenerator) -> Millis? {
        guard let me = neighborhood.localPeer else { return nil }
        if tracking.plan == nil, context.fromLink == nil, let source = context.source, source == me, let routes = context.routes {
            tracking.plan = plans.plan(from: source, routes: routes, maxHops: Int(context.originTTL), now: context.now)
        }
        guard let plan = tracking.plan else { return nil }
        var again = Set(plan.repeats[me] ?? [])
        var times = plan.sends[me] ?? 1
        if !plan.relays.contains(me) {
            for x in neighborhood.neighborPeers {
                let watchers = liveWatchers(of: x, plan, neighborhood)
                guard let rank = watchers.firstIndex(of: me) else { continue }
                if watchers.count == 1 {
                    // A repair for a relay we alone watch: nobody would back it up.
                    again.insert(x)
                    times = max(times, 2)
                } else if tracking.retransmissions == 0, !tracking.heardFrom.contains(x), rank + 1 < watchers.count,
                          loss * Double(1 + (plan.dependents[x] ?? 0)) > threshold {
                    // A repair for a relay others watch after us: if one of them
                    // repairs too and the relay still says nothing, it missed both.
                    let later = Set(watchers[(rank + 1)...]).intersection(neighborhood.neighborPeers).subtracting(tracking.heardFrom)
                    if !later.isEmpty { tracking.followUps[x] = later }
                }
            }
        }
        tracking.awaiting = tracking.retransmissions + 1 < times ? again.subtracting(tracking.heardFrom) : []
        if !tracking.awaiting.isEmpty { return repeatDelay }
        return tracking.followUps.isEmpty ? nil : followUpDelay
    }

    public func retransmit(neighborhood: Neighborhood, tracking: inout RelayTracking) -> Bool {
        if tracking.awaiting.isEmpty {
            // A follow-up: once, if a later watcher of a relay still silent was
            // heard repairing (it was not heard before ours).
            let due = tracking.followUps.values.contains { !$0.isDisjoint(with: tracking.heardFrom) }
            tracking.followUps = [:]
            guard due else { return false }
        }
        tracking.retransmissions += 1
        return true
    }

    /// `peer` was heard sending the packet: it has it, and so had the relay
    /// it could only get it from (``BroadcastPlan/soleUpstream``), which
    /// therefore spoke too.
    func heard(_ peer: PeerID, _ plan: BroadcastPlan, _ tracking: inout RelayTracking) {
        for spoke in [peer, plan.soleUpstream[peer]].compactMap({ $0 }) {
            tracking.heardFrom.insert(spoke)
            tracking.awaiting.remove(spoke)
            tracking.followUps[spoke] = nil
        }
    }

    /// Whether the topology the plan stands on is out of date around us: a
    /// link it counts on is down, or a neighbour is unknown to it. Then this
    /// node relays as ``BackbonePolicy`` (its own links and its neighbours'
    /// lists are what it can trust).
    func outdated(_ routes: RouteTable, around me: PeerID, _ neighborhood: Neighborhood) -> Bool {
        let live = neighborhood.neighborPeers
        let known = routes.edges(of: me)
        return !known.isSubset(of: live) || live.contains { routes.neighbors(of: $0) == nil && !routes.isNamed($0) }
    }

    /// The watchers of planned relay `x` that are still its neighbours (as its
    /// announce says): with a topology that moved on since the plan, a relay
    /// whose watchers left is judged by every neighbour.
    func liveWatchers(of x: PeerID, _ plan: BroadcastPlan, _ neighborhood: Neighborhood) -> [PeerID] {
        guard let watchers = plan.watchers[x] else { return [] }
        guard let around = neighborhood.neighbors(of: x) else { return watchers }
        return watchers.filter { around.contains($0) || ($0 == neighborhood.localPeer && neighborhood.neighborPeers.contains(x)) }
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
            let watchers = liveWatchers(of: x, plan, neighborhood)
            if watchers.contains(me) { return true }
            var weight = 1.0
            if plan.relays.contains(x), watchers.isEmpty {
                miss /= miss + (1 - miss) * loss
                weight += Double(plan.dependents[x] ?? 0)
            }
            if miss * weight > threshold { return true }
        }
        return false
    }
}
