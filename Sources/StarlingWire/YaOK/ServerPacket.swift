/// The Ya OK server's UDP packets (seed 002 §4.3, §5.2, §6.3; the codes
/// the seed leaves open are ours). docs/PROTOCOL.md, "Ya OK server", gives
/// every layout with examples. Integers are big-endian.
///
/// Every packet starts with "YAOK", version 0x01 and a type. A packet larger
/// than a datagram (1,472 bytes) travels as CHUNKs (``ServerChunker``).
public enum ServerPacket: Hashable, Sendable {
    /// MSG 0x01: a sealed message (``SealedMessageBytes``) from `sender` to
    /// `recipient`. To the server it carries the sender's session token after
    /// the payload; from the server (a delivery) it does not.
    case message(sender: UserID, recipient: UserID, payload: [UInt8], token: ServerToken?)
    /// ACK 0x02 to the server: the recipient's store has this message; the
    /// server removes it from the queue.
    case ack(token: ServerToken, messageID: UserID)
    /// ACK 0x02 from the server to a sender, the *relay receipt*: `by` took
    /// the message from the server (its store has it). Not the recipient's
    /// sealed delivered receipt, which says the same end to end.
    case relayReceipt(messageID: UserID, by: UserID)
    /// REGISTER 0x10.
    case register(ServerRegistration)
    /// REGISTERED 0x11: the session token for POLL, PING, ACK and MSG, and the
    /// server's clock.
    case registered(token: ServerToken, serverTime: UInt64)
    /// POLL 0x12.
    case poll(token: ServerToken)
    /// NO_MESSAGES 0x13.
    case noMessages
    /// PING 0x14 (every 60 s keeps a registration; 5 minutes without one ends it).
    case ping(token: ServerToken)
    /// PONG 0x15.
    case pong
    /// QUEUED 0x16: the message is committed (durable); `online`: the
    /// recipient was sent it at once as well.
    case queued(messageID: UserID, online: Bool)
    /// REJECTED 0x17: why, and the message it concerns when there is one.
    case rejected(ServerRejection, messageID: UserID?)
    /// BYE 0x18: the client goes offline; its session ends (no answer).
    case bye(token: ServerToken)
    /// POLL_END 0x19: after the MSGs that answer a POLL (NO_MESSAGES answers
    /// one that found none), the IDs of the MSGs just sent, in order, and
    /// whether more wait behind them. A client that is missing one of them
    /// (lost on the way) polls again; `more`: polls again at once.
    case pollEnd(messageIDs: [UserID], more: Bool)
    /// CHUNK 0x20: a piece of a packet larger than a datagram.
    case chunk(ServerChunk)
    /// DROP_HELLO 0x30 (the courier mailbox): proves the sender's address
    /// before it may post or fetch drops. `cookie` is zeros the first time,
    /// then the one DROP_COOKIE gave; 16 bytes of padding follow (zeros), so
    /// that the answer is never larger than the question.
    case dropHello(cookie: Bytes16)
    /// DROP_COOKIE 0x31: the cookie to send back in DROP_HELLO; `ready`: this
    /// address is proven (DROP, DROP_FETCH and CHUNKs are taken from it).
    case dropCookie(cookie: Bytes16, ready: Bool)
    /// DROP 0x32 to the server: the address's cookie, and a courier envelope
    /// (docs/PROTOCOL.md "Courier drops (0x04)") to keep for its recipient tag
    /// until its expiry.
    case drop(cookie: Bytes16, envelope: [UInt8])
    /// DROP 0x32 from the server: a drop a DROP_FETCH asked for, with the
    /// server's sequence number (the cursor for the next DROP_FETCH).
    case dropDelivery(sequence: UInt64, envelope: [UInt8])
    /// DROP_TAKEN 0x33: the drop is committed (`new` false: it was held
    /// already); its ID is the first 16 bytes of the SHA-256 of its seal.
    case dropTaken(dropID: Bytes16, new: Bool)
    /// DROP_FETCH 0x34: with the address's cookie, the drops for these
    /// recipient tags (1 … 51) with a sequence number above `after`, oldest first.
    case dropFetch(cookie: Bytes16, after: UInt64, tags: [Bytes16])
    /// DROP_END 0x35: after the DROPs answering a DROP_FETCH: how many were
    /// just sent, the last one's sequence number (`after` when none), and
    /// whether more wait behind them.
    case dropEnd(count: UInt8, last: UInt64, more: Bool)

