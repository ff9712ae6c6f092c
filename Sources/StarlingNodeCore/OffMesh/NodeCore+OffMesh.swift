import StarlingCrypto
import StarlingMesh
import StarlingWire

/// Private delivery off the mesh on the node (``OffMeshRoutes`` holds its
/// state): a peer with no mesh route is reached through an off-mesh transport
/// (Nostr, the Ya OK server) the application says reaches it; mesh first, always.
extension NodeCore {
    /// Makes `peer` reachable through the off-mesh transport `via` (nil: not
    /// reachable off the mesh). What waits for it goes now, if it is away.
    public mutating func setOffMeshRoute(_ peer: PeerID, via: String?, now: Millis) {
        guard let via else {
            offMesh.forget(peer)
            return
        }
        setOffMeshRoute(peer, via: via, reachable: true, now: now)
    }

    /// Says whether the off-mesh transport `via` reaches `peer` off the mesh
    /// (several may: they are tried in ``Configuration/offMeshOrder``).
    public mutating func setOffMeshRoute(_ peer: PeerID, via: String, reachable: Bool, now: Millis) {
        let fresh = offMesh.set(peer, via: via, reachable: reachable)
        if fresh, present[peer] == nil { followUp(delivery.peerReturned(peer, now: now), now: now) }
    }

    /// Which off-mesh transport reaches `peer` off the mesh, if any: the first
    /// in the configured order.
    public func offMeshRoute(_ peer: PeerID) -> String? {
        offMesh.route(peer, order: configuration.offMeshOrder)
    }

    /// A private payload arrived through an off-mesh transport, from `peer`
    /// (authenticated by that transport).
    public mutating func receiveOffMesh(_ payload: NoisePayload, from peer: PeerID, via: String, now: Millis) {
        guard !trust.blocked.contains(where: { $0.peerID == peer }) else { return } // blocked: dropped unanswered, as on the mesh
        inner(payload, from: peer, hops: 0, via: via, now: now)
    }

    /// The off-mesh transport's far end took the payload with this ticket.
    public mutating func offMeshAccepted(_ ticket: String, now: Millis) {
        guard let peer = delivery.tracker.recipient(of: ticket), let via = offMeshRoute(peer) else { return }
        offMesh.accepted(ticket, peer: peer, via: via)
        emit(.sentOffMesh(messageID: ticket, to: peer, via: via))
    }

    /// It did not: a message is tried again at its next retry (any way that
    /// is open then); the application is told.
    public mutating func offMeshFailed(_ ticket: String, reason: String, now: Millis) {
        offMesh.failed(ticket)
        guard let peer = delivery.tracker.recipient(of: ticket) else { return }
        emit(.rejected(Rejection(.transport, peer: peer, "\(offMeshRoute(peer) ?? "off the mesh"): message to \(peer) not sent yet: \(reason)")))
    }

    /// The ticket a payload goes off the mesh under; nil for what no off-mesh transport carries (files).
    static func offMeshTicket(_ payload: NoisePayload) -> String? {
        switch payload {
        case let .privateMessage(m): m.messageID
        case let .delivered(id): "delivered:" + id
        case let .readReceipt(id): "read:" + id
        default: nil
        }
    }

    mutating func handOff(_ payload: NoisePayload, to peer: PeerID, via: String, ticket: String) {
        guard offMesh.handOff(ticket) else { return } // a retry: it went already
        output(.sendOffMesh(payload, to: peer, via: via, ticket: ticket))
    }
}
