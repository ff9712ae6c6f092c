import HeapModule
import StarlingWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Which nodes should relay a broadcast from one source, worked out from the
/// announced topology (link state, as MOSPF does for multicast trees): every
/// node that knows the same topology computes the same plan, so each can tell
/// whether it is a planned relay and which of the nodes around it are.
///
/// The plan is grown greedily from the source over the topology's component,
/// one relay at a time, always the node (next to the plan) whose transmission
/// most lowers the expected number of nodes that miss the packet, with an
/// independent loss `loss` per reception. A node outside the plan that hears
/// `k` planned relays misses with probability `loss^k`; a planned relay's own
/// loss does not count, since its watchers notice and repair it (see
/// `watchers`). The plan stops when the expected misses fall to `target` of
/// the component. Unlike a connected dominating set, which leaves a quarter
/// of the nodes hearing a single relay (each missing 5% of packets at 5%
/// loss), this plan places its relays so that most nodes hear two; on the
/// bench's random geometric graphs it is 1.13–1.27 × the greedy CDS at the
/// default 0.3% target. Planned relays that miss the packet are the policy's
/// to repair (``PlannedPolicy``).
public struct BroadcastPlan: Sendable, Equatable {
    public let source: PeerID
    /// The planned relays, the source included.
    public let relays: Set<PeerID>
    /// The nodes of the topology the plan covers (the source's component).
    public let covered: Int
    /// For each planned relay, how many nodes depend on it in the plan's tree:
    /// what its losing the packet would cost.
    public let dependents: [PeerID: Int]
    /// Hops from the source, by the shortest path, of every node it covers.
    public let hops: [PeerID: Int]
    /// The most hops from the source to a node it covers.
    public let reach: Int
    /// For each planned relay, the nodes outside the plan next to it that
    /// answer for its silence, in turn: those that get the packet from a
    /// planned relay other than it and not downstream of it in the plan's
    /// breadth-first tree (so they have it when it may not); those with the
    /// most such ways in first (up to three count), then the earliest in the
    /// plan, then the lowest peer. A relay without any is judged by every
    /// neighbour.
    public let watchers: [PeerID: [PeerID]]
    /// For a node that sends the packet more than once (``sends``), the
    /// relays it sends again for: hearing all of them stands it down.
    public let repeats: [PeerID: [PeerID]]
    /// How many times a planned relay sends the packet, when more than once.
    /// A relay is lost unnoticed when it misses every copy from upstream
    /// while each of its watchers misses every copy it could get: with
    /// `loss^(ways in of the relay and of its watchers)`, times the nodes
    /// that would go with it (itself and its dependents). Its parent in the
    /// plan sends copies while one more would save more than `repeatWorth`
    /// of a node (0.05: about what the plan's last relays save each in a
    /// large mesh), or than the plan's next relay would have, if less (a
    /// small mesh: 0.0025 of a node on 20 nodes), up to `maxSends`; each
    /// copy reaches the relay and the watchers next to the
    /// parent. A bridge (a relay nobody can watch) is the plainest case; the
    /// source, which nobody watches either, is every child's parent, and
    /// sends again too while its one transmission, lost at all of its
    /// neighbours (`loss^(neighbours × copies)`), would lose more than that
    /// (every way in counted above starts with it).
    public let sends: [PeerID: Int]
    /// For a planned relay that can get the packet from one planned relay
    /// only (not downstream of it), that relay: hearing it shows that one
    /// spoke, even to a watcher that missed it.
    public let soleUpstream: [PeerID: PeerID]

    public init(source: PeerID, relays: Set<PeerID>, covered: Int, dependents: [PeerID: Int] = [:], hops: [PeerID: Int] = [:],
                watchers: [PeerID: [PeerID]] = [:], repeats: [PeerID: [PeerID]] = [:], sends: [PeerID: Int] = [:],
                soleUpstream: [PeerID: PeerID] = [:]) {
        self.source = source
        self.relays = relays
        self.covered = covered
        self.dependents = dependents
        self.hops = hops
        self.reach = hops.values.max() ?? 0
        self.watchers = watchers
        self.repeats = repeats
        self.sends = sends
        self.soleUpstream = soleUpstream
    }

