import StarlingCrypto
import StarlingMesh
import StarlingNostr
import StarlingWire

/// Location channels through a gateway, as a part of the node (docs/PROTOCOL.md,
/// "Nostr carriers (0x28)"): a gateway (``NodeCore/Configuration/gateway``)
/// takes deposits from mesh peers for the relays and carries the channels'
/// events into the mesh (``GatewayCore``'s budgets); every node shows what
/// gateways carry in, once.
struct GatewayFeature: NodeFeature {
    /// Whether this node is a gateway.
    let serves: Bool
    private(set) var core: GatewayCore

    init(serves: Bool, limits: GatewayCore.Limits) {
        self.serves = serves
        core = GatewayCore(limits: limits)
    }

    var tableSizes: [String: Int] {
        var sizes = ["gateway.queue": core.queue.count, "gateway.pending": core.pending.count]
        for name in ["gateway.depositors", "gateway.heardIDs", "gateway.shown", "gateway.publishedIDs", "gateway.rebroadcastIDs"] {
            sizes[name] = core.sizes[name] ?? 0
        }
        return sizes
    }

    /// Downlinks wait for their slot (monotonic time, as ours).
    var nextDeadline: Millis? { serves ? core.nextDeadline : nil }

    mutating func tick(_ context: inout NodeContext) {
        guard serves, !core.pending.isEmpty else { return }
        sendDownlinks(&context)
    }

    /// A relay is up: the deposits that waited go.
    mutating func relaysUp(_ context: inout NodeContext) {
        guard serves else { return }
        for u in core.relaysUp() { context.output(.publishNostr(u)) }
    }

    /// An event from a location channel the gateway follows: carried into the
    /// mesh when it is one to carry.
    mutating func downlink(_ event: NostrEvent, geohash: String, context: inout NodeContext) -> Bool {
        guard serves else { return false }
        let kept = core.fromRelay(event, geohash: geohash, now: context.now, wall: context.wall)
        if kept { sendDownlinks(&context) }
        return kept
    }

    private mutating func sendDownlinks(_ context: inout NodeContext) {
        for c in core.due(now: context.now, wall: context.wall) {
            context.originate(Packet(type: .nostrCarrier, ttl: 7, timestamp: context.wall, senderID: context.peerID, recipientID: nil, payload: c.encoded()))
        }
    }

    /// A `toGateway` deposit, its packet's signature checked by the node.
    mutating func deposit(_ carrier: NostrCarrier, from depositor: PeerID, relaysUp: Bool, context: inout NodeContext) {
        switch core.deposit(carrier, from: depositor, relaysUp: relaysUp, now: context.now, wall: context.wall) {
        case let .publish(u): context.output(.publishNostr(u))
        case .queued: break
        case .refused: context.refuse(\.carriers)
        }
    }

    /// A `fromGateway` carrier: shown once when its event's own signature holds (whoever relayed it).
    mutating func heard(_ carrier: NostrCarrier, hops: Int, context: inout NodeContext) {
        guard let e = core.heard(carrier, now: context.now, wall: context.wall) else { return }
        let nickname = e.tags.first { $0.count >= 2 && $0[0] == "n" }?[1]
        context.emit(.gatewayMessage(GatewayMessage(geohash: carrier.geohash, eventID: e.id, pubkey: e.pubkey, nickname: nickname, text: e.content,
                                                    createdAt: e.created_at, hops: hops)))
    }
}
