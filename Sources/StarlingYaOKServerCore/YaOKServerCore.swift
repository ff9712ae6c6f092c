import Crypto
import StarlingWire

/// A message the relay holds for its recipient until an ACK.
public struct QueuedMessage: Hashable, Sendable {
    public var messageID: UserID
    public var sender: UserID
    public var recipient: UserID
    /// The sealed message, as the sender sent it.
    public var payload: [UInt8]
    /// When the server took it (Unix ms).
    public var receivedAt: UInt64

    public init(messageID: UserID, sender: UserID, recipient: UserID, payload: [UInt8], receivedAt: UInt64) {
        self.messageID = messageID
        self.sender = sender
        self.recipient = recipient
        self.payload = payload
        self.receivedAt = receivedAt
    }
}

/// What the store did with a message.
public enum EnqueueOutcome: Hashable, Sendable {
    /// Committed (or held already: a sender's retry is not stored twice).
    case stored
    /// Another sender's message to this recipient is queued under this
    /// message ID: not stored, and never answered QUEUED (it would be lost).
    case messageIDTaken
    /// The same sender's message under this ID is queued with other bytes:
    /// the first is kept, this one refused (answering QUEUED would drop it unread).
    case messageIDReused
    case recipientQueueFull
    case serverFull
    case unknownRecipient
}

/// The queue limits (seed 002 §5.2: 1,000 messages a user, 7 days, 100,000 in all).
public struct QueueLimits: Hashable, Sendable {
    public var perUser = 1_000
    public var total = 100_000
    public var maxAge: UInt64 = 7 * 24 * 3_600_000
    public init() {}
}

/// The Ya OK server's protocol without I/O: packets in with their source
/// address and the time; packets out, and requests to the store, whose
/// results come back through the completion calls. The runtime
/// (`YaOKServer`) owns the socket and the store; tests drive this directly.
///
/// Bounds: `maxSessions` sessions (the least recently heard goes first, and
/// any goes after `sessionTimeout` without a packet), `maxBuckets` rate
/// buckets (the oldest go first), the reassembler's bounds; each packet costs
/// at most one Ed25519 verification (a REGISTER, after its rate check).
public struct YaOKServerCore<Address: Hashable & Sendable>: Sendable {
    public struct Configuration: Sendable {
        public var limits = QueueLimits()
        /// How far a REGISTER's timestamp may be from the server's clock.
        public var registrationWindow: UInt64 = 120_000
        /// A session without a packet for this long ends (seed: 5 minutes).
        public var sessionTimeout: UInt64 = 300_000
        /// A session that sent nothing for this long after a MSG was pushed to
        /// it ends: its client is gone (a one-shot sender that never said BYE,
        /// a phone that lost its network). A live client PINGs every 60 s and
        /// ACKs what it stored. What was pushed stays queued for its next POLL.
        public var pushTimeout: UInt64 = 75_000
        /// Messages a POLL returns at most (seed: 10).
        public var pollBatch = 10
        public var maxSessions = 100_000
        /// Packets a second from one address, and the burst it may save up.
        public var perAddressRate: Double = 500
        public var perAddressBurst: Double = 1_000
        /// MSGs a second from one user, and the burst.
        public var perUserRate: Double = 100
        public var perUserBurst: Double = 500
        public var maxBuckets = 65_536
        /// REGISTERs a second the server takes (each costs an Ed25519 check and a write).
        public var registrationsPerSecond: Double = 200
        /// The courier mailbox's drops (a tag's share and the total).
        public var dropLimits = DropLimits()
        /// A proven address stays proven this long after its last packet; a
        /// cookie must come back within it.
        public var dropProofTimeout: UInt64 = 300_000
        /// Addresses with a cookie or a proof at most (past it, the lapsed go;
        /// if none lapsed, the table starts afresh and clients say DROP_HELLO again).
        public var maxDropAddresses = 65_536
        /// DROPs a second from one address, and the burst.
        public var dropRate: Double = 2
        public var dropBurst: Double = 20
        /// DROPs a second the server takes in all (each is a synced write), and the burst.
        public var dropsPerSecond: Double = 50
        public var dropsBurst: Double = 100
        /// DROP_FETCHes a second from one address (the pages of one fetch
        /// included), and the burst.
        public var dropFetchRate: Double = 2
        public var dropFetchBurst: Double = 20
        /// DROPs a DROP_FETCH's answer holds at most.
        public var dropFetchBatch = 10
        /// How far ahead a drop's expiry may be (the envelope's day, and clocks apart).
        public var dropMaxLifetime: UInt64 = CourierEnvelope.maxLifetime + 300_000
        public init() {}
    }

