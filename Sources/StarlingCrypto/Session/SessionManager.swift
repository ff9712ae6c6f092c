import StarlingWire

/// Every Noise session of one node, as a plain value: handshake bytes and
/// transport frames in, replies, plaintext and events out; time is passed in.
///
/// - XX handshakes (`Noise_XX_25519_ChaChaPoly_SHA256`, empty prologue, empty
///   payloads: messages of 32, 96 and 64 bytes); whether an incoming handshake
///   message is the first, second or third follows from the session state.
/// - Sessions are found by peer ID and held by fingerprint, so they survive a
///   peer's ID rotation (``rebind(_:to:)``).
/// - At most 10 handshakes per peer per minute, started or answered.
/// - Rekey after an hour or 10,000 messages in either direction, by a fresh XX
///   handshake while the old keys keep working; the old receiving key stays for
///   a grace period and frames that arrive before the new keys exist are held
///   and opened once they do, so no message is lost across the switch.
public struct SessionManager: Sendable {
    public struct Configuration: Hashable, Sendable {
        public var rekeyAfterMillis: UInt64 = 3_600_000
        public var rekeyAfterMessages: UInt64 = 10_000
        public var maxHandshakesPerMinute = 10
        /// How long the previous receiving key is kept after a rekey.
        public var previousKeyGraceMillis: UInt64 = 60_000
        /// Frames held per peer while a handshake is under way, and their bytes
        /// per peer and in all (a frame may carry a file of up to 1 MiB).
        public var maxHeldFrames = 64
        public var maxHeldBytesPerPeer = 1_310_720
        public var maxHeldBytes = 8 << 20
        /// Handshakes under way at most (started or answered); a new one past
        /// it replaces the oldest. Each holds an ephemeral key and the
        /// handshake hash: about 1 KiB.
        public var maxPendingHandshakes = 128
        /// A handshake not complete after this long is forgotten (iOS: 20 s for
        /// a responder).
        public var handshakeTimeoutMillis: UInt64 = 20_000
        /// Established sessions at most; past it the least recently used goes
        /// (its peer's next message starts a fresh handshake).
        public var maxSessions = 1_024
        public init() {}
    }

    /// What an incoming handshake message produced.
    public struct HandshakeStep: Sendable {
        /// The next handshake message to send back, if any.
        public var reply: [UInt8]?
        /// Set when this message completed the handshake.
        public var established: Fingerprint?
        /// Frames held during the handshake, now opened: each plaintext with the
        /// note it was held with.
        public var released: [(plaintext: [UInt8], note: Int)] = []
    }

    /// What opening a frame produced.
    public enum Opened: Hashable, Sendable {
        case plaintext([UInt8])
        /// Held until the handshake under way completes (see ``HandshakeStep/released``).
        case held
    }

    struct Established: Sendable {
        var transport: NoiseTransport
        var since: UInt64
        var remoteStatic: [UInt8]
        var previous: NoiseTransport?
        var previousUntil: UInt64 = 0
        /// Bumped on every seal or open: the least recent goes first when full.
        var lastUsed: UInt64 = 0
    }

    public let configuration: Configuration
    private let identity: Identity
    private var established: [Fingerprint: Established] = [:]
    private var fingerprintOf: [PeerID: Fingerprint] = [:]
    /// A handshake under way with one peer: its state, when it began (it is
    /// forgotten past the timeout, the oldest first when too many are under
    /// way), and the frames that came before it completed (opened then).
    private struct Pending: Sendable {
        var state: HandshakeState
        let startedAt: UInt64
        var held: [(frame: [UInt8], note: Int)] = []
        var heldBytes: Int { held.reduce(0) { $0 + $1.frame.count } }
    }
    private var pending: [PeerID: Pending] = [:]
    private var useCounter: UInt64 = 0
    private var handshakeTimes: [PeerID: [UInt64]] = [:]

    public init(identity: Identity, configuration: Configuration = Configuration()) {
        self.identity = identity
        self.configuration = configuration
    }

    public var localPeerID: PeerID { identity.peerID }

    // MARK: Queries

    public func fingerprint(of peer: PeerID) -> Fingerprint? { fingerprintOf[peer] }
    public func hasSession(with peer: PeerID) -> Bool { fingerprintOf[peer].map { established[$0] != nil } ?? false }
    public func isHandshaking(with peer: PeerID) -> Bool { pending[peer] != nil }
    public func remoteStaticKey(of peer: PeerID) -> [UInt8]? { fingerprintOf[peer].flatMap { established[$0]?.remoteStatic } }
    public var sessionCount: Int { established.count }
    public var pendingHandshakeCount: Int { pending.count }
    public func hasSession(for fingerprint: Fingerprint) -> Bool { established[fingerprint] != nil }

