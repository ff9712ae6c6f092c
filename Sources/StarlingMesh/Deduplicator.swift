import StarlingWire

/// Remembers which packets were seen, for a bounded time and in bounded memory.
///
/// Exact 64-bit fingerprints (from the 128-bit packet ID) in time buckets:
/// `retention` is split into `bucketCount` buckets; a whole bucket expires at
/// once, and when `capacity` fingerprints are stored the oldest bucket goes
/// early. A false drop (a new packet taken for a duplicate) needs a 64-bit
/// collision: about n / 2^64 per packet, against ~1% for a Bloom filter of
/// similar memory. Memory is about 16 bytes per fingerprint kept.
public struct Deduplicator: Sendable {
    public let retention: Millis
    public let capacity: Int
    private let bucketSpan: Millis
    private let bucketCount: Int
    private var buckets: [(start: Millis, ids: Set<UInt64>)] = []
    public private(set) var count = 0
    /// Fingerprints forgotten early because the capacity was reached.
    public private(set) var evictedEarly = 0

    public init(retention: Millis = 300_000, capacity: Int = 65_536, bucketCount: Int = 10) {
        self.retention = retention
        self.capacity = capacity
        self.bucketSpan = max(1, retention / Millis(bucketCount))
        self.bucketCount = bucketCount
    }

    /// Records `id` and says whether it was new.
    public mutating func insert(_ id: UInt64, now: Millis) -> Bool {
        expire(now: now)
        for b in buckets where b.ids.contains(id) { return false }
        // A new bucket per time span, or sooner when the current one is full, so
        // that eviction at the capacity works a bucket at a time.
        if buckets.isEmpty || now >= buckets[buckets.count - 1].start + bucketSpan
            || buckets[buckets.count - 1].ids.count >= max(1, capacity / bucketCount) {
            buckets.append((now, Set(minimumCapacity: 64)))
        }
        buckets[buckets.count - 1].ids.insert(id)
        count += 1
        while count > capacity, buckets.count > 1 {
            count -= buckets[0].ids.count
            evictedEarly += buckets[0].ids.count
            buckets.removeFirst()
        }
        return true
    }

    public func contains(_ id: UInt64) -> Bool {
        buckets.contains { $0.ids.contains(id) }
    }

    private mutating func expire(now: Millis) {
        while let first = buckets.first, now >= first.start + retention + bucketSpan {
            count -= first.ids.count
            buckets.removeFirst()
        }
    }

    /// Bytes held, approximately (a Set stores a 64-bit key and metadata per slot).
    public var approximateMemory: Int {
        buckets.reduce(0) { $0 + $1.ids.capacity * 9 }
    }
}