    public enum Direction: Sendable { case toServer, toClient }

    public static let magic: [UInt8] = Array("YAOK".utf8)
    public static let version: UInt8 = 0x01
    public static let headerByteCount = 6
    /// The largest datagram (Ethernet MTU less IP and UDP headers).
    public static let maxDatagram = 1_472
    /// The largest MSG payload: the largest sealed message.
    public static let maxPayload = SealedMessageBytes.maxByteCount
    /// Message IDs a POLL_END lists at most (a POLL answers with at most this many MSGs).
    public static let maxPollEnd = 64
    /// Recipient tags a DROP_FETCH names at most (17 keys × 3 days).
    public static let maxDropTags = 51
    /// The largest envelope a DROP carries: every TLV of an envelope with the
    /// largest seal (``CourierEnvelope/maxCiphertext``).
    public static let maxDropEnvelope = 3 + 16 + 3 + 8 + 3 + CourierEnvelope.maxCiphertext + 3 + 1 + 3 + 4
    /// The smallest: a tag, an expiry and a one-byte seal.
    public static let minDropEnvelope = 3 + 16 + 3 + 8 + 3 + 1

    public var type: UInt8 {
        switch self {
        case .message: 0x01
        case .ack, .relayReceipt: 0x02
        case .register: 0x10
        case .registered: 0x11
        case .poll: 0x12
        case .noMessages: 0x13
        case .ping: 0x14
        case .pong: 0x15
        case .queued: 0x16
        case .rejected: 0x17
        case .bye: 0x18
        case .pollEnd: 0x19
        case .chunk: 0x20
        case .dropHello: 0x30
        case .dropCookie: 0x31
        case .drop, .dropDelivery: 0x32
        case .dropTaken: 0x33
        case .dropFetch: 0x34
        case .dropEnd: 0x35
        }
    }

    public func encode() -> [UInt8] {
        var out: [UInt8] = []
        switch self {
        case let .message(_, _, payload, _): out.reserveCapacity(64 + payload.count)
        case let .drop(_, envelope), let .dropDelivery(_, envelope): out.reserveCapacity(32 + envelope.count)
        default: out.reserveCapacity(128)
        }
        out += Self.magic
        out.append(Self.version)
        out.append(type)
        func put(_ v: Bytes16) { v.withUnsafeBytes { out.append(contentsOf: $0) } }
        switch self {
        case let .message(sender, recipient, payload, token):
            put(sender.value)
            put(recipient.value)
            out.appendBE(UInt32(payload.count))
            out += payload
            if let token { put(token.value) }
        case let .ack(token, id):
            put(token.value)
            put(id.value)
        case let .relayReceipt(id, by):
            put(id.value)
            put(by.value)
        case let .register(r):
            put(r.userID.value)
            out.appendBE(r.timestamp)
            out += r.signature
            out += r.publicKey ?? []
        case let .registered(token, time):
            put(token.value)
            out.appendBE(time)
        case let .poll(token), let .ping(token), let .bye(token):
            put(token.value)
        case .noMessages, .pong:
            break
        case let .queued(id, online):
            put(id.value)
            out.append(online ? 1 : 0)
        case let .rejected(reason, id):
            out.append(reason.rawValue)
            put(id?.value ?? Bytes16(high: 0, low: 0))
        case let .pollEnd(ids, more):
            out.append(more ? 1 : 0)
            out.append(UInt8(min(ids.count, Self.maxPollEnd)))
            for id in ids.prefix(Self.maxPollEnd) { put(id.value) }
        case let .chunk(c):
            out.appendBE(c.transferID)
            out.appendBE(c.index)
            out.appendBE(c.total)
            out += c.data
        case let .dropHello(cookie):
            put(cookie)
            out += [UInt8](repeating: 0, count: 16)
        case let .dropCookie(cookie, ready):
            put(cookie)
            out.append(ready ? 1 : 0)
        case let .drop(cookie, envelope):
            put(cookie)
            out += envelope
        case let .dropDelivery(sequence, envelope):
            out.appendBE(sequence)
            out += envelope
        case let .dropTaken(id, new):
            put(id)
            out.append(new ? 1 : 0)
        case let .dropFetch(cookie, after, tags):
            put(cookie)
            out.appendBE(after)
            out.append(UInt8(min(tags.count, Self.maxDropTags)))
            for t in tags.prefix(Self.maxDropTags) { put(t) }
        case let .dropEnd(count, last, more):
            out.append(more ? 1 : 0)
            out.append(count)
            out.appendBE(last)
        }
        return out
    }

