import StarlingCrypto
import StarlingMesh
import StarlingWire

/// The rules a packet passes before anything is done with it (docs/PROTOCOL.md,
/// "Authentication and freshness"): not our own ID, fresh, signed by its sender's announced key.
extension NodeCore {
    /// The rules a packet passes before the router sees it (docs/PROTOCOL.md,
    /// "Authentication and freshness"): no relay, no answer, no event for what fails.
    mutating func admits(_ packet: Packet, bytes: [UInt8], on link: LinkID, now: Millis) -> Bool {
        let sender = packet.senderID
        // Our own ID: only a copy of a packet of ours (a relay's echo, which the
        // router counts as a duplicate and uses as evidence) goes on.
        if sender == peerID {
            if router.hasSeen(packet) { return true }
            // Or one of our own public messages from before a restart, replayed
            // by a sync we asked for and signed with our own key: our history.
            if packet.type == .message, packet.isSyncAnswer, isFresh(packet, link: link, now: now),
               packet.signature != nil, PacketSigning.isValid(packet, publicKey: identity.signingPublicKey) {
                return true
            }
            // Or our own board posts, handed back by a sync after a restart (each signed inside).
            if packet.type == .boardPost, packet.isSyncAnswer, isFresh(packet, link: link, now: now) {
                return takesBoard(packet, now: now)
            }
            refusals.ownID += 1
            return false
        }
        guard isFresh(packet, link: link, now: now) else {
            refusals.stale += 1
            noteClock(of: packet, on: link, fresh: false, now: now)
            return false
        }
        noteClock(of: packet, on: link, fresh: true, now: now)
        // A copy of a packet the duplicate filter holds costs nothing more: the
        // first copy was checked before it got there (a forged first copy never
        // does), and the router only counts this one (a genuine replay would do
        // the same). In a mesh each packet comes from several neighbours.
        if router.hasSeen(packet) { return true }
        // An announce whose signing key is not the one pinned to its Noise key
        // goes no further: not bound, not relayed, not stored (cheap: no crypto).
        if packet.type == .announce, let a = try? Announce(decoding: packet.payload),
           let pinned = pins[Fingerprint(noiseStaticKey: a.noisePublicKey)], pinned != a.signingPublicKey {
            refusals.pinMismatch += 1
            emit(.rejected(Rejection(.badAnnounce, peer: packet.senderID,
                                     "announce from \(packet.senderID): its signing key is not the one first seen with its Noise key (refused)")))
            return false
        }
        // Live voice is live: a public burst packet over 30 s old goes nowhere (as iOS).
        if packet.type == .voiceFrame, wall(now) > packet.timestamp, wall(now) - packet.timestamp > 30_000 {
            refusals.stale += 1
            return false
        }
        // A board post is relayed only when the board takes it (as iOS): decoded,
        // signed by the key it carries, live, not deleted.
        if packet.type == .boardPost, boardFeature != nil, packet.isBroadcast { return takesBoard(packet, now: now) }
        // A prekey bundle: its packet and the bundle inside signed by its owner's announced key, or it goes nowhere.
        if packet.type == .prekeyBundle, packet.isBroadcast { return takesPrekeys(packet, now: now) }
        return signatureHolds(packet, queue: (bytes, link, now))
    }

    /// The rules for a packet reassembled from fragments: our own ID, freshness
    /// and signatures, as for one that came whole.
    mutating func screensWhole(_ packet: Packet, link: LinkID?, now: Millis) -> Bool {
        if packet.senderID == peerID {
            refusals.ownID += 1
            return false
        }
        guard isFresh(packet, link: link, now: now) else {
            refusals.stale += 1
            return false
        }
        return signatureHolds(packet, queue: nil)
    }

    /// The wall-clock time at `now`.
    func wall(_ now: Millis) -> Millis { wallTime(now, offset: wallClockOffset) }

    /// Within 120 s of our clock, or an answer (isRSR, TTL 0, an announce or a
    /// public message: what sync stores) on a link we asked within 30 s.
    private func isFresh(_ packet: Packet, link: LinkID?, now: Millis) -> Bool {
        let wall = wall(now)
        let skew = wall >= packet.timestamp ? wall - packet.timestamp : packet.timestamp - wall
        if skew <= configuration.freshness { return true }
        guard packet.isSyncAnswer, packet.type == .message || packet.type == .announce || packet.type == .boardPost
            || packet.type == .prekeyBundle || packet.type == .groupMessage, let link else { return false }
        return router.askedForSync(on: link, within: configuration.syncAnswerWindow, now: now)
    }

    private mutating func noteClock(of packet: Packet, on link: LinkID?, fresh: Bool, now: Millis) {
        guard let link, links.contains(link) else { return }
        clocks.note(packet, on: link, fresh: fresh, wall: wall(now), now: now)
    }

    /// What a person reads as said by a peer must be signed by that peer's key:
    /// public messages, leaves and file transfers, whatever their recipient; so
    /// must a carrier deposited with us (our gateway or bridge publishes it for
    /// its depositor). One from a sender with no verified announce goes into
    /// `queue` (to wait for it) when one is given: a deposit can overtake its
    /// depositor's announce when we have just come up beside it.
    private mutating func signatureHolds(_ packet: Packet, queue: (bytes: [UInt8], link: LinkID, now: Millis)?) -> Bool {
        let deposit = packet.type == .nostrCarrier && packet.recipientID == peerID
        guard packet.type == .message || packet.type == .leave || packet.type == .fileTransfer || packet.type == .voiceFrame || deposit else {
            return true
        }
        guard let card = present[packet.senderID]?.info else {
            if let q = queue, packet.signature != nil, links.contains(q.link), awaitingAnnounce.hold(packet, bytes: q.bytes, on: q.link, now: q.now) {
                choresSoon(now: q.now)
            } else {
                refusals.unverifiable += 1
            }
            return false
        }
        guard packet.signature != nil, PacketSigning.isValid(packet, publicKey: card.signingKey) else {
            refusals.forged += 1
            return false
        }
        return true
    }
}
