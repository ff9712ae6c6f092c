/// Polls `condition` every 20 ms until it holds or `seconds` pass (then asks once more).
/// The limits a caller gives are generous: on CI's two cores, synchronous simulations
/// in other tests can hold both of Swift's cooperative threads for half a minute.
public func waitUntil(seconds: Double, _ condition: @Sendable () async -> Bool) async -> Bool {
    let end = ContinuousClock.now + .seconds(seconds * TestTimeouts.scale)
    while ContinuousClock.now < end {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}
