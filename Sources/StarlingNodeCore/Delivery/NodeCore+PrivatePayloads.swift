import StarlingCrypto
import StarlingMesh
import StarlingWire

/// What comes to the node privately: handshakes, sealed frames, and the payloads inside them.
extension NodeCore {
    /// A Noise handshake message for us. One that starts a new handshake
    /// (whatever its size) costs us two DH operations and a state: budgeted for
    /// all senders together, more tightly for strangers.
    mutating func takeHandshake(_ packet: Packet, now: Millis) {
        let sender = packet.senderID
        if !sessions.isHandshaking(with: sender) {
            let known = present[sender] != nil
            guard known ? handshakeBudget.take(now: now) : strangerHandshakeBudget.take(now: now) else {
                refusals.handshakeBudget += 1
                return
            }
        }
        do {
            let step = try sessions.receiveHandshake(packet.payload, from: sender, now: now)
            if let reply = step.reply {
                perform(router.originate(NoisePackets.handshake(reply, from: peerID, to: sender, timestamp: wall(now)), now: now), now: now)
            }
            if let fingerprint = step.established {
                delivery.handshakeEnded(with: sender)
                // A blocked key: nothing it sent is opened, shown or answered.
                if trust.blocked.contains(fingerprint) { return }
                emit(.sessionEstablished(sender, fingerprint: fingerprint.hex))
                for (p, hops) in step.released { inner(p, from: sender, hops: hops, now: now) }
                // A new session: what went into the old one may be lost (a restart), so a group's state goes again.
                using(\.groupsFeature, now: now) { groups, context in groups.peerReturned(sender, fingerprint: fingerprint, context: &context) }
                // The drops we carry for it (or copies for it to carry), now that it proved its key.
                if let key = noiseKeys[fingerprint], present[sender]?.hops == 1 {
                    using(\.courierFeature, now: now) { courier, context in courier.handOver(to: sender, noiseKey: key, context: &context) }
                }
                let flushed = delivery.takeWaiting(for: sender)
                for payload in flushed { try? sendNoise(payload, to: sender, now: now) } // the session is there: only a seal can fail
                // A session with the peer: it is back. What we still owe it goes now,
                // what was held for it with a fresh budget (but not twice).
                followUp(delivery.peerReturned(sender, flushed: flushed, now: now), now: now)
            }
        } catch {
            emit(.rejected(Rejection(.handshakeFailed, peer: sender, "handshake from \(sender): \(error)")))
        }
    }

    /// A sealed frame for us: opened in its session, or held (with its hop
    /// count) while the handshake completes and handed back in its step.
    mutating func open(_ packet: Packet, hops: Int, now: Millis) {
        let sender = packet.senderID
        do {
            if case let .plaintext(p) = try sessions.open(packet.payload, from: sender, now: now, note: hops) {
                inner(p, from: sender, hops: hops, now: now)
            }
        } catch {
            emit(.rejected(Rejection(.undecryptable, peer: sender, "frame from \(sender): \(error)")))
            // A peer we know sends frames we cannot open: one of us restarted
            // and lost the session. A fresh handshake (rate-limited) recovers it.
            if present[sender] != nil, !sessions.isHandshaking(with: sender), handshakeBudget.take(now: now) {
                try? startHandshake(with: sender, now: now)
            }
        }
    }

    /// A decrypted inner payload.
    private mutating func inner(_ plaintext: [UInt8], from sender: PeerID, hops: Int, now: Millis) {
        guard let payload = try? NoisePayload(decoding: plaintext) else {
            emit(.rejected(Rejection(.malformedPrivatePayload, peer: sender, "malformed private payload from \(sender)")))
            return
        }
        inner(payload, from: sender, hops: hops, via: nil, now: now)
    }

