import StarlingWire

/// What a node knows of the mesh around it: its links, the peer at the end of
/// each (once known), and each neighbour's own neighbours (2-hop knowledge,
/// which announces carry in their neighbour TLV).
public struct Neighborhood: Sendable {
    public private(set) var links: [LinkID: PeerID?] = [:]
    public private(set) var neighborsOfPeer: [PeerID: Set<PeerID>] = [:]
    /// This node's own peer ID (for priorities).
    public var localPeer: PeerID? { didSet { updateForwarder() } }
    /// Whether this node is a forwarder of the self-pruned backbone (see
    /// `updateForwarder`). Kept up to date as links and neighbour lists change.
    public private(set) var isForwarder = true
    /// The links, sorted, and the known peers at their ends: read for every
    /// packet, so kept rather than recomputed.
    public private(set) var linkIDs: [LinkID] = []
    public private(set) var neighborPeers: Set<PeerID> = []
    /// The link to each neighbour (the lowest, when there are several).
    public private(set) var linkToPeer: [PeerID: LinkID] = [:]

    public init(localPeer: PeerID? = nil) {
        self.localPeer = localPeer
    }

    public var degree: Int { links.count }

    public mutating func add(_ link: LinkID, peer: PeerID? = nil) {
        links[link] = .some(peer)
        linksChanged()
    }

    public mutating func remove(_ link: LinkID) {
        if let gone = links.removeValue(forKey: link) ?? nil, !links.values.contains(gone) {
            neighborsOfPeer[gone] = nil // no longer a neighbour: its list is no longer ours to keep
        }
        linksChanged()
    }

    public mutating func bind(_ link: LinkID, to peer: PeerID) {
        guard links[link] != nil else { return }
        links[link] = .some(peer)
        linksChanged()
    }

    public func peer(on link: LinkID) -> PeerID? { links[link] ?? nil }
    public func link(to peer: PeerID) -> LinkID? { linkToPeer[peer] }

    private mutating func linksChanged() {
        linkIDs = links.keys.sorted()
        neighborPeers = Set(links.values.compactMap { $0 })
        linkToPeer = [:]
        for link in linkIDs.reversed() { if let p = links[link] ?? nil { linkToPeer[p] = link } }
        updateForwarder()
    }

    /// Records what a neighbour announced as its own neighbours.
    public mutating func setNeighbors(of peer: PeerID, _ neighbors: Set<PeerID>) {
        guard neighborsOfPeer[peer] != neighbors else { return } // announced again, unchanged
        neighborsOfPeer[peer] = neighbors
        updateForwarder()
    }

    public func neighbors(of peer: PeerID) -> Set<PeerID>? { neighborsOfPeer[peer] }

    /// Priority for self-pruning: more links first, then the larger peer ID.
    private func priority(of peer: PeerID, degree: Int) -> (Int, UInt64) { (degree, peer.rawValue) }

    /// Wu and Dai's self-pruning coverage condition with 2-hop knowledge: this
    /// node need not forward when its neighbours are all covered by a connected
    /// set of neighbours of higher priority. The nodes that remain forwarders
    /// form a connected dominating set; on a random geometric graph it is close
    /// to a greedy CDS. Unknown neighbourhoods make a node a forwarder.
    private mutating func updateForwarder() {
        guard let me = localPeer else { isForwarder = true; return }
        let mine = neighborPeers
        guard links.values.allSatisfy({ $0 != nil }), !mine.isEmpty else { isForwarder = true; return }
        let myPriority = priority(of: me, degree: mine.count)
        var higher: [PeerID] = []
        for x in mine {
            guard let n = neighborsOfPeer[x] else { isForwarder = true; return }
            if priority(of: x, degree: n.count) > myPriority { higher.append(x) }
        }
        // Connected components of the higher-priority neighbours. An edge counts
        // when either end announces it (announces list at most ten neighbours),
        // so the components, and the answer, do not depend on where a search starts.
        func linked(_ u: PeerID, _ w: PeerID) -> Bool {
            (neighborsOfPeer[u]?.contains(w) ?? false) || (neighborsOfPeer[w]?.contains(u) ?? false)
        }
        higher.sort()
        var unvisited = Set(higher)
        for seed in higher where unvisited.contains(seed) {
            var component: [PeerID] = [seed]
            unvisited.remove(seed)
            var i = 0
            while i < component.count {
                let u = component[i]; i += 1
                for w in higher where unvisited.contains(w) && linked(u, w) {
                    unvisited.remove(w)
                    component.append(w)
                }
            }
            // Does this component cover all of our neighbours?
            if mine.allSatisfy({ x in component.contains { $0 == x || linked($0, x) } }) { isForwarder = false; return }
        }
        isForwarder = true
    }
}
