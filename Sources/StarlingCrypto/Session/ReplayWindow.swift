/// A sliding window over the last 1,024 transport nonces: accepts frames out of
/// order, refuses each nonce the second time, and refuses nonces that fell
/// behind the window.
///
/// Checking and recording are separate, so a forged frame (one that fails
/// authentication) never moves the window.
public struct ReplayWindow: Hashable, Sendable {
    public static let size = 1024
    private static let words = size / 64

    /// The highest nonce recorded, or nil before the first.
    public private(set) var highest: UInt64?
    /// Bit i of the window: nonce `highest − i` was seen.
    private var bits = [UInt64](repeating: 0, count: words)

    public init() {}

    public enum Verdict: Hashable, Sendable {
        case fresh
        case replayed
        case tooOld
    }

    public func check(_ n: UInt64) -> Verdict {
        guard let highest else { return .fresh }
        if n > highest { return .fresh }
        let age = highest - n
        if age >= UInt64(Self.size) { return .tooOld }
        return bit(Int(age)) ? .replayed : .fresh
    }

    /// Records `n` as seen. Call only after `check(n) == .fresh` and a successful decryption.
    public mutating func record(_ n: UInt64) {
        guard let current = highest else {
            highest = n
            setBit(0)
            return
        }
        if n > current {
            shift(by: n - current)
            highest = n
            setBit(0)
        } else if current - n < UInt64(Self.size) {
            setBit(Int(current - n))
        }
    }

    private func bit(_ i: Int) -> Bool { bits[i >> 6] & (1 << UInt64(i & 63)) != 0 }
    private mutating func setBit(_ i: Int) { bits[i >> 6] |= 1 << UInt64(i & 63) }

    /// Moves every bit `distance` places towards the old end.
    private mutating func shift(by distance: UInt64) {
        guard distance < UInt64(Self.size) else {
            for i in 0..<Self.words { bits[i] = 0 }
            return
        }
        let d = Int(distance), wordShift = d >> 6, bitShift = UInt64(d & 63)
        for i in stride(from: Self.words - 1, through: 0, by: -1) {
            let src = i - wordShift
            var v: UInt64 = 0
            if src >= 0 {
                v = bits[src] << bitShift
                if bitShift > 0, src - 1 >= 0 { v |= bits[src - 1] >> (64 - bitShift) }
            }
            bits[i] = v
        }
    }
}