    /// A private payload from `sender`, over the mesh (`via` nil) or an off-mesh transport.
    mutating func inner(_ payload: NoisePayload, from sender: PeerID, hops: Int, via: String?, now: Millis) {
        // Blocked: dropped unanswered, whatever came first (a session before an announce).
        if isBlocked(sender) { return }
        // Before the decisions are loaded, what a person reads and a group's state wait for them.
        if trust.holds(payload, from: sender, hops: hops, via: via) { return }
        switch payload {
        case let .privateMessage(m):
            // A retried copy is acknowledged again but shown once. A favourite
            // notification is a notice, not text (docs/PROTOCOL.md).
            if delivery.shown.insert(m.messageID) {
                let nickname = present[sender]?.info.nickname
                if let notice = Self.favoriteNotice(m.content) {
                    emit(.favorited(by: sender, nickname: nickname, on: notice.on, npub: notice.npub))
                } else {
                    emit(.privateMessage(from: sender, nickname: nickname, text: m.content, messageID: m.messageID, hops: hops, via: via))
                    if configuration.receiptsAfterStored {
                        // Its receipt goes once the application has stored it.
                        awaitAndKeep(m.messageID, from: sender, now: now)
                        return
                    }
                }
            } else if awaitingStore.isWaiting(m.messageID) {
                return // a retry while it is being stored: the receipt follows the store
            }
            try? sendNoise(.delivered(messageID: m.messageID), to: sender, now: now)
            output(.acknowledged(messageID: m.messageID))
        case let .privateFile(file):
            receiveFile(file, from: sender, now: now)
        case let .bulkOffer(offer):
            let id = Self.bulkID(offer.transferID)
            guard configuration.acceptsFiles, configuration.bulk else {
                try? sendNoise(.bulkAnswer(BulkAnswer(transferID: offer.transferID, accepted: false,
                                                      reason: "this node takes no large files")), to: sender, now: now)
                return
            }
            // A retried offer is acknowledged again, handed on once.
            if delivery.shown.insert(id) { output(.bulkOffered(offer, from: sender)) }
            try? sendNoise(.delivered(messageID: id), to: sender, now: now)
        case let .bulkAnswer(answer):
            output(.bulkAnswered(answer, from: sender))
        case let .delivered(id):
            // A duplicate receipt, or one from anyone but the recipient, counts for nothing.
            guard delivery.acknowledged(id, by: sender) else { return }
            emit(.delivered(messageID: id, by: sender))
        case let .readReceipt(id):
            // Once, and only from the one we sent it to (a replayed or forged receipt counts for nothing).
            guard unread.read(id, by: sender) else { return }
            emit(.read(messageID: id, by: sender))
        case let .unknown(type, body) where type == NoisePayload.Kind.voiceFrame:
            takeVoice(body, from: sender, isPrivate: true, now: now)
        case let .unknown(type, body) where type == NoisePayload.Kind.vouch:
            using(\.vouchesFeature, now: now) { vouches, context in vouches.take(body, from: sender, context: &context) }
        case let .unknown(type, body) where type == NoisePayload.Kind.groupInvite || type == NoisePayload.Kind.groupKeyUpdate:
            using(\.groupsFeature, now: now) { groups, context in
                groups.takeState(body, invite: type == NoisePayload.Kind.groupInvite, from: sender, context: &context)
            }
        default:
            break
        }
    }

    /// `[FAVORITED]:npub1…` or `[UNFAVORITED]:npub1…` (the npub may be empty,
    /// as Android sends it without a Nostr key): whether, and the key.
    static func favoriteNotice(_ text: String) -> (on: Bool, npub: String?)? {
        for (prefix, on) in [("[FAVORITED]:", true), ("[UNFAVORITED]:", false)] where text.hasPrefix(prefix) {
            let key = String(text.dropFirst(prefix.count))
            // A bech32 npub: "npub1" and lowercase letters and digits; anything else is not a key.
            let valid = key.hasPrefix("npub1") && key.count <= 100 && key.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber) }
            return (on, valid ? key : nil)
        }
        return nil
    }
}
