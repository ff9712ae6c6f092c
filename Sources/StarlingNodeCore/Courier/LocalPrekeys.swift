import Crypto
import StarlingCrypto
import StarlingWire

/// Our own one-time prekeys (docs/PROTOCOL.md, "Prekey bundles (0x24)"), kept
/// as iOS keeps them (bitchat LocalPrekeyStore.swift): batches of 8, IDs from
/// a counter; topped back up to 8 when fewer than 3 are unused; a used one
/// still opens drops for 48 hours (copies of one drop come by several
/// couriers), then goes; an unused one goes after 30 days. Only unused ones
/// are published. Plain value, Codable (the node keeps it in its data
/// directory, 0600: it holds private keys).
public struct LocalPrekeys: Codable, Hashable, Sendable {
    public struct Record: Codable, Hashable, Sendable {
        public var id: UInt32
        public var privateKey: [UInt8]
        public var createdAt: UInt64
        public var consumedAt: UInt64?
    }

    public static let batch = 8, lowWater = 3
    public static let grace: UInt64 = 48 * 3_600_000
    /// Used ones kept for their grace at most (the oldest used go first): a
    /// flood of drops to our prekeys cannot grow the file without bound.
    public static let maxUsed = 64
    public static let retention: UInt64 = 30 * 86_400_000

    public private(set) var records: [Record] = []
    public private(set) var nextID: UInt32 = 0
    /// When the published set last changed (a bundle's generatedAt; strictly increasing).
    public private(set) var generatedAt: UInt64 = 0

    public init() {}

    public var unused: [Record] { records.filter { $0.consumedAt == nil }.sorted { $0.id < $1.id } }

    /// Drops what has outlived its time and tops up to 8 when fewer than 3
    /// are unused. True when the published set changed.
    @discardableResult
    public mutating func replenish(now: UInt64) -> Bool {
        let before = unused.map(\.id)
        records.removeAll { r in
            if let used = r.consumedAt { return now >= used + Self.grace }
            return now >= r.createdAt + Self.retention
        }
        let used = records.filter { $0.consumedAt != nil }.sorted { $0.consumedAt! < $1.consumedAt! }
        if used.count > Self.maxUsed {
            let gone = Set(used.prefix(used.count - Self.maxUsed).map(\.id))
            records.removeAll { gone.contains($0.id) }
        }
        if unused.count < Self.lowWater {
            while unused.count < Self.batch {
                let key = Curve25519.KeyAgreement.PrivateKey()
                records.append(Record(id: nextID, privateKey: Array(key.rawRepresentation), createdAt: now))
                nextID &+= 1
            }
        }
        let changed = unused.map(\.id) != before
        if changed { generatedAt = max(now, generatedAt + 1) }
        return changed
    }

    /// A new publication: its generatedAt moves on (a bundle sent again is newer, and synced again).
    public mutating func touch(now: UInt64) { generatedAt = max(now, generatedAt + 1) }

    /// The bundle of our unused prekeys (unsigned).
    public func bundle(noiseStaticKey: [UInt8]) -> PrekeyBundle {
        PrekeyBundle(noiseStaticKey: noiseStaticKey, prekeys: unused.prefix(PrekeyBundle.maxPrekeys).compactMap { r in
            (try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: r.privateKey)).map {
                PrekeyBundle.Prekey(id: r.id, key: Array($0.publicKey.rawRepresentation))
            }
        }, generatedAt: generatedAt)
    }

    /// The private key of prekey `id`: unused, or used within 48 hours.
    public func privateKey(for id: UInt32, now: UInt64) -> Curve25519.KeyAgreement.PrivateKey? {
        guard let r = records.first(where: { $0.id == id }) else { return nil }
        if let used = r.consumedAt, now >= used + Self.grace { return nil }
        return try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: r.privateKey)
    }

    /// Marks a prekey used (idempotent). True when it was unused.
    @discardableResult
    public mutating func markConsumed(_ id: UInt32, now: UInt64) -> Bool {
        guard let i = records.firstIndex(where: { $0.id == id }), records[i].consumedAt == nil else { return false }
        records[i].consumedAt = now
        generatedAt = max(now, generatedAt + 1)
        return true
    }
}
