import StarlingMesh
import StarlingWire

/// Private messages to favourites over Nostr relays, without I/O: the relay
/// pool's protocol (subscriptions, publishing, the relays' `OK`s), gift
/// wrapping and opening, and every check on what comes in. Relays come and
/// go with ``relayUp(_:now:)`` and ``relayDown(_:now:)``; their text frames
/// go in with ``receive(_:from:now:)``; out come ``Output``s: text for a
/// relay, payloads that arrived, and what became of each send. The runtime
/// (`NostrTransport`) owns the WebSockets and the clock.
///
/// Only contacts reach us: a gift wrap whose seal is signed by any other key
/// is refused, so a stranger with a relay cannot write to the node.
public struct NostrClientCore: Sendable {
    public struct Configuration: Sendable {
        /// The subscription asks this far back (seconds): Android stamps its
        /// wraps up to a day back, so the apps ask 72 h 15 min.
        public var lookback: Int64 = 72 * 3_600 + 900
        /// A wrap stamped outside [now − lookback, now + skew] is refused.
        public var skew: Int64 = 900
        /// A message (its rumor's time, the only true one) older than this, or
        /// more than `skew` in the future, is refused (the apps' 24 h + 15 min).
        public var rumorMaxAge: Int64 = 86_400 + 900
        /// Wrap IDs remembered against replays.
        public var dedupCapacity = 10_000
        /// Read receipts go out one per interval (the apps' ~3 a second).
        public var readReceiptInterval: Millis = 350
        /// Events waiting for a relay at most; past it the oldest fails.
        public var maxQueued = 200
        /// A send no relay has accepted within this long has failed.
        public var acceptTimeout: Millis = 10_000
        /// A send waiting this long with no relay connected has failed.
        public var noRelayTimeout: Millis = 30_000
        /// Gift wraps opened per minute, all relays together (each costs two
        /// signature checks and up to four key agreements); the rest are dropped.
        public var opensPerMinute = 6_000
        /// Contacts at most.
        public var maxContacts = 4_096
        /// Location channels joined at once, at most.
        public var maxChannels = 8
        /// Channel events checked per minute, all channels together (each costs a
        /// signature check); the rest are dropped.
        public var channelEventsPerMinute = 6_000
        public init() {}
    }

    public enum Output: Hashable, Sendable {
        /// Send this text to this relay.
        case send(String, relay: String)
        /// A contact's payload arrived; `timestamp` is its rumor's (Unix seconds).
        case received(NoisePayload, from: PeerID, timestamp: Int64)
        /// A relay stored our event for this ticket.
        case accepted(ticket: String, relay: String)
        /// No relay took it, and why (words for a person).
        case failed(ticket: String, reason: String)
        /// Something that came in was refused, and why.
        case rejected(String)
        /// A gift wrap was opened and taken: keep its ID (hand it back at the
        /// next start), so that a relay's copy is never shown twice.
        case opened(wrapID: String)
        /// A message in a location channel we joined (its signature checked).
        case channelMessage(ChannelMessage)
        /// Someone is present in a location channel (a kind 20001 event).
        case presence(geohash: String, publicKey: String)
        /// An event on the mesh bridge's cells (``followBridge(cells:now:)``),
        /// as the relay sent it: the bridge checks it (its signature within its own budget).
        case bridgeEvent(NostrEvent)
        /// A courier drop (kind 1401) for a recipient tag followed (``followDrops(tags:now:)``), unchecked.
        case dropEvent(NostrEvent)
        /// A private message from someone who is not a contact (their seal's key proved it is
        /// theirs): a request the person may accept or block. Its wrap is not kept as opened,
        /// so relays bring it again after a restart until the person answers (``markOpened``).
        case request(StrangerMessage)
    }

