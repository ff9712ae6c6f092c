import StarlingMesh
import StarlingNostr
import StarlingWire

/// The gateway's rules for location-channel events (docs/PROTOCOL.md, "Nostr
/// carriers (0x28)"), as iOS 1.7 keeps them (bitchat GatewayService.swift):
/// a plain value, carriers and wall-clock milliseconds in, events to publish
/// and carriers to broadcast out.
///
/// Up (mesh → relays): a `toGateway` deposit is taken when its event is kind
/// 20000, tagged `["g", geohash]` with the carrier's geohash (a valid one),
/// within 15 minutes of now, not seen before, within its depositor's 10 a
/// minute, and signed by its author (BIP-340). It is never signed by us:
/// published as it came, or queued while no relay is up (5 a depositor, 20
/// in all, the oldest going first).
///
/// Down (relays → mesh): events of the channels the gateway follows, kind
/// 20000 with their `g` tag, fresh, signed, not seen, wait (30 at most, the
/// oldest going first) and go out as broadcast `fromGateway` carriers, 30 a
/// minute.
///
/// Heard (any node): a `fromGateway` carrier's event is shown only when its
/// own signature holds; its ID is remembered then, so that a copy over
/// another path, or a forgery naming it, changes nothing.
///
/// Every table is bounded: three ID sets of 512 (oldest out), the depositor
/// windows (512 depositors, pruned), the queue (20) and the downlink (30).
public struct GatewayCore: Sendable {
    public struct Limits: Hashable, Sendable {
        public var depositsPerMinute = 10
        public var queuedPerDepositor = 5
        public var queued = 20
        public var downlinkPerMinute = 30
        public var pendingDownlinks = 30
        public var trackedIDs = 512
        public var trackedDepositors = 512
        /// Events of `fromGateway` carriers shown a minute, in all and of one Nostr key.
        public var heardPerMinute = 60
        public var heardPerKey = 10
        /// How far an event's created_at may be from now, ms.
        public var maxAge: UInt64 = 900_000
        public init() {}
    }

    /// An event the gateway publishes (its JSON as it came) to the relays near its geohash.
    public struct Upload: Hashable, Sendable {
        public var event: NostrEvent
        public var geohash: String
        public var depositor: PeerID
    }

    public enum Refusal: String, Error, Hashable, Sendable {
        case notAnEvent, wrongKind, wrongGeohash, stale, seen, rateLimited, badSignature, depositorQueueFull
    }

    public enum Outcome: Hashable, Sendable {
        /// Publish it now (relays are up).
        case publish(Upload)
        /// Kept until a relay is up.
        case queued
        case refused(Refusal)
    }

    public var limits: Limits
    public var queue: [Upload] { book.queue }
    private var book = DepositBook()
    public private(set) var pending: [(event: NostrEvent, geohash: String)] = []
    private var heardIDs = BoundedIDs(512), publishedIDs = BoundedIDs(512), rebroadcastIDs = BoundedIDs(512)
    private var sent: [UInt64] = []
    /// Events shown from broadcast carriers in the last minute: their keys and when (at most `heardPerMinute`).
    private var shown: [(key: String, at: UInt64)] = []
    public private(set) var refusals: [Refusal: Int] = [:]

    public init(limits: Limits = Limits()) {
        self.limits = limits
        heardIDs = BoundedIDs(limits.trackedIDs)
        publishedIDs = BoundedIDs(limits.trackedIDs)
        rebroadcastIDs = BoundedIDs(limits.trackedIDs)
    }

    /// Table sizes, for bounds and `/stats`.
    public var sizes: [String: Int] {
        ["gateway.queue": queue.count, "gateway.pending": pending.count, "gateway.depositors": book.depositors,
         "gateway.heardIDs": heardIDs.count, "gateway.shown": shown.count, "gateway.publishedIDs": publishedIDs.count, "gateway.rebroadcastIDs": rebroadcastIDs.count]
    }

    // MARK: Up

