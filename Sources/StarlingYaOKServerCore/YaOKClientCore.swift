import Crypto
import StarlingWire

/// The relay client's protocol without I/O (seed 002 §5.2, §6.3): register,
/// keep the registration with a PING every 60 s, poll every 30 s (5 minutes in
/// the background) and right after a send, send sealed messages until the
/// server answers QUEUED (retried 2 s, ×2, at most 60 s apart), and
/// acknowledge what arrives once the caller has stored it.
///
/// Bounds: `maxOutbox` messages waiting for QUEUED (more are refused at
/// once), the reassembler's bounds for chunked deliveries.
public struct YaOKClientCore: Sendable {
    public struct Configuration: Sendable {
        public var pollInterval: UInt64 = 30_000
        public var pingInterval: UInt64 = 60_000
        /// A REGISTER without an answer is sent again after this long (doubling, at most a minute).
        public var registerRetry: UInt64 = 2_000
        public var retryFirst: UInt64 = 2_000
        public var retryMax: UInt64 = 60_000
        /// Sends of one message before it is reported failed (2+4+8+16+32+60+60 s: about 3 minutes).
        public var maxAttempts = 8
        public var maxOutbox = 1_000
        /// Registered, and nothing from the server for this long (2½ pings,
        /// five polls): the session is taken as lost (``Event/lost``) and we
        /// register again.
        public var lostAfter: UInt64 = 150_000
        /// Past `lostAfter`, one last PING goes out, and the session is taken
        /// as lost only when nothing comes within this long: a process that was
        /// not scheduled for a while (a loaded machine, a suspended laptop)
        /// reads the answers waiting in its socket before it calls the server lost.
        public var lastPingWait: UInt64 = 5_000
        /// Unregistered REGISTERs unanswered before the server is said not to
        /// answer (``Event/unreachable``), once an outage.
        public var unansweredRegistrations = 3
        public init() {}

        /// The seed's background rhythm: a poll every 5 minutes.
        public static var background: Configuration {
            var c = Configuration()
            c.pollInterval = 300_000
            return c
        }
    }

    public enum Event: Hashable, Sendable {
        case registered
        /// The server holds the message (committed); `online`: sent on to the recipient at once.
        case queued(UserID, online: Bool)
        /// The relay receipt: the recipient took the message from the server
        /// (its store has it). The recipient's own sealed receipt says more.
        case relayReceipt(UserID, by: UserID)
        /// A sealed message for us: store it, then ``YaOKClientCore/acknowledge(_:now:)``.
        case message(sender: UserID, payload: [UInt8])
        case rejected(ServerRejection, UserID?)
        /// Not queued after every attempt (the caller keeps it and tries later).
        case failed(UserID)
        /// Registered, the server then said nothing for `lostAfter`: the session
        /// is gone, registering again (messages wait for it).
        case lost
        /// Unregistered, `unansweredRegistrations` REGISTERs went unanswered
        /// (said once until a registration succeeds).
        case unreachable
    }

    public enum Step: Hashable, Sendable {
        case send([UInt8])
        case event(Event)
    }

    public enum SendError: Error, Hashable, Sendable {
        case notASealedMessage
        case notFromUs
        case outboxFull
        case tooLarge
    }

    struct Outgoing {
        var recipient: UserID
        var payload: [UInt8]
        var attempts: Int
        var nextAt: UInt64
    }

    public let configuration: Configuration
    public let userID: UserID
    private let signingKey: Curve25519.Signing.PrivateKey
    public private(set) var token: ServerToken?
    /// The wall clock minus `now`: timers run on `now` (a monotonic clock),
    /// a REGISTER is stamped with the wall clock, which the server judges.
    public var wallClockOffset: Int64 = 0
    private var lastRegistration: UInt64 = 0
    /// When the server last sent anything we could read.
    private var lastHeard: UInt64 = 0
    private var unanswered = 0
    /// REGISTERs sent since the server last answered (a runtime looks its name up again when it stays silent).
    public var unansweredRegistrationCount: Int { unanswered }
    private var outageSaid = false
    private var registerAt: UInt64 = 0
    private var registerBackoff: UInt64
    private var nextPoll: UInt64 = .max
    private var nextPing: UInt64 = .max
    private var pollAgain = false
    private var outbox: [UserID: Outgoing] = [:]
    private var recent: Set<UserID> = []
    /// MSGs that came since the last POLL_END (the IDs it lists are checked against them).
    private var arrived: Set<UserID> = []
    /// POLL answers that came with a MSG missing (lost on the way): polled again at once.
    public private(set) var answersIncomplete = 0
    private var recentOrder: [UserID] = []
    private var reassembler = ServerReassembler<Int>()
    private var transfer: UInt32

