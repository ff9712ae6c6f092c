import HeapModule
import StarlingMesh

/// The air between simulated nodes, whatever protocol they run: frames go out
/// on links with a per-hop latency and independent loss per reception; nodes
/// ask to be woken at their deadlines. A virtual clock, deterministic for a seed.
/// ``Simulator`` runs mesh routers over it; other services (Stately) run their
/// own engines over the same medium.
public struct RadioMedium: Sendable {
    public struct Radio: Sendable {
        /// Probability that one reception of one frame is lost.
        public var loss: Double = 0
        /// Per-hop latency: base plus uniform jitter, in virtual ms.
        public var latency: Millis = 8
        public var latencyJitter: Millis = 4
        /// Largest frame a link carries in one piece (BLE: up to 512).
        public var maxFrame: Int? = nil
        /// Loss that grows with a link's length, on topologies with positions:
        /// `loss` for a link of no length, rising with the square of
        /// length ÷ `range` to `edge` at `range` (a radio's signal weakens with
        /// distance, and its error rate climbs near the edge of its range).
        public var lossAtRange: (edge: Double, range: Double)? = nil
        public init() {}

        /// The loss of a link `length` long.
        public func loss(atLength length: Double) -> Double {
            guard let (edge, range) = lossAtRange, range > 0 else { return loss }
            let x = min(1, length / range)
            return loss + (edge - loss) * x * x
        }
    }

    /// What happens next: a frame reaches a node, or a node's deadline comes.
    public enum Event: Sendable {
        case receive(node: Int, from: Int, bytes: [UInt8])
        case tick(node: Int)
    }

    struct Queued: Comparable {
        var at: Millis
        var seq: UInt64
        var event: Event
        static func < (a: Queued, b: Queued) -> Bool { (a.at, a.seq) < (b.at, b.seq) }
        static func == (a: Queued, b: Queued) -> Bool { a.at == b.at && a.seq == b.seq }
    }

    public let radio: Radio
    public private(set) var now: Millis = 0
    /// Radio transmissions and receptions per node: the energy proxy.
    public private(set) var transmissions: [Int]
    public private(set) var receptions: [Int]
    /// Bytes each node put on the air.
    public private(set) var bytesSent: [Int]
    /// Nodes switched off (churn): they neither send nor receive.
    public var offline: Set<Int> = []
    /// Loss per link where it differs from the radio's (both directions; see
    /// ``Radio/lossAtRange`` and ``linkKey(_:_:)``).
    public var linkLoss: [Int: Double] = [:]
    private var queue = Heap<Queued>()
    private var seq: UInt64 = 0
    private var scheduledTick: [Millis?]
    private var rng: SeededGenerator

    public init(nodes: Int, radio: Radio, seed: UInt64) {
        self.init(nodes: nodes, radio: radio, rng: SeededGenerator(seed: seed))
    }

    /// With the generator itself (its loss and latency draws continue its sequence).
    public init(nodes: Int, radio: Radio, rng: SeededGenerator) {
        self.radio = radio
        self.rng = rng
        transmissions = Array(repeating: 0, count: nodes)
        receptions = Array(repeating: 0, count: nodes)
        bytesSent = Array(repeating: 0, count: nodes)
        scheduledTick = Array(repeating: nil, count: nodes)
    }

    /// `node` sends `bytes` once on `links` (link numbers are node numbers).
    public mutating func transmit(_ bytes: [UInt8], from node: Int, on links: [LinkID]) {
        guard !offline.contains(node) else { return }
        transmissions[node] += 1
        bytesSent[node] += bytes.count
        for link in links {
            let loss = linkLoss.isEmpty ? radio.loss : linkLoss[Self.linkKey(node, Int(link.rawValue))] ?? radio.loss
            if loss > 0, rng.unit() < loss { continue }
            let delay = radio.latency + (radio.latencyJitter == 0 ? 0 : rng.next() % radio.latencyJitter)
            push(now + delay, .receive(node: Int(link.rawValue), from: node, bytes: bytes))
        }
    }

    /// The key of the link between nodes `a` and `b` in ``linkLoss``.
    public static func linkKey(_ a: Int, _ b: Int) -> Int { min(a, b) << 32 | max(a, b) }

    /// Wakes `node` at `deadline` (or now, if it has passed), unless it is to be woken sooner.
    public mutating func wake(_ node: Int, at deadline: Millis?) {
        guard let deadline, scheduledTick[node].map({ deadline < $0 }) ?? true else { return }
        scheduledTick[node] = max(deadline, now)
        push(max(deadline, now), .tick(node: node))
    }

    /// The next event at or before `time` (the clock moves to it), or nil once
    /// there is none: then the clock is at `time`. Frames for offline nodes are
    /// dropped on the way.
    public mutating func next(until time: Millis) -> Event? {
        while let head = queue.min, head.at <= time {
            _ = queue.popMin()
            now = head.at
            switch head.event {
            case let .receive(node, _, _):
                guard !offline.contains(node) else { continue }
                receptions[node] += 1
            case let .tick(node):
                if scheduledTick[node] == now { scheduledTick[node] = nil }
            }
            return head.event
        }
        now = max(now, time)
        return nil
    }

    private mutating func push(_ at: Millis, _ event: Event) {
        seq += 1
        queue.insert(Queued(at: at, seq: seq, event: event))
    }
}

/// A simulation that runs engines over a ``RadioMedium``: it says what a node
/// does with a frame and at its deadline; the event loop is shared.
public protocol RadioSimulation {
    var medium: RadioMedium { get set }
    mutating func receive(_ bytes: [UInt8], at node: Int, from: Int)
    mutating func tick(_ node: Int)
}

extension RadioSimulation {
    /// Runs events until none are left before `time`, then sets the clock to it.
    public mutating func run(until time: Millis, maxEvents: Int = 50_000_000) {
        var processed = 0
        while processed < maxEvents, let event = medium.next(until: time) {
            processed += 1
            switch event {
            case let .receive(node, from, bytes): receive(bytes, at: node, from: from)
            case let .tick(node): tick(node)
            }
        }
    }
}