    /// A `toGateway` deposit from `depositor` (the caller checked that it was
    /// directed to us and signed by the depositor's announced key).
    /// `now`: a monotonic clock (ms) for the rate windows; `wall`: Unix ms
    /// for the event's freshness (the same clock when not given).
    public mutating func deposit(_ carrier: NostrCarrier, from depositor: PeerID, relaysUp: Bool, now: UInt64, wall: UInt64? = nil) -> Outcome {
        let event: NostrEvent
        switch check(carrier, wall: wall ?? now) {
        case let .success(e): event = e
        case let .failure(r): return refuse(r)
        }
        guard !heardIDs.contains(event.id), !publishedIDs.contains(event.id), !book.isQueued(event.id) else {
            return refuse(.seen)
        }
        // Charged before the signature is checked (as iOS): a depositor spending our CPU pays for it.
        guard book.charge(depositor, now: now, perMinute: limits.depositsPerMinute, tracked: limits.trackedDepositors) else {
            return refuse(.rateLimited)
        }
        guard (try? event.verify()) != nil else { return refuse(.badSignature) }
        let upload = Upload(event: event, geohash: carrier.geohash, depositor: depositor)
        if relaysUp {
            publishedIDs.insert(event.id)
            return .publish(upload)
        }
        guard book.enqueue(upload, perDepositor: limits.queuedPerDepositor, total: limits.queued) else { return refuse(.depositorQueueFull) }
        return .queued
    }

    /// A relay is up: what was queued goes (oldest first), each once.
    public mutating func relaysUp() -> [Upload] {
        let out = book.flush()
        for u in out { publishedIDs.insert(u.event.id) }
        return out
    }

    // MARK: Down

    /// An event from a channel the gateway follows (`geohash`): kept for the
    /// mesh when it is one to carry. Says whether it was kept.
    @discardableResult
    public mutating func fromRelay(_ event: NostrEvent, geohash: String, now: UInt64, wall: UInt64? = nil) -> Bool {
        guard event.kind == 20_000, fresh(event, wall: wall ?? now), event.tags.contains(where: { $0.count >= 2 && $0[0] == "g" && $0[1] == geohash }),
              !heardIDs.contains(event.id), !publishedIDs.contains(event.id), !rebroadcastIDs.contains(event.id),
              !pending.contains(where: { $0.event.id == event.id }), (try? event.verify()) != nil else { return false }
        if pending.count >= limits.pendingDownlinks { pending.removeFirst() }
        pending.append((event, geohash))
        return true
    }

    /// The carriers to broadcast now: as many as the minute's budget allows,
    /// each still fresh, oldest first.
    public mutating func due(now: UInt64, wall: UInt64? = nil) -> [NostrCarrier] {
        sent.removeAll { now >= $0 + 60_000 }
        var out: [NostrCarrier] = []
        while sent.count < limits.downlinkPerMinute, !pending.isEmpty {
            let (event, geohash) = pending.removeFirst()
            guard fresh(event, wall: wall ?? now), let c = try? NostrCarrier(direction: .fromGateway, geohash: geohash, eventJSON: Array(event.json.utf8))
            else { continue }
            rebroadcastIDs.insert(event.id)
            sent.append(now)
            out.append(c)
        }
        return out
    }

    /// When ``due(now:)`` has something to send next (nil: nothing waits).
    public var nextDeadline: UInt64? {
        guard !pending.isEmpty else { return nil }
        guard sent.count >= limits.downlinkPerMinute, let oldest = sent.first else { return 0 }
        return oldest + 60_000
    }

    // MARK: Heard

    /// A `fromGateway` carrier heard on the mesh: its event, when it is one to
    /// show (checked as a deposit is, then its signature), once.
    /// Broadcast carriers are unsigned and anyone in radio range can sign
    /// events with as many Nostr keys as they like: at most `heardPerMinute`
    /// are shown a minute in all, `heardPerKey` of one key (past them, dropped
    /// and counted), and the `n` nickname is cut to 64 characters.
    public mutating func heard(_ carrier: NostrCarrier, now: UInt64, wall: UInt64? = nil) -> NostrEvent? {
        guard carrier.direction == .fromGateway, case var .success(event) = check(carrier, wall: wall ?? now) else { return nil }
        guard !heardIDs.contains(event.id), !publishedIDs.contains(event.id) else { return nil }
        shown.removeAll { now >= $0.at + 60_000 }
        guard shown.count < limits.heardPerMinute, shown.filter({ $0.key == event.pubkey }).count < limits.heardPerKey else {
            refusals[.rateLimited, default: 0] += 1
            return nil
        }
        guard (try? event.verify()) != nil else { return nil }
        heardIDs.insert(event.id) // after the signature: a forgery cannot take an ID's place
        shown.append((event.pubkey, now))
        event.tags = event.tags.map { $0.count >= 2 && $0[0] == "n" ? [$0[0], String(String.UnicodeScalarView($0[1].unicodeScalars.prefix(64)))] : $0 }
        return event
    }

    // MARK: Checks

    /// Within `maxAge` of `wall` (Unix ms), compared in seconds: a created_at
    /// near Int64.max cannot wrap into range.
    private func fresh(_ e: NostrEvent, wall: UInt64) -> Bool {
        let nowSeconds = Int64(wall / 1_000), age = Int64(limits.maxAge / 1_000)
        return e.created_at >= nowSeconds - age && e.created_at <= nowSeconds + age
    }