    /// Decodes one packet (whole: CHUNKs come out as ``chunk(_:)``) sent in
    /// `direction`. Strict: a wrong magic, version or length is an error.
    public static func decode(_ bytes: [UInt8], _ direction: Direction) throws(WireError) -> ServerPacket {
        var r = ByteReader(bytes)
        guard try r.read(4, "magic") == magic else {
            throw WireError(.invalidValue("not a Ya OK server packet (magic)"), field: "magic", offset: 0)
        }
        let version = try r.u8("version")
        guard version == Self.version else { throw WireError(.unsupportedVersion(version), field: "version", offset: 4) }
        let type = try r.u8("type")
        func id(_ field: String) throws(WireError) -> UserID { UserID(bytes: try r.slice(16, field))! }
        func token() throws(WireError) -> ServerToken { ServerToken(bytes: try r.slice(16, "token"))! }
        let packet: ServerPacket
        switch (type, direction) {
        case (0x01, _):
            let sender = try id("sender"), recipient = try id("recipient")
            let length = Int(try r.u32("length"))
            guard (1...maxPayload).contains(length) else {
                throw WireError(.lengthOutOfRange(declared: length, limit: maxPayload), field: "length", offset: 38)
            }
            let payload = try r.read(length, "payload")
            packet = .message(sender: sender, recipient: recipient, payload: payload,
                              token: direction == .toServer ? try token() : nil)
        case (0x02, .toServer):
            packet = .ack(token: try token(), messageID: try id("messageID"))
        case (0x02, .toClient):
            packet = .relayReceipt(messageID: try id("messageID"), by: try id("by"))
        case (0x10, .toServer):
            let user = try id("userID")
            let time = try r.u64("timestamp")
            let signature = try r.read(64, "signature")
            let key = r.isAtEnd ? nil : try r.read(32, "publicKey")
            packet = .register(ServerRegistration(userID: user, timestamp: time, signature: signature, publicKey: key))
        case (0x11, .toClient):
            packet = .registered(token: try token(), serverTime: try r.u64("serverTime"))
        case (0x12, .toServer):
            packet = .poll(token: try token())
        case (0x13, .toClient):
            packet = .noMessages
        case (0x14, .toServer):
            packet = .ping(token: try token())
        case (0x15, .toClient):
            packet = .pong
        case (0x16, .toClient):
            let messageID = try id("messageID")
            let online = try r.u8("online")
            guard online <= 1 else { throw WireError(.invalidValue("online is 0 or 1"), field: "online", offset: 22) }
            packet = .queued(messageID: messageID, online: online == 1)
        case (0x17, .toClient):
            let code = try r.u8("reason")
            guard let reason = ServerRejection(rawValue: code) else {
                throw WireError(.invalidValue("unknown reason 0x\(String(code, radix: 16))"), field: "reason", offset: 6)
            }
            let raw = try r.read(16, "messageID")
            packet = .rejected(reason, messageID: raw.allSatisfy { $0 == 0 } ? nil : UserID(bytes: raw)!)
        case (0x18, .toServer):
            packet = .bye(token: try token())
        case (0x19, .toClient):
            let more = try r.u8("more")
            guard more <= 1 else { throw WireError(.invalidValue("more is 0 or 1"), field: "more", offset: 6) }
            let count = Int(try r.u8("count"))
            guard (1...maxPollEnd).contains(count) else {
                throw WireError(.lengthOutOfRange(declared: count, limit: maxPollEnd), field: "count", offset: 7)
            }
            var ids: [UserID] = []
            for _ in 0..<count { ids.append(try id("messageID")) }
            packet = .pollEnd(messageIDs: ids, more: more == 1)
        case (0x20, _):
            let transfer = try r.u32("transferID")
            let index = try r.u16("index"), total = try r.u16("total")
            guard (2...ServerChunk.maxChunks).contains(Int(total)), index < total else {
                throw WireError(.invalidValue("chunk \(index) of \(total) (2 … \(ServerChunk.maxChunks) chunks)"),
                                field: "total", offset: 12)
            }
            let data = Array(r.rest)
            guard (1...ServerChunk.maxData).contains(data.count) else {
                throw WireError(.lengthOutOfRange(declared: data.count, limit: ServerChunk.maxData), field: "data", offset: 14)
            }
            r = ByteReader([])
            packet = .chunk(ServerChunk(transferID: transfer, index: index, total: total, data: data))
        case (0x30, .toServer):
            let cookie = Bytes16(try r.slice(16, "cookie"))!
            _ = try r.read(16, "padding")
            packet = .dropHello(cookie: cookie)
        case (0x31, .toClient):
            let cookie = Bytes16(try r.slice(16, "cookie"))!
            let ready = try r.u8("ready")
            guard ready <= 1 else { throw WireError(.invalidValue("ready is 0 or 1"), field: "ready", offset: 22) }
            packet = .dropCookie(cookie: cookie, ready: ready == 1)
        case (0x32, .toServer):
            let cookie = Bytes16(try r.slice(16, "cookie"))!
            let envelope = Array(r.rest)
            guard (minDropEnvelope...maxDropEnvelope).contains(envelope.count) else {
                throw WireError(.lengthOutOfRange(declared: envelope.count, limit: maxDropEnvelope), field: "envelope", offset: 22)
            }
            r = ByteReader([])
            packet = .drop(cookie: cookie, envelope: envelope)
        case (0x32, .toClient):
            let sequence = try r.u64("sequence")
            let envelope = Array(r.rest)
            guard (minDropEnvelope...maxDropEnvelope).contains(envelope.count) else {
                throw WireError(.lengthOutOfRange(declared: envelope.count, limit: maxDropEnvelope), field: "envelope", offset: 14)
            }
            r = ByteReader([])
            packet = .dropDelivery(sequence: sequence, envelope: envelope)
        case (0x33, .toClient):
            let id = Bytes16(try r.slice(16, "dropID"))!
            let new = try r.u8("new")
            guard new <= 1 else { throw WireError(.invalidValue("new is 0 or 1"), field: "new", offset: 22) }
            packet = .dropTaken(dropID: id, new: new == 1)
        case (0x34, .toServer):
            let cookie = Bytes16(try r.slice(16, "cookie"))!
            let after = try r.u64("after")
            let count = Int(try r.u8("count"))
            guard (1...maxDropTags).contains(count) else {
                throw WireError(.lengthOutOfRange(declared: count, limit: maxDropTags), field: "count", offset: 30)
            }
            var tags: [Bytes16] = []
            for _ in 0..<count { tags.append(Bytes16(try r.slice(16, "tag"))!) }
            packet = .dropFetch(cookie: cookie, after: after, tags: tags)
        case (0x35, .toClient):
            let more = try r.u8("more")
            guard more <= 1 else { throw WireError(.invalidValue("more is 0 or 1"), field: "more", offset: 6) }
            let count = try r.u8("count")
            packet = .dropEnd(count: count, last: try r.u64("last"), more: more == 1)
        default:
            throw WireError(.invalidValue("type 0x\(String(type, radix: 16)) is not sent \(direction == .toServer ? "to" : "by") a server"),
                            field: "type", offset: 5)
        }
        guard r.isAtEnd else { throw WireError(.trailingBytes(count: r.remaining), field: "end", offset: r.position) }
        return packet
    }

}