    public enum Step: Sendable {
        case send([UInt8], to: Address)
        /// Check a REGISTER against the pinned key (``YaOKServerCore/check(_:pinned:now:window:)``), then pin or renew it.
        case register(ServerRegistration, from: Address)
        case enqueue(QueuedMessage, from: Address)
        case fetch(UserID, limit: Int, for: Address)
        case remove(UserID, messageID: UserID)
        /// Keep a drop (in the next group commit, ``ServerStore/commit(_:)``), then ``dropPut(_:_:from:)``.
        case putDrop(StoredDrop, from: Address)
        /// Read drops (``ServerStore/drops(for:after:notExpiredAt:limit:)``), then ``dropsFetched(_:after:for:)``.
        case fetchDrops(tags: [Bytes16], after: UInt64, limit: Int, for: Address)
    }

    /// What the server counts (the metrics endpoint shows them).
    public struct Counters: Sendable {
        public var received = 0
        public var sent = 0
        public var messagesIn = 0
        public var messagesOut = 0
        public var rejections: [ServerRejection: Int] = [:]
        /// Sessions ended because a push went unanswered (``Configuration/pushTimeout``).
        public var deadPushes = 0
        public var undecodable = 0
        /// Datagrams dropped unanswered by the per-address limit (a limit that answers REJECTED 08 counts as a rejection).
        public var rateLimited = 0
        /// Drops committed new, drops sent in answers to DROP_FETCH.
        public var dropsIn = 0
        public var dropsOut = 0
    }

    /// An address's standing with the courier mailbox: the cookie it was
    /// given, and since when it is proven (it sent the cookie back).
    @usableFromInline struct DropProof: Sendable {
        @usableFromInline var cookie: Bytes16
        @usableFromInline var issuedAt: UInt64
        @usableFromInline var proven: Bool
        @usableFromInline var lastSeen: UInt64
        @usableFromInline init(cookie: Bytes16, issuedAt: UInt64) {
            self.cookie = cookie
            self.issuedAt = issuedAt
            proven = false
            lastSeen = issuedAt
        }
    }

    @usableFromInline struct Session: Sendable {
        @usableFromInline var user: UserID
        @usableFromInline var address: Address
        @usableFromInline var lastSeen: UInt64
        /// Since when a MSG pushed to this session has had no packet after it.
        @usableFromInline var pushedSince: UInt64?
        @usableFromInline init(user: UserID, address: Address, lastSeen: UInt64) {
            self.user = user
            self.address = address
            self.lastSeen = lastSeen
        }
    }

    @usableFromInline struct Bucket: Sendable {
        @usableFromInline var tokens: Double
        @usableFromInline var at: UInt64
        @usableFromInline init(tokens: Double, at: UInt64) {
            self.tokens = tokens
            self.at = at
        }
    }