    /// A private message from a key that is no contact of ours (docs/NOSTR.md, "Requests").
    public struct StrangerMessage: Hashable, Sendable {
        /// Their x-only key, hex (the seal's signer).
        public var publicKey: String
        public var text: String
        /// The rumor's time (Unix seconds).
        public var createdAt: Int64
        /// The gift wrap's ID: names the message, and is kept as opened once answered.
        public var wrapID: String
        public var npub: String { Bech32.npub((try? [UInt8](hex: publicKey)) ?? []) }
        public init(publicKey: String, text: String, createdAt: Int64, wrapID: String) {
            self.publicKey = publicKey
            self.text = text
            self.createdAt = createdAt
            self.wrapID = wrapID
        }
    }

    /// The longest text a stranger's request carries (a location channel's limit); longer is refused.
    public static let maxRequestText = 4_096

    /// A location channel's message: who (the geohash identity's key, hex, and
    /// the nickname it gave), what, when (Unix seconds).
    public struct ChannelMessage: Hashable, Sendable {
        public var geohash: String
        public var publicKey: String
        public var nickname: String?
        public var text: String
        public var createdAt: Int64
        public var eventID: String
        /// The signed event itself (verified): what a gateway carries into the
        /// mesh as it came. nil when read back from a face's JSON.
        public var event: NostrEvent?
        public init(geohash: String, publicKey: String, nickname: String?, text: String, createdAt: Int64, eventID: String,
                    event: NostrEvent? = nil) {
            self.geohash = geohash
            self.publicKey = publicKey
            self.nickname = nickname
            self.text = text
            self.createdAt = createdAt
            self.eventID = eventID
            self.event = event
        }
    }

    public struct Contact: Hashable, Sendable {
        /// Their x-only key, hex.
        public var publicKey: String
        public var variant: GiftWrap.Variant
    }

    /// What was refused, by reason (docs/NOSTR.md, "Bounds").
    public struct Statistics: Hashable, Sendable {
        public var received = 0
        public var duplicates = 0
        public var stale = 0
        public var undecryptable = 0
        public var strangers = 0
        public var malformed = 0
        public var overBudget = 0
        public var published = 0
        public var accepted = 0
        public var failed = 0
        /// Sent to relays whose connections then ended before confirming: sent again.
        public var requeued = 0
        public init() {}
    }

    public let key: Secp256k1.PrivateKey
    public let publicKeyHex: String
    public let configuration: Configuration
    /// The wall clock minus `now`: timers run on `now` (a monotonic clock);
    /// events' `created_at`, subscriptions' `since` and the age of what
    /// arrives go by the wall clock.
    public var wallClockOffset: Int64 = 0
    private func wall(_ now: Millis) -> Millis { wallTime(now, offset: wallClockOffset) }
    /// Our mesh peer ID, the sender ID of the packets we embed.
    public let meshPeerID: PeerID
    public private(set) var statistics = Statistics()
    private var contacts: [PeerID: Contact] = [:]
    private var byKey: [String: PeerID] = [:]
    private var relays: Set<String> = []
    private let subscription: String
    private var seenWraps: BoundedSet<String>
    private var openBudget: TokenBucket
    /// Published events awaiting a relay's OK, by event ID.
    private var inFlight: [String: (event: NostrEvent, ticket: String, at: Millis, relays: Set<String>)] = [:]
    /// Events with no relay to go to yet, oldest first.
    private var queued: [(event: NostrEvent, ticket: String, at: Millis)] = []
    /// Read receipts waiting for their turn, oldest first.
    private var reads: [(payload: NoisePayload, peer: PeerID)] = []
    private var nextRead: Millis = 0
    private var outbox: [Output] = []
    /// Location channels joined: geohash → our identity there.
    private var channels: [String: Secp256k1.PrivateKey] = [:]
    private var seenChannelEvents = BoundedSet<String>(capacity: 10_000)
    /// The mesh bridge's cells followed (empty: none).
    public private(set) var bridgeCells: [String] = []
    /// The recipient tags whose courier drops are followed (empty: none).
    public private(set) var dropTags: [String] = []
    private var channelBudget: TokenBucket

