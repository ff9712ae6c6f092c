/// Decryption and signature failures (seed 002 §8.2): each is logged with
/// the packet's BLAKE3 hash and dropped; more than `threshold` from one sender
/// within `window` raises an alert for that sender. A value; the store keeps
/// the log.
///
/// Bounds: at most `maxSenders` senders (the one seen longest ago is
/// forgotten first) and `threshold + 1` times per sender (older ones are
/// dropped), so a flood of forged packets costs bounded memory.
public struct IncidentCounter: Sendable {
    public var threshold: Int
    public var window: Double
    public var maxSenders: Int
    private var times: [[UInt8]: [Double]] = [:]

    public init(threshold: Int = 3, window: Double = 24 * 3600, maxSenders: Int = 1024) {
        self.threshold = threshold
        self.window = window
        self.maxSenders = maxSenders
    }

    /// Records a failure from `sender` (any stable key: a user ID or a
    /// fingerprint) and says whether it crosses the threshold now.
    public mutating func record(sender: [UInt8], at now: Double) -> Bool {
        var list = (times[sender] ?? []).filter { now - $0 < window }
        list.append(now)
        if list.count > threshold + 1 { list.removeFirst(list.count - threshold - 1) }
        if times[sender] == nil, times.count >= maxSenders, let oldest = times.min(by: { ($0.value.last ?? 0) < ($1.value.last ?? 0) })?.key {
            times[oldest] = nil
        }
        times[sender] = list
        return list.count > threshold
    }

    /// Failures from `sender` within the window.
    public func count(sender: [UInt8], at now: Double) -> Int {
        (times[sender] ?? []).filter { now - $0 < window }.count
    }

    public var senderCount: Int { times.count }
}