/// A session token: 16 random bytes the server gives at REGISTERED.
public struct ServerToken: Hashable, Sendable, CustomStringConvertible {
    public let value: Bytes16
    @inlinable
    public init?(bytes: some Collection<UInt8>) {
        guard let value = Bytes16(bytes) else { return nil }
        self.value = value
    }
    public var bytes: [UInt8] { value.bytes }
    public static func random() -> ServerToken {
        var rng = SystemRandomNumberGenerator()
        return ServerToken(value: Bytes16(high: rng.next(), low: rng.next()))
    }
    private init(value: Bytes16) { self.value = value }
    public var description: String { "token " + Array(bytes.prefix(4)).hexString + "…" }
}

/// REGISTER's fields. The signature (Ed25519, by the user's key) covers the
/// first 30 bytes of the packet, then the public key when one is carried.
/// The first REGISTER of a user ID carries its key, which the server pins.
public struct ServerRegistration: Hashable, Sendable {
    public var userID: UserID
    public var timestamp: UInt64
    public var signature: [UInt8]
    public var publicKey: [UInt8]?

    public init(userID: UserID, timestamp: UInt64, signature: [UInt8], publicKey: [UInt8]?) {
        self.userID = userID
        self.timestamp = timestamp
        self.signature = signature
        self.publicKey = publicKey
    }

