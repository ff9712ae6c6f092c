/// Polls `condition` every 20 ms until it holds or `seconds` pass (then asks once more).
/// The limits a caller gives are generous: on CI's two cores, synchronous simulations
/// in other tests can hold both of Swift's cooperative threads for a minute. Those
/// stalls do not count: a poll that comes back late counts 100 ms at most (and 20 ms
/// at least, so the loop ends within seconds / 0.02 polls), so what is waited for is
/// given the time it ran, not the time the process was held (CI found 60 s waits
/// spent whole in such a stall, the servers they waited for never scheduled).
public func waitUntil(seconds: Double, _ condition: () async -> Bool) async -> Bool {
    var left = Duration.seconds(seconds * TestTimeouts.scale)
    while left > .zero, !Task.isCancelled {
        let start = ContinuousClock.now
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
        left -= min(max(ContinuousClock.now - start, .milliseconds(20)), .milliseconds(100))
    }
    return await condition()
}