    /// Whether the session with `peer` is due for a rekey (and none is under way).
    public func needsRekey(_ peer: PeerID, now: UInt64) -> Bool {
        guard let fp = fingerprintOf[peer], let s = established[fp], pending[peer] == nil else { return false }
        let messages = max(s.transport.sent, s.transport.received)
        return now &- s.since >= configuration.rekeyAfterMillis || messages >= configuration.rekeyAfterMessages
    }

    // MARK: Handshakes

    /// Starts an XX handshake as initiator; returns message 1 (32 bytes).
    public mutating func initiateHandshake(with peer: PeerID, now: UInt64) throws(SessionError) -> [UInt8] {
        try admitHandshake(peer, now: now)
        do {
            var state = try HandshakeState(protocol: .bitchat, initiator: true, localStatic: identity.noiseKey)
            let message = try state.writeMessage()
            begin(state, with: peer, now: now)
            return message
        } catch {
            throw .handshakeFailed(error)
        }
    }

    public mutating func receiveHandshake(_ message: [UInt8], from peer: PeerID, now: UInt64) throws(SessionError) -> HandshakeStep {
        var heldBefore: [(frame: [UInt8], note: Int)] = []
        if var state = pending[peer]?.state, !state.isMyTurn {
            // Message 1 is `e` and a clear payload: 32 bytes with bitchat's empty
            // payloads. Messages 2 and 3 carry an encrypted static key and a tag:
            // 96 and 64 bytes.
            let isFirstMessage = message.count < 64
            if state.isInitiator && isFirstMessage && localPeerID < peer {
                // Both sides started at once: the lower peer ID stays initiator.
                return HandshakeStep()
            } else if isFirstMessage {
                // The peer started over (or won the tie-break): answer the new
                // handshake (what it sent meanwhile waits for that one).
                heldBefore = pending.removeValue(forKey: peer)?.held ?? []
            } else {
                do {
                    _ = try state.readMessage(message)
                    var step = HandshakeStep()
                    if state.isMyTurn { step.reply = try state.writeMessage() }
                    if state.isComplete {
                        let frames = pending.removeValue(forKey: peer)?.held ?? []
                        let (fp, released) = try complete(state, peer: peer, held: frames, now: now)
                        step.established = fp
                        step.released = released
                    } else {
                        pending[peer]?.state = state
                    }
                    return step
                } catch {
                    forgetHandshake(peer)
                    throw .handshakeFailed(error)
                }
            }
        }
        // A new handshake from the peer: we respond.
        try admitHandshake(peer, now: now)
        do {
            var state = try HandshakeState(protocol: .bitchat, initiator: false, localStatic: identity.noiseKey)
            _ = try state.readMessage(message)
            let reply = try state.writeMessage()
            begin(state, with: peer, held: heldBefore, now: now)
            return HandshakeStep(reply: reply)
        } catch {
            throw .handshakeFailed(error)
        }
    }

    /// A new handshake under way; the oldest goes when there are too many.
    private mutating func begin(_ state: HandshakeState, with peer: PeerID, held: [(frame: [UInt8], note: Int)] = [], now: UInt64) {
        if pending[peer] == nil, pending.count >= configuration.maxPendingHandshakes,
           let oldest = pending.min(by: { $0.value.startedAt < $1.value.startedAt })?.key {
            forgetHandshake(oldest)
        }
        // A handshake started again keeps what came for the one before it.
        pending[peer] = Pending(state: state, startedAt: now, held: held + (pending[peer]?.held ?? []))
    }

    private mutating func forgetHandshake(_ peer: PeerID) { pending[peer] = nil }

    /// When ``expire(now:)`` next forgets a handshake (nil: none under way).
    public var nextExpiry: UInt64? { pending.values.map(\.startedAt).min().map { $0 + configuration.handshakeTimeoutMillis + 1 } }

    /// Forgets handshakes that did not complete in time, and rate-limit
    /// records older than a minute. Run it now and then (the node does, every second).
    public mutating func expire(now: UInt64) {
        for (peer, p) in pending where now > p.startedAt && now - p.startedAt > configuration.handshakeTimeoutMillis {
            forgetHandshake(peer)
        }
        handshakeTimes = handshakeTimes.filter { _, times in times.contains { now < $0 || now - $0 < 60_000 } }
    }

    private mutating func admitHandshake(_ peer: PeerID, now: UInt64) throws(SessionError) {
        var times = (handshakeTimes[peer] ?? []).filter { now < $0 || now - $0 < 60_000 }
        guard times.count < configuration.maxHandshakesPerMinute else {
            handshakeTimes[peer] = times
            throw .rateLimited(peer)
        }
        times.append(now)
        handshakeTimes[peer] = times
    }

