import StarlingCrypto
import StarlingMesh
import StarlingNostr
import StarlingWire

/// Location channels through gateways, on the node (``GatewayFeature`` holds their state).
extension NodeCore {
    /// A location-channel event of ours (kind 20000, signed by our key for
    /// that geohash) for a gateway to publish: directed and signed to a
    /// reachable peer whose verified announce says gateway (bit 2), the
    /// nearest first. Returns that peer (nil: no gateway here).
    @discardableResult
    public mutating func sendViaGateway(_ event: NostrEvent, geohash: String, now: Millis) throws -> PeerID? {
        let gateways = present.entries.filter {
            $0.key != peerID && $0.value.info.capabilities?.contains(.gateway) == true && !trust.blocked.contains($0.value.info.fingerprint)
        }
        guard let g = gateways.min(by: { ($0.value.hops, $0.key.rawValue) < ($1.value.hops, $1.key.rawValue) })?.key else { return nil }
        let carrier = try NostrCarrier(direction: .toGateway, geohash: geohash, eventJSON: Array(event.json.utf8))
        var packet = Packet(type: .nostrCarrier, ttl: 7, timestamp: wall(now), senderID: peerID, recipientID: g, payload: carrier.encoded())
        try PacketSigning.sign(&packet, with: identity.signingKey)
        originate(packet, now: now)
        return g
    }

    /// An event from a location channel the gateway follows: carried into the
    /// mesh (``GatewayCore``'s budget) when it is one to carry.
    @discardableResult
    public mutating func gatewayDownlink(_ event: NostrEvent, geohash: String, now: Millis) -> Bool {
        using(\.gatewayFeature, now: now) { gateway, context in gateway.downlink(event, geohash: geohash, context: &context) } ?? false
    }
}
