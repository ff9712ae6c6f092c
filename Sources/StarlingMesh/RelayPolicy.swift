import StarlingWire

/// What a relay policy sees when a packet first arrives.
public struct RelayContext: Sendable {
    /// The TTL the packet arrived with (the relayed copy carries one less).
    public var ttl: UInt8
    public var type: MessageType
    /// The link it came in on (nil when we originate it).
    public var fromLink: LinkID?
    /// The peer at the end of that link, when known.
    public var fromPeer: PeerID?
    public var now: Millis
    /// The packet's originator.
    public var source: PeerID?
    /// The announced topology (for policies that plan broadcasts over it).
    public var routes: RouteTable?
    /// The TTL packets start with (the router's `maxTTL`).
    public var originTTL: UInt8 = 7

    public init(ttl: UInt8, type: MessageType, fromLink: LinkID?, fromPeer: PeerID?, now: Millis,
                source: PeerID? = nil, routes: RouteTable? = nil) {
        self.ttl = ttl
        self.type = type
        self.fromLink = fromLink
        self.fromPeer = fromPeer
        self.now = now
        self.source = source
        self.routes = routes
    }
}

/// Per-packet state a policy keeps while a relay is pending.
public struct RelayTracking: Sendable {
    /// Copies heard, the first included.
    public var heard = 1
    /// Neighbours still to be covered, with how many more transmissions each
    /// should hear (coverage policies only).
    public var need: [PeerID: Int] = [:]
    /// The neighbours heard transmitting the packet, the first sender included,
    /// and the relays they vouch for (planned policies only).
    public var heardFrom: Set<PeerID> = []
    /// The broadcast plan for the packet's source (planned policies only).
    public var plan: BroadcastPlan?
    /// After our own transmission: the neighbours whose relay would show they
    /// got it, not heard yet (planned policies only).
    public var awaiting: Set<PeerID> = []
    /// After a watcher's repair: for each planned relay it repaired for and
    /// did not hear since, its later watchers not heard before the repair
    /// (planned policies only). One of them in `heardFrom` since has repaired:
    /// the relay was still silent to it.
    public var followUps: [PeerID: Set<PeerID>] = [:]
    /// Whether our transmission went out and we are watching for those relays.
    public var watching = false
    /// Times we sent the packet again.
    public var retransmissions = 0
    public init() {}
    public var uncoveredWeight: Int { need.values.reduce(0) { $0 + max(0, $1) } }

    /// Every neighbour but `transmitter` should hear `times` transmissions.
    public mutating func expect(_ neighbors: Set<PeerID>, times: Int, except transmitter: PeerID) {
        for x in neighbors where x != transmitter { need[x] = times }
    }

    /// A transmission by `transmitter` was heard: it has the packet, and each
    /// of the neighbours it reaches (`reached`, when known) heard one more.
    public mutating func heard(_ transmitter: PeerID, reaching reached: Set<PeerID>?) {
        need[transmitter] = nil
        for x in reached ?? [] {
            if let n = need[x] { need[x] = n <= 1 ? nil : n - 1 }
        }
    }
}

/// Which links a relay goes out on.
public enum LinkSelection: Hashable, Sendable {
    /// Every link except the one the packet came in on.
    case allButIncoming
    /// At most `count` of them, chosen at random.
    case randomSubset(count: Int)
}

public enum RelayDecision: Hashable, Sendable {
    case drop
    case relay(delay: Millis, ttl: UInt8, links: LinkSelection)
}

/// A relay policy: whether and when to relay a packet heard for the first
/// time, and whether later copies cancel the pending relay. Plain values;
/// randomness comes in through the generator.
public protocol RelayPolicy: Sendable {
    var name: String { get }
    /// Whether the policy plans over the announced topology (the router then
    /// passes its route table in the context).
    var usesTopology: Bool { get }
    /// Called on the first copy. `tracking` starts fresh and is kept with the
    /// pending relay.
    func firstHeard(_ context: RelayContext, neighborhood: Neighborhood, tracking: inout RelayTracking,
                    rng: inout SeededGenerator) -> RelayDecision
    /// Called for each later copy heard before the relay fires (from `peer`,
    /// when known). Return true to cancel the relay.
    func duplicateHeard(from peer: PeerID?, neighborhood: Neighborhood, tracking: inout RelayTracking) -> Bool
    /// Called right after this node transmitted a broadcast: its relay
    /// (`tracking` as the pending relay kept it) or its own packet (fresh
    /// `tracking`; `context` has no incoming link). Return a delay to watch
    /// for evidence that the transmission arrived (copies heard meanwhile go
    /// to `duplicateHeard`, where true ends the watch), after which
    /// `retransmit` decides whether to send it again; nil not to watch.
    func transmitted(_ context: RelayContext, neighborhood: Neighborhood, tracking: inout RelayTracking,
                     rng: inout SeededGenerator) -> Millis?
    /// At the end of a watch: whether to transmit the packet again (a new
    /// watch may follow through `transmitted`).
    func retransmit(neighborhood: Neighborhood, tracking: inout RelayTracking) -> Bool
}

extension RelayPolicy {
    public var usesTopology: Bool { false }

    public func duplicateHeard(from peer: PeerID?, neighborhood: Neighborhood, tracking: inout RelayTracking) -> Bool {
        tracking.heard += 1
        return false
    }

    public func transmitted(_ context: RelayContext, neighborhood: Neighborhood, tracking: inout RelayTracking,
                            rng: inout SeededGenerator) -> Millis? { nil }

    public func retransmit(neighborhood: Neighborhood, tracking: inout RelayTracking) -> Bool { false }
}

/// The relay policy a node uses unless told otherwise: the one that measures
/// best (`starling-bench mesh`, docs/MESH.md).
public func defaultRelayPolicy() -> any RelayPolicy { PlannedPolicy() }

/// The default policy as a real node runs it: plans worked out at most 4 times
/// a second (a flood of topology-changing announces costs no more), the
/// fallback rule past that.
public func nodeRelayPolicy() -> any RelayPolicy {
    PlannedPolicy(plans: BroadcastPlanCache(maxComputationsPerSecond: NodeBounds.planComputationsPerSecond))
}

/// Bounds a real node keeps (docs/MESH.md, "Bounds").
public enum NodeBounds {
    public static let planComputationsPerSecond = 4
}

/// The TTL a relayed copy carries, or nil when the packet must not be relayed
/// (it arrived with TTL 0 or 1: decremented to 0, it is processed, not relayed).
@inline(__always)
func relayTTL(_ received: UInt8) -> UInt8? {
    received > 1 ? received - 1 : nil
}

@inline(__always)
func uniform(_ upper: Millis, _ rng: inout SeededGenerator) -> Millis {
    upper == 0 ? 0 : rng.next() % upper
}
