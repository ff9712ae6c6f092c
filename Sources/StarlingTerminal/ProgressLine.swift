/// A long job's progress as one line a terminal redraws in place: a label, a
/// bar, the share done and, once a little time has passed, the time left.
///
/// Pure: the caller gives the share done (0…1) and the seconds since the
/// start; the line it returns is what to draw after a carriage return.
public struct ProgressLine: Sendable, Equatable {
    public var width = 24
    public init() {}

    /// The time left is an estimate: shown after 1 s and 1 % of the job.
    public func line(_ label: String, done fraction: Double, elapsed seconds: Double) -> String {
        let f = fraction.isFinite ? min(1, max(0, fraction)) : 0
        let filled = Int((f * Double(width)).rounded(.down))
        let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
        var text = "\(label) [\(bar)] \(Int((f * 100).rounded(.down)))%"
        if f >= 0.01, seconds >= 1, f < 1 {
            text += " · about \(Self.duration(seconds / f * (1 - f))) left"
        }
        return text
    }

    /// 0:07, 1:25, 1:02:03.
    public static func duration(_ seconds: Double) -> String {
        let s = seconds.isFinite ? max(0, Int(seconds.rounded(.up))) : 0
        let two = { (n: Int) in n < 10 ? "0\(n)" : "\(n)" }
        return s >= 3_600 ? "\(s / 3_600):\(two(s / 60 % 60)):\(two(s % 60))" : "\(s / 60):\(two(s % 60))"
    }
}
