import StarlingWire

/// Who is around, as announces tell, and what they said: the one record of
/// present peers. A plain value: time comes in.
///
/// - A peer stays present for `announceLifetime` (60 s) after its last announce.
/// - A LEAVE removes it at once.
public struct PeerTable<Info: Sendable>: Sendable {
    public struct Entry: Sendable {
        public var info: Info
        public var lastAnnounce: Millis
        public var hops: Int
        /// When this peer's first announce (of its current stay) came.
        public var firstSeen: Millis = 0
    }

    public var announceLifetime: Millis = 60_000
    /// Peers at most; a newcomer past it replaces the peer that arrived last
    /// (identities are free to make: a flood of them churns among itself, and
    /// the peers that were here before it stay).
    public var capacity = 4_096
    public private(set) var entries: [PeerID: Entry] = [:]
    /// Peers replaced to make room.
    public private(set) var evicted = 0
    private var evictedPeers: [PeerID] = []

    /// The peers replaced to make room since the last call.
    public mutating func takeEvicted() -> [PeerID] {
        defer { evictedPeers = [] }
        return evictedPeers
    }

    public init() {}

    public subscript(peer: PeerID) -> Entry? { entries[peer] }

    /// Records an announce; returns the entry it replaces (nil: the peer is new, or had expired).
    @discardableResult
    public mutating func announced(_ peer: PeerID, info: Info, hops: Int, now: Millis) -> Entry? {
        let firstSeen = entries[peer]?.firstSeen ?? now
        if entries[peer] == nil, entries.count >= capacity {
            // The newest arrival goes (O(capacity), only while full).
            if let newest = entries.max(by: { ($0.value.firstSeen, $0.key) < ($1.value.firstSeen, $1.key) })?.key {
                entries[newest] = nil
                evicted += 1
                evictedPeers.append(newest)
            }
        }
        return entries.updateValue(Entry(info: info, lastAnnounce: now, hops: hops, firstSeen: firstSeen), forKey: peer)
    }

    @discardableResult
    public mutating func left(_ peer: PeerID) -> Entry? { entries.removeValue(forKey: peer) }

    /// When the next peer's announce grows too old (nil: nobody here).
    public var nextExpiry: Millis? { entries.values.map(\.lastAnnounce).min().map { $0 + announceLifetime + 1 } }

    /// Removes and returns the peers whose last announce is too old.
    public mutating func expire(now: Millis) -> [PeerID] {
        let gone = entries.filter { now > $0.value.lastAnnounce && now - $0.value.lastAnnounce > announceLifetime }.map(\.key)
        for p in gone { entries[p] = nil }
        return gone.sorted()
    }

    public mutating func removeAll() { entries = [:] }
}

/// The health of links (seed 004 §3 and §15.1): a link that brings no announce
/// within 15 s, or goes silent for 60 s, is dropped; an address with 5 error
/// disconnects within 5 minutes is blocked for 15 minutes.
public struct LinkWatch<Address: Hashable & Sendable>: Sendable {
    public var announceDeadline: Millis = 15_000
    public var silenceLimit: Millis = 60_000
    public var errorLimit = 5
    public var errorWindow: Millis = 300_000
    public var blockFor: Millis = 900_000

    struct Link { var upAt: Millis; var lastHeard: Millis; var announced: Bool }
    private var links: [Address: Link] = [:]
    /// Links watched, addresses with recent errors, addresses blocked for a while.
    public var counts: (links: Int, errors: Int, blocked: Int) { (links.count, errors.count, blockedUntil.count) }
    private var errors: [Address: [Millis]] = [:]
    private var blockedUntil: [Address: Millis] = [:]

    public init() {}

    public enum Reason: Hashable, Sendable { case noAnnounce, silent }

    public mutating func up(_ a: Address, now: Millis) { links[a] = Link(upAt: now, lastHeard: now, announced: false) }
    public mutating func heard(_ a: Address, now: Millis) { links[a]?.lastHeard = now }
    public mutating func announced(_ a: Address) { links[a]?.announced = true }
    public mutating func down(_ a: Address) { links[a] = nil }

    /// When ``check(now:)`` next has a link to drop, unless it is heard first (nil: no link).
    public var nextCheck: Millis? {
        links.values.map { $0.announced ? $0.lastHeard + silenceLimit + 1 : min($0.upAt + announceDeadline, $0.lastHeard + silenceLimit) + 1 }.min()
    }

    /// Links to drop now, and why.
    public mutating func check(now: Millis) -> [(Address, Reason)] {
        var out: [(Address, Reason)] = []
        for (a, l) in links {
            if !l.announced && now > l.upAt && now - l.upAt > announceDeadline { out.append((a, .noAnnounce)) }
            else if now > l.lastHeard && now - l.lastHeard > silenceLimit { out.append((a, .silent)) }
        }
        for (a, _) in out { links[a] = nil }
        return out
    }

    /// Counts an error disconnect; the fifth within 5 minutes blocks the address.
    public mutating func errorDisconnect(_ a: Address, now: Millis) {
        links[a] = nil
        var times = (errors[a] ?? []).filter { now >= $0 && now - $0 < errorWindow }
        times.append(now)
        errors[a] = times
        if times.count >= errorLimit {
            blockedUntil[a] = now + blockFor
            errors[a] = nil
        }
    }

    public func isBlocked(_ a: Address, now: Millis) -> Bool {
        blockedUntil[a].map { now < $0 } ?? false
    }
}
