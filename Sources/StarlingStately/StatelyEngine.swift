import StarlingCrypto
import StarlingMesh
import StarlingWire

/// Stately on one node, without I/O: this node's state broadcast on its
/// schedule, the states of others received, relayed within their TTL, shown
/// until they expire — in memory only; nothing here is ever written anywhere.
///
/// Bytes come in from links with the time; bytes go out to links, and board
/// changes go up. The caller runs ``tick(now:)`` at ``nextDeadline``. The same
/// links as the mesh router's carry it, on a channel of their own.
public struct StatelyEngine: Sendable {
    public struct Configuration: Sendable {
        public var name: String
        public var key: StateKey = .broadcast
        public var sosInterval: Millis = 5_000
        /// A state is shown this long after it was last heard.
        public var lifetime: Millis = 300_000
        /// Timestamps further in the future than this are refused.
        public var futureTolerance: Millis = 60_000
        /// Relays wait a random 0 ..< this (SOS relays do not wait).
        public var relayJitter: Millis = 50
        /// Cancel a pending relay once this many copies were heard (nil: never).
        public var cancelAfter: Int? = nil
        public var maxPendingRelays = 256
        /// States kept at most (the oldest goes first).
        public var maxPeers = 1_024
        public init(name: String) { self.name = name }
    }

    /// One peer's state as this node shows it.
    public struct PeerState: Hashable, Sendable {
        public var senderID: PeerID
        public var name: String
        public var state: StateKind
        /// The sender's timestamp (ms since the epoch).
        public var timestamp: UInt64
        public var heardAt: Millis
        /// 1 = heard from the sender itself.
        public var hops: Int

        public init(senderID: PeerID, name: String, state: StateKind, timestamp: UInt64, heardAt: Millis, hops: Int) {
            self.senderID = senderID
            self.name = name
            self.state = state
            self.timestamp = timestamp
            self.heardAt = heardAt
            self.hops = hops
        }
    }

    public enum Action: Sendable {
        case transmit([UInt8], links: [LinkID])
        /// A peer's state is new or changed.
        case updated(PeerState)
        /// An SOS arrived (a new one, or a peer that was not in SOS before).
        case sos(PeerState)
        /// A peer's state expired, or it went invisible.
        case expired(PeerID)
        /// Bytes refused, and why (malformed, stale, from the future).
        case rejected(String)
    }

    public struct Statistics: Hashable, Sendable {
        public var broadcasts = 0
        public var received = 0
        public var duplicates = 0
        public var relayed = 0
        public var relaysCancelled = 0
        /// Well-formed states that do not open under our key (another group's).
        public var unreadable = 0
        public var rejected = 0
    }

    struct Pending: Sendable {
        var bytes: [UInt8]
        var incoming: LinkID
        var copies: Int
        var fireAt: Millis
    }

    /// Duplicates are known by sender and timestamp (seed 000), and by the box:
    /// an altered copy that came first must not shut out the real one.
    struct Seen: Hashable, Sendable {
        var sender: PeerID
        var timestamp: UInt64
        var box: Int
    }

    public let senderID: PeerID
    public var configuration: Configuration
    /// The wall clock minus `now` (``wallTime(_:offset:)``): reports are
    /// stamped with the wall clock and judged against it; timers run on `now`.
    public var wallClockOffset: Int64 = 0
    public private(set) var current: StateKind = .available
    /// The state SOS replaced, restored by ``clearSOS(now:)``.
    private var beforeSOS: StateKind = .available
    public private(set) var board: [PeerID: PeerState] = [:]
    public private(set) var statistics = Statistics()
    public var optimizer = BatteryOptimizer()
    public private(set) var reading: PowerReading?
    private var links: [LinkID] = []
    private var nextBroadcast: Millis?
    private var lastBroadcast: [UInt8]?
    private var seen: [Seen: Millis] = [:]
    /// The engine's tables by name: the board, duplicates remembered, relays pending.
    public var tableSizes: [String: Int] { ["stately.board": board.count, "stately.seen": seen.count, "stately.pending": pending.count] }
    private var pending: [Seen: Pending] = [:]
    private var rng: SeededGenerator
    private let nonce: @Sendable () -> [UInt8]
    private var nextExpiry: Millis = 0

    /// `nonce` gives 12 fresh random bytes per seal (the system's generator in
    /// a node; a seeded one in the simulator).
    public init(senderID: PeerID, configuration: Configuration, seed: UInt64,
                nonce: @escaping @Sendable () -> [UInt8]) {
        self.senderID = senderID
        self.configuration = configuration
        self.rng = SeededGenerator(seed: seed)
        self.nonce = nonce
    }