    /// What the signature covers.
    public func signedBytes() -> [UInt8] {
        var copy = self
        copy.signature = []
        let packet = ServerPacket.register(copy).encode()
        return Array(packet.prefix(30)) + (publicKey ?? [])
    }
}

/// Why the server refused a packet (REJECTED's reason byte).
public enum ServerRejection: UInt8, Error, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case badSignature = 0x01
    case staleTimestamp = 0x02
    case replayed = 0x03
    case keyMismatch = 0x04
    case unknownSession = 0x05
    case recipientQueueFull = 0x06
    case serverFull = 0x07
    case rateLimited = 0x08
    case malformed = 0x09
    case unknownRecipient = 0x0A
    case unknownUser = 0x0B
    case storageFailed = 0x0C
    case messageIDTaken = 0x0D
    /// A MSG whose sender is not the user its token stands for.
    case senderMismatch = 0x0E
    /// The same sender's message ID is queued already with other bytes: the
    /// first is kept, this one refused (a sender never reuses an ID).
    case messageIDReused = 0x0F
    /// A DROP, DROP_FETCH or CHUNK from an address that has not proven itself
    /// with DROP_HELLO (or whose proof lapsed): say DROP_HELLO again.
    case unprovenAddress = 0x10
    /// A DROP whose envelope has expired, or whose expiry is more than a day ahead.
    case dropExpiry = 0x11

    public var description: String {
        switch self {
        case .badSignature: "the signature does not verify"
        case .staleTimestamp: "the timestamp is too far from the server's clock"
        case .replayed: "a replayed registration"
        case .keyMismatch: "that user ID is registered with another key"
        case .unknownSession: "no such session (register again)"
        case .recipientQueueFull: "the recipient's queue is full"
        case .serverFull: "the server's queues are full"
        case .rateLimited: "too many packets: slow down"
        case .malformed: "a malformed message"
        case .unknownRecipient: "the recipient has never registered with this server"
        case .unknownUser: "a first registration must carry the public key"
        case .storageFailed: "the server could not store it"
        case .messageIDTaken: "another sender's message to this recipient is queued under that message ID"
        case .senderMismatch: "the MSG's sender is not the user this session registered"
        case .messageIDReused: "a message of yours with that ID and other bytes is queued already"
        case .unprovenAddress: "this address has not proven itself with DROP_HELLO (or its proof lapsed)"
        case .dropExpiry: "the drop has expired, or expires more than a day ahead"
        }
    }

    /// A short, stable identifier (Prometheus label values, logs): the words
    /// are in ``description``. Never renamed once published (docs/YAOK.md).
    public var identifier: String {
        switch self {
        case .badSignature: "bad_signature"
        case .staleTimestamp: "stale_timestamp"
        case .replayed: "replayed"
        case .keyMismatch: "key_mismatch"
        case .unknownSession: "unknown_session"
        case .recipientQueueFull: "recipient_queue_full"
        case .serverFull: "server_full"
        case .rateLimited: "rate_limited"
        case .malformed: "malformed"
        case .unknownRecipient: "unknown_recipient"
        case .unknownUser: "unknown_user"
        case .storageFailed: "storage_failed"
        case .messageIDTaken: "message_id_taken"
        case .senderMismatch: "sender_mismatch"
        case .messageIDReused: "message_id_reused"
        case .unprovenAddress: "unproven_address"
        case .dropExpiry: "drop_expiry"
        }
    }
}