    /// The plan for `source` over `graph`, or nil when the graph does not know it.
    /// `maxHops` is the TTL broadcasts start with: every node within that many
    /// hops of the source is reached along the plan within it.
    public static func compute(source: PeerID, graph: TopologySnapshot, loss: Double, target: Double,
                               maxHops: Int = .max, watchers watcherCount: Int = 2, maxSends: Int = 4,
                               repeatWorth: Double = 0.05) -> BroadcastPlan? {
        guard let s = graph.index[source] else { return nil }
        let adjacency = graph.adjacency
        let n = adjacency.count
        // The source's component, in order of hops from the source.
        var distance = [Int](repeating: -1, count: n)
        var parent = [Int](repeating: -1, count: n)
        var component = [s]
        distance[s] = 0
        var head = 0
        while head < component.count {
            let u = component[head]; head += 1
            for v in adjacency[u] where distance[Int(v)] < 0 {
                distance[Int(v)] = distance[u] + 1
                parent[Int(v)] = u
                component.append(Int(v))
            }
        }
        let size = component.count
        let maxDegree = component.reduce(0) { max($0, adjacency[$1].count) }
        var missAfter = [Double](repeating: 1, count: maxDegree + 2) // loss^k
        for k in 1..<missAfter.count { missAfter[k] = missAfter[k - 1] * loss }
        var heard = [Int](repeating: 0, count: n)
        var onlyPlannedNeighbor = [Int](repeating: -1, count: n)
        var planned = [Bool](repeating: false, count: n)
        var expectedMisses = Double(size - 1)

        // A planned relay's own loss is the policy's to notice and repair (its
        // watchers): it no longer counts as a likely miss.
        func cost(_ x: Int) -> Double { x == s || planned[x] ? 0 : missAfter[min(heard[x], missAfter.count - 1)] }
        // What t's transmission saves: each neighbour's chance of missing falls
        // by a factor `loss`. A neighbour counts only when t can get the packet
        // from some planned relay other than that neighbour (t cannot help the
        // one it depends on).
        // Its own loss stops counting too (it is watched), but only a relay that
        // helps someone joins: a leaf relaying to its only neighbour is no use.
        func gain(_ t: Int) -> Double {
            var g = 0.0
            for x in adjacency[t] where heard[t] >= 2 || onlyPlannedNeighbor[t] != Int(x) { g += cost(Int(x)) * (1 - loss) }
            return g > 0 ? g + cost(t) : 0
        }
        func add(_ t: Int) {
            expectedMisses -= cost(t)
            planned[t] = true
            for x in adjacency[t] {
                let x = Int(x)
                let before = cost(x)
                heard[x] += 1
                onlyPlannedNeighbor[x] = heard[x] == 1 ? t : -1
                expectedMisses -= before - cost(x)
            }
        }
        struct Candidate: Comparable {
            var gain: Double, node: Int32
            // A min-heap of these pops the largest gain first, ties to the lowest index.
            static func < (a: Candidate, b: Candidate) -> Bool { a.gain != b.gain ? a.gain > b.gain : a.node < b.node }
        }
        var heap = Heap<Candidate>()
        add(s)
        for x in adjacency[s] { heap.insert(Candidate(gain: gain(Int(x)), node: x)) }
        let goal = target * Double(size)
        while expectedMisses > goal, let top = heap.popMin() {
            let t = Int(top.node)
            guard !planned[t] else { continue }
            let current = gain(t)
            // A stale gain is re-queued (gains fall as the plan grows; one that rises,
            // when a node hears a second relay, comes with a fresh entry below).
            if let next = heap.min, current < next.gain {
                heap.insert(Candidate(gain: current, node: top.node))
                continue
            }
            guard current > 0 else { break }
            add(t)
            for x in adjacency[t] where !planned[Int(x)] { heap.insert(Candidate(gain: gain(Int(x)), node: x)) }
        }
        // What the plan's next relay would have saved: a copy (below) must
        // save as much, or `repeatWorth`, whichever is less (an infinite
        // `repeatWorth`: no copies). In a small mesh the plan meets its
        // target early and its next relay saves little.
        var declined = 0.0
        for x in component where !planned[x] { declined = max(declined, gain(x)) }
        let worth = repeatWorth.isFinite && declined > 0 ? min(repeatWorth, declined) : repeatWorth
        // The plan's paths may be longer than the shortest: where a node within
        // `maxHops` would hear no planned relay soon enough for the TTL (with
        // a sixteenth of it to spare, or by its shortest path if it is further),
        // the relays of a shortest path to it join the plan.
        // Hops along planned relays from the source (.max: not reached), and
        // each relay's parent in that breadth-first tree (levels in index
        // order, so ties go to the lowest index).
        func relayTree() -> (depth: [Int], parent: [Int]) {
            var depth = [Int](repeating: .max, count: n), parent = [Int](repeating: -1, count: n)
            depth[s] = 0
            var level = [s]
            while !level.isEmpty {
                var next: [Int] = []
                for u in level {
                    for v in adjacency[u] where planned[Int(v)] && depth[Int(v)] == .max {
                        depth[Int(v)] = depth[u] + 1
                        parent[Int(v)] = u
                        next.append(Int(v))
                    }
                }
                level = next.sorted()
            }
            return (depth, parent)
        }
        if maxHops < size {
            var planDepth = relayTree().depth
            // Repairs add hops (a watcher relays for a relay that lost the
            // packet): long plans keep a few in hand.
            let slack = maxHops / 16
            for x in component where x != s && distance[x] <= maxHops {
                let limit = max(distance[x], maxHops - slack)
                let inTime = adjacency[x].contains { planned[Int($0)] && planDepth[Int($0)] < limit }
                guard !inTime else { continue }
                var u = parent[x]
                while u >= 0 {
                    planned[u] = true
                    planDepth[u] = min(planDepth[u], distance[u])
                    u = parent[u]
                }
            }
        }
        var relays = Set<PeerID>()
        for i in 0..<n where planned[i] { relays.insert(graph.peers[i]) }
        // What a planned relay's losing the packet would cost: the nodes that
        // depend on it in the plan's tree (each node's parent is its planned
        // neighbour nearest the source along the plan, ties to the lowest
        // index; plan paths may be longer than the shortest).
        let (planDepth, planParent) = relayTree()
        var below = [Int](repeating: 0, count: n)
        for y in component where y != s && !planned[y] {
            var parent = -1
            for t in adjacency[y] where planned[Int(t)] && planDepth[Int(t)] < .max
                && (parent < 0 || planDepth[Int(t)] < planDepth[parent]) { parent = Int(t) }
            if parent >= 0 { below[parent] += 1 }
        }
        for y in component.filter({ planned[$0] && $0 != s && planDepth[$0] < .max }).sorted(by: { planDepth[$0] > planDepth[$1] }) {
            below[planParent[y]] += 1 + below[y]
        }
        var dependents: [PeerID: Int] = [:]
        for x in component where planned[x] && below[x] > 0 { dependents[graph.peers[x]] = below[x] }
        // Watchers: a planned relay's silence is judged by a few nodes outside
        // the plan only (each that does not hear it would otherwise repair:
        // with ten neighbours, a third of the relays would draw a needless
        // repair). They must get the packet without it: from a planned relay
        // that is not downstream of it in the plan's breadth-first tree.
        var watchers: [PeerID: [PeerID]] = [:]
        var repeats: [PeerID: Set<PeerID>] = [:]
        var sends: [PeerID: Int] = [:]
        var soleUpstream: [PeerID: PeerID] = [:]
        if watcherCount > 0 {
            func downstream(_ u: Int, of t: Int) -> Bool {
                var a = u
                while a >= 0, planDepth[a] > planDepth[t] { a = planParent[a] }
                return a == t
            }
            for t in component where planned[t] && t != s && planDepth[t] < .max {
                struct Candidate {
                    var sameWave: Int, ways: Int, earliest: Int, node: Int
                    var order: (Int, Int, Int, Int) { (sameWave, -min(ways, 3), earliest, node) }
                }
                var candidates: [Candidate] = []
                for y in adjacency[t] where !planned[Int(y)] {
                    var earliest = Int.max, ways = 0
                    for u in adjacency[Int(y)] where Int(u) != t && planned[Int(u)] && planDepth[Int(u)] < .max
                        && !downstream(Int(u), of: t) {
                        earliest = min(earliest, planDepth[Int(u)])
                        ways += 1
                    }
                    // Those that hear the relay's own parent first (the same
                    // transmission, lost independently), then the likeliest to
                    // have the packet (more ways in), then the earliest.
                    let p = planParent[t]
                    let sameWave = p >= 0 && adjacency[p].contains(y) ? 0 : 1
                    if earliest < .max { candidates.append(Candidate(sameWave: sameWave, ways: ways, earliest: earliest, node: Int(y))) }
                }
                let chosen = candidates.sorted { $0.order < $1.order }.prefix(watcherCount)
                if !chosen.isEmpty { watchers[graph.peers[t]] = chosen.map { graph.peers[$0.node] } }
                // The relay is lost unnoticed when it misses every copy from
                // upstream and each watcher misses every copy it could get
                // (a bridge has no watcher at all): its parent in the plan
                // sends again while a copy, which also reaches the watchers
                // next to the parent, saves more than `worth` of a node.
                let parent = planParent[t]
                guard parent >= 0 else { continue }
                let upstream = adjacency[t].filter { planned[Int($0)] && planDepth[Int($0)] < .max && !downstream(Int($0), of: t) }
                if upstream.count == 1 { soleUpstream[graph.peers[t]] = graph.peers[Int(upstream[0])] }
                let base = upstream.count + chosen.reduce(0) { $0 + $1.ways }
                let perCopy = 1 + chosen.filter { adjacency[parent].contains(Int32($0.node)) }.count
                let lost = Double(1 + below[t])
                var times = 1
                while times < maxSends, pow(loss, Double(base + (times - 1) * perCopy)) * lost > worth { times += 1 }
                guard times > 1 else { continue }
                sends[graph.peers[parent]] = max(sends[graph.peers[parent]] ?? 1, times)
                repeats[graph.peers[parent], default: []].insert(graph.peers[t])
            }
        }
        // The source's one transmission: lost at each of its neighbours, the
        // broadcast goes nowhere, whatever the plan beyond (its children's
        // ways in and their watchers' all come from it). It sends again while
        // that would lose more than `worth` of a node.
        if size > 1 {
            let degree = Double(adjacency[s].count)
            var times = sends[source] ?? 1
            while times < maxSends, pow(loss, degree * Double(times)) * Double(size - 1) > worth { times += 1 }
            if times > (sends[source] ?? 1) {
                sends[source] = times
                repeats[source, default: []].formUnion(adjacency[s].map { graph.peers[Int($0)] })
            }
        }
        var hops: [PeerID: Int] = [:]
        hops.reserveCapacity(size)
        for x in component { hops[graph.peers[x]] = distance[x] }
        return BroadcastPlan(source: source, relays: relays, covered: size, dependents: dependents, hops: hops,
                             watchers: watchers, repeats: repeats.mapValues { $0.sorted() }, sends: sends, soleUpstream: soleUpstream)
    }
}