    /// The structural checks, no cryptography.
    private func check(_ c: NostrCarrier, wall: UInt64) -> Result<NostrEvent, Refusal> {
        guard NostrCarrier.isValidGeohash(c.geohash) else { return .failure(.wrongGeohash) }
        guard let e = try? NostrEvent.decode(String(decoding: c.eventJSON, as: UTF8.self)), e.tags.count <= 64,
              e.tags.allSatisfy({ $0.count <= 16 && $0.allSatisfy { $0.utf8.count <= 1_024 } }) else { return .failure(.notAnEvent) }
        guard e.kind == 20_000 else { return .failure(.wrongKind) }
        guard e.tags.contains(where: { $0.count >= 2 && $0[0] == "g" && $0[1] == c.geohash }) else { return .failure(.wrongGeohash) }
        guard fresh(e, wall: wall) else { return .failure(.stale) }
        return .success(e)
    }

    private mutating func refuse(_ r: Refusal) -> Outcome {
        refusals[r, default: 0] += 1
        return .refused(r)
    }
}

/// A location-channel message a gateway carried into the mesh (a
/// `fromGateway` carrier), its event's signature checked: who wrote it is
/// its Nostr key (`pubkey`) and the name its `n` tag claims.
public struct GatewayMessage: Hashable, Sendable, Codable {
    public var geohash: String
    public var eventID: String
    public var pubkey: String
    public var nickname: String?
    public var text: String
    /// Unix seconds (the event's created_at).
    public var createdAt: Int64
    public var hops: Int
    public init(geohash: String, eventID: String, pubkey: String, nickname: String?, text: String, createdAt: Int64, hops: Int) {
        self.geohash = geohash
        self.eventID = eventID
        self.pubkey = pubkey
        self.nickname = nickname
        self.text = text
        self.createdAt = createdAt
        self.hops = hops
    }
}

/// IDs remembered in the order they came, the oldest forgotten past the capacity.
public struct BoundedIDs: Sendable {
    public let capacity: Int
    private var members: Set<String> = []
    private var order: [String] = []
    /// How many were ever inserted (moves on each change).
    public private(set) var inserted = 0
    public init(_ capacity: Int) { self.capacity = capacity }
    public var count: Int { members.count }
    public func contains(_ id: String) -> Bool { members.contains(id) }
    /// The last `n` inserted, oldest first.
    public func recent(_ n: Int) -> [String] { Array(order.suffix(n)) }
    /// Inserts; false when it was there already.
    @discardableResult
    public mutating func insert(_ id: String) -> Bool {
        guard members.insert(id).inserted else { return false }
        inserted += 1
        order.append(id)
        if order.count > capacity { members.remove(order.removeFirst()) }
        return true
    }
}

/// Deposits a gateway or a bridge takes from mesh peers: each depositor's
/// last minute (charged before a signature is checked; at most `tracked`
/// depositors, those quiet for a minute first out, then the least recent),
/// and the queue while no relay is up (`perDepositor` each, `total` in all,
/// the oldest going first).
struct DepositBook: Sendable {
    private var windows: [PeerID: [UInt64]] = [:]
    private(set) var queue: [GatewayCore.Upload] = []

    var depositors: Int { windows.count }
    func isQueued(_ id: String) -> Bool { queue.contains { $0.event.id == id } }

    /// Charges one deposit to `depositor` at `now` (monotonic ms): false past its minute's budget.
    mutating func charge(_ depositor: PeerID, now: UInt64, perMinute: Int, tracked: Int) -> Bool {
        var window = (windows[depositor] ?? []).filter { now < $0 + 60_000 }
        guard window.count < perMinute else {
            windows[depositor] = window
            return false
        }
        window.append(now)
        windows[depositor] = window
        if windows.count > tracked {
            windows = windows.filter { $0.value.contains { now < $0 + 60_000 } }
            while windows.count > tracked, let oldest = windows.min(by: { ($0.value.last ?? 0) < ($1.value.last ?? 0) }) {
                windows[oldest.key] = nil
            }
        }
        return true
    }

    /// Queued until a relay is up: false when its depositor has `perDepositor` waiting.
    mutating func enqueue(_ upload: GatewayCore.Upload, perDepositor: Int, total: Int) -> Bool {
        guard queue.filter({ $0.depositor == upload.depositor }).count < perDepositor else { return false }
        if queue.count >= total { queue.removeFirst() }
        queue.append(upload)
        return true
    }

    mutating func flush() -> [GatewayCore.Upload] {
        defer { queue = [] }
        return queue
    }
}
