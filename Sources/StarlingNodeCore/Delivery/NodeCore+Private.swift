import StarlingCrypto
import StarlingMesh
import StarlingWire

/// Private delivery on the node: sending in a Noise session (a handshake first when there is none),
/// retries until a receipt comes, holds for favourites, receipts after the store
/// (``PrivateDelivery`` holds its tables).
extension NodeCore {
    /// Sends a private message, end-to-end encrypted with Noise (a handshake
    /// first when there is no session). Returns its message ID (a UUID v4).
    @discardableResult
    public mutating func sendPrivate(_ text: String, to peer: PeerID, messageID: String? = nil, now: Millis) throws -> String {
        let id = messageID ?? newMessageID()
        try sendTracked(.privateMessage(PrivateMessage(messageID: id, content: text)), id: id, to: peer, now: now)
        awaitRead(id, from: peer)
        return id
    }

    /// A read receipt for `id` counts once, and only from `peer` (messages and
    /// files alike: issue 52, a file's "read" was dropped). The newest 10,000.
    mutating func awaitRead(_ id: String, from peer: PeerID) { unread.expect(id, from: peer) }

    /// Tells `peer` that its message was displayed.
    public mutating func sendReadReceipt(_ messageID: String, to peer: PeerID, now: Millis) throws {
        try sendNoise(.readReceipt(messageID: messageID), to: peer, now: now)
    }

    /// Holds the receipt of `id` until ``stored(_:now:)`` (the oldest let go past the cap).
    mutating func awaitAndKeep(_ id: String, from sender: PeerID, now: Millis) { awaitingStore.wait(id, from: sender, now: now) }

    /// The application stored this private message (``Configuration/receiptsAfterStored``):
    /// its delivery receipt goes now.
    public mutating func stored(_ messageID: String, now: Millis) {
        guard let sender = awaitingStore.take(messageID) else { return }
        try? sendNoise(.delivered(messageID: messageID), to: sender, now: now)
        output(.acknowledged(messageID: messageID))
    }

    /// The application could not store it (a full disk): no receipt, and the
    /// sender's next retry is taken as new (shown again, stored again).
    public mutating func notStored(_ messageID: String) {
        guard awaitingStore.take(messageID) != nil else { return }
        delivery.shown.remove(messageID)
    }

    /// Messages whose receipt waits for the application to store them.
    public var awaitingStoreCount: Int { awaitingStore.count }

