import StarlingCrypto
import StarlingMesh
import StarlingNostr
import StarlingWire

/// Courier drops as a part of the node (docs/PROTOCOL.md, "Courier drops
/// (0x04)", "Prekey bundles (0x24)", "The courier mailbox"): private messages
/// sealed one-way to a peer who is away and left with neighbours; the drops we
/// carry for others (``CourierStore``) and hand to their recipient when it is
/// here; the prekey bundles drops are sealed to (others', kept and synced; our
/// own, published when ``NodeCore/Configuration/publishesPrekeys``); and drops
/// online, through our bridge's relays or a courier mailbox.
struct CourierFeature: NodeFeature {
    /// What the node was built with.
    struct Settings: Sendable {
        var publishesPrekeys: Bool
        /// A courier mailbox is reachable (``NodeCore/Configuration/courierMailbox``).
        var mailbox: Bool
        /// We are a mesh bridge: drops go to and come from its relays.
        var bridging: Bool
    }

    let settings: Settings
    /// Whether the runtime has a relay up for what the bridge publishes.
    var relaysUp = false
    /// Drops carried for others.
    private(set) var store = CourierStore()
    /// Others' prekey bundles, kept and synced for courier drops.
    private(set) var prekeys = PrekeyStore()
    /// Our own prekeys (nil unless published), and when their bundle last went out.
    private(set) var ownPrekeys: LocalPrekeys?
    private var prekeysPublishedAt: Millis?
    /// A prekey was used since the last bundle: the next goes within a minute (not one a drop).
    private var prekeysChanged = false
    /// Prekey IDs of others' bundles we sealed drops to (256 recipients): each used once.
    private var prekeysUsed: [Fingerprint: Set<UInt32>] = [:]
    private var prekeysProvidedAt: Millis?
    /// Drops online (a bridge's): drop events taken from the relays (4,096),
    /// envelopes posted (512, by their seal's hash), our own waiting for a
    /// relay (20, the oldest out), and the recipient tags followed.
    private var eventsTaken = BoundedIDs(4_096)
    private var posted = BoundedIDs(512)
    /// Seals (their SHA-256) handed to the courier mailbox, or that came from it.
    private var mailboxed = BoundedIDs(4_096)
    private var toPost: [CourierEnvelope] = []
    private var tagsFollowed: [String] = []
    /// Orders the peers whose drops we follow (see ``follow(_:)``).
    private let salt: [UInt8] = (0..<16).map { _ in UInt8.random(in: 0...255) }
    /// Drop events checked a minute (a signature and a seal each).
    private var checks = TokenBucket(perMinute: 720)
    /// Message IDs of drops opened (512): each sealed anew, so copies never match byte for byte.
    private var opened: [String] = []
    /// Drops for us that came before the trust decisions (64, the oldest refused): opened once they are known.
    private var awaitingTrust: [(CourierEnvelope, Int)] = []

    init(settings: Settings) { self.settings = settings }

    var tableSizes: [String: Int] {
        ["node.prekeyBundles": prekeys.count, "node.courierHeld": store.count, "node.dropsMailboxed": mailboxed.count,
         "node.dropsOpened": opened.count, "node.dropEventsTaken": eventsTaken.count, "node.dropsPosted": posted.count,
         "node.dropsToPost": toPost.count, "node.dropTagsFollowed": tagsFollowed.count, "node.prekeysUsed": prekeysUsed.count,
         "node.dropsAwaitingTrust": awaitingTrust.count]
    }

    /// When a carried drop expires (wall-clock time).
    var nextExpiry: Millis? { store.nextExpiry }

    mutating func chores(_ context: inout NodeContext) {
        follow(&context)
        if store.count > 0 { store.prune(now: context.wall) }
        let now = context.now
        if settings.publishesPrekeys, prekeysPublishedAt == nil || now >= prekeysPublishedAt! + 3_600_000
            || (prekeysChanged && now >= prekeysPublishedAt! + 60_000) { publishPrekeys(&context) }
        if now >= (prekeysProvidedAt ?? 0) + 60_000 {
            prekeysProvidedAt = now
            context.provide(.prekeyBundle, packets: prekeys.syncPackets(now: context.wall)) // past 24 h they leave the round
        }
    }

