import StarlingCrypto
import StarlingWire

/// Others' prekey bundles (docs/PROTOCOL.md, "Prekey bundles (0x24)"), kept as
/// iOS keeps them (bitchat PrekeyBundleStore.swift, GossipSyncManager.swift):
/// one an owner (its Noise key), a newer `generatedAt` replacing the older,
/// 200 owners (the one heard longest ago goes); handed on by gossip sync while
/// its packet is under 24 hours old. Plain value; callers pass only bundles
/// whose signatures held under the owner's announced key.
public struct PrekeyStore: Sendable {
    public struct Entry: Hashable, Sendable {
        public var bundle: PrekeyBundle
        public var packet: Packet
        public var heardAt: UInt64
    }

    public var maxOwners = 200
    /// How long a bundle's packet is offered to sync (iOS: 24 h), ms.
    public var syncAge: UInt64 = 86_400_000
    private(set) var entries: [Fingerprint: Entry] = [:]

    public init() {}

    public var count: Int { entries.count }

    public enum Outcome: Hashable, Sendable { case accepted, duplicate, outdated }

    /// Keeps `bundle` (carried by `packet`) unless one as new or newer is held.
    public mutating func take(_ bundle: PrekeyBundle, packet: Packet, now: UInt64) -> Outcome {
        let owner = Fingerprint(noiseStaticKey: bundle.noiseStaticKey)
        if let held = entries[owner] {
            if held.bundle == bundle { return .duplicate }
            guard bundle.generatedAt > held.bundle.generatedAt else { return .outdated }
        }
        entries[owner] = Entry(bundle: bundle, packet: packet, heardAt: now)
        while entries.count > maxOwners, let oldest = entries.min(by: { ($0.value.heardAt, $0.key.hex) < ($1.value.heardAt, $1.key.hex) })?.key {
            entries[oldest] = nil
        }
        return .accepted
    }

    /// The newest bundle of the owner of this Noise key.
    public func bundle(of owner: Fingerprint) -> PrekeyBundle? { entries[owner]?.bundle }

    /// What gossip sync offers: the packets under `syncAge` old, newest first.
    public func syncPackets(now: UInt64) -> [Packet] {
        entries.values.map(\.packet).filter { now < $0.timestamp || now - $0.timestamp < syncAge }
            .sorted { $0.timestamp != $1.timestamp ? $0.timestamp > $1.timestamp : PacketID($0).high > PacketID($1).high }
    }
}