    mutating func newMessageID() -> String {
        // A UUID v4 from the node's generator, in the apps' upper-case form.
        var b = (0..<16).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        let hex = b.map { String($0, radix: 16, uppercase: true) }.map { $0.count == 1 ? "0" + $0 : $0 }
        return [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(separator: "-")
    }

    /// Sends a payload that a delivered receipt will acknowledge, and keeps
    /// sending it until one comes (or the tracker gives up).
    mutating func sendTracked(_ payload: NoisePayload, id: String, to peer: PeerID, now: Millis) throws {
        // Fails here, not on a retry. A payload the mesh cannot carry (a private
        // message over 255 bytes) may still go to a peer away from the mesh
        // through an off-mesh transport that can (the Ya OK server carries 10,240 bytes).
        if present[peer] != nil || offMeshRoute(peer) == nil { _ = try payload.encoded() }
        delivery.sent(payload, id: id, to: peer, favorite: isFavorite(peer), now: now)
        try sendNoise(payload, to: peer, now: now, fresh: true)
    }

    private func isFavorite(_ peer: PeerID) -> Bool {
        if let f = present[peer]?.info.fingerprint { return trust.favorites.contains(f) }
        return router.favorites.contains(peer)
    }

    /// Seals and sends; without a session the payload waits for a handshake.
    /// A session due for a rekey (an hour, or 10,000 messages) starts a fresh
    /// handshake; its old keys carry this payload and keep working until the
    /// new ones exist. A retry is flooded (`routing: .flood`): the route the
    /// first try took may be what failed. Without a session the payload
    /// waits once (a retry of one already waiting is not queued again); a
    /// `fresh` send always waits (the same file sent twice is two sends).
    mutating func sendNoise(_ payload: NoisePayload, to peer: PeerID, now: Millis,
                                    routing: MeshRouter.Routing = .automatic, fresh: Bool = false) throws {
        // Mesh first, always: off the mesh only for a peer no announce has come
        // from within the last minute, and only what an off-mesh transport carries.
        if present[peer] == nil, let via = offMeshRoute(peer), let ticket = Self.offMeshTicket(payload) {
            handOff(payload, to: peer, via: via, ticket: ticket)
            return
        }
        guard sessions.hasSession(with: peer) else {
            delivery.wait(payload, for: peer, fresh: fresh) // bounded: a tracked one comes back at its retry
            if !sessions.isHandshaking(with: peer) { try startHandshake(with: peer, now: now) }
            return
        }
        let frame = try sessions.seal(try payload.encoded(), for: peer)
        let actions = router.originate(NoisePackets.encrypted(frame, from: peerID, to: peer, timestamp: wall(now)), now: now, routing: routing)
        perform(actions, now: now)
        if case let .privateFile(file) = payload, let bytes = try? file.encoded() {
            // The sender's progress: out to the links now (a retry says so again).
            let pieces = actions.reduce(0) { n, a in if case .transmit = a { n + 1 } else { n } }
            emit(.fileSent(transferID: sha256Hex(bytes), to: peer, fragments: pieces))
        }
        if sessions.needsRekey(peer, now: now), (try? startHandshake(with: peer, now: now)) != nil { rekeys += 1 }
    }

    /// A peer that announces while we hold messages for it has not acknowledged
    /// them: it may have restarted, within its 60 s of presence, and lost our
    /// session (then what we send it can never be opened, and it has nothing to
    /// say that would tell us). A fresh handshake, at most every 30 s, settles
    /// it: once it completes, what is held goes again.
    mutating func probeHeld(_ peer: PeerID, now: Millis) {
        guard !sessions.isHandshaking(with: peer), delivery.probeDue(peer, now: now), handshakeBudget.take(now: now) else { return }
        delivery.probed(peer, now: now)
        try? startHandshake(with: peer, now: now)
    }

    mutating func startHandshake(with peer: PeerID, now: Millis) throws {
        let m1 = try sessions.initiateHandshake(with: peer, now: now)
        delivery.handshakeBegan(with: peer, now: now)
        choresSoon(now: now)
        perform(router.originate(NoisePackets.handshake(m1, from: peerID, to: peer, timestamp: wall(now)), now: now), now: now)
    }

    mutating func followUp(_ steps: [DeliveryTracker<String>.Step], now: Millis) {
        for step in steps {
            switch step {
            case let .resend(id, peer, _):
                // Without a session it waits (once) for the handshake.
                if let payload = delivery.payload(id) { try? sendNoise(payload, to: peer, now: now, routing: .flood) }
            case let .failed(id, peer):
                delivery.failed(id)
                emit(.failed(messageID: id, to: peer))
            case let .held(id, peer):
                emit(.held(messageID: id, for: peer))
            }
        }
    }

    /// Handshakes we started that stalled (over 5 s): started again while
    /// something of ours waits for the peer (rate-limited by the session
    /// manager), forgotten once a session exists or nothing waits past the
    /// handshake timeout (a restart after an undecryptable frame).
    mutating func retryStalledHandshakes(now: Millis) {
        for (peer, started) in delivery.stalledHandshakes(now: now) {
            if sessions.hasSession(with: peer) {
                delivery.handshakeEnded(with: peer)
            } else if !delivery.hasWaiting(for: peer) {
                if now - started > configuration.sessions.handshakeTimeoutMillis { delivery.handshakeEnded(with: peer) }
            } else {
                try? startHandshake(with: peer, now: now) // refused by the rate: tried at the next chores
            }
        }
    }

    /// Messages and files not yet acknowledged.
    public var unacknowledgedCount: Int { delivery.unacknowledgedCount }

    /// Payloads waiting for a session, all peers together.
    public var waitingCount: Int { delivery.waitingCount }
}
