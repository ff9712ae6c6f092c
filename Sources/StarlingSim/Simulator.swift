import HeapModule
import StarlingMesh
import StarlingWire

/// The simulated radio: every node runs a real ``MeshRouter``; frames travel
/// along the topology's links with a per-hop latency and independent loss per
/// reception, on a virtual clock. Deterministic for a given seed.
public struct Simulator: RadioSimulation {
    public typealias Radio = RadioMedium.Radio

    public private(set) var topology: Topology
    public private(set) var routers: [MeshRouter]
    public var medium: RadioMedium
    public var radio: Radio { medium.radio }
    public var now: Millis { medium.now }
    /// Radio transmissions and receptions per node: the energy proxy.
    public var transmissions: [Int] { medium.transmissions }
    public var receptions: [Int] { medium.receptions }
    /// Bytes each node put on the air.
    public var bytesSent: [Int] { medium.bytesSent }
    /// Nodes switched off (churn): they neither send nor receive.
    public var offline: Set<Int> {
        get { medium.offline }
        set { medium.offline = newValue }
    }
    /// Called for every packet a router hands to its application.
    public var onDeliver: ((_ node: Int, _ packet: Packet, _ hops: Int, _ at: Millis) -> Void)?
    /// Called for every packet a router hands to its application; the packets
    /// it returns are originated by that node at once (acknowledgements).
    public var respond: ((_ node: Int, _ packet: Packet, _ at: Millis) -> [Packet])?

    public static func peerID(_ node: Int) -> PeerID {
        PeerID(rawValue: (UInt64(node) + 1) &* 0x9E37_79B9_7F4A_7C15)
    }

    /// Builds one router per node with `policy`, links as the topology says, and
    /// each node told its neighbours' neighbours (as converged announces would).
    public init(topology: Topology, radio: Radio, policy: any RelayPolicy, seed: UInt64,
                configuration: MeshRouter.Configuration = .init()) {
        self.init(topology: topology, radio: radio, policies: Array(repeating: policy, count: topology.nodeCount), seed: seed,
                  configuration: configuration)
    }

    /// A mixed mesh: node `i` relays with `policies[i]` (say, phones running
    /// the deployed apps among Starling nodes).
    public init(topology: Topology, radio: Radio, policies: [any RelayPolicy], seed: UInt64,
                configuration: MeshRouter.Configuration = .init()) {
        precondition(policies.count == topology.nodeCount, "one policy per node")
        self.topology = topology
        var rng = SeededGenerator(seed: seed)
        self.routers = (0..<topology.nodeCount).map { i in
            MeshRouter(localPeer: Self.peerID(i), policy: policies[i], seed: rng.next(), configuration: configuration)
        }
        self.medium = RadioMedium(nodes: topology.nodeCount, radio: radio, rng: rng)
        medium.linkLoss = Self.linkLoss(topology, radio)
        for i in 0..<topology.nodeCount {
            for j in topology.neighbors[i] {
                routers[i].linkUp(LinkID(UInt32(j)), peer: Self.peerID(j), maxFrame: radio.maxFrame)
                routers[i].setNeighbors(of: Self.peerID(j), Set(topology.neighbors[j].map(Self.peerID)))
            }
        }
    }

    /// Moves to a new topology over the same nodes (movement): links that
    /// disappeared go down, new ones come up, and with `refreshTwoHop` every
    /// affected node learns its neighbours' new neighbour lists at once (as if
    /// announces were instant; without it they stay as they were, stale).
    /// Each link's loss, where the radio's loss grows with length and the
    /// topology has positions.
    public static func linkLoss(_ topology: Topology, _ radio: Radio) -> [Int: Double] {
        guard radio.lossAtRange != nil, let p = topology.positions else { return [:] }
        var loss: [Int: Double] = [:]
        for (i, links) in topology.neighbors.enumerated() {
            for j in links where i < j {
                let dx = p[i].x - p[j].x, dy = p[i].y - p[j].y
                loss[RadioMedium.linkKey(i, j)] = radio.loss(atLength: (dx * dx + dy * dy).squareRoot())
            }
        }
        return loss
    }

