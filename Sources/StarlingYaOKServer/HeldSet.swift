import StarlingWire

/// What the SQLite store holds queued: each (recipient, message ID) by a
/// 64-bit keyed hash of the pair, with its arrival number (the row's key
/// beside the recipient). 16 bytes a message in the table's buckets where the
/// pair itself took 40 (~32 MiB at 1,000,000 queued against ~80).
///
/// A hash names a candidate, never a fact: the caller reads the row at the
/// arrival number and confirms it is the pair's (`isThePair`). Two pairs
/// under one hash (about one in 2^25 stores at 1,000,000 queued, and not to be
/// aimed at without the key, drawn at random for each store) keep the second
/// whole in `collided`, looked at first.
struct HeldSet {
    struct Pair: Hashable {
        let recipient: UserID
        let messageID: UserID
    }

    private var byHash: [UInt64: Int64]
    private var collided: [Pair: Int64] = [:]
    private let hash: @Sendable (Pair) -> UInt64

    /// `hash`: tests give one that collides on purpose.
    init(minimumCapacity: Int, hash: (@Sendable (Pair) -> UInt64)? = nil) {
        byHash = .init(minimumCapacity: minimumCapacity)
        self.hash = hash ?? Self.keyed()
    }

    /// SipHash (Swift's `Hasher`, seeded at random for each process) over a
    /// key drawn for this set as well: the same pair's hash differs between
    /// two stores and two runs.
    static func keyed() -> @Sendable (Pair) -> UInt64 {
        var random = SystemRandomNumberGenerator()
        let key = (random.next() as UInt64, random.next() as UInt64)
        return { pair in
            var h = Hasher()
            h.combine(key.0)
            h.combine(key.1)
            pair.recipient.withUnsafeBytes { h.combine(bytes: $0) }
            pair.messageID.withUnsafeBytes { h.combine(bytes: $0) }
            return UInt64(bitPattern: Int64(h.finalize()))
        }
    }

    var count: Int { byHash.count + collided.count }
    /// Pairs kept whole because another had their hash (tests).
    var collidedCount: Int { collided.count }

    /// The pair's arrival number, confirmed by `isThePair` (which reads, or
    /// takes, the row there: called with each candidate, at most two, until
    /// one is the pair's); nil when the pair is not held.
    func find(_ pair: Pair, isThePair: (Int64) throws -> Bool) rethrows -> Int64? {
        // A pair kept whole is looked at first; one not confirmed there (stale) may still be under its hash.
        if !collided.isEmpty, let seq = collided[pair], try isThePair(seq) { return seq }
        guard let seq = byHash[hash(pair)] else { return nil }
        return try isThePair(seq) ? seq : nil
    }

    /// A pair found not held is held now, at `seq`.
    mutating func insert(_ pair: Pair, seq: Int64) {
        if !collided.isEmpty { collided[pair] = nil } // a stale one never stands before the new one
        let h = hash(pair)
        if byHash[h] == nil { byHash[h] = seq } else { collided[pair] = seq }
    }

    /// The pair held at `seq` is gone (taken, acknowledged or expired).
    mutating func remove(_ pair: Pair, seq: Int64) {
        if !collided.isEmpty, collided[pair] == seq {
            collided[pair] = nil
            return
        }
        let h = hash(pair)
        if byHash[h] == seq { byHash[h] = nil }
    }
}