    /// `opened`: the IDs of wraps taken before (the relays' lookback returns them again).
    public init(key: Secp256k1.PrivateKey, meshPeerID: PeerID, configuration: Configuration = Configuration(),
                subscription: String = "starling-dm", opened: [String] = []) {
        self.key = key
        self.publicKeyHex = key.publicKey.hexString
        self.meshPeerID = meshPeerID
        self.configuration = configuration
        self.subscription = subscription
        self.seenWraps = BoundedSet(capacity: configuration.dedupCapacity)
        for id in opened.suffix(configuration.dedupCapacity) { _ = seenWraps.insert(id) }
        self.openBudget = TokenBucket(perMinute: configuration.opensPerMinute)
        self.channelBudget = TokenBucket(perMinute: configuration.channelEventsPerMinute)
    }

    public mutating func takeOutputs() -> [Output] {
        defer { outbox = [] }
        return outbox
    }

    // MARK: Contacts

    /// Makes `peer` reachable through its Nostr key (x-only, 32 bytes), or
    /// not (nil). A key another contact holds moves to this one.
    public mutating func setContact(_ peer: PeerID, publicKey: [UInt8]?, variant: GiftWrap.Variant = .bitchat) {
        if let old = contacts.removeValue(forKey: peer) { byKey[old.publicKey] = nil }
        guard let publicKey, publicKey.count == 32 else { return }
        let hex = publicKey.hexString
        if let other = byKey[hex] { contacts[other] = nil }
        guard contacts.count < configuration.maxContacts else { return }
        contacts[peer] = Contact(publicKey: hex, variant: variant)
        byKey[hex] = peer
    }

    public func contact(_ peer: PeerID) -> Contact? { contacts[peer] }
    public var contactCount: Int { contacts.count }
    public var connectedRelays: Set<String> { relays }

    // MARK: Relays

    /// A relay's WebSocket is open: subscribe to our gift wraps there, and
    /// send it what waited for a relay.
    public mutating func relayUp(_ relay: String, now: Millis) {
        guard relays.insert(relay).inserted else { return }
        let since = Int64(wall(now) / 1000) - configuration.lookback
        outbox.append(.send(NostrClientMessage.request(subscription: subscription,
                                                       filters: [.giftWraps(for: publicKeyHex, since: since)]).json, relay: relay))
        for (geohash, _) in channels.sorted(by: { $0.key < $1.key }) {
            outbox.append(.send(NostrClientMessage.request(subscription: "geo-" + geohash,
                                                           filters: [LocationChannel.filter(geohash: geohash, now: Int64(wall(now) / 1000))]).json,
                                relay: relay))
        }
        if !bridgeCells.isEmpty {
            outbox.append(.send(bridgeRequest(now: now),
                                relay: relay))
        }
        if !dropTags.isEmpty {
            outbox.append(.send(NostrClientMessage.request(subscription: "drops", filters: [CourierDrop.filter(tags: dropTags, now: Int64(wall(now) / 1000))]).json,
                                relay: relay))
        }
        let waiting = queued
        queued = []
        for item in waiting { publish(item.event, ticket: item.ticket, now: now) }
    }

    /// Follows courier drops (kind 1401) for these recipient tags (hex) on
    /// every relay, the last 24 hours; none: the subscription closes.
    public mutating func followDrops(tags: [String], now: Millis) {
        dropTags = tags
        let message = tags.isEmpty ? NostrClientMessage.close(subscription: "drops")
            : NostrClientMessage.request(subscription: "drops", filters: [CourierDrop.filter(tags: tags, now: Int64(wall(now) / 1000))])
        for relay in relays.sorted() { outbox.append(.send(message.json, relay: relay)) }
    }

    /// The bridge's subscription: messages and presence on its cells, the
    /// last 15 minutes; board events, the last 7 days.
    private func bridgeRequest(now: Millis) -> String {
        let seconds = Int64(wall(now) / 1000)
        return NostrClientMessage.request(subscription: "bridge", filters: [MeshBridge.filter(cells: bridgeCells, now: seconds),
                                                                            MeshBridge.boardFilter(cells: bridgeCells, now: seconds)]).json
    }

