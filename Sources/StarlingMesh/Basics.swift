import StarlingWire

/// A link to one neighbour, numbered by whoever owns the connection (a
/// transport, or the simulator). The router knows no sockets, only these.
public struct LinkID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }
    public static func < (a: LinkID, b: LinkID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "link\(rawValue)" }
}

/// SplitMix64: small, fast and deterministic for a given seed. The router and
/// the simulator take all their randomness from one of these.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    public private(set) var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    /// A new generator whose sequence is independent of this one's.
    public mutating func split() -> SeededGenerator { SeededGenerator(seed: next()) }
}

/// Milliseconds, on whatever clock the caller runs (wall or virtual).
public typealias Millis = UInt64

/// The wall-clock time at `now`, a node's monotonic time, given the wall
/// clock's offset from it (`StarlingTransport.NodeTime`). Timers run on `now`;
/// what goes on the wire, or is compared with a time from it, is wall time.
@inlinable public func wallTime(_ now: Millis, offset: Int64) -> Millis {
    offset >= 0 ? now &+ UInt64(offset) : (now > offset.magnitude ? now - offset.magnitude : 0)
}

/// A budget of `perMinute` tokens, refilled evenly over the minute, holding
/// at most a minute's worth.
public struct TokenBucket: Sendable {
    public let perMinute: Int
    private var tokens: Double
    private var last: Millis?

    public init(perMinute: Int) {
        self.perMinute = perMinute
        tokens = Double(perMinute)
    }

    public mutating func take(now: Millis) -> Bool {
        if let last, now > last { tokens = min(Double(perMinute), tokens + Double(now - last) * Double(perMinute) / 60_000) }
        last = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}

/// A set that forgets its oldest members past a capacity.
public struct BoundedSet<Element: Hashable & Sendable>: Sendable {
    public let capacity: Int
    private var members: Set<Element> = []
    private var order: [Element] = []
    private var head = 0

    public init(capacity: Int) { self.capacity = capacity }

    /// Inserts; false when it was there already.
    public mutating func insert(_ e: Element) -> Bool {
        guard members.insert(e).inserted else { return false }
        order.append(e)
        if members.count > capacity {
            members.remove(order[head])
            head += 1
            if head > capacity { order.removeFirst(head); head = 0 }
        }
        return true
    }

    public func contains(_ e: Element) -> Bool { members.contains(e) }
    public var count: Int { members.count }

    /// Forgets one member (its place in the order goes with its turn).
    public mutating func remove(_ e: Element) { members.remove(e) }
}