    public mutating func rewire(to next: Topology, refreshTwoHop: Bool = true) -> (up: Int, down: Int) {
        precondition(next.nodeCount == topology.nodeCount, "movement keeps the nodes")
        var up = 0, down = 0
        var changed = Set<Int>()
        for i in 0..<topology.nodeCount {
            let before = Set(topology.neighbors[i]), after = Set(next.neighbors[i])
            for j in before.subtracting(after).sorted() {
                routers[i].linkDown(LinkID(UInt32(j)))
                if i < j { down += 1 }
                changed.insert(i)
            }
            for j in after.subtracting(before).sorted() {
                let released = routers[i].linkUp(LinkID(UInt32(j)), peer: Self.peerID(j), maxFrame: radio.maxFrame, now: now)
                perform(released, node: i)
                if i < j { up += 1 }
                changed.insert(i)
            }
        }
        topology = next
        medium.linkLoss = Self.linkLoss(next, radio)
        for i in changed.sorted() { scheduleTick(i) }
        if refreshTwoHop {
            // Whoever changed tells its neighbours; new neighbours learn each other.
            var touched = changed
            for i in changed { touched.formUnion(next.neighbors[i]) }
            for i in touched {
                for j in next.neighbors[i] where changed.contains(j) || changed.contains(i) {
                    routers[i].setNeighbors(of: Self.peerID(j), Set(next.neighbors[j].map(Self.peerID)))
                }
            }
        }
        return (up, down)
    }

    /// Node `node` originates `packet` now.
    public mutating func originate(_ packet: Packet, at node: Int, routing: MeshRouter.Routing = .automatic) {
        let actions = routers[node].originate(packet, now: now, routing: routing)
        perform(actions, node: node)
    }

    /// Every node learns every online node's neighbour list, as converged
    /// announces would tell it (an announce names at most `listed`
    /// neighbours): the topology source routes are computed over. Offline
    /// nodes announce nothing, so what others know of them ages out. Call it
    /// every announce interval; between two calls the lists go stale as links change.
    /// `described` is the topology the announces describe (the current one unless
    /// given: an older one makes the lists stale).
    ///
    /// With `shared`, every router gets one table learnt once (much faster for
    /// large meshes): the same as learning each list in every router when all
    /// routers held the same table before, as they do once every node has
    /// announced to all of them.
    public mutating func learnTopology(listed: Int = Announce.maxNeighbors, described: Topology? = nil, shared: Bool = false) {
        let graph = described ?? topology
        let announcing = (0..<topology.nodeCount).filter { !offline.contains($0) }
        let lists = announcing.map { Set(graph.neighbors[$0].map(Self.peerID).sorted().prefix(listed)) }
        if shared {
            // One table, learnt once and shared (copy on write) by every router.
            var table = routers.first?.routes ?? RouteTable()
            for (k, j) in announcing.enumerated() { table.learn(Self.peerID(j), neighbors: lists[k], now: now) }
            for i in routers.indices { routers[i].adoptRoutes(table) }
            return
        }
        for i in routers.indices {
            for (k, j) in announcing.enumerated() { routers[i].setNeighbors(of: Self.peerID(j), lists[k], now: now) }
        }
    }

    /// Changes one node's view of which nodes are its favourites (store-and-forward).
    public mutating func setFavorites(_ favorites: Set<PeerID>, at node: Int) {
        routers[node].favorites = favorites
    }

    public mutating func receive(_ bytes: [UInt8], at node: Int, from: Int) {
        perform(routers[node].receive(bytes, on: LinkID(UInt32(from)), now: now), node: node)
    }

    public mutating func tick(_ node: Int) {
        perform(routers[node].tick(now: now), node: node)
    }

    private mutating func perform(_ actions: [MeshRouter.Action], node: Int) {
        for action in actions {
            switch action {
            case let .transmit(bytes, links):
                medium.transmit(bytes, from: node, on: links)
            case let .deliver(packet, _, hops):
                onDeliver?(node, packet, hops, now)
                if let respond {
                    for reply in respond(node, packet, now) {
                        perform(routers[node].originate(reply, now: now), node: node)
                    }
                }
            case .progress:
                break
            }
        }
        scheduleTick(node)
    }

    private mutating func scheduleTick(_ node: Int) {
        medium.wake(node, at: routers[node].nextDeadline)
    }
}
