import Crypto
import StarlingWire

/// The courier mailbox's names (docs/PROTOCOL.md "The courier mailbox").
public enum CourierMailbox {
    /// A drop's ID: the first 16 bytes of the SHA-256 of its recipient tag
    /// and seal (a courier that copied the seal cannot take its place under another tag).
    public static func dropID(of envelope: CourierEnvelope) -> Bytes16 {
        Bytes16(Array(SHA256.hash(data: envelope.recipientTag + envelope.ciphertext)).prefix(16))!
    }
}

/// A node's side of the courier mailbox without I/O: drops in to post,
/// recipient tags to follow, datagrams and the time in; datagrams to the
/// server and what came of them out. The runtime owns the socket.
///
/// It proves its address (DROP_HELLO, the cookie back; hellos 2 s apart,
/// doubling to 60 s while unanswered), posts each drop until DROP_TAKEN (2 s, doubling, at most 60 s
/// apart, 8 tries), and fetches the followed tags every
/// ``Configuration/fetchEvery`` and at once when they change, page by page as
/// DROP_END says, from where the last round ended (from 0 when the tags
/// change, and every ``Configuration/sweepEvery``); the cursor moves only past
/// a whole page (every drop its DROP_END counts came), or, for a page short
/// three times running, as far as its drops came. Bounds: 64 drops waiting
/// (the oldest goes), 51 tags, one fetch at a time (10 s without its end: done),
/// 100 pages a round; a drop it did not ask for (another tag, behind the cursor)
/// is not taken.
///
/// Whether the server answers is said once an outage (``Output/answering(_:)``):
/// not answering after three hellos unanswered, or, proven, after
/// ``Configuration/lostAfter`` of silence since something was asked of it
/// (then it proves its address again: a server that restarted forgot it);
/// answering again once it proves the address anew.
public struct CourierMailboxCore: Sendable {
    public struct Configuration: Sendable {
        public var fetchEvery: UInt64 = 30_000
        public var maxPending = 64
        public var firstRetry: UInt64 = 2_000
        public var maxRetryGap: UInt64 = 60_000
        public var maxTries = 8
        /// A fetch whose DROP_END has not come in this long is taken as done (UDP lost it).
        public var fetchTimeout: UInt64 = 10_000
        /// A round starts from 0 again this long after the last one that did:
        /// a server that started afresh (its sequence numbers from 1 again), or a
        /// cursor a forger led astray, costs at most this long (each such round
        /// brings again what the tags hold: kept rare).
        public var sweepEvery: UInt64 = 1_800_000
        /// A page that does not come whole this many times running (a DROP
        /// lost each time, on a lossy link) is passed as far as its drops came.
        public var wholePageTries = 3
        /// Proven, asked something (a fetch, a drop), and nothing from the
        /// server for this long (three fetch rounds): the server is taken as lost.
        public var lostAfter: UInt64 = 90_000
        /// Hellos unanswered before the server is said not to answer.
        public var unansweredHellos = 3
        public init() {}
    }

    public enum Output: Hashable, Sendable {
        case send([UInt8])
        /// An envelope a fetch brought (decoded; the node checks the rest).
        case drop(CourierEnvelope)
        /// The server committed the drop.
        case taken(Bytes16)
        /// The server refused the drop for good, or it was tried `maxTries` times.
        case notTaken(Bytes16, ServerRejection?)
        /// Whether the server answers, said once an outage: false when it stopped
        /// (or never started), true when it answers again after that.
        case answering(Bool)
    }

    struct Pending: Sendable {
        var id: Bytes16
        var envelope: [UInt8]
        var tries = 0
        var nextAt: UInt64 = 0
    }