    /// Follows a mesh bridge's cells (its own and its ring) on every relay:
    /// messages and presence tagged `#r`, the last 15 minutes, and board
    /// events tagged `#r`, the last 7 days.
    public mutating func followBridge(cells: [String], now: Millis) {
        bridgeCells = cells
        let req = bridgeRequest(now: now)
        for relay in relays.sorted() { outbox.append(.send(req, relay: relay)) }
    }

    /// A relay's connection ended. What was sent to it and not confirmed, with
    /// no other relay still connected that was sent it too, waits for the next
    /// relay up, as the same event: a relay that did store it answers
    /// "duplicate", and the reader opens one wrap once.
    public mutating func relayDown(_ relay: String, now: Millis) {
        relays.remove(relay)
        for (id, entry) in inFlight.sorted(by: { ($0.value.at, $0.key) < ($1.value.at, $1.key) }) where entry.relays.contains(relay) {
            var left = entry
            left.relays.remove(relay)
            if !left.relays.isDisjoint(with: relays) {
                inFlight[id] = left
                continue
            }
            inFlight[id] = nil
            statistics.requeued += 1
            publish(entry.event, ticket: entry.ticket, now: now)
        }
    }

    /// A text frame from a relay.
    public mutating func receive(_ text: String, from relay: String, now: Millis) {
        let message: NostrRelayMessage
        switch Result(catching: { () throws(NostrRelayMessage.Error) -> NostrRelayMessage in try NostrRelayMessage.decode(text) }) {
        case let .success(m): message = m
        case let .failure(e):
            statistics.malformed += 1
            outbox.append(.rejected("\(relay): \(e)"))
            return
        }
        switch message {
        case let .event(sub, event) where sub == subscription:
            open(event, relay: relay, now: now)
        case let .event(sub, event) where sub.hasPrefix("geo-") && channels[String(sub.dropFirst(4))] != nil:
            channelEvent(event, geohash: String(sub.dropFirst(4)), now: now)
        case let .event("bridge", event) where !bridgeCells.isEmpty:
            // Copies from several relays are one: the bridge sees each event once.
            guard seenChannelEvents.insert(event.id) else {
                statistics.duplicates += 1
                return
            }
            outbox.append(.bridgeEvent(event))
        case let .event("drops", event) where !dropTags.isEmpty:
            // Not deduplicated here: one for nobody here yet must be read again when its
            // recipient comes (the node remembers the drops it took).
            outbox.append(.dropEvent(event))
        case let .ok(id, accepted, why):
            guard var entry = inFlight[id] else { return }
            if accepted {
                inFlight[id] = nil
                statistics.accepted += 1
                outbox.append(.accepted(ticket: entry.ticket, relay: relay))
            } else {
                entry.relays.remove(relay)
                inFlight[id] = entry.relays.isEmpty ? nil : entry
                if entry.relays.isEmpty { fail(entry.ticket, "every relay refused it (\(relay): \(why.prefix(120)))") }
            }
        case let .closed(sub, why) where sub == subscription:
            outbox.append(.rejected("\(relay) closed our subscription: \(why.prefix(120))"))
        default:
            break // EOSE, NOTICE, AUTH, other subscriptions: nothing to do
        }
    }

    // MARK: Sending

    public enum SendError: Error, Hashable, Sendable, CustomStringConvertible {
        case notAContact(PeerID)
        case notCarried(String)
        case encoding(String)

        public var description: String {
            switch self {
            case let .notAContact(p): "\(p) has no Nostr key here (no favourite notification with one)"
            case let .notCarried(what): "\(what) is not carried over Nostr"
            case let .encoding(why): "could not wrap the message: \(why)"
            }
        }
    }

