/// Where an outgoing message is (seed 002 §10.1):
///
/// ```
/// composing → encrypting → routing → sending → sent → delivered → read
///                                      ↓   ↑
///                                    retrying → failed → (the user retries) retrying
/// ```
///
/// Receipts may overtake the transport's acknowledgement (a delivery receipt
/// can come before "sent" is known, a read receipt before "delivered"), so a
/// receipt moves any unfinished state forward; nothing moves backwards.
public enum MessageState: String, Codable, Sendable, CaseIterable, Comparable {
    case composing, encrypting, routing, sending, retrying, failed, sent, delivered, read

    /// Progress order: receipts never move a message back down it.
    var rank: Int {
        switch self {
        case .composing: 0
        case .encrypting: 1
        case .routing: 2
        case .sending: 3
        case .retrying: 3
        case .failed: 3
        case .sent: 4
        case .delivered: 5
        case .read: 6
        }
    }

    public static func < (a: MessageState, b: MessageState) -> Bool { a.rank < b.rank }

    /// Whether a message in this state may move to `next`.
    public func canMove(to next: MessageState) -> Bool {
        switch (self, next) {
        case (.composing, .encrypting), (.encrypting, .routing), (.routing, .sending),
             (.sending, .sent), (.sending, .retrying), (.retrying, .sending), (.retrying, .failed), (.retrying, .sent),
             (.failed, .retrying), (.routing, .failed), (.encrypting, .failed):
            true
        case (_, .delivered), (_, .read):
            // A receipt: from anything that has been handed to a transport.
            rank >= MessageState.routing.rank && next.rank > rank
        default:
            false
        }
    }

    /// The mark a person sees beside the message.
    public var mark: String {
        switch self {
        case .composing, .encrypting, .routing: "…"
        case .sending, .retrying: "↻"
        case .failed: "✗"
        case .sent: "✓"
        case .delivered: "✓✓"
        case .read: "✓✓ read"
        }
    }
}

/// Seed §8.1's retry policy: attempt 1 at once, then waits of 2 s, 4 s, 8 s …
/// (× 2 each time) up to 60 s; after `maxAttempts` on one transport the next
/// transport is tried, and after the last the message fails (the user may
/// retry it).
public struct RetryPolicy: Hashable, Sendable {
    public var maxAttempts: Int
    public var initialDelay: Double
    public var factor: Double
    public var maxDelay: Double

    public init(maxAttempts: Int = 3, initialDelay: Double = 2, factor: Double = 2, maxDelay: Double = 60) {
        self.maxAttempts = maxAttempts
        self.initialDelay = initialDelay
        self.factor = factor
        self.maxDelay = maxDelay
    }

    public static let seed = RetryPolicy()

    /// The wait before attempt `attempt` (1-based), or nil when attempts are
    /// used up: attempt 1 → 0, 2 → 2 s, 3 → 4 s, 4 → 8 s …
    public func delay(beforeAttempt attempt: Int) -> Double? {
        guard attempt >= 1, attempt <= maxAttempts else { return nil }
        guard attempt > 1 else { return 0 }
        var d = initialDelay
        for _ in 0..<(attempt - 2) { d = min(d * factor, maxDelay) }
        return min(d, maxDelay)
    }
}

/// A message's way through its states, with the time of each move, and the
/// attempts on each transport. A value; the store keeps it.
public struct MessageProgress: Codable, Hashable, Sendable {
    public struct Move: Codable, Hashable, Sendable {
        public let state: MessageState
        public let at: Double
    }

    public private(set) var state: MessageState
    public private(set) var history: [Move]
    /// Attempts on the current transport.
    public private(set) var attempts = 0
    /// Index of the transport in use, in the fallback order.
    public private(set) var transport = 0
    /// When the next attempt is due (nil: none is planned).
    public private(set) var nextAttemptAt: Double?

    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case illegalMove(from: MessageState, to: MessageState)
        public var description: String {
            switch self {
            case let .illegalMove(a, b): "a message cannot go from \(a.rawValue) to \(b.rawValue)"
            }
        }
    }

    public init(at now: Double) {
        state = .composing
        history = [Move(state: .composing, at: now)]
    }

    /// A progress as another process reported it (a daemon's API): its state
    /// now, its history that one move. For showing, not for moving on.
    public init(reported state: MessageState, at now: Double) {
        self.state = state
        history = [Move(state: state, at: now)]
    }

    public mutating func move(to next: MessageState, at now: Double) throws(Error) {
        guard state.canMove(to: next) else { throw Error.illegalMove(from: state, to: next) }
        state = next
        history.append(Move(state: next, at: now))
        if next == .sent || next == .delivered || next == .read || next == .failed { nextAttemptAt = nil }
    }

    /// A receipt: moves forward if it is news, else does nothing (duplicates
    /// and late receipts are normal).
    public mutating func receipt(_ next: MessageState, at now: Double) {
        if state.canMove(to: next) { try? move(to: next, at: now) }
    }

    /// The message is handed to transport number `transport` now.
    public mutating func attempt(on transport: Int, at now: Double) throws(Error) {
        if transport != self.transport {
            self.transport = transport
            attempts = 0
        }
        if state != .sending { try move(to: .sending, at: now) }
        attempts += 1
        nextAttemptAt = nil
    }

    /// The attempt failed: plans the next under `policy`, or moves to the
    /// next of `transportCount` transports, or fails the message.
    public mutating func attemptFailed(at now: Double, policy: RetryPolicy, transportCount: Int) throws(Error) {
        try move(to: .retrying, at: now)
        if let wait = policy.delay(beforeAttempt: attempts + 1) {
            nextAttemptAt = now + wait
        } else if transport + 1 < transportCount {
            transport += 1
            attempts = 0
            nextAttemptAt = now
        } else {
            try move(to: .failed, at: now)
        }
    }

    /// The user asks to try a failed message again, from the first transport.
    public mutating func retryByUser(at now: Double) throws(Error) {
        try move(to: .retrying, at: now)
        transport = 0
        attempts = 0
        nextAttemptAt = now
    }
}