    public let configuration: Configuration
    private var cookie = Bytes16(high: 0, low: 0)
    public private(set) var ready = false
    private var lastHello: UInt64?
    /// The wait before the next hello while unanswered (2 s, doubling to 60 s).
    private var helloGap: UInt64
    private var unanswered = 0
    /// Said not answering (and not yet answering again).
    public private(set) var outageSaid = false
    /// Since when something asked of the server waits for its first word (nil: nothing waits).
    private var awaitingSince: UInt64?
    private var pending: [Pending] = []
    private var tags: [Bytes16] = []
    private var tagsChanged = false
    /// The fetch under way: the cursor its page started from, when, the
    /// sequence numbers of the drops its page brought so far (10 a page from
    /// the server), and whether the tags changed since it was asked (stale: its
    /// end moves nothing, and the round starts again from 0).
    struct Fetch: Sendable {
        var after: UInt64
        var since: UInt64
        var got: Set<UInt64> = []
        var stale = false
    }
    private var fetching: Fetch?
    /// The page that last came short, and how many times running.
    private var shortPage: (after: UInt64, times: Int)?
    /// Where the next round starts: the last sequence number a whole page reached.
    private var cursor: UInt64 = 0
    /// When a round last started from 0.
    private var lastSweep: UInt64?
    private var pagesThisRound = 0
    public static let maxPagesARound = 100
    private var lastFetch: UInt64?
    private var transfer: UInt32 = .random(in: 0...UInt32.max)
    private var reassembler = ServerReassembler<Int>()
    /// Drops posted and taken, drops a fetch brought (for the metrics and tests).
    public private(set) var posted = 0, fetched = 0

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
        helloGap = configuration.firstRetry
    }

    public var waiting: Int { pending.count }

    /// A drop to post (copies 1 on the server): sent when the address is proven.
    public mutating func post(_ envelope: CourierEnvelope, now: UInt64) -> [Output] {
        var e = envelope
        e.copies = 1
        let id = CourierMailbox.dropID(of: e)
        // An envelope that does not encode (a seal past 16 KiB) is said, not dropped in silence.
        guard let bytes = try? e.encoded() else { return [.notTaken(id, .malformed)] }
        guard !pending.contains(where: { $0.id == id }) else { return [] }
        if pending.count >= configuration.maxPending { pending.removeFirst() }
        pending.append(Pending(id: id, envelope: bytes))
        return tick(now: now)
    }

    /// The tags to fetch drops for (at most 51); fetched at once when they change.
    public mutating func follow(_ wanted: [Bytes16], now: UInt64) -> [Output] {
        let t = Array(Set(wanted)).sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }.prefix(ServerPacket.maxDropTags)
        guard Array(t) != tags else { return [] }
        tags = Array(t)
        tagsChanged = true
        cursor = 0 // a new peer's drops may be older than where we were
        lastSweep = now
        fetching?.stale = true // its end must not move the cursor past the new peer's drops
        return tick(now: now)
    }

    /// What is due: the hello, drops to (re)send, a fetch.
    public mutating func tick(now: UInt64) -> [Output] {
        var out: [Output] = []
        if ready, let since = awaitingSince, now >= since + configuration.lostAfter {
            // Silent for too long: lost. Proven again from the start (a restarted server forgot us).
            ready = false
            fetching = nil
            awaitingSince = nil
            for i in pending.indices { pending[i].nextAt = 0 }
            lastHello = nil
            unanswered = configuration.unansweredHellos
            if !outageSaid {
                outageSaid = true
                out.append(.answering(false))
            }
        }
        guard ready else {
            if lastHello.map({ now >= $0 + helloGap }) ?? true {
                if lastHello != nil { helloGap = min(helloGap * 2, configuration.maxRetryGap) }
                lastHello = now
                unanswered += 1
                if unanswered > configuration.unansweredHellos, !outageSaid {
                    outageSaid = true
                    out.append(.answering(false))
                }
                out += datagrams(.dropHello(cookie: cookie), now: now)
            }
            return out
        }
        for i in pending.indices where pending[i].nextAt <= now {
            if pending[i].tries >= configuration.maxTries { continue }
            pending[i].tries += 1
            let gap = min(configuration.firstRetry << UInt64(min(pending[i].tries - 1, 16)), configuration.maxRetryGap)
            pending[i].nextAt = now + gap
            out += datagrams(.drop(cookie: cookie, envelope: pending[i].envelope), now: now)
        }
        let givenUp = pending.filter { $0.tries >= configuration.maxTries && $0.nextAt <= now }
        pending.removeAll { $0.tries >= configuration.maxTries && $0.nextAt <= now }
        out += givenUp.map { .notTaken($0.id, nil) }
        if let f = fetching, now >= f.since + configuration.fetchTimeout { fetching = nil; lastFetch = now }
        if fetching == nil, !tags.isEmpty, tagsChanged || lastFetch.map({ now >= $0 + configuration.fetchEvery }) ?? true {
            tagsChanged = false
            pagesThisRound = 0
            if lastSweep.map({ now >= $0 + configuration.sweepEvery }) ?? true {
                cursor = 0
                lastSweep = now
            }
            out += fetch(after: cursor, now: now)
        }
        return out
    }

    /// When ``tick(now:)`` has something next.
    public func nextDeadline() -> UInt64? {
        guard ready else { return (lastHello ?? 0) + helloGap }
        var next = pending.map(\.nextAt).min()
        if let since = awaitingSince { next = min(next ?? .max, since + configuration.lostAfter) }
        if let f = fetching { next = min(next ?? .max, f.since + configuration.fetchTimeout) }
        else if !tags.isEmpty { next = min(next ?? .max, (lastFetch ?? 0) + configuration.fetchEvery) }
        return next
    }

    public mutating func receive(_ datagram: [UInt8], now: UInt64) -> [Output] {
        guard var packet = try? ServerPacket.decode(datagram, .toClient) else { return [] }
        if case let .chunk(c) = packet {
            guard let whole = reassembler.add(c, from: 0, now: now), let inner = try? ServerPacket.decode(whole, .toClient) else { return [] }
            if case .chunk = inner { return [] }
            packet = inner
        }
        // The server spoke: nothing waits for it now, and hellos start again from 2 s.
        awaitingSince = nil
        unanswered = 0
        helloGap = configuration.firstRetry
        switch packet {
        case let .dropCookie(c, isReady):
            if isReady {
                cookie = c
                guard !ready else { return [] }
                ready = true
                var out: [Output] = []
                if outageSaid {
                    outageSaid = false
                    out.append(.answering(true))
                }
                return out + tick(now: now)
            }
            // Sent back once a cookie (a repeated answer, or one a forger sent, waits for the 2 s hello).
            guard !ready, c != cookie || lastHello.map({ now >= $0 + configuration.firstRetry }) ?? true else { return [] }
            cookie = c
            lastHello = now
            return datagrams(.dropHello(cookie: c), now: now)
        case let .dropTaken(id, _):
            guard let i = pending.firstIndex(where: { $0.id == id }) else { return [] }
            pending.remove(at: i)
            posted += 1
            return [.taken(id)]
        case let .rejected(why, id):
            switch why {
            case .unprovenAddress:
                guard ready else { return [] } // proving already: one hello chain at a time
                ready = false
                fetching = nil
                for i in pending.indices { pending[i].nextAt = 0 }
                return tick(now: now) // the hello with the cookie we have: the server answers with its own
            case .rateLimited, .serverFull, .storageFailed:
                // A fetch refused ends the round where it got to (the cursor kept); a drop is tried again at its time.
                if id == nil, fetching != nil {
                    fetching = nil
                    lastFetch = now
                }
                return []
            default:
                guard let id, let i = pending.firstIndex(where: { $0.id == id.value }) else { return [] }
                pending.remove(at: i)
                return [.notTaken(id.value, why)]
            }
        case let .dropDelivery(sequence, bytes):
            guard var f = fetching, sequence > f.after, f.got.count < Int(UInt8.max), let e = try? CourierEnvelope(decoding: bytes[...]),
                  let tag = Bytes16(e.recipientTag), tags.contains(tag) else { return [] }
            f.got.insert(sequence)
            fetching = f
            fetched += 1
            return [.drop(e)]
        case let .dropEnd(count, last, more):
            guard let f = fetching else { return [] }
            fetching = nil
            lastFetch = now
            if f.stale { return tick(now: now) } // the tags changed: a round from 0, now
            // The cursor moves only past a whole page: every drop DROP_END counts came, the last its
            // last (none: `last` is `after`). A page short of one lost on the way is asked for again
            // next round, and a forged DROP_END cannot move the cursor past drops that never came.
            let whole = f.got.count == Int(count) && last == (f.got.max() ?? f.after)
            guard whole else {
                // Short again and again (a lossy link): passed as far as its drops came, no further.
                let times = shortPage?.after == f.after ? (shortPage?.times ?? 0) + 1 : 1
                shortPage = (f.after, times)
                if times >= configuration.wholePageTries, let reached = f.got.max() {
                    cursor = max(cursor, reached)
                    shortPage = nil
                }
                return []
            }
            shortPage = nil
            cursor = max(cursor, last)
            // Only forward, and 100 pages a round: a server saying "more" without moving on ends the round.
            pagesThisRound += 1
            return more && last > f.after && pagesThisRound < Self.maxPagesARound ? fetch(after: last, now: now) : []
        default:
            return []
        }
    }

    private mutating func fetch(after: UInt64, now: UInt64) -> [Output] {
        fetching = Fetch(after: after, since: now)
        return datagrams(.dropFetch(cookie: cookie, after: after, tags: tags), now: now)
    }

    /// A packet for the server (in chunks if it must): from now on an answer is awaited.
    private mutating func datagrams(_ packet: ServerPacket, now: UInt64) -> [Output] {
        if awaitingSince == nil { awaitingSince = now }
        let bytes = packet.encode()
        transfer &+= 1
        return (ServerChunk.datagrams(bytes, transferID: transfer) ?? []).map { .send($0) }
    }
}