    public init(userID: UserID, signingKey: Curve25519.Signing.PrivateKey, configuration: Configuration = .init()) {
        self.userID = userID
        self.signingKey = signingKey
        self.configuration = configuration
        registerBackoff = configuration.registerRetry
        transfer = UInt32.random(in: 0...UInt32.max)
    }

    public var isRegistered: Bool { token != nil }
    /// Whether, unregistered, a REGISTER goes at the next ``tick(now:)`` (a runtime with
    /// several server addresses moves to the next one first, when this one stays silent).
    public func registrationDue(at now: UInt64) -> Bool { token == nil && now >= registerAt }

    /// The client moved to another server address: REGISTERs there start
    /// from the first retry interval again (the backoff was the silent
    /// server's), counting on as before for what is said to the person.
    public mutating func serverMoved() {
        registerBackoff = configuration.registerRetry
    }
    /// When a silent server's session is taken as lost.
    private var lostAt: UInt64 {
        let (sum, over) = lastHeard.addingReportingOverflow(configuration.lostAfter)
        return over ? .max : sum
    }
    /// When the last PING (sent past `lostAfter`) went out; nil until then.
    private var lastPingAt: UInt64?
    /// The next silence deadline: the last PING's, or the last PING's answer's.
    private var silenceDeadline: UInt64 {
        guard let lastPingAt else { return lostAt }
        let (sum, over) = lastPingAt.addingReportingOverflow(configuration.lastPingWait)
        return over ? .max : sum
    }
    public var waitingCount: Int { outbox.count }

    /// When ``tick(now:)`` must run next.
    public var nextDeadline: UInt64 {
        // Unregistered, nothing but the next REGISTER is due (polls, pings and
        // retries wait for a session; counting them would spin).
        guard token != nil else { return registerAt }
        var d = min(min(nextPoll, nextPing), silenceDeadline)
        if let o = outbox.values.map(\.nextAt).min() { d = min(d, o) }
        return d
    }

    /// The first REGISTER.
    public mutating func start(now: UInt64) -> [Step] { register(now: now) }

    /// Hands a sealed message (``SealedMessageBytes``, from us) to the relay.
    public mutating func send(sealed payload: [UInt8], now: UInt64) throws(SendError) -> [Step] {
        guard let sealed = try? SealedMessageBytes.decode(payload) else { throw .notASealedMessage }
        guard sealed.sender == userID else { throw .notFromUs }
        guard payload.count <= ServerPacket.maxPayload else { throw .tooLarge }
        if outbox[sealed.messageID] == nil, outbox.count >= configuration.maxOutbox { throw .outboxFull }
        outbox[sealed.messageID] = Outgoing(recipient: sealed.recipient, payload: payload, attempts: 1,
                                            nextAt: now + configuration.retryFirst)
        guard token != nil else { return [] } // goes out once registered
        nextPoll = min(nextPoll, now + 200) // seed: poll right after a send (its answer may be waiting)
        return transmit(sealed.messageID)
    }

    /// A datagram from the server.
    public mutating func receive(_ datagram: [UInt8], now: UInt64) -> [Step] {
        guard var packet = try? ServerPacket.decode(datagram, .toClient) else { return [] }
        if case let .chunk(c) = packet {
            guard let whole = reassembler.add(c, from: 0, now: now), let inner = try? ServerPacket.decode(whole, .toClient) else { return [] }
            if case .chunk = inner { return [] }
            packet = inner
        }
        lastHeard = now
        lastPingAt = nil
        unanswered = 0 // it answers (a refusal too)
        switch packet {
        case let .registered(token, _):
            self.token = token
            unanswered = 0
            outageSaid = false
            registerBackoff = configuration.registerRetry
            nextPoll = now
            nextPing = now + configuration.pingInterval
            var steps: [Step] = [.event(.registered)]
            for id in outbox.keys.sorted() { steps += transmit(id) } // what waited for a session
            return steps + tick(now: now)
        case let .queued(id, online):
            guard outbox.removeValue(forKey: id) != nil else { return [] }
            return [.event(.queued(id, online: online))]
        case let .relayReceipt(id, by):
            return [.event(.relayReceipt(id, by: by))]
        case let .message(sender, recipient, payload, _):
            guard recipient == userID else { return [] }
            if let id = try? SealedMessageBytes.decode(payload).messageID {
                arrived.insert(id)
                if arrived.count > 1_024 { arrived.removeAll() }
                // A server without POLL_END: more may wait behind a POLL's ten;
                // poll again soon, but only for news (a message the caller
                // cannot store comes back every time).
                if recent.insert(id).inserted {
                    recentOrder.append(id)
                    if recentOrder.count > 256 { recent.remove(recentOrder.removeFirst()) }
                    pollAgain = true
                }
            }
            return [.event(.message(sender: sender, payload: payload))]
        case .noMessages:
            pollAgain = false
            return []
        case let .pollEnd(ids, more):
            // The answer is known whole: more behind it, or one of it lost on
            // the way, and the next POLL goes at once (the server keeps each
            // until ACKed); otherwise at the usual interval.
            let missing = ids.filter { !arrived.contains($0) }.count
            arrived.removeAll()
            pollAgain = false
            if more || missing > 0 {
                if missing > 0 { answersIncomplete += 1 }
                nextPoll = min(nextPoll, now + (more ? 0 : 250))
                return tick(now: now)
            }
            return []
        case .pong:
            return []
        case let .rejected(why, id):
            switch why {
            case .unknownSession:
                // The server forgot us (a restart, 5 minutes of silence, a new
                // address): register again, once — the answers to packets sent
                // with the old token say the same, and must not each register.
                guard token != nil else { return [] }
                token = nil
                return register(now: now)
            case .rateLimited, .storageFailed:
                return [.event(.rejected(why, id))] // retried on its schedule
            default:
                if let id { outbox[id] = nil }
                if id == nil, token == nil { registerAt = now + registerBackoff } // a refused REGISTER: not again at once
                return [.event(.rejected(why, id))]
            }
        default:
            return []
        }
    }