/// The announced topology as an indexed, undirected graph: an edge counts when
/// either end names it. Peers are sorted, so every node that knows the same
/// announces builds the same graph.
public struct TopologySnapshot: Sendable {
    public let peers: [PeerID]
    public let index: [PeerID: Int]
    public let adjacency: [[Int32]]

    public init(edges named: [PeerID: Set<PeerID>]) {
        var all = Set(named.keys)
        for list in named.values { all.formUnion(list) }
        let peers = all.sorted()
        var index: [PeerID: Int] = [:]
        index.reserveCapacity(peers.count)
        for (i, p) in peers.enumerated() { index[p] = i }
        var sets = [Set<Int32>](repeating: [], count: peers.count)
        for (p, list) in named {
            let a = index[p]!
            for q in list where q != p {
                let b = index[q]!
                sets[a].insert(Int32(b))
                sets[b].insert(Int32(a))
            }
        }
        self.peers = peers
        self.index = index
        self.adjacency = sets.map { $0.sorted() }
    }
}

/// Plans by source for one topology (its fingerprint), shared by whoever holds
/// the cache: one router in a node, every router of a simulation (they compute
/// the same plans when they know the same topology). Thread-safe; bounded.
public final class BroadcastPlanCache: @unchecked Sendable {
    private let lock = PlanLock()
    private var graphs: [UInt64: TopologySnapshot] = [:]
    private var plans: [PlanKey: BroadcastPlan?] = [:]
    public let loss: Double
    public let target: Double
    /// Watchers per planned relay (see ``BroadcastPlan/watched``); 0: every neighbour watches.
    public let watchers: Int
    /// What a repeated copy must save, in nodes, to be sent (``BroadcastPlan/sends``).
    public let repeatWorth: Double
    /// Plans kept at most (all are dropped when full: topologies move on).
    public let capacity: Int
    /// Plans worked out per second at most (nil: no limit, as in the
    /// simulator). A plan costs up to ~12 ms on a topology of thousands; an
    /// announce that changes the topology makes every cached plan stale, so
    /// a flood of such announces would cost a plan each. Past the budget a
    /// broadcast is relayed by the fallback rule instead (docs/MESH.md, "Bounds").
    public let maxComputationsPerSecond: Int?
    private var window: (start: UInt64, count: Int) = (0, 0)
    /// Plans worked out, and plans refused by the budget.
    public private(set) var computations = 0
    public private(set) var overBudget = 0