    /// Wraps `payload` for `peer` and publishes it to every connected relay
    /// (or queues it until one connects). `ticket` names it in the outputs
    /// that follow. Read receipts are paced.
    public mutating func send(_ payload: NoisePayload, to peer: PeerID, ticket: String, now: Millis) throws(SendError) {
        guard contacts[peer] != nil else { throw .notAContact(peer) }
        if case .readReceipt = payload {
            guard now >= nextRead, reads.isEmpty else {
                if reads.count >= configuration.maxQueued { reads.removeFirst() }
                reads.append((payload, peer))
                return
            }
            nextRead = now + configuration.readReceiptInterval
        }
        try wrapAndPublish(payload, to: peer, ticket: ticket, now: now)
    }

    private mutating func wrapAndPublish(_ payload: NoisePayload, to peer: PeerID, ticket: String, now: Millis) throws(SendError) {
        guard let contact = contacts[peer] else { throw .notAContact(peer) }
        let content: String
        switch (payload, contact.variant) {
        case (.privateMessage, .bitchat), (.delivered, .bitchat), (.readReceipt, .bitchat):
            do {
                content = try EmbeddedPacket.encode(.init(senderID: meshPeerID, recipientID: peer, timestamp: wall(now), payload: payload))
            } catch { throw .encoding("\(error)") }
        case let (.privateMessage(m), .standard):
            content = m.content // NIP-17: the text itself; no receipts
        case (.delivered, .standard), (.readReceipt, .standard):
            return
        default:
            throw .notCarried("payload type 0x\(String(payload.typeByte, radix: 16))")
        }
        let wrap: NostrEvent
        switch Result(catching: { () throws(GiftWrap.Error) -> NostrEvent in
            try GiftWrap.wrap(content, from: key, to: contact.publicKey, variant: contact.variant, now: Int64(wall(now) / 1000))
        }) {
        case let .success(w): wrap = w
        case let .failure(e): throw .encoding("\(e)")
        }
        publish(wrap, ticket: ticket, now: now)
    }

    private mutating func publish(_ event: NostrEvent, ticket: String, now: Millis) {
        guard !relays.isEmpty else {
            if queued.count >= configuration.maxQueued {
                let dropped = queued.removeFirst()
                fail(dropped.ticket, "too many messages waiting for a relay (\(configuration.maxQueued))")
            }
            queued.append((event, ticket, now))
            return
        }
        statistics.published += 1
        inFlight[event.id] = (event, ticket, now, relays)
        let text = NostrClientMessage.event(event).json
        for relay in relays.sorted() { outbox.append(.send(text, relay: relay)) }
    }

    private mutating func fail(_ ticket: String, _ reason: String) {
        statistics.failed += 1
        outbox.append(.failed(ticket: ticket, reason: reason))
    }

    // MARK: Location channels

    public enum ChannelError: Error, Hashable, Sendable, CustomStringConvertible {
        case tooMany(Int)
        case notJoined(String)
        case channel(LocationChannel.Error)

        public var description: String {
            switch self {
            case let .tooMany(n): "at most \(n) location channels at once (/leave one)"
            case let .notJoined(g): "not in #\(g) (/join #\(g) first)"
            case let .channel(e): "\(e)"
            }
        }
    }

    public var joinedChannels: [String] { channels.keys.sorted() }

    /// Joins a location channel with our identity there: subscribes on every
    /// relay, and says we are present.
    public mutating func join(_ geohash: String, key: Secp256k1.PrivateKey, now: Millis) throws(ChannelError) {
        let g: String
        do { g = try LocationChannel.geohash(geohash) } catch { throw .channel(error) }
        guard channels[g] == nil else { return }
        guard channels.count < configuration.maxChannels else { throw .tooMany(configuration.maxChannels) }
        channels[g] = key
        let req = NostrClientMessage.request(subscription: "geo-" + g, filters: [LocationChannel.filter(geohash: g, now: Int64(wall(now) / 1000))]).json
        for relay in relays.sorted() { outbox.append(.send(req, relay: relay)) }
        do { publish(try LocationChannel.presence(geohash: g, key: key, now: Int64(wall(now) / 1000)), ticket: "", now: now) } catch {
            outbox.append(.rejected("our presence in \(g) could not be signed (\(error)): the channel is joined without it"))
        }
    }