    public let configuration: Configuration
    @usableFromInline var sessions: [ServerToken: Session] = [:]
    @usableFromInline var tokenOf: [UserID: ServerToken] = [:]
    @usableFromInline var addressBuckets: [Address: Bucket] = [:]
    @usableFromInline var userBuckets: [UserID: Bucket] = [:]
    @usableFromInline var reassembler = ServerReassembler<Address>()
    @usableFromInline var sessionAddresses: [Address: ServerToken] = [:]
    @usableFromInline var registerBuckets: [Address: Bucket] = [:]
    @usableFromInline var globalRegister: [Int: Bucket] = [:]
    /// The last REGISTER timestamp accepted per user (a replay is refused
    /// before it costs a store read); as many as there are sessions.
    @usableFromInline var lastRegistration: [UserID: UInt64] = [:]
    @usableFromInline var transfer: UInt32 = 0
    @usableFromInline var dropProofs: [Address: DropProof] = [:]
    /// Chunks from proven addresses without a session (a large DROP): apart
    /// from the sessions' reassembler, so they cannot crowd out MSGs.
    @usableFromInline var dropReassembler: ServerReassembler<Address> = {
        var r = ServerReassembler<Address>()
        r.maxPerSource = 2
        r.maxInProgress = 64
        return r
    }()
    @usableFromInline var dropBuckets: [Address: Bucket] = [:]
    @usableFromInline var dropFetchBuckets: [Address: Bucket] = [:]
    @usableFromInline var dropsInAll: [Int: Bucket] = [:]
    @usableFromInline var _counters = Counters()
    public var counters: Counters { _counters }

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
        transfer = UInt32.random(in: 0...UInt32.max)
    }

    public var sessionCount: Int { sessions.count }

    // MARK: Packets in

    @inlinable
    public mutating func receive(_ datagram: [UInt8], from address: Address, now: UInt64) -> [Step] {
        _counters.received += 1
        guard Self.take(&addressBuckets, address, rate: configuration.perAddressRate, burst: configuration.perAddressBurst, now: now,
                       cap: configuration.maxBuckets) else {
            _counters.rateLimited += 1
            return [] // a flood gets no answers (answers would amplify it)
        }
        let packet: ServerPacket
        do {
            packet = try ServerPacket.decode(datagram, .toServer)
        } catch {
            _counters.undecodable += 1
            return []
        }
        switch packet {
        case let .chunk(c):
            // Only a registered client sends packets that need chunks (MSGs):
            // chunks from elsewhere cannot crowd out real ones. A proven address
            // may send a large DROP, reassembled apart.
            guard sessionAddresses[address] != nil else {
                guard isProven(address, now: now), let whole = dropReassembler.add(c, from: address, now: now) else {
                    if !isProven(address, now: now) { _counters.undecodable += 1 }
                    return []
                }
                guard let inner = try? ServerPacket.decode(whole, .toServer), case .drop = inner else {
                    _counters.undecodable += 1
                    return []
                }
                return handle(inner, from: address, now: now)
            }
            guard let whole = reassembler.add(c, from: address, now: now) else { return [] }
            guard let inner = try? ServerPacket.decode(whole, .toServer) else {
                _counters.undecodable += 1
                return []
            }
            if case .chunk = inner { return [] } // no chunks in chunks
            return handle(inner, from: address, now: now)
        default:
            return handle(packet, from: address, now: now)
        }
    }

    @inlinable
    mutating func handle(_ packet: ServerPacket, from address: Address, now: UInt64) -> [Step] {
        switch packet {
        case let .register(r):
            let skew = now >= r.timestamp ? now - r.timestamp : r.timestamp - now
            guard skew <= configuration.registrationWindow else { return reject(.staleTimestamp, nil, to: address) }
            // REGISTERs cost a verification and a store write: a few a second for
            // one user ID, a bounded number for the server (a flood waits its turn).
            guard Self.take(&registerBuckets, address, rate: 1, burst: 5, now: now, cap: configuration.maxBuckets),
                  Self.take(&globalRegister, 0, rate: configuration.registrationsPerSecond,
                            burst: configuration.registrationsPerSecond * 2, now: now, cap: 1) else {
                return reject(.rateLimited, nil, to: address)
            }
            if let last = lastRegistration[r.userID], r.timestamp <= last { return reject(.replayed, nil, to: address) }
            return [.register(r, from: address)]
        case let .poll(token):
            guard let user = session(token, address, now) else { return reject(.unknownSession, nil, to: address) }
            // One more than the batch: whether more wait is said in POLL_END.
            return [.fetch(user, limit: configuration.pollBatch + 1, for: address)]
        case let .ping(token):
            guard session(token, address, now) != nil else { return reject(.unknownSession, nil, to: address) }
            return send(.pong, to: address)
        case let .bye(token):
            if sessions[token]?.address == address { endSession(token) }
            return []
        case let .ack(token, id):
            guard let user = session(token, address, now) else { return reject(.unknownSession, id, to: address) }
            return [.remove(user, messageID: id)]
        case let .message(sender, recipient, payload, token):
            // Every REJECTED names the message when its ID could be read.
            let sealed = try? SealedMessageBytes.route(payload)
            guard let token, let user = session(token, address, now) else { return reject(.unknownSession, sealed?.messageID, to: address) }
            guard user == sender else { return reject(.senderMismatch, sealed?.messageID, to: address) }
            guard let sealed, sealed.sender == sender, sealed.recipient == recipient else {
                return reject(.malformed, sealed?.messageID, to: address)
            }
            guard Self.take(&userBuckets, sender, rate: configuration.perUserRate, burst: configuration.perUserBurst, now: now,
                           cap: configuration.maxBuckets) else {
                return reject(.rateLimited, sealed.messageID, to: address)
            }
            _counters.messagesIn += 1
            return [.enqueue(QueuedMessage(messageID: sealed.messageID, sender: sender, recipient: recipient,
                                                payload: payload, receivedAt: now), from: address)]
        case let .dropHello(cookie):
            return dropHello(cookie, from: address, now: now)
        case let .drop(cookie, bytes):
            return drop(bytes, cookie: cookie, from: address, now: now)
        case let .dropFetch(cookie, after, tags):
            guard isProven(address, cookie: cookie, now: now) else { return reject(.unprovenAddress, nil, to: address) }
            guard Self.take(&dropFetchBuckets, address, rate: configuration.dropFetchRate, burst: configuration.dropFetchBurst, now: now,
                           cap: configuration.maxBuckets) else {
                return reject(.rateLimited, nil, to: address)
            }
            // One more than the batch: whether more wait is said in DROP_END.
            return [.fetchDrops(tags: Array(Set(tags)), after: after, limit: configuration.dropFetchBatch + 1, for: address)]
        default:
            return [] // server-bound decoding admits nothing else
        }
    }

    // MARK: The courier mailbox

    /// Whether `address` sent back its cookie and has not been quiet past
    /// the proof's timeout (each call from it keeps it); with `cookie`, also
    /// that the packet carries it (a forged source does not know it).
    @usableFromInline
    mutating func isProven(_ address: Address, cookie: Bytes16? = nil, now: UInt64) -> Bool {
        guard var p = dropProofs[address], p.proven, now < p.lastSeen + configuration.dropProofTimeout,
              cookie == nil || cookie == p.cookie else { return false }
        p.lastSeen = now
        dropProofs[address] = p
        return true
    }

    /// DROP_HELLO: its cookie back (within the timeout) proves the address;
    /// another gets the address's cookie again (with its standing: a forged
    /// hello neither replaces a cookie nor ends a proof), and an address
    /// without one (or whose cookie lapsed) a fresh cookie. The answer (23
    /// bytes) is smaller than the question (38), so a forged source gains nothing.
    @usableFromInline
    mutating func dropHello(_ cookie: Bytes16, from address: Address, now: UInt64) -> [Step] {
        if var p = dropProofs[address], now < max(p.issuedAt, p.lastSeen) + configuration.dropProofTimeout {
            guard p.cookie == cookie else { return send(.dropCookie(cookie: p.cookie, ready: p.proven), to: address) }
            p.proven = true
            p.lastSeen = now
            dropProofs[address] = p
            return send(.dropCookie(cookie: cookie, ready: true), to: address)
        }
        if dropProofs[address] == nil, dropProofs.count >= configuration.maxDropAddresses {
            // The lapsed go; if most are live (a flood of new addresses), all go, so that
            // this costs O(1) a hello amortised (clients then say DROP_HELLO again).
            dropProofs = dropProofs.filter { now < $0.value.lastSeen + configuration.dropProofTimeout }
            if dropProofs.count >= configuration.maxDropAddresses * 3 / 4 { dropProofs.removeAll(keepingCapacity: true) }
        }
        var rng = SystemRandomNumberGenerator()
        let fresh = Bytes16(high: rng.next(), low: rng.next())
        dropProofs[address] = DropProof(cookie: fresh, issuedAt: now)
        return send(.dropCookie(cookie: fresh, ready: false), to: address)
    }

    /// A DROP from a proven address: an envelope that reads, not expired,
    /// expiring within a day; kept under its recipient tag with copies 1.
    @usableFromInline
    mutating func drop(_ bytes: [UInt8], cookie: Bytes16, from address: Address, now: UInt64) -> [Step] {
        guard isProven(address, cookie: cookie, now: now) else { return reject(.unprovenAddress, nil, to: address) }
        guard var envelope = try? CourierEnvelope(decoding: bytes[...]), let tag = Bytes16(envelope.recipientTag) else {
            return reject(.malformed, nil, to: address)
        }
        let id = CourierMailbox.dropID(of: envelope)
        guard Self.take(&dropBuckets, address, rate: configuration.dropRate, burst: configuration.dropBurst, now: now,
                       cap: configuration.maxBuckets),
              Self.take(&dropsInAll, 0, rate: configuration.dropsPerSecond, burst: configuration.dropsBurst, now: now, cap: 1) else {
            return reject(.rateLimited, UserID(id), to: address)
        }
        guard !envelope.isExpired(at: now), envelope.expiry <= now + configuration.dropMaxLifetime else {
            return reject(.dropExpiry, UserID(id), to: address)
        }
        envelope.copies = 1
        guard let canonical = try? envelope.encoded() else { return reject(.malformed, UserID(id), to: address) }
        return [.putDrop(StoredDrop(dropID: id, tag: tag, envelope: canonical, expiresAt: envelope.expiry, receivedAt: now), from: address)]
    }

    /// A DROP's fate in the store: DROP_TAKEN.
    public mutating func dropPut(_ drop: StoredDrop, _ outcome: DropOutcome, from address: Address) -> [Step] {
        guard case let .stored(new) = outcome else { return [] }
        if new { _counters.dropsIn += 1 }
        return send(.dropTaken(dropID: drop.dropID, new: new), to: address)
    }

    /// A DROP the store could not keep: REJECTED 0C, and its sender retries.
    public mutating func dropStorageFailed(_ drop: StoredDrop, from address: Address) -> [Step] {
        reject(.storageFailed, UserID(drop.dropID), to: address)
    }

    /// A DROP_FETCH's answer: up to the batch as DROPs (chunked when large),
    /// then DROP_END (the store is asked for one more than the batch).
    public mutating func dropsFetched(_ drops: [StoredDrop], after: UInt64, for address: Address) -> [Step] {
        let batch = drops.prefix(configuration.dropFetchBatch)
        _counters.dropsOut += batch.count
        return batch.flatMap { send(.dropDelivery(sequence: $0.sequence, envelope: $0.envelope), to: address) }
            + send(.dropEnd(count: UInt8(clamping: batch.count), last: batch.last?.sequence ?? after, more: drops.count > batch.count), to: address)
    }

    /// Addresses with a cookie or a proof (for the metrics and the bounds tests).
    public var dropAddressCount: Int { dropProofs.count }

    // MARK: Store results in

    @inlinable
    mutating func endSession(_ token: ServerToken) {
        guard let s = sessions.removeValue(forKey: token) else { return }
        if tokenOf[s.user] == token { tokenOf[s.user] = nil }
        if sessionAddresses[s.address] == token { sessionAddresses[s.address] = nil }
    }

    /// A REGISTER's outcome (``check(_:pinned:now:window:)`` and the store's pin).
    @inlinable
    public mutating func registration(_ result: Result<UserID, ServerRejection>, from address: Address, now: UInt64,
                                      timestamp: UInt64? = nil) -> [Step] {
        if case let .success(user) = result, let timestamp {
            if lastRegistration.count >= configuration.maxSessions { lastRegistration.removeAll(keepingCapacity: true) }
            lastRegistration[user] = max(lastRegistration[user] ?? 0, timestamp)
        }
        switch result {
        case let .failure(why):
            return reject(why, nil, to: address)
        case let .success(user):
            if let old = tokenOf[user] { endSession(old) }
            if let old = sessionAddresses[address] { endSession(old) } // one session an address
            if sessions.count >= configuration.maxSessions,
               let oldest = sessions.min(by: { $0.value.lastSeen < $1.value.lastSeen }) {
                endSession(oldest.key)
            }
            let token = ServerToken.random()
            sessions[token] = Session(user: user, address: address, lastSeen: now)
            tokenOf[user] = token
            sessionAddresses[address] = token
            return send(.registered(token: token, serverTime: now), to: address)
        }
    }

    /// A message's fate in the store: QUEUED (after the commit) or REJECTED
    /// to its sender; an online recipient is sent it at once.
    @inlinable
    public mutating func enqueued(_ message: QueuedMessage, _ outcome: EnqueueOutcome, from address: Address) -> [Step] {
        switch outcome {
        case .stored:
            let online = tokenOf[message.recipient].flatMap { sessions[$0] }
            var steps = send(.queued(messageID: message.messageID, online: online != nil), to: address)
            if let online, let token = tokenOf[message.recipient] {
                if sessions[token]?.pushedSince == nil { sessions[token]?.pushedSince = message.receivedAt }
                _counters.messagesOut += 1
                steps += send(.message(sender: message.sender, recipient: message.recipient, payload: message.payload, token: nil),
                              to: online.address)
            }
            return steps
        case .recipientQueueFull: return reject(.recipientQueueFull, message.messageID, to: address)
        case .messageIDTaken: return reject(.messageIDTaken, message.messageID, to: address)
        case .messageIDReused: return reject(.messageIDReused, message.messageID, to: address)
        case .serverFull: return reject(.serverFull, message.messageID, to: address)
        case .unknownRecipient: return reject(.unknownRecipient, message.messageID, to: address)
        }
    }

    /// A storage failure: the sender is told, and retries.
    @inlinable
    public mutating func storageFailed(_ message: QueuedMessage, from address: Address) -> [Step] {
        reject(.storageFailed, message.messageID, to: address)
    }

    /// A POLL's answer: up to the batch as MSGs, then POLL_END with their IDs
    /// and whether more wait (the store is asked for one more than the
    /// batch); NO_MESSAGES when there are none.
    @inlinable
    public mutating func fetched(_ messages: [QueuedMessage], for address: Address) -> [Step] {
        guard !messages.isEmpty else { return send(.noMessages, to: address) }
        let batch = messages.prefix(min(configuration.pollBatch, ServerPacket.maxPollEnd))
        _counters.messagesOut += batch.count
        return batch.flatMap {
            send(.message(sender: $0.sender, recipient: $0.recipient, payload: $0.payload, token: nil), to: address)
        } + send(.pollEnd(messageIDs: batch.map(\.messageID), more: messages.count > batch.count), to: address)
    }

    /// An ACK removed `message` from its recipient's queue: its sender, when
    /// online, hears that it was taken.
    @inlinable
    public mutating func removed(_ message: QueuedMessage?) -> [Step] {
        guard let message, let sender = tokenOf[message.sender].flatMap({ sessions[$0] }) else { return [] }
        return send(.relayReceipt(messageID: message.messageID, by: message.recipient), to: sender.address)
    }

    /// Ends sessions that went quiet; drops stale partial packets.
    @inlinable
    public mutating func tick(now: UInt64) {
        for (token, s) in sessions {
            if now >= s.lastSeen + configuration.sessionTimeout {
                endSession(token)
            } else if let since = s.pushedSince, now >= since + configuration.pushTimeout {
                endSession(token)
                _counters.deadPushes += 1
            }
        }
        reassembler.expire(now: now)
        dropReassembler.expire(now: now)
        dropProofs = dropProofs.filter { now < $0.value.lastSeen + configuration.dropProofTimeout }
    }

    /// The user a token stands for (for tests and the metrics).
    public func user(of token: ServerToken) -> UserID? { sessions[token]?.user }

    // MARK: REGISTER's rules

    /// Checks a REGISTER against what the store holds for its user ID: the
    /// pinned key and the last accepted timestamp. The first registration
    /// must carry the key (then pinned); a later one may, if it is the same.
    /// Timestamps must grow: an older or equal one is a replay. Returns the
    /// key to pin (or keep).
    public static func check(_ r: ServerRegistration, pinned: (key: [UInt8], lastTimestamp: UInt64)?, now: UInt64,
                             window: UInt64) -> Result<[UInt8], ServerRejection> {
        let skew = now >= r.timestamp ? now - r.timestamp : r.timestamp - now
        guard skew <= window else { return .failure(.staleTimestamp) }
        let key: [UInt8]
        if let pinned {
            if let carried = r.publicKey, carried != pinned.key { return .failure(.keyMismatch) }
            key = pinned.key
        } else {
            guard let carried = r.publicKey else { return .failure(.unknownUser) }
            key = carried
        }
        guard let publicKey = try? Curve25519.Signing.PublicKey(rawRepresentation: key),
              publicKey.isValidSignature(r.signature, for: r.signedBytes()) else { return .failure(.badSignature) }
        if let pinned, r.timestamp <= pinned.lastTimestamp { return .failure(.replayed) }
        return .success(key)
    }

    // MARK: Helpers

    /// The token's user, when it comes from the address that registered it:
    /// a token from anywhere else (a forged source, to reflect a POLL's
    /// answers at a victim) gets nothing but REJECTED 05, and a client whose
    /// address changed (a NAT) registers again.
    @inlinable
    mutating func session(_ token: ServerToken, _ address: Address, _ now: UInt64) -> UserID? {
        guard var s = sessions[token], s.address == address else { return nil }
        s.lastSeen = now
        s.pushedSince = nil
        sessions[token] = s
        return s.user
    }

    @inlinable
    mutating func reject(_ why: ServerRejection, _ id: UserID?, to address: Address) -> [Step] {
        _counters.rejections[why, default: 0] += 1
        return send(.rejected(why, messageID: id), to: address)
    }

    @inlinable
    mutating func send(_ packet: ServerPacket, to address: Address) -> [Step] {
        transfer &+= 1
        let encoded = packet.encode()
        if encoded.count <= ServerPacket.maxDatagram { // nearly every answer: one datagram, no array of them
            _counters.sent += 1
            return [.send(encoded, to: address)]
        }
        let datagrams = ServerChunk.datagrams(encoded, transferID: transfer) ?? []
        _counters.sent += datagrams.count
        return datagrams.map { .send($0, to: address) }
    }

    @inlinable
    static func take<K: Hashable>(_ buckets: inout [K: Bucket], _ key: K, rate: Double, burst: Double, now: UInt64,
                                  cap: Int) -> Bool {
        func refill(_ b: inout Bucket) -> Bool {
            if now > b.at {
                b.tokens = min(burst, b.tokens + Double(now - b.at) / 1_000 * rate)
                b.at = now
            }
            guard b.tokens >= 1 else { return false }
            b.tokens -= 1
            return true
        }
        // One lookup for a bucket that exists (the usual case), updated in place.
        if let i = buckets.index(forKey: key) { return refill(&buckets.values[i]) }
        var b = Bucket(tokens: burst, at: now)
        let taken = refill(&b)
        if buckets.count >= cap {
            // Full (a flood from many addresses): start afresh, O(1) a packet
            // amortised; the cost is one burst more for those already limited.
            buckets.removeAll(keepingCapacity: true)
        }
        buckets[key] = b
        return taken
    }
}
