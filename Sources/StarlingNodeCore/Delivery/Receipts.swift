import StarlingMesh
import StarlingWire

/// Private messages shown whose delivery receipt waits for the application to
/// say it stored them (``NodeCore/Configuration/receiptsAfterStored``): the
/// sender and since when, `capacity` at most (the oldest let go, unacknowledged:
/// its sender tries again), each for `timeout` (then a retried copy is
/// acknowledged as on arrival).
struct StoreReceipts: Sendable {
    let capacity: Int
    let timeout: Millis
    private var waiting: [String: (sender: PeerID, at: Millis)] = [:]

    init(capacity: Int, timeout: Millis) {
        self.capacity = capacity
        self.timeout = timeout
    }

    var count: Int { waiting.count }
    func isWaiting(_ id: String) -> Bool { waiting[id] != nil }

    mutating func wait(_ id: String, from sender: PeerID, now: Millis) {
        if waiting.count >= capacity, let oldest = waiting.min(by: { $0.value.at < $1.value.at })?.key { waiting[oldest] = nil }
        waiting[id] = (sender, now)
    }

    /// The sender whose receipt was waiting for this message (taken out).
    mutating func take(_ id: String) -> PeerID? { waiting.removeValue(forKey: id)?.sender }

    /// Never said stored (an application that does not answer): forgotten.
    mutating func expire(now: Millis) {
        if !waiting.isEmpty { waiting = waiting.filter { now < $0.value.at + timeout } }
    }
}

/// Our private messages and files not yet read, and to whom (10,000 at most,
/// the oldest forgotten): a read receipt counts once, and only from the recipient.
struct ReadReceipts: Sendable {
    private var unread: [String: PeerID] = [:]
    private var order: [String] = []

    var count: Int { unread.count }

    mutating func expect(_ id: String, from peer: PeerID) {
        if unread.updateValue(peer, forKey: id) == nil { order.append(id) }
        if order.count > 10_000 { unread[order.removeFirst()] = nil }
    }

    /// Whether this receipt is the one we wait for (then it is taken: once).
    mutating func read(_ id: String, by peer: PeerID) -> Bool {
        guard unread[id] == peer else { return false }
        unread[id] = nil
        return true
    }
}