    // MARK: Sealing and carrying

    /// Seals a private message one-way to the peer of this Noise key and
    /// deposits it with up to 3 neighbours, 4 copies each, for 24 hours (as
    /// iOS). Returns how many took it.
    mutating func seal(_ text: String, toNoiseKey key: [UInt8], messageID id: String, context: inout NodeContext) throws -> Int {
        let recipient = Fingerprint(noiseStaticKey: key)
        let payload = try NoisePayload.privateMessage(PrivateMessage(messageID: id, content: text)).encoded()
        let w = context.wall
        // A one-time prekey of theirs when a bundle under 7 days old is known (forward secret); else their static key.
        var prekey: PrekeyBundle.Prekey?
        if let bundle = prekeys.bundle(of: recipient), w < bundle.generatedAt || w - bundle.generatedAt < 7 * 86_400_000 {
            prekey = bundle.prekeys.sorted { $0.id < $1.id }.first { !(prekeysUsed[recipient] ?? []).contains($0.id) }
            if let p = prekey {
                if prekeysUsed[recipient] == nil, prekeysUsed.count >= 256, let any = prekeysUsed.keys.first { prekeysUsed[any] = nil }
                prekeysUsed[recipient, default: []].insert(p.id)
            }
        }
        let sealed = try CourierSeal.seal(payload, from: context.identity.noiseKey, to: prekey?.key ?? key, prekeyID: prekey?.id)
        let envelope = CourierEnvelope(recipientTag: CourierSeal.recipientTag(noiseKey: key, day: CourierSeal.epochDay(unixSeconds: w / 1_000)),
                                       expiry: w + CourierEnvelope.maxLifetime, ciphertext: sealed, copies: 4, prekeyID: prekey?.id)
        let favorites = context.favorites
        let couriers = context.present.entries.filter { $0.value.hops == 1 && $0.value.info.fingerprint != recipient && !context.blocked.contains($0.value.info.fingerprint) }
            .sorted { (favorites.contains($0.value.info.fingerprint) ? 0 : 1, $0.key.rawValue) < (favorites.contains($1.value.info.fingerprint) ? 0 : 1, $1.key.rawValue) }
            .prefix(3).map(\.key)
        for c in couriers { try Self.deposit(envelope, with: c, context: &context) }
        post(envelope, own: true, context: &context)
        context.emit(.dropDeposited(messageID: id, to: recipient.peerID, couriers: couriers.count))
        return couriers.count
    }

    private static func deposit(_ e: CourierEnvelope, with peer: PeerID, context: inout NodeContext) throws {
        var packet = Packet(type: .courierEnvelope, ttl: 7, timestamp: context.wall, senderID: context.peerID, recipientID: peer, payload: try e.encoded())
        try PacketSigning.sign(&packet, with: context.identity.signingKey)
        context.originate(packet)
    }

    /// A peer announced itself one hop away: the drops we carry for it go to
    /// it (and leave us), and it gets half the copies of the others (spray-and-wait).
    mutating func handOver(to peer: PeerID, noiseKey: [UInt8], context: inout NodeContext) {
        guard store.count > 0 else { return }
        // Only into a session that proved that key: an announce's hop count is not signed.
        guard context.sessions.hasSession(with: peer), context.sessions.fingerprint(of: peer) == Fingerprint(noiseStaticKey: noiseKey) else {
            context.startHandshake(with: peer)
            return
        }
        // A drop that cannot be sent is carried again (never lost); a spray's copies are only a budget.
        for h in store.handOver(to: noiseKey, now: context.wall) {
            do { try Self.deposit(h.envelope, with: peer, context: &context) } catch { store.readmit(h) }
        }
        for e in store.spray(to: noiseKey, now: context.wall) { try? Self.deposit(e, with: peer, context: &context) }
    }

