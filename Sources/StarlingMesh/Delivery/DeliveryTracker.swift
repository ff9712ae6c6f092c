import StarlingWire

/// Reliable delivery of directed messages (private messages, files): what is
/// not acknowledged is sent again with exponential backoff — 2 s, then ×2, at
/// most 60 s apart — until a delivered receipt comes or the budget (5 minutes)
/// is spent; then it has failed, and says so (seed 002 §5.3's states: sending,
/// sent, delivered, failed). For favourites a spent budget is not the end: the
/// message is held and sent again when the favourite comes back (store and
/// forward), within `holdLifetime`.
///
/// A plain value: time comes in; what to send goes out as ``Step``s. It knows
/// message IDs, not messages.
public struct DeliveryTracker<ID: Hashable & Sendable>: Sendable {
    public struct Schedule: Hashable, Sendable {
        public var firstRetry: Millis = 2_000
        public var maxInterval: Millis = 60_000
        public var budget: Millis = 300_000
        /// Messages held per favourite at most (the oldest fails first).
        public var heldPerPeer = 100
        public var holdLifetime: Millis = 12 * 3_600_000
        public init() {}

        /// The wait after attempt `n` (1-based): 2 s, 4 s, 8 s … at most 60 s.
        public func interval(after attempt: Int) -> Millis {
            min(maxInterval, firstRetry << Millis(min(max(attempt - 1, 0), 20)))
        }
    }

    public enum Step: Hashable, Sendable {
        /// Send it again (attempt counts from 1 for the first send).
        case resend(ID, to: PeerID, attempt: Int)
        /// Given up: never acknowledged.
        case failed(ID, to: PeerID)
        /// Budget spent for a favourite: held until it comes back.
        case held(ID, for: PeerID)
    }

    struct Entry: Sendable {
        var peer: PeerID
        var attempts: Int
        var nextAt: Millis
        var firstAt: Millis
        var favorite: Bool
        var heldSince: Millis?
        /// Copies sent under this ID and not yet acknowledged: a file's ID is
        /// its hash, so the same file sent twice is one ID with two receipts due.
        var copies = 1
    }

    public let schedule: Schedule
    private var entries: [ID: Entry] = [:] {
        didSet { heldCount = nil }
    }
    /// Held messages per peer, counted again after a change (read once per announce).
    private var heldCount: [PeerID: Int]?

    public init(schedule: Schedule = Schedule()) { self.schedule = schedule }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }
    public func isTracking(_ id: ID) -> Bool { entries[id] != nil }
    public func isHeld(_ id: ID) -> Bool { entries[id]?.heldSince != nil }
    public func attempts(_ id: ID) -> Int? { entries[id]?.attempts }
    public func recipient(of id: ID) -> PeerID? { entries[id]?.peer }

    /// Whether a message for `peer` is held (its budget spent, waiting for it to come back).
    public mutating func isHolding(for peer: PeerID) -> Bool {
        if heldCount == nil {
            var counts: [PeerID: Int] = [:]
            for e in entries.values where e.heldSince != nil { counts[e.peer, default: 0] += 1 }
            heldCount = counts
        }
        return heldCount?[peer] != nil
    }

    /// A message was sent for the first time. Sent again under an ID still
    /// tracked (the same file twice), it is one more copy whose receipt is due,
    /// with a fresh budget.
    public mutating func sent(_ id: ID, to peer: PeerID, now: Millis, favorite: Bool = false) {
        var entry = Entry(peer: peer, attempts: 1, nextAt: now + schedule.firstRetry, firstAt: now, favorite: favorite)
        if let old = entries[id], old.peer == peer { entry.copies = old.copies + 1 }
        entries[id] = entry
    }

    /// Copies of `id` whose receipt is still due (0: not tracked).
    public func copies(_ id: ID) -> Int { entries[id]?.copies ?? 0 }

    /// A delivered receipt came. Returns the recipient once per copy sent; nil
    /// for an unknown ID or a receipt beyond the copies (so nothing counts twice).
    public mutating func acknowledged(_ id: ID) -> PeerID? {
        guard let e = entries[id] else { return nil }
        if e.copies > 1 {
            entries[id]?.copies -= 1
            return e.peer
        }
        return entries.removeValue(forKey: id)?.peer
    }

    /// The earliest time ``due(now:)`` has something to say.
    public var nextDeadline: Millis? {
        entries.values.map { $0.heldSince.map { $0 + schedule.holdLifetime } ?? $0.nextAt }.min()
    }

    /// What to do now: resends, failures and newly held messages, in a stable order.
    public mutating func due(now: Millis) -> [Step] {
        var steps: [Step] = []
        for (id, e) in entries.sorted(by: { ($0.value.nextAt, $0.value.firstAt) < ($1.value.nextAt, $1.value.firstAt) }) {
            if let since = e.heldSince {
                if now - since >= schedule.holdLifetime {
                    entries[id] = nil
                    steps.append(.failed(id, to: e.peer))
                }
                continue
            }
            guard now >= e.nextAt else { continue }
            if now - e.firstAt >= schedule.budget {
                if e.favorite {
                    entries[id]?.heldSince = now
                    steps.append(.held(id, for: e.peer))
                    steps += failOverflow(for: e.peer)
                } else {
                    entries[id] = nil
                    steps.append(.failed(id, to: e.peer))
                }
                continue
            }
            var next = e
            next.attempts += 1
            next.nextAt = now + schedule.interval(after: next.attempts)
            entries[id] = next
            steps.append(.resend(id, to: e.peer, attempt: next.attempts))
        }
        return steps
    }

    /// `peer` is back (an announce after an absence): everything for it is sent
    /// again now instead of at its backoff time; what was held gets a fresh budget.
    public mutating func peerReturned(_ peer: PeerID, now: Millis) -> [Step] {
        var steps: [Step] = []
        for (id, e) in entries.sorted(by: { $0.value.firstAt < $1.value.firstAt }) where e.peer == peer {
            var next = e
            next.attempts += 1
            next.nextAt = now + schedule.firstRetry
            if e.heldSince != nil {
                next.heldSince = nil
                next.firstAt = now
            }
            entries[id] = next
            steps.append(.resend(id, to: peer, attempt: next.attempts))
        }
        return steps
    }

    /// Held messages beyond the limit for `peer` fail, oldest first.
    private mutating func failOverflow(for peer: PeerID) -> [Step] {
        let held = entries.filter { $0.value.peer == peer && $0.value.heldSince != nil }
            .sorted { $0.value.firstAt < $1.value.firstAt }
        guard held.count > schedule.heldPerPeer else { return [] }
        return held.prefix(held.count - schedule.heldPerPeer).map { id, e in
            entries[id] = nil
            return .failed(id, to: e.peer)
        }
    }
}