    /// The caller stored the message: the server may forget it.
    public mutating func acknowledge(_ messageID: UserID, now: UInt64) -> [Step] {
        guard let token else { return [] }
        return datagrams(.ack(token: token, messageID: messageID))
    }

    /// Going offline: the server ends the session (and stops sending on at once).
    public mutating func leave() -> [Step] {
        guard let token else { return [] }
        self.token = nil
        registerAt = .max
        return datagrams(.bye(token: token))
    }

    /// Asks for waiting messages now.
    public mutating func poll(now: UInt64) -> [Step] {
        guard let token else { return [] }
        nextPoll = now + configuration.pollInterval
        return datagrams(.poll(token: token))
    }

    public mutating func tick(now: UInt64) -> [Step] {
        guard token != nil else {
            return now >= registerAt ? register(now: now) : []
        }
        if now >= lostAt, lastPingAt == nil, let token {
            // Silent past the limit: one last PING before the session is called lost.
            lastPingAt = now
            nextPing = now + configuration.pingInterval
            return datagrams(.ping(token: token))
        }
        if let lastPingAt, now >= lastPingAt &+ configuration.lastPingWait {
            self.lastPingAt = nil
            token = nil
            outageSaid = true
            registerBackoff = configuration.registerRetry
            return [.event(.lost)] + register(now: now)
        }
        var steps: [Step] = []
        if now >= nextPoll || (pollAgain && now >= nextPoll.saturatingSub(configuration.pollInterval) + 100) {
            pollAgain = false
            steps += poll(now: now)
        }
        if now >= nextPing, let token {
            nextPing = now + configuration.pingInterval
            steps += datagrams(.ping(token: token))
        }
        for (id, o) in outbox.sorted(by: { $0.key < $1.key }) where now >= o.nextAt {
            if o.attempts >= configuration.maxAttempts {
                outbox[id] = nil
                steps.append(.event(.failed(id)))
                continue
            }
            outbox[id]!.attempts += 1
            let wait = min(configuration.retryMax, configuration.retryFirst << UInt64(min(o.attempts, 20)))
            outbox[id]!.nextAt = now + wait
            steps += transmit(id)
        }
        return steps
    }

    // MARK: Helpers

    private mutating func register(now: UInt64) -> [Step] {
        let wall = wallClockOffset >= 0 ? now &+ UInt64(wallClockOffset) : now.saturatingSub(wallClockOffset.magnitude)
        let timestamp = max(wall, lastRegistration + 1)
        lastRegistration = timestamp
        registerAt = now + registerBackoff
        registerBackoff = min(60_000, registerBackoff * 2)
        var said: [Step] = []
        if token == nil {
            unanswered += 1
            if unanswered > configuration.unansweredRegistrations, !outageSaid {
                outageSaid = true
                said = [.event(.unreachable)]
            }
        }
        var r = ServerRegistration(userID: userID, timestamp: timestamp, signature: [],
                                  publicKey: Array(signingKey.publicKey.rawRepresentation))
        r.signature = Array((try? signingKey.signature(for: r.signedBytes())) ?? Data())
        return said + datagrams(.register(r))
    }

    private mutating func transmit(_ id: UserID) -> [Step] {
        guard let token, let o = outbox[id] else { return [] }
        return datagrams(.message(sender: userID, recipient: o.recipient, payload: o.payload, token: token))
    }

    private mutating func datagrams(_ packet: ServerPacket) -> [Step] {
        transfer &+= 1
        return (ServerChunk.datagrams(packet.encode(), transferID: transfer) ?? []).map { .send($0) }
    }
}

extension UInt64 {
    func saturatingSub(_ x: UInt64) -> UInt64 { self >= x ? self - x : 0 }
}

import Foundation