    /// A 0x04 packet for us: a drop addressed to us (opened and shown as a
    /// private message), or a deposit to carry (from the neighbour that sent
    /// it, signed by the key its verified announce carries).
    mutating func take(_ packet: Packet, hops: Int, context: inout NodeContext) {
        let w = context.wall
        guard let e = try? CourierEnvelope(decoding: packet.payload[...]), !e.isExpired(at: w) else {
            context.refuse(\.courier)
            return
        }
        let mine = CourierSeal.candidateTags(noiseKey: context.identity.noisePublicKey, day: CourierSeal.epochDay(unixSeconds: w / 1_000))
        if mine.contains(e.recipientTag) {
            openOrWait(e, hops: hops, context: &context)
            return
        }
        guard hops == 1, let card = context.card(packet.senderID), let key = context.noiseKeys[card.fingerprint],
              packet.signature != nil, PacketSigning.isValid(packet, publicKey: card.signingKey) else {
            context.refuse(\.courier)
            return
        }
        switch store.deposit(e, from: key, favorite: context.favorites.contains(card.fingerprint), now: w) {
        case .refused: context.refuse(\.courier)
        case .kept: post(e, context: &context)
        case .duplicate: break
        }
    }

    // MARK: Online

    /// The runtime has (or lost) a relay for what the bridge publishes: what waited goes when one is up.
    mutating func relays(up: Bool, context: inout NodeContext) {
        relaysUp = up
        guard up else { return }
        let waiting = toPost
        toPost = []
        for e in waiting { post(e, own: true, context: &context) }
        for e in store.held.map(\.envelope) { post(e, context: &context) }
    }

    /// A bridge with a relay up posts each envelope it seals or carries as a
    /// kind 1401 drop (once, by its seal's hash); with none up, its own wait (20).
    /// With a courier mailbox, each goes there too (once a seal).
    private mutating func post(_ e: CourierEnvelope, own: Bool = false, context: inout NodeContext) {
        let w = context.wall
        if settings.mailbox, !e.isExpired(at: w), !mailboxed.contains(sha256Hex(e.ciphertext)) {
            mailboxed.insert(sha256Hex(e.ciphertext))
            context.output(.postToMailbox(e))
        }
        guard settings.bridging else { return }
        guard relaysUp else {
            // Ours wait here; those we carry are in the courier store, posted from there when a relay is up.
            if own, !toPost.contains(e) {
                if toPost.count >= 20 { toPost.removeFirst() }
                toPost.append(e)
            }
            return
        }
        guard !e.isExpired(at: w), !posted.contains(sha256Hex(e.ciphertext)),
              let event = CourierDrop.event(e, now: Int64(w / 1_000)) else { return }
        posted.insert(sha256Hex(e.ciphertext))
        context.output(.publishNostr(GatewayCore.Upload(event: event, geohash: "", depositor: context.peerID)))
    }

    /// The recipient tags our bridge (or the courier mailbox) follows: ours and
    /// those of the peers one hop away whose Noise key we know (16 at most, not
    /// blocked), for yesterday, today and tomorrow; said to the runtime when they change.
    mutating func follow(_ context: inout NodeContext) {
        guard settings.bridging || settings.mailbox else { return }
        let day = CourierSeal.epochDay(unixSeconds: context.wall / 1_000)
        // Favourites first, then peers whose key a session proved, then in an order of a salt of ours
        // (keys are the announcers' to choose: sorting by them would let 16 made-up peers push out the real ones).
        let peers = context.present.entries.filter { $0.key != context.peerID && $0.value.hops == 1 && !context.blocked.contains($0.value.info.fingerprint) }
            .compactMap { e -> (rank: Int, order: String, key: [UInt8])? in
                guard let key = context.noiseKeys[e.value.info.fingerprint] else { return nil }
                let rank = context.favorites.contains(e.value.info.fingerprint) ? 0 : context.sessions.hasSession(with: e.key) ? 1 : 2
                return (rank, sha256Hex(salt + key), key)
            }
            .sorted { ($0.rank, $0.order) < ($1.rank, $1.order) }.prefix(16).map(\.key)
        let tags = ([context.identity.noisePublicKey] + peers).flatMap { CourierSeal.candidateTags(noiseKey: $0, day: day).map(\.hexString) }
        let wanted = Array(Set(tags)).sorted()
        guard wanted != tagsFollowed else { return }
        tagsFollowed = wanted
        context.output(.followDrops(wanted))
    }