    struct PlanKey: Hashable { var fingerprint: UInt64; var source: PeerID; var maxHops: Int }

    public init(loss: Double = 0.05, target: Double = 0.003, watchers: Int = 2, repeatWorth: Double = 0.05, capacity: Int = 256,
                maxComputationsPerSecond: Int? = nil) {
        self.loss = loss
        self.repeatWorth = repeatWorth
        self.watchers = watchers
        self.target = target
        self.capacity = capacity
        self.maxComputationsPerSecond = maxComputationsPerSecond
    }

    /// The plan for a broadcast from `source` over what `routes` knows, or nil
    /// when it does not know the source (or, given `now`, when this second's
    /// budget of computations is spent); `maxHops` is the TTL broadcasts start with.
    public func plan(from source: PeerID, routes: RouteTable, maxHops: Int = .max, now: UInt64? = nil) -> BroadcastPlan? {
        let key = PlanKey(fingerprint: routes.fingerprint, source: source, maxHops: maxHops)
        if let hit = lock.withLock({ plans[key] }) { return hit }
        guard routes.neighbors(of: source) != nil || routes.isNamed(source) else { return nil }
        if let budget = maxComputationsPerSecond, let now {
            let admitted: Bool = lock.withLock {
                if now >= window.start + 1_000 || now < window.start { window = (now, 0) }
                guard window.count < budget else {
                    overBudget += 1
                    return false
                }
                window.count += 1
                return true
            }
            guard admitted else { return nil }
        }
        lock.withLock { computations += 1 }
        let graph = lock.withLock { graphs[key.fingerprint] } ?? {
            let g = TopologySnapshot(edges: routes.announcedEdges)
            lock.withLock {
                if graphs.count >= 8 { graphs = [:] }
                graphs[key.fingerprint] = g
            }
            return g
        }()
        let plan = BroadcastPlan.compute(source: source, graph: graph, loss: loss, target: target, maxHops: maxHops,
                                         watchers: watchers, repeatWorth: repeatWorth)
        lock.withLock {
            if plans.count >= capacity { plans = [:] }
            plans[key] = .some(plan)
        }
        return plan
    }
}

/// A mutex for the plan cache (the core imports no Foundation).
final class PlanLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }
    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