    private mutating func complete(_ state: HandshakeState, peer: PeerID, held: [(frame: [UInt8], note: Int)], now: UInt64) throws(NoiseError)
        -> (Fingerprint, [(plaintext: [UInt8], note: Int)])
    {
        let (i2r, r2i) = try state.split()
        let transport = state.isInitiator ? NoiseTransport(sending: i2r, receiving: r2i)
                                          : NoiseTransport(sending: r2i, receiving: i2r)
        guard let remote = state.remoteStatic else { throw .missingKey("rs") }
        let fp = Fingerprint(noiseStaticKey: remote)
        useCounter += 1
        var session = Established(transport: transport, since: now, remoteStatic: remote, lastUsed: useCounter)
        if var old = established[fp] {
            session.previous = old.transport
            session.previousUntil = now + configuration.previousKeyGraceMillis
            old.transport.wipe()
        }
        if established[fp] == nil, established.count >= configuration.maxSessions,
           let lru = established.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key {
            established[lru]?.transport.wipe()
            established[lru]?.previous?.wipe()
            established[lru] = nil
            for (other, f) in fingerprintOf where f == lru { fingerprintOf[other] = nil }
        }
        established[fp] = session
        fingerprintOf[peer] = fp
        var released: [(plaintext: [UInt8], note: Int)] = []
        for (frame, note) in held {
            if case let .plaintext(p)? = try? open(frame, from: peer, now: now) { released.append((p, note)) }
        }
        return (fp, released)
    }

    // MARK: Transport

    /// Seals a plaintext for `peer` into a transport frame.
    public mutating func seal(_ plaintext: [UInt8], for peer: PeerID) throws(SessionError) -> [UInt8] {
        guard let fp = fingerprintOf[peer], var s = established[fp] else { throw .noSession(peer) }
        let frame = try s.transport.seal(plaintext)
        useCounter += 1
        s.lastUsed = useCounter
        established[fp] = s
        return frame
    }

    /// Opens a transport frame from `peer`, trying the current key and then,
    /// during the grace period, the previous one. A frame held for a handshake
    /// under way keeps `note` (the caller's, e.g. its hop count) for its release.
    public mutating func open(_ frame: [UInt8], from peer: PeerID, now: UInt64, note: Int = 0) throws(SessionError) -> Opened {
        guard let fp = fingerprintOf[peer], var s = established[fp] else {
            if pending[peer] != nil { return hold(frame, from: peer, note: note) }
            throw .noSession(peer)
        }
        do {
            let p = try s.transport.open(frame)
            useCounter += 1
            s.lastUsed = useCounter
            established[fp] = s
            return .plaintext(p)
        } catch {
            // Not for the current keys (wrong key, or a counter from another key's
            // sequence): the previous keys during their grace period, else frames
            // sealed with keys of a handshake we have not finished yet.
            if var previous = s.previous, now <= s.previousUntil, let p = try? previous.open(frame) {
                s.previous = previous
                established[fp] = s
                return .plaintext(p)
            }
            if pending[peer] != nil { return hold(frame, from: peer, note: note) }
            throw error
        }
    }

    private mutating func hold(_ frame: [UInt8], from peer: PeerID, note: Int) -> Opened {
        var frames = pending[peer]?.held ?? []
        // The oldest of this peer's go first; past the bytes of all peers the frame is not kept.
        while !frames.isEmpty, frames.count >= configuration.maxHeldFrames
                || frames.reduce(0, { $0 + $1.frame.count }) + frame.count > configuration.maxHeldBytesPerPeer {
            frames.removeFirst()
        }
        let others = pending.reduce(0) { $0 + ($1.key == peer ? 0 : $1.value.heldBytes) }
        if frame.count <= configuration.maxHeldBytesPerPeer,
           others + frames.reduce(0, { $0 + $1.frame.count }) + frame.count <= configuration.maxHeldBytes {
            frames.append((frame, note))
        }
        pending[peer]?.held = frames
        return .held
    }

    // MARK: Identity changes and wiping

    /// The peer now uses `newID` (an announce with a known Noise key): its session follows.
    public mutating func rebind(_ newID: PeerID, to fingerprint: Fingerprint) {
        fingerprintOf[newID] = fingerprint
    }

    /// Forgets the session, handshakes and held frames of one peer.
    public mutating func wipe(_ peer: PeerID) {
        if let fp = fingerprintOf.removeValue(forKey: peer), var s = established.removeValue(forKey: fp) {
            s.transport.wipe()
            s.previous?.wipe()
            for (other, f) in fingerprintOf where f == fp { fingerprintOf[other] = nil }
        }
        forgetHandshake(peer)
    }

    /// Forgets every session and handshake (panic).
    public mutating func wipeAll() {
        for fp in Array(established.keys) {
            established[fp]?.transport.wipe()
            established[fp]?.previous?.wipe()
        }
        established = [:]
        fingerprintOf = [:]
        pending = [:]
        handshakeTimes = [:]
    }
}