/// One CHUNK: `index` of `total` pieces of the packet `transferID`.
public struct ServerChunk: Hashable, Sendable {
    public static let headerByteCount = ServerPacket.headerByteCount + 8
    public static let maxData = ServerPacket.maxDatagram - headerByteCount
    public static let maxChunks = 16

    public var transferID: UInt32
    public var index: UInt16
    public var total: UInt16
    public var data: [UInt8]

    public init(transferID: UInt32, index: UInt16, total: UInt16, data: [UInt8]) {
        self.transferID = transferID
        self.index = index
        self.total = total
        self.data = data
    }

    /// A packet's bytes as datagrams: itself when it fits, else CHUNKs of
    /// `maxData` bytes (nil when even 16 chunks would not hold it).
    public static func datagrams(_ packet: [UInt8], transferID: UInt32) -> [[UInt8]]? {
        guard packet.count > ServerPacket.maxDatagram else { return [packet] }
        let count = (packet.count + maxData - 1) / maxData
        guard count <= maxChunks else { return nil }
        return (0..<count).map { i in
            let piece = Array(packet[(i * maxData)..<min(packet.count, (i + 1) * maxData)])
            return ServerPacket.chunk(ServerChunk(transferID: transferID, index: UInt16(i), total: UInt16(count), data: piece)).encode()
        }
    }
}

/// Puts CHUNKs back together, per source. Bounds: `maxPerSource` packets in
/// progress from one source and `maxInProgress` in all (the oldest goes
/// first), each dropped `timeout` ms after its first chunk.
public struct ServerReassembler<Source: Hashable & Sendable>: Sendable {
    public var maxPerSource = 8
    public var maxInProgress = 256
    public var timeout: UInt64 = 10_000

    struct Key: Hashable { var source: Source; var transfer: UInt32 }
    struct Partial { var total: UInt16; var pieces: [UInt16: [UInt8]]; var started: UInt64 }
    private var partial: [Key: Partial] = [:]
    public private(set) var dropped = 0

    public init() {}

    public var inProgress: Int { partial.count }

    /// A chunk from `source`: the whole packet's bytes once every piece is here.
    public mutating func add(_ chunk: ServerChunk, from source: Source, now: UInt64) -> [UInt8]? {
        expire(now: now)
        let key = Key(source: source, transfer: chunk.transferID)
        if partial[key] == nil {
            if partial.keys.filter({ $0.source == source }).count >= maxPerSource { evictOldest { $0.source == source } }
            if partial.count >= maxInProgress { evictOldest { _ in true } }
            partial[key] = Partial(total: chunk.total, pieces: [:], started: now)
        }
        guard partial[key]!.total == chunk.total else {
            partial[key] = nil // inconsistent: drop it whole
            dropped += 1
            return nil
        }
        partial[key]!.pieces[chunk.index] = chunk.data
        guard partial[key]!.pieces.count == Int(chunk.total) else { return nil }
        let done = partial.removeValue(forKey: key)!
        return (0..<done.total).flatMap { done.pieces[$0]! }
    }

    public mutating func expire(now: UInt64) {
        let before = partial.count
        partial = partial.filter { now < $0.value.started + timeout }
        dropped += before - partial.count
    }

    private mutating func evictOldest(where matches: (Key) -> Bool) {
        if let oldest = partial.filter({ matches($0.key) }).min(by: { $0.value.started < $1.value.started })?.key {
            partial[oldest] = nil
            dropped += 1
        }
    }
}
