import StarlingCrypto
import StarlingMesh
import StarlingNostr
import StarlingWire

/// Nostr carriers on the node: deposits for our gateway or bridge, what gateways and bridges
/// broadcast, and the runtime's relays for what they publish (``GatewayFeature``, ``BridgeFeature``).
extension NodeCore {
    /// The runtime has (or lost) a relay for what the gateway and the bridge
    /// publish: what waited goes when one is up.
    public mutating func nostrRelays(up: Bool, now: Millis) {
        nostrRelaysUp = up
        guard up else {
            courierFeature?.relaysUp = false
            bridgeFeature?.relaysUp = false
            return
        }
        using(\.gatewayFeature, now: now) { gateway, context in gateway.relaysUp(&context) }
        using(\.bridgeFeature, now: now) { bridge, context in bridge.relaysUp(&context) }
        using(\.courierFeature, now: now) { courier, context in courier.relays(up: true, context: &context) }
        bridgeDue(now: now)
    }

    /// A carrier directed to us: a deposit, signed by its depositor's
    /// announced key (it may be hops away), for our gateway or our bridge.
    mutating func takeDeposit(_ packet: Packet, now: Millis) {
        guard let card = present[packet.senderID]?.info, packet.signature != nil, PacketSigning.isValid(packet, publicKey: card.signingKey),
              let carrier = try? NostrCarrier(decoding: packet.payload[...]),
              (carrier.direction == .toGateway && configuration.gateway) || (carrier.direction == .toBridge && bridge.cell != nil) else {
            refusals.carriers += 1 // unsigned, another's, not ours to take, or malformed
            return
        }
        if carrier.direction == .toBridge {
            using(\.bridgeFeature, now: now) { bridge, context in bridge.deposit(carrier, from: packet.senderID, signingKey: card.signingKey, context: &context) }
        } else {
            let up = nostrRelaysUp
            using(\.gatewayFeature, now: now) { gateway, context in gateway.deposit(carrier, from: packet.senderID, relaysUp: up, context: &context) }
        }
    }

    /// A broadcast carrier: a bridge's or a gateway's event for the mesh, shown
    /// once when its own signature holds (whoever relayed it).
    mutating func hearCarrier(_ packet: Packet, hops: Int, now: Millis) {
        guard let carrier = try? NostrCarrier(decoding: packet.payload[...]) else {
            refusals.carriers += 1
            return
        }
        switch carrier.direction {
        case .fromBridge: using(\.bridgeFeature, now: now) { bridge, context in bridge.heard(carrier, in: packet, hops: hops, context: &context) }
        case .fromGateway: using(\.gatewayFeature, now: now) { gateway, context in gateway.heard(carrier, hops: hops, context: &context) }
        default: break // a deposit broadcast: nobody's to take
        }
    }
}
