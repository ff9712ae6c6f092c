import Foundation
/// The one timer a runtime keeps for its protocol core.
///
/// Every core in Starling (the node, the Nostr client, the Ya OK client, the
/// courier mailbox client) is a value that says when it next has work
/// (`nextDeadline`) and does it when ticked. Its runtime, an actor, holds one
/// `DeadlineTimer`: after anything that may move the deadline it calls
/// ``arm(at:now:fire:)``, and the timer sleeps until then and calls `fire`
/// once. Nothing polls: a core with nothing due costs no wake-up at all.
///
/// ```swift
/// private var timer = DeadlineTimer()
/// private func rearm() {
///     timer.arm(at: core.nextDeadline, now: clock()) { [weak self] in await self?.wake() }
/// }
/// private func wake() { timer.fired(); core.tick(now: clock()); flush(); rearm() }
/// ```
///
/// A timer already armed for the same or an earlier time stays (one sleeping
/// task at most). A deadline in the past fires on the next turn of the
/// executor, never synchronously. A core whose deadline does not move after
/// its tick would be ticked again at once: ``immediateFires`` counts such
/// fires in a row, and from the 64th on, each waits `minimumGap` (10 ms) —
/// a bug in a core costs 100 wake-ups a second, not a core of the machine.
public struct DeadlineTimer: Sendable {
    private var task: Task<Void, Never>?
    /// When the armed timer fires (ms on the runtime's monotonic clock).
    public private(set) var wakeAt: UInt64?
    /// Fires in a row that were due at once (deadline not after `now`).
    public private(set) var immediateFires = 0
    /// The floor between immediate fires once 64 have come in a row.
    public var minimumGap: UInt64 = 10
    /// The least time between two fires (0: none). A runtime whose core's
    /// deadlines come in bursts (a relay's jitter for each packet of a flood)
    /// sets a few ms: each wake then does what is due within them, at most
    /// 1,000 / `spacing` wakes a second, each deadline late by less than `spacing`.
    public var spacing: UInt64 = 0
    private var lastFire: UInt64?
    /// `TIMERDEBUG` set: each arm is written to standard error (read once).
    private static let debug = ProcessInfo.processInfo.environment["TIMERDEBUG"] != nil

    public init() {}

    public var isArmed: Bool { task != nil }

    /// Arms the timer for `deadline` (nil: nothing due; a timer already armed
    /// stays, and fires harmlessly). `fire` runs after the delay unless the
    /// timer is cancelled or re-armed earlier first; it must call ``fired()``.
    public mutating func arm(at deadline: UInt64?, now: UInt64, file: String = #fileID, line: Int = #line, fire: @escaping @Sendable () async -> Void) {
        guard let deadline else { return }
        if Self.debug { FileHandle.standardError.write(Data("TIMER \(file):\(line) in \(Int64(deadline) - Int64(now)) ms armed=\(task != nil)\n".utf8)) }
        // Not before `spacing` after the last fire: a burst's deadlines share a wake.
        let due = max(deadline, lastFire.map { $0 + spacing } ?? 0)
        if task != nil, let wakeAt, wakeAt <= due { return }
        task?.cancel()
        var delay = due > now ? due - now : 0
        if delay == 0 {
            immediateFires += 1
            if immediateFires >= 64 { delay = minimumGap }
        } else {
            immediateFires = 0
        }
        wakeAt = now + delay
        let wait = delay
        task = Task {
            if wait > 0 {
                do { try await Task.sleep(for: .milliseconds(wait)) } catch { return }
            } else {
                await Task.yield()
                if Task.isCancelled { return }
            }
            await fire()
        }
    }

    /// The timer fired: the next ``arm(at:now:fire:)`` sets a new one.
    public mutating func fired() {
        task = nil
        lastFire = wakeAt
        wakeAt = nil
    }

    /// No fire from now on (until armed again).
    public mutating func cancel() {
        task?.cancel()
        task = nil
        wakeAt = nil
    }
}