    /// A kind 1401 event our bridge's subscription brought: a drop for us is
    /// opened; one for a peer here is carried and handed to it over a session
    /// that proved its key (as any drop we carry).
    mutating func fromRelay(_ event: NostrEvent, context: inout NodeContext) {
        guard settings.bridging, !eventsTaken.contains(event.id) else { return }
        guard let e = CourierDrop.envelope(of: event, wall: context.wall), checks.take(now: context.now), (try? event.verify()) != nil else {
            context.refuse(\.courier)
            return
        }
        takeOnline(e, taken: event.id, context: &context)
    }

    /// A drop the courier mailbox's fetch brought: as one from the relays,
    /// never posted back; taken once a seal.
    mutating func fromMailbox(_ e: CourierEnvelope, context: inout NodeContext) {
        let seal = sha256Hex(e.ciphertext)
        guard settings.mailbox, !eventsTaken.contains("mailbox " + seal) else { return }
        guard !e.isExpired(at: context.wall), e.ciphertext.count <= CourierEnvelope.maxCiphertext else {
            context.refuse(\.courier)
            return
        }
        mailboxed.insert(seal)
        takeOnline(e, taken: "mailbox " + seal, context: &context)
    }

    /// A drop from the Nostr relays or the courier mailbox (`taken`: the key it is taken
    /// once under): opened when it is ours, else carried to the peer here it is for.
    private mutating func takeOnline(_ drop: CourierEnvelope, taken: String, context: inout NodeContext) {
        let w = context.wall
        var e = drop
        e.copies = 1 // carried to its recipient only, never sprayed
        let day = CourierSeal.epochDay(unixSeconds: w / 1_000)
        if CourierSeal.candidateTags(noiseKey: context.identity.noisePublicKey, day: day).contains(e.recipientTag) {
            eventsTaken.insert(taken)
            openOrWait(e, hops: 0, context: &context)
            return
        }
        var target: (PeerID, [UInt8])?
        for (id, entry) in context.present.entries where entry.hops == 1 {
            if let key = context.noiseKeys[entry.info.fingerprint], CourierSeal.candidateTags(noiseKey: key, day: day).contains(e.recipientTag) {
                target = (id, key)
                break
            }
        }
        guard let (peer, key) = target else {
            context.refuse(\.courier) // for no one here (any longer)
            return
        }
        // Held under its recipient's key, in the share of peers who are not favourites: anyone can post
        // drops for a peer they made up, and those must not push out what favourites gave us to carry.
        if case .refused = store.deposit(e, from: key, favorite: false, now: w) {
            context.refuse(\.courier)
            return
        }
        posted.insert(sha256Hex(e.ciphertext)) // it came from the Nostr relays or the courier mailbox: not posted back
        mailboxed.insert(sha256Hex(e.ciphertext))
        eventsTaken.insert(taken) // taken once it is carried: one for no one here yet is read again when they come
        handOver(to: peer, noiseKey: key, context: &context)
    }

    // MARK: Opening

    /// A drop for us: opened, or kept until the trust decisions are loaded (its sender may be blocked).
    private mutating func openOrWait(_ e: CourierEnvelope, hops: Int, context: inout NodeContext) {
        guard context.trustKnown else {
            if awaitingTrust.count >= 64 { awaitingTrust.removeFirst(); context.refuse(\.courier) }
            awaitingTrust.append((e, hops))
            return
        }
        open(e, hops: hops, context: &context)
    }

    /// The trust decisions are loaded: the drops that waited are opened now.
    mutating func trustDecided(_ context: inout NodeContext) {
        let drops = awaitingTrust
        awaitingTrust = []
        for (e, hops) in drops { open(e, hops: hops, context: &context) }
    }