    public mutating func leave(_ geohash: String) {
        guard let g = try? LocationChannel.geohash(geohash), channels.removeValue(forKey: g) != nil else { return }
        for relay in relays.sorted() { outbox.append(.send(NostrClientMessage.close(subscription: "geo-" + g).json, relay: relay)) }
    }

    /// Says `text` in a joined channel, as our identity there.
    public mutating func sendChannel(_ text: String, nickname: String?, geohash: String, ticket: String, now: Millis) throws(ChannelError) {
        guard let g = try? LocationChannel.geohash(geohash), let key = channels[g] else { throw .notJoined(geohash) }
        let event: NostrEvent
        do { event = try LocationChannel.message(text, nickname: nickname, geohash: g, key: key, now: Int64(wall(now) / 1000)) } catch {
            throw .channel(error)
        }
        _ = seenChannelEvents.insert(event.id) // our own, when a relay sends it back
        publish(event, ticket: ticket, now: now)
    }

    /// An event its author signed (a deposit our gateway took): published as it
    /// is, with the same retries and answers (`ticket`) as our own; not shown
    /// again when a relay sends it back.
    public mutating func publishSigned(_ event: NostrEvent, ticket: String, now: Millis) {
        _ = seenChannelEvents.insert(event.id)
        publish(event, ticket: ticket, now: now)
    }

    private mutating func channelEvent(_ event: NostrEvent, geohash: String, now: Millis) {
        guard !seenChannelEvents.contains(event.id) else {
            statistics.duplicates += 1
            return
        }
        let seconds = Int64(wall(now) / 1000)
        guard [LocationChannel.messageKind, LocationChannel.presenceKind].contains(event.kind),
              event.tags.contains(["g", geohash]),
              event.created_at >= seconds - LocationChannel.lookback - configuration.skew, event.created_at <= seconds + configuration.skew,
              event.content.utf8.count <= LocationChannel.maxText else {
            statistics.malformed += 1
            return
        }
        guard channelBudget.take(now: now) else {
            statistics.overBudget += 1
            return
        }
        guard (try? event.verify()) != nil else {
            statistics.undecryptable += 1
            return
        }
        _ = seenChannelEvents.insert(event.id)
        if channels[geohash].map({ $0.publicKey.hexString == event.pubkey }) == true { return } // ours, echoed
        if event.kind == LocationChannel.presenceKind {
            outbox.append(.presence(geohash: geohash, publicKey: event.pubkey))
        } else {
            let nickname = event.tags.first { $0.count >= 2 && $0[0] == "n" }.map { String($0[1].prefix(64)) }
            outbox.append(.channelMessage(ChannelMessage(geohash: geohash, publicKey: event.pubkey, nickname: nickname, text: event.content,
                                                         createdAt: event.created_at, eventID: event.id, event: event)))
        }
    }

    // MARK: Time

    public var nextDeadline: Millis? {
        var next: Millis? = inFlight.values.map { $0.at + configuration.acceptTimeout }.min()
        if let first = queued.first { next = min(next ?? .max, first.at + configuration.noRelayTimeout) }
        if !reads.isEmpty { next = min(next ?? .max, nextRead) }
        return next
    }

    public mutating func tick(now: Millis) {
        for (id, entry) in inFlight where now >= entry.at + configuration.acceptTimeout {
            inFlight[id] = nil
            fail(entry.ticket, "no relay confirmed it within \(configuration.acceptTimeout / 1000) s")
        }
        while let first = queued.first, now >= first.at + configuration.noRelayTimeout {
            queued.removeFirst()
            fail(first.ticket, "no relay reachable for \(configuration.noRelayTimeout / 1000) s (is the proxy up?)")
        }
        if !reads.isEmpty, now >= nextRead {
            let (payload, peer) = reads.removeFirst()
            // A read receipt that cannot go (the contact gone meanwhile) is said, not retried: it is a courtesy.
            do { try wrapAndPublish(payload, to: peer, ticket: "", now: now) } catch {
                outbox.append(.rejected("a read receipt to \(peer) could not be sent: \(error)"))
            }
            nextRead = now + configuration.readReceiptInterval
        }
    }

