/// Public messages that a gossip sync replays (history) arrive as a burst, in
/// whatever order the neighbour's store holds them, and may repeat what was
/// already shown. The collector gathers a burst, drops what was shown, and
/// hands it over ordered by the sender's timestamp once the burst has gone
/// quiet, so that the chat shows history as one block, oldest first.
///
/// Bounds: at most `capacity` messages wait (the oldest by timestamp go
/// first when more come), and at most `memory` keys of shown messages are
/// remembered (the oldest forgotten first).
public struct HistoryCollector<Item>: Sendable where Item: Sendable {
    public typealias Key = HistoryKey

    public let capacity: Int
    public let memory: Int
    /// How long (ms) a burst must be quiet before it is shown.
    public let quiet: UInt64
    private var waiting: [(key: Key, item: Item)] = []
    private var lastArrival: UInt64 = 0
    private var shown: Set<Key> = []
    private var shownOrder: [Key] = []
    private var shownHead = 0

    public init(capacity: Int = 500, memory: Int = 4_096, quiet: UInt64 = 600) {
        self.capacity = max(1, capacity)
        self.memory = max(1, memory)
        self.quiet = quiet
    }

    public var waitingCount: Int { waiting.count }

    /// A message shown live: a later replay of it is not shown again.
    public mutating func shown(_ key: Key) {
        guard shown.insert(key).inserted else { return }
        shownOrder.append(key)
        if shownOrder.count - shownHead > memory {
            shown.remove(shownOrder[shownHead])
            shownHead += 1
            if shownHead > memory {
                shownOrder.removeFirst(shownHead)
                shownHead = 0
            }
        }
    }

    /// Whether a message was shown (live or as history).
    public func wasShown(_ key: Key) -> Bool { shown.contains(key) }

    /// A replayed message, at `now` (ms). False when it was shown already or
    /// waits already (it will not be shown twice).
    @discardableResult
    public mutating func add(_ key: Key, _ item: Item, now: UInt64) -> Bool {
        guard !shown.contains(key), !waiting.contains(where: { $0.key == key }) else { return false }
        waiting.append((key, item))
        lastArrival = now
        if waiting.count > capacity {
            // The oldest message of the burst gives way.
            if let oldest = waiting.indices.min(by: { waiting[$0].key.timestamp < waiting[$1].key.timestamp }) {
                waiting.remove(at: oldest)
            }
        }
        return true
    }

    /// The burst, oldest first, once nothing has come for `quiet` ms; empty
    /// before. What it returns counts as shown from then on. `now` is the wall
    /// clock: when it went back past the last arrival (a step), the burst is
    /// taken at once rather than held until the clock catches up.
    public mutating func take(now: UInt64) -> [Item] {
        guard !waiting.isEmpty, now >= lastArrival + quiet || now < lastArrival else { return [] }
        let burst = waiting.enumerated().sorted {
            ($0.element.key.timestamp, $0.offset) < ($1.element.key.timestamp, $1.offset)
        }
        waiting = []
        for entry in burst { shown(entry.element.key) }
        return burst.map(\.element.item)
    }
}

/// What identifies one public message: its sender, its timestamp and its text.
public struct HistoryKey: Hashable, Sendable {
    public var sender: String
    public var timestamp: UInt64
    public var text: String
    public init(sender: String, timestamp: UInt64, text: String) {
        self.sender = sender
        self.timestamp = timestamp
        self.text = text
    }
}