    // MARK: Links

    /// A link came up: it gets this node's current state at once (the last
    /// broadcast's bytes, when this node is broadcasting).
    @discardableResult
    public mutating func linkUp(_ link: LinkID) -> [Action] {
        guard !links.contains(link) else { return [] }
        links.append(link)
        links.sort()
        guard nextBroadcast != nil, let last = lastBroadcast else { return [] }
        return [.transmit(last, links: [link])]
    }

    public mutating func linkDown(_ link: LinkID) { links.removeAll { $0 == link } }

    // MARK: Power

    public var powerMode: PowerMode { optimizer.mode(for: reading) }

    /// Between two broadcasts of this node's state now.
    public var interval: Millis {
        current == .sos ? configuration.sosInterval : optimizer.broadcastInterval(for: reading)
    }

    /// A new battery reading (or a new override): the next broadcast moves to the new interval.
    public mutating func update(reading: PowerReading?, now: Millis) {
        self.reading = reading
        reschedule(now: now)
    }

    public mutating func setOverride(_ mode: PowerMode?, now: Millis) {
        optimizer.override = mode
        reschedule(now: now)
    }

    public mutating func setBackground(_ background: Bool, now: Millis) {
        optimizer.background = background
        reschedule(now: now)
    }

    private mutating func reschedule(now: Millis) {
        if let next = nextBroadcast, next > now + interval { nextBroadcast = now + interval }
    }

    // MARK: This node's state

    /// Sets this node's state and broadcasts it at once. Invisible stops the
    /// broadcasts (others see the last state expire).
    public mutating func set(_ state: StateKind, now: Millis) -> [Action] {
        if state == .sos, current != .sos { beforeSOS = current }
        current = state
        guard state != .invisible else {
            nextBroadcast = nil
            return []
        }
        return broadcast(now: now)
    }

    /// Ends an SOS: the state before it goes out at once.
    public mutating func clearSOS(now: Millis) -> [Action] {
        guard current == .sos else { return [] }
        return set(beforeSOS == .sos ? .available : beforeSOS, now: now)
    }

    /// Seals and sends this node's state now, and schedules the next.
    private mutating func broadcast(now: Millis) -> [Action] {
        nextBroadcast = now + interval
        let stamp = wallTime(now, offset: wallClockOffset)
        let report = StateReport(name: configuration.name, state: current, timestamp: stamp)
        do {
            let box = try configuration.key.seal(try report.encoded(), nonce: nonce())
            let ttl = current == .sos ? StatePacket.sosTTL : StatePacket.defaultTTL
            let bytes = try StatePacket(ttl: ttl, timestamp: stamp, senderID: senderID, box: box).encoded()
            seen[Seen(sender: senderID, timestamp: stamp, box: box.hashValue)] = now
            statistics.broadcasts += 1
            lastBroadcast = bytes
            return links.isEmpty ? [] : [.transmit(bytes, links: links)]
        } catch {
            return [.rejected("own state not sent: \(error)")]
        }
    }

    // MARK: Receiving

    public mutating func receive(_ bytes: [UInt8], on link: LinkID, now: Millis) -> [Action] {
        let packet: StatePacket
        do { packet = try StatePacket(decoding: bytes) } catch {
            statistics.rejected += 1
            return [.rejected("malformed state packet: \(error)")]
        }
        let key = Seen(sender: packet.senderID, timestamp: packet.timestamp, box: packet.box.hashValue)
        if seen[key] != nil {
            statistics.duplicates += 1
            if var p = pending[key] {
                p.copies += 1
                if let limit = configuration.cancelAfter, p.copies >= limit {
                    pending[key] = nil
                    statistics.relaysCancelled += 1
                } else {
                    pending[key] = p
                }
            }
            return []
        }
        remember(key, now: now)
        statistics.received += 1

        var actions: [Action] = []
        var relay = true
        let report: StateReport?
        do {
            report = try StateReport(decoding: try configuration.key.open(packet.box))
        } catch StateKey.Error.authenticationFailed {
            statistics.unreadable += 1 // another group's: relayed, never shown
            report = nil
        } catch {
            statistics.rejected += 1
            return [.rejected("state from \(packet.senderID): \(error)")]
        }
        if let report {
            if let why = refusal(of: report, in: packet, now: now) {
                statistics.rejected += 1
                actions.append(.rejected("state from \(packet.senderID): \(why)"))
                relay = false
            } else {
                actions += show(report, from: packet.senderID, ttl: packet.ttl, now: now)
            }
        }
        if relay, packet.ttl > 1, pending.count < configuration.maxPendingRelays {
            var copy = packet
            copy.ttl -= 1
            if let out = try? copy.encoded() {
                // SOS travels with more than the default TTL: it goes first, without waiting.
                let priority = packet.ttl > StatePacket.defaultTTL
                let delay = priority || configuration.relayJitter == 0 ? 0 : rng.next() % configuration.relayJitter
                if delay == 0 {
                    actions += relayNow(out, excluding: link)
                } else {
                    pending[key] = Pending(bytes: out, incoming: link, copies: 1, fireAt: now + delay)
                }
            }
        }
        return actions
    }