    private mutating func open(_ e: CourierEnvelope, hops: Int, context: inout NodeContext) {
        let key = e.prekeyID.map { ownPrekeys?.privateKey(for: $0, now: context.wall) } ?? context.identity.noiseKey
        guard let key, let sealed = try? CourierSeal.open(e.ciphertext, with: key, prekeyID: e.prekeyID),
              case let .privateMessage(m)? = try? NoisePayload(decoding: sealed.payload) else {
            context.refuse(\.courier) // a prekey we never had or dropped, or a tag that collided
            return
        }
        let sender = Fingerprint(noiseStaticKey: sealed.sender)
        guard !context.blocked.contains(sender), !opened.contains(m.messageID) else { return }
        if let id = e.prekeyID, var own = ownPrekeys {
            if own.markConsumed(id, now: context.wall) {
                ownPrekeys = own
                context.output(.savePrekeys(own)) // kept at once; a new bundle without it at the next minute
                prekeysChanged = true
            }
        }
        opened.append(m.messageID)
        if opened.count > 512 { opened.removeFirst() }
        let from = context.peer(with: sender) ?? sender.peerID
        context.emit(.dropOpened(from: from, fingerprint: sender.hex, noiseKey: sealed.sender, nickname: context.card(from)?.nickname,
                                 text: m.content, messageID: m.messageID, hops: hops))
    }

    // MARK: Prekeys

    /// Whether a prekey bundle holds: sent by its owner, the packet and the
    /// bundle signed by the key the owner's verified announce carries (the one
    /// present, else the one pinned to its Noise key when its announce was
    /// verified: an owner away is the point of a bundle). A new one is kept
    /// and offered to sync.
    mutating func takesPrekeys(_ packet: Packet, context: inout NodeContext) -> Bool {
        guard let bundle = try? PrekeyBundle(decoding: packet.payload[...]) else {
            context.refuse(\.prekeys)
            return false
        }
        let owner = Fingerprint(noiseStaticKey: bundle.noiseStaticKey)
        let card = context.card(packet.senderID)
        let key = card.flatMap { $0.fingerprint == owner ? $0.signingKey : nil } ?? context.pins[owner]
        guard owner.peerID == packet.senderID, let key, packet.signature != nil, PacketSigning.isValid(packet, publicKey: key),
              PrekeySigning.isValid(bundle, signingKey: key) else {
            context.refuse(\.prekeys)
            return false
        }
        switch prekeys.take(bundle, packet: packet, now: context.wall) {
        case .accepted:
            context.provide(.prekeyBundle, packets: prekeys.syncPackets(now: context.wall))
            return true
        case .duplicate:
            return true
        case .outdated:
            return false // an older bundle than the one held: not handed on
        }
    }

    /// Our own prekeys as the runtime kept them, taken at the start before
    /// the first tick (which publishes them, or makes new ones when none were kept).
    mutating func adopt(_ p: LocalPrekeys) {
        guard settings.publishesPrekeys else { return }
        ownPrekeys = p
    }

    /// Tops up our prekeys and publishes their bundle (signed, as iOS does,
    /// hourly and whenever one was used); the runtime keeps them first.
    private mutating func publishPrekeys(_ context: inout NodeContext) {
        let w = context.wall
        var p = ownPrekeys ?? LocalPrekeys()
        p.replenish(now: w)
        p.touch(now: w) // each bundle newer than the last: taken and synced again
        context.output(.savePrekeys(p)) // kept before a bundle names them
        ownPrekeys = p
        prekeysPublishedAt = context.now
        prekeysChanged = false
        var bundle = p.bundle(noiseStaticKey: context.identity.noisePublicKey)
        do {
            guard !bundle.prekeys.isEmpty else { return }
            try PrekeySigning.sign(&bundle, with: context.identity.signingKey)
            var packet = Packet(type: .prekeyBundle, ttl: 7, timestamp: w, senderID: context.peerID, payload: bundle.encoded())
            try PacketSigning.sign(&packet, with: context.identity.signingKey)
            _ = prekeys.take(bundle, packet: packet, now: w)
            context.provide(.prekeyBundle, packets: prekeys.syncPackets(now: w))
            context.originate(packet)
        } catch {
            // Not expected with our own key: said, and tried again at the next hour.
            context.emit(.notice("our prekey bundle could not be signed (\(error)): drops to us are sealed to our static key until the next try"))
        }
    }
}
