import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where a running node reads the time. Two clocks, because they answer two
/// questions:
///
/// - the **wall clock** says what time it is: packets are stamped with it and
///   peers' stamps are judged against it (the ±2-minute freshness rule). NTP
///   can step it, and a person can set it;
/// - the **monotonic clock** says how long it has been: timers (retries,
///   expiries, relay delays, session lifetimes) run on it. It never steps, and
///   it counts a laptop's suspend (Linux `CLOCK_BOOTTIME`): after a night shut,
///   a node's peers have expired, as they should.
///
/// The protocol cores take one time, `now`, for both: ``NodeTime`` turns the two
/// readings into that `now` (the monotonic clock, anchored to the wall clock
/// when the node started) and the wall clock's offset from it, which the cores
/// add where a time goes on the wire or is compared with one from it.
public protocol NodeClock: Sendable {
    /// Milliseconds since 1970 on the wall clock.
    func wallMillis() -> UInt64
    /// Milliseconds on a clock that never goes back, from any origin.
    func monotonicMillis() -> UInt64
}

/// The machine's clocks: `CLOCK_REALTIME` and `CLOCK_BOOTTIME`.
public struct SystemClock: NodeClock {
    public init() {}

    public func wallMillis() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    public func monotonicMillis() -> UInt64 {
        var ts = timespec()
        #if os(Linux)
        clock_gettime(CLOCK_BOOTTIME, &ts)
        #else
        clock_gettime(CLOCK_MONOTONIC, &ts)
        #endif
        return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
    }
}

/// A node's `now`: the monotonic clock, counted from the wall-clock time at
/// which this value was made. Until the wall clock steps it reads as the wall
/// clock does; after a step it goes on at the same pace, and ``wallOffset()``
/// says by how much the wall clock now differs.
public struct NodeTime: Sendable {
    public let clock: any NodeClock
    private let originWall: UInt64
    private let originMonotonic: UInt64

    public init(clock: any NodeClock = SystemClock()) {
        self.clock = clock
        originWall = clock.wallMillis()
        originMonotonic = clock.monotonicMillis()
    }

    /// Milliseconds: never back, never a jump.
    public func now() -> UInt64 {
        let m = clock.monotonicMillis()
        return originWall &+ (m >= originMonotonic ? m - originMonotonic : 0)
    }

    /// The wall clock minus ``now()``, in milliseconds (0 until the wall clock steps).
    public func wallOffset() -> Int64 { Int64(bitPattern: clock.wallMillis() &- now()) }
}