    private func refusal(of report: StateReport, in packet: StatePacket, now: Millis) -> String? {
        let now = wallTime(now, offset: wallClockOffset) // judged against the wall clock
        if report.timestamp != packet.timestamp {
            return "the header's timestamp \(packet.timestamp) is not the sealed one \(report.timestamp)"
        }
        if now > report.timestamp, now - report.timestamp > configuration.lifetime {
            return "stale: \((now - report.timestamp) / 1000) s old"
        }
        if report.timestamp > now, report.timestamp - now > configuration.futureTolerance {
            return "\((report.timestamp - now) / 1000) s in the future"
        }
        return nil
    }

    private mutating func show(_ report: StateReport, from sender: PeerID, ttl: UInt8, now: Millis) -> [Action] {
        guard sender != senderID else { return [] }
        if report.state == .invisible {
            return board.removeValue(forKey: sender) == nil ? [] : [.expired(sender)]
        }
        if let old = board[sender], old.timestamp > report.timestamp { return [] } // an older state, late
        let initial = report.state == .sos ? StatePacket.sosTTL : StatePacket.defaultTTL
        let hops = max(1, Int(initial) - Int(ttl) + 1)
        let state = PeerState(senderID: sender, name: report.name, state: report.state, timestamp: report.timestamp,
                              heardAt: now, hops: hops)
        let previous = board.updateValue(state, forKey: sender)
        if board.count > configuration.maxPeers, let oldest = board.min(by: { $0.value.heardAt < $1.value.heardAt })?.key {
            board[oldest] = nil
        }
        var actions: [Action] = []
        if previous?.state != state.state || previous?.name != state.name || previous == nil { actions.append(.updated(state)) }
        if state.state == .sos, previous?.state != .sos { actions.append(.sos(state)) }
        return actions
    }

    private mutating func remember(_ key: Seen, now: Millis) {
        seen[key] = now
        if seen.count > 4 * configuration.maxPeers + 64 {
            seen = seen.filter { now - $0.value <= configuration.lifetime }
        }
    }

    private mutating func relayNow(_ bytes: [UInt8], excluding incoming: LinkID) -> [Action] {
        let out = links.filter { $0 != incoming }
        guard !out.isEmpty else { return [] }
        statistics.relayed += 1
        return [.transmit(bytes, links: out)]
    }

    // MARK: Time

    public var nextDeadline: Millis? {
        [nextBroadcast, pending.values.map(\.fireAt).min(), board.isEmpty ? nil : nextExpiry].compactMap { $0 }.min()
    }

    public mutating func tick(now: Millis) -> [Action] {
        var actions: [Action] = []
        for (key, p) in pending.sorted(by: { ($0.value.fireAt, $0.key.timestamp) < ($1.value.fireAt, $1.key.timestamp) })
        where p.fireAt <= now {
            pending[key] = nil
            actions += relayNow(p.bytes, excluding: p.incoming)
        }
        if let next = nextBroadcast, now >= next { actions += broadcast(now: now) }
        if now >= nextExpiry {
            nextExpiry = now + 1_000
            for (peer, s) in board.sorted(by: { $0.key < $1.key }) where now - s.heardAt > configuration.lifetime {
                board[peer] = nil
                actions.append(.expired(peer))
            }
            seen = seen.filter { now < $0.value || now - $0.value <= configuration.lifetime }
        }
        return actions
    }

    /// The states shown now: SOS first, then by name.
    public var sortedBoard: [PeerState] {
        board.values.sorted { a, b in
            if (a.state == .sos) != (b.state == .sos) { return a.state == .sos }
            return (a.name, a.senderID) < (b.name, b.senderID)
        }
    }
}