    // MARK: Receiving

    /// Someone who is not a contact wrote: a request, if it is text of a sane size and
    /// age (the rest is refused and kept as opened, never shown).
    private mutating func stranger(_ opened: GiftWrap.Opened, wrapID: String, now seconds: Int64) {
        statistics.strangers += 1
        let npub = Bech32.npub((try? [UInt8](hex: opened.sender)) ?? [])
        let age = seconds - opened.createdAt
        var text: String?
        if !opened.content.hasPrefix(EmbeddedPacket.prefix) {
            text = opened.content // standard NIP-17 (Amethyst, 0xchat …)
        } else if case let .privateMessage(m)?? = try? EmbeddedPacket.decode(opened.content)?.payload {
            text = m.content // a bitchat app's private message
        }
        guard let text, !text.isEmpty, text.utf8.count <= Self.maxRequestText, age >= -configuration.skew, age <= configuration.rumorMaxAge else {
            outbox.append(.rejected("a private message from \(npub), not a contact, that is no text to show (or too long, or too old): refused"))
            outbox.append(.opened(wrapID: wrapID))
            return
        }
        outbox.append(.request(StrangerMessage(publicKey: opened.sender, text: text, createdAt: opened.createdAt, wrapID: wrapID)))
    }

    private mutating func open(_ wrap: NostrEvent, relay: String, now: Millis) {
        statistics.received += 1
        // The cheap checks first; the ID is remembered only once the signature
        // holds, so a forged copy cannot shadow the real one.
        guard !seenWraps.contains(wrap.id) else {
            statistics.duplicates += 1
            return
        }
        let seconds = Int64(wall(now) / 1000)
        guard wrap.created_at >= seconds - configuration.lookback, wrap.created_at <= seconds + configuration.skew else {
            statistics.stale += 1
            return
        }
        guard openBudget.take(now: now) else {
            statistics.overBudget += 1
            return
        }
        let opened: GiftWrap.Opened
        switch Result(catching: { () throws(GiftWrap.Error) -> GiftWrap.Opened in try GiftWrap.open(wrap, with: key) }) {
        case let .success(o): opened = o
        case let .failure(e):
            statistics.undecryptable += 1
            outbox.append(.rejected("gift wrap \(wrap.id.prefix(16)) from \(relay): \(e)"))
            return
        }
        _ = seenWraps.insert(wrap.id)
        guard let peer = byKey[opened.sender] else {
            stranger(opened, wrapID: wrap.id, now: seconds)
            return
        }
        // Kept after what it carried is out (a crash in between shows it twice, never loses it).
        defer { outbox.append(.opened(wrapID: wrap.id)) }
        let age = seconds - opened.createdAt
        guard age >= -configuration.skew, age <= configuration.rumorMaxAge else {
            statistics.stale += 1
            outbox.append(.rejected("a private message from \(peer) stamped \(age) s ago: refused"))
            return
        }
        let payload: NoisePayload
        do {
            if let embedded = try EmbeddedPacket.decode(opened.content) {
                payload = embedded.payload
            } else {
                // Plain text (standard NIP-17, or an app's plain message): its
                // wrap's ID names it, for receipts and duplicates.
                payload = .privateMessage(PrivateMessage(messageID: wrap.id, content: opened.content))
            }
        } catch {
            statistics.malformed += 1
            outbox.append(.rejected("a private message from \(peer) does not decode: \(error)"))
            return
        }
        switch payload {
        case .privateMessage, .delivered, .readReceipt:
            outbox.append(.received(payload, from: peer, timestamp: opened.createdAt))
        default:
            statistics.malformed += 1
            outbox.append(.rejected("payload type 0x\(String(payload.typeByte, radix: 16)) from \(peer) over Nostr: not carried"))
        }
    }
}
