/// The one driver of every core's time: a runtime (an actor holding a
/// protocol core) says when it next has work and what to do then; the driver
/// keeps its one ``DeadlineTimer`` armed for that time and wakes it.
///
/// ```swift
/// actor Runtime: DeadlineDriven {
///     package var driver = DeadlineDriver()
///     package var drives: Bool { running }
///     package var nextWake: UInt64? { core.nextDeadline }
///     package func clockNow() -> UInt64 { clock() }
///     package func due(now: UInt64) async { flush(core.tick(now: now)) }
///     // after anything that may move the deadline: rearm()
/// }
/// ```
///
/// Nothing polls: a core with nothing due costs no wake-up. A stopped runtime
/// (`drives` false) is never woken again; ``DeadlineDriver/stop()`` cancels
/// the sleeping timer.
package protocol DeadlineDriven: Actor {
    var driver: DeadlineDriver { get set }
    /// Whether it runs: stopped, the timer is not armed again.
    var drives: Bool { get }
    /// When it next has work (its core's next deadline and any of its own; nil: none).
    var nextWake: UInt64? { get }
    /// Its monotonic clock, ms: the time its core's deadlines are in.
    func clockNow() -> UInt64
    /// Runs what is due at `now` (ticks the core, performs what it gives).
    func due(now: UInt64) async
}

/// A runtime's timer and how often it woke.
package struct DeadlineDriver: Sendable {
    var timer = DeadlineTimer()
    /// Times the timer woke the runtime.
    package internal(set) var wakeUps = 0
    /// When the armed timer fires (nil: not armed).
    package var wakeAt: UInt64? { timer.wakeAt }
    /// The least time between two wakes (``DeadlineTimer/spacing``).
    package var spacing: UInt64 {
        get { timer.spacing }
        set { timer.spacing = newValue }
    }

    package init() {}

    /// No wake from now on (until armed again).
    package mutating func stop() { timer.cancel() }
}

extension DeadlineDriven {
    /// Arms the timer for ``nextWake`` (an earlier timer already armed stays,
    /// and fires harmlessly). Call after anything that may move the deadline.
    package func rearm() {
        guard drives else { return }
        driver.timer.arm(at: nextWake, now: clockNow()) { [weak self] in await self?.woke() }
    }

    private func woke() async {
        driver.timer.fired()
        guard drives else { return }
        driver.wakeUps += 1
        await due(now: clockNow())
        rearm()
    }
}
