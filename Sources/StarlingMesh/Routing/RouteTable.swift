import HeapModule
import StarlingWire

/// The mesh as announces describe it: each peer's announced neighbours, and
/// when that was heard. Source routes are computed over it (seed 004 §3).
///
/// An edge counts when either end announces it (an announce lists at most ten
/// neighbours, so a busy node cannot name them all); an edge both ends confirm
/// costs 1, one only one end names costs 1.25, so that among paths of equal
/// length the confirmed one wins. A plain value: time comes in.
public struct RouteTable: Sendable {
    /// An announce's neighbour list counts for this long (as the peer itself does).
    public var lifetime: Millis = 60_000
    /// Peers remembered at most; the stalest goes first.
    public var capacity = 4_096

    struct Entry: Sendable {
        var neighbors: Set<PeerID>
        var heardAt: Millis
    }
    private var entries: [PeerID: Entry] = [:]
    /// Who names each peer as a neighbour (the reverse of `entries`).
    private var namedBy: [PeerID: Set<PeerID>] = [:]
    /// Changes whenever what the table holds changes, and is the same in every
    /// table holding the same announces (order-independent): plans computed
    /// over one table hold for another with the same fingerprint.
    public private(set) var fingerprint: UInt64 = 0

    public init() {}

    public var count: Int { entries.count }

    /// Whether `peer` announced within the lifetime.
    public func knows(_ peer: PeerID, now: Millis) -> Bool {
        entries[peer].map { !isStale($0, now: now) } ?? false
    }

    public func neighbors(of peer: PeerID) -> Set<PeerID>? { entries[peer]?.neighbors }

    /// Whether some announce names `peer` as a neighbour.
    public func isNamed(_ peer: PeerID) -> Bool { namedBy[peer] != nil }

    /// `peer`'s neighbours as the table has them: those it names and those naming it.
    public func edges(of peer: PeerID) -> Set<PeerID> {
        (entries[peer]?.neighbors ?? []).union(namedBy[peer] ?? [])
    }

    /// Every announced neighbour list, by announcer.
    public var announcedEdges: [PeerID: Set<PeerID>] { entries.mapValues(\.neighbors) }

    /// SplitMix64's output for `x`: a fixed, well-spread hash (not Swift's seeded one).
    private static func mix(_ x: UInt64) -> UInt64 {
        var g = SeededGenerator(seed: x)
        return g.next()
    }

    private static func digest(_ peer: PeerID, _ neighbors: Set<PeerID>) -> UInt64 {
        neighbors.reduce(mix(peer.rawValue)) { $0 &+ mix(peer.rawValue ^ mix($1.rawValue)) }
    }

    /// Records what `peer` announced as its neighbours.
    public mutating func learn(_ peer: PeerID, neighbors: Set<PeerID>, now: Millis) {
        if entries[peer]?.neighbors == neighbors {
            entries[peer]!.heardAt = now // heard again, unchanged
            return
        }
        if let old = entries[peer] {
            for n in old.neighbors.subtracting(neighbors) { unname(n, by: peer) }
            fingerprint ^= Self.digest(peer, old.neighbors) ^ Self.digest(peer, neighbors)
        } else if entries.count >= capacity {
            expire(now: now)
            if entries.count >= capacity, let stalest = entries.min(by: { $0.value.heardAt < $1.value.heardAt })?.key {
                forget(stalest)
            }
        }
        if entries[peer] == nil { fingerprint ^= Self.digest(peer, neighbors) }
        for n in neighbors { namedBy[n, default: []].insert(peer) }
        entries[peer] = Entry(neighbors: neighbors, heardAt: now)
    }

    /// A LEAVE, or an expiry: the peer's edges go.
    public mutating func forget(_ peer: PeerID) {
        guard let old = entries.removeValue(forKey: peer) else { return }
        fingerprint ^= Self.digest(peer, old.neighbors)
        for n in old.neighbors { unname(n, by: peer) }
    }

    public mutating func expire(now: Millis) {
        for (peer, e) in entries where isStale(e, now: now) { forget(peer) }
    }

    private mutating func unname(_ n: PeerID, by peer: PeerID) {
        namedBy[n]?.remove(peer)
        if namedBy[n]?.isEmpty == true { namedBy[n] = nil }
    }

    private func isStale(_ e: Entry, now: Millis) -> Bool { now > e.heardAt && now - e.heardAt > lifetime }

    /// The peers at the other end of `peer`'s edges, with each edge's cost in quarters.
    private func edges(of peer: PeerID, now: Millis) -> [(PeerID, Int)] {
        var out: [(PeerID, Int)] = []
        let mine = entries[peer].flatMap { isStale($0, now: now) ? nil : $0.neighbors } ?? []
        for n in mine {
            let confirmed = entries[n].map { !isStale($0, now: now) && $0.neighbors.contains(peer) } ?? false
            out.append((n, confirmed ? 4 : 5))
        }
        for n in namedBy[peer] ?? [] where !mine.contains(n) {
            if let e = entries[n], !isStale(e, now: now) { out.append((n, 5)) }
        }
        return out
    }

    /// The intermediate hops of a cheapest path from `source` to `destination`
    /// (Dijkstra), or nil when there is none of at most `maxHops` hops.
    /// `direct` are the peers `source` has links with now (its own neighbours
    /// are known first-hand, whatever it last announced). An empty array: the
    /// destination is a direct neighbour.
    public func route(from source: PeerID, to destination: PeerID, direct: Set<PeerID>, now: Millis,
                      maxHops: Int = 16) -> [PeerID]? {
        if direct.contains(destination) { return [] }
        struct Item: Comparable {
            var cost: Int, hops: Int, peer: PeerID
            static func < (a: Item, b: Item) -> Bool { (a.cost, a.hops, a.peer) < (b.cost, b.hops, b.peer) }
        }
        var best: [PeerID: Int] = [source: 0]
        var previous: [PeerID: PeerID] = [:]
        var heap = Heap<Item>()
        heap.insert(Item(cost: 0, hops: 0, peer: source))
        while let item = heap.popMin() {
            if item.peer == destination { break }
            guard best[item.peer] == item.cost, item.hops < maxHops else { continue }
            let next: [(PeerID, Int)] = item.peer == source ? direct.sorted().map { ($0, 4) } : edges(of: item.peer, now: now)
            for (n, w) in next where n != source {
                let cost = item.cost + w
                if best[n].map({ cost < $0 }) ?? true {
                    best[n] = cost
                    previous[n] = item.peer
                    heap.insert(Item(cost: cost, hops: item.hops + 1, peer: n))
                } else if best[n] == cost, let p = previous[n], item.peer < p {
                    previous[n] = item.peer // ties go the same way whatever the set order
                }
            }
        }
        guard previous[destination] != nil else { return nil }
        var path: [PeerID] = []
        var at = destination
        while let p = previous[at], p != source { path.append(p); at = p }
        return path.reversed()
    }
}
