import StarlingMesh
import StarlingWire

/// Private delivery off the mesh (docs/NODE.md, "Off the mesh"): which
/// off-mesh transports reach which peers (4,096 peers: the application sets
/// them, from its favourites and contacts), what was handed to one (each
/// ticket once, 10,000 remembered, unless it failed: 1,024 failures kept), and
/// what their far end took (1,024). A plain value; the node decides when a
/// payload goes this way (a peer with no mesh route) and drives the retries.
struct OffMeshRoutes: Sendable {
    private var routes: [PeerID: Set<String>] = [:]
    private var handedOff = BoundedSet<String>(capacity: 10_000)
    private var failed: Set<String> = []
    private var sent: [String: (peer: PeerID, via: String)] = [:]

    var tableSizes: [String: Int] {
        ["node.offMesh": routes.count, "node.handedOff": handedOff.count, "node.handedOffFailed": failed.count, "node.offMeshSent": sent.count]
    }

    /// Says whether `via` reaches `peer`; true when the peer was reachable no way before.
    mutating func set(_ peer: PeerID, via: String, reachable: Bool) -> Bool {
        guard reachable else {
            routes[peer]?.remove(via)
            if routes[peer]?.isEmpty == true { routes[peer] = nil }
            return false
        }
        guard routes[peer] != nil || routes.count < 4_096 else { return false }
        let fresh = routes[peer] == nil
        routes[peer, default: []].insert(via)
        return fresh
    }

    mutating func forget(_ peer: PeerID) { routes[peer] = nil }

    /// The first transport in `order` that reaches `peer` (others after, by name).
    func route(_ peer: PeerID, order: [String]) -> String? {
        routes[peer]?.min { a, b in (order.firstIndex(of: a) ?? order.count, a) < (order.firstIndex(of: b) ?? order.count, b) }
    }

    /// Whether a payload with this ticket goes now: its first time, or again after it failed.
    mutating func handOff(_ ticket: String) -> Bool {
        handedOff.insert(ticket) || failed.remove(ticket) != nil
    }

    mutating func accepted(_ ticket: String, peer: PeerID, via: String) {
        if sent[ticket] == nil, sent.count >= 1_024, let any = sent.keys.first { sent[any] = nil }
        sent[ticket] = (peer, via)
    }

    mutating func failed(_ ticket: String) {
        failed.insert(ticket)
        if failed.count > 1_024, let any = failed.first { failed.remove(any) }
    }
}
