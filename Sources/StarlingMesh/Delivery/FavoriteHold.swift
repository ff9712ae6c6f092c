import StarlingWire

/// Store-and-forward for favourites: directed packets for a favourite that is
/// out of reach, kept by a node that relays them, and handed over on the link
/// when the favourite comes back as a direct neighbour (seed 004 §14).
///
/// A packet is held as it was received (its bytes are the originator's: Noise
/// frames are opaque here). Bounded per recipient and in all; the oldest goes
/// first, and nothing is kept longer than `lifetime`.
public struct FavoriteHold: Sendable {
    public struct Limits: Hashable, Sendable {
        public var perRecipient = 100
        public var total = 1_000
        public var lifetime: Millis = 12 * 3_600_000
        public init() {}
    }

    struct Parcel: Sendable {
        var bytes: [UInt8]
        var key: UInt64
        var heldAt: Millis
    }

    public let limits: Limits
    private var parcels: [PeerID: [Parcel]] = [:]
    public private(set) var count = 0

    public init(limits: Limits = Limits()) { self.limits = limits }

    public func count(for recipient: PeerID) -> Int { parcels[recipient]?.count ?? 0 }

    /// Keeps `bytes` (a packet with dedup key `key`) for `recipient`; false when
    /// it is kept already.
    @discardableResult
    public mutating func hold(_ bytes: [UInt8], key: UInt64, for recipient: PeerID, now: Millis) -> Bool {
        var list = parcels[recipient] ?? []
        guard !list.contains(where: { $0.key == key }) else { return false }
        if list.count >= limits.perRecipient { list.removeFirst(); count -= 1 }
        if count >= limits.total { dropOldest(); list = parcels[recipient] ?? [] }
        list.append(Parcel(bytes: bytes, key: key, heldAt: now))
        parcels[recipient] = list
        count += 1
        return true
    }

    /// Everything held for `recipient`, oldest first, and forgets it.
    public mutating func release(for recipient: PeerID, now: Millis) -> [[UInt8]] {
        guard let list = parcels.removeValue(forKey: recipient) else { return [] }
        count -= list.count
        return list.filter { !isStale($0, now: now) }.map(\.bytes)
    }

    public mutating func expire(now: Millis) {
        for (peer, list) in parcels {
            let kept = list.filter { !isStale($0, now: now) }
            count -= list.count - kept.count
            parcels[peer] = kept.isEmpty ? nil : kept
        }
    }

    private func isStale(_ p: Parcel, now: Millis) -> Bool { now > p.heldAt && now - p.heldAt > limits.lifetime }

    private mutating func dropOldest() {
        guard let (peer, _) = parcels.min(by: { ($0.value.first?.heldAt ?? .max) < ($1.value.first?.heldAt ?? .max) }) else { return }
        parcels[peer]?.removeFirst()
        count -= 1
        if parcels[peer]?.isEmpty == true { parcels[peer] = nil }
    }
}
