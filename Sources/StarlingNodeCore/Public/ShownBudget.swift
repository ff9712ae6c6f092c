import StarlingMesh
import StarlingWire

/// What public text each sender may still have shown (docs/MESH.md, "Bounds":
/// "Text shown per sender"): a burst of `burst` bytes, refilled at `perSecond`;
/// past it a sender's messages are relayed but not shown. 4,096 senders at
/// most: past it, those whose budget has refilled go (they are as good as
/// new), else the one refilling longest.
struct ShownBudget: Sendable {
    let burst: Double
    let perSecond: Double
    private var senders: [PeerID: (bytes: Double, at: Millis)] = [:]

    init(burst: Int, perSecond: Int) {
        self.burst = Double(burst)
        self.perSecond = Double(perSecond)
    }

    var count: Int { senders.count }

    /// Whether `sender` may have `bytes` more shown now (taken from its budget if so).
    mutating func take(_ sender: PeerID, bytes: Int, now: Millis) -> Bool {
        var b = senders[sender] ?? (burst, now)
        if now > b.at { b = (min(burst, b.bytes + Double(now - b.at) * perSecond / 1_000), now) }
        guard b.bytes >= Double(bytes) else {
            senders[sender] = b
            return false
        }
        b.bytes -= Double(bytes)
        if senders[sender] == nil, senders.count >= 4_096 {
            let rate = perSecond / 1_000, burst = burst
            senders = senders.filter { $0.value.bytes + Double(now > $0.value.at ? now - $0.value.at : 0) * rate < burst }
            if senders.count >= 4_096, let oldest = senders.min(by: { $0.value.at < $1.value.at })?.key { senders[oldest] = nil }
        }
        senders[sender] = b
        return true
    }
}
