import Foundation
import StarlingCrypto
import StarlingMesh
import StarlingMessengerCore
import StarlingNode
import StarlingNodeCore
import StarlingNostr
import StarlingNostrTransport
import StarlingTransport
import StarlingYaOKClient
import StarlingWire
import StarlingYaOK
import StarlingStore

/// The messenger's runtime: ``MessengerCore`` over a running node, the
/// encrypted store (while it is open) and the off-mesh transports (Nostr, the
/// Ya OK server). It decides nothing itself: it hands the core what happens
/// and carries out what the core says. Faces (the terminal, the daemon's API)
/// read ``events`` and call its commands.
public actor Messenger: DeadlineDriven {
    public nonisolated let node: MeshNode
    public nonisolated let events: AsyncStream<MessengerEvent>
    private let continuation: AsyncStream<MessengerEvent>.Continuation
    private var core: MessengerCore
    public private(set) var store: MessengerStore?
    /// The data directory (its `nostr-contacts`, from before the store kept them, moves in).
    public nonisolated let directory: URL
    public nonisolated let nostr: NostrTransport?
    public nonisolated let server: YaOKServerTransport?
    private var knownContacts = 0
    /// A store is being opened (its reads under way): a second open waits for nothing.
    private var opening = false

    /// Location channels this node carries as a gateway (joined at start; their
    /// events go to the node's gateway, which carries them into the mesh).
    let gatewayChannels: [String]
    /// The cell this node bridges (its events come from the relays to the node's bridge).
    let bridgeCell: String?
    /// The seed of our location-channel keys (the data directory's), for lines
    /// a gateway carries when we have no relay.
    let geoSeed: [UInt8]?

    public init(node: MeshNode, directory: URL, nostr: NostrTransport? = nil, server: YaOKServerTransport? = nil,
                configuration: MessengerCore.Configuration = .init(), gatewayChannels: [String] = [], bridgeCell: String? = nil,
                geoSeed: [UInt8]? = nil) {
        self.node = node
        self.gatewayChannels = gatewayChannels
        self.bridgeCell = bridgeCell
        self.geoSeed = geoSeed
        self.directory = directory
        self.nostr = nostr
        self.server = server
        var c = configuration
        c.nostr = nostr != nil
        c.server = server?.name
        core = MessengerCore(identity: node.identity, configuration: c)
        (events, continuation) = AsyncStream.makeStream(of: MessengerEvent.self, bufferingPolicy: .bufferingNewest(10_000))
    }

    static var now: Double { Date().timeIntervalSince1970 }

    /// A store failure in words a person can act on (SQLite's "database or disk
    /// is full" is the disk's, not the database's).
    static func reason(_ error: any Error, directory: URL) -> String {
        let text = "\(error)"
        if text.contains("SQLite error 13") || text.contains("disk is full") || text.contains("No space left") {
            return "the disk is full: free some space where \(directory.path) is"
        }
        return text
    }

    /// Takes the node's events until the node stops (then ``events`` ends).
    public func run() async {
        if let server {
            let registrations = server.registrations
            Task { [weak self] in
                for await up in registrations { await self?.serverChanged(up) }
            }
        }
        // The messenger's clock (history bursts that went quiet are given to the faces)
        // runs only while a burst waits: an idle messenger never wakes (``rearm()``).
        // Location channels (Nostr), given to the faces as they come; a gateway's
        // channels also to the node, which carries their events into the mesh.
        let channels = Task { [weak self, nostr, continuation, node, gatewayChannels, bridgeCell] in
            guard let nostr else { return }
            for g in gatewayChannels {
                do { try await nostr.join(g) } catch { continuation.yield(.warning("the gateway does not follow #\(g): \(error)")) }
            }
            if let bridgeCell { await nostr.followBridge(cells: MeshBridge.cells(around: bridgeCell)) }
            for await e in nostr.channelEvents {
                if case let .bridge(event) = e {
                    await node.bridgeFromRelay(event)
                    continue
                }
                if case let .drop(event) = e {
                    await node.dropFromRelay(event)
                    continue
                }
                if case let .request(m) = e {
                    await self?.strangerWrote(m)
                    continue
                }
                if case let .message(m) = e, let event = m.event, gatewayChannels.contains(m.geohash) {
                    await node.gatewayDownlink(event, geohash: m.geohash)
                }
                // One event is shown once, whether a relay or a gateway brought it first.
                if case let .message(m) = e, await self?.channelEventShown(m.eventID) == false { continue }
                continuation.yield(.channel(e))
            }
        }
        // A gateway or a bridge publishes while a relay is up, and queues meanwhile.
        let relaysWatch = Task { [nostr, node, gatewayChannels, bridgeCell] in
            guard let nostr, !gatewayChannels.isEmpty || bridgeCell != nil else { return }
            var up = false
            while !Task.isCancelled {
                let now = !(await nostr.status.relays.isEmpty)
                if now != up {
                    up = now
                    await node.nostrRelays(up: up)
                }
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
        for await event in node.events {
            await take(event)
        }
        writePins()
        stopped = true
        driver.stop()
        relaysWatch.cancel()
        channels.cancel()
        continuation.finish()
    }

    package var driver = DeadlineDriver()
    private var stopped = false
    /// Signing keys pinned since the last write, kept together within a second (a crowd of
    /// new identities, one commit a second; a crash loses at most that second's pins, which
    /// their next announces pin again).
    private var pinsToWrite: [(Fingerprint, [UInt8])] = []
    private var pinsDue: UInt64?

    private func writePins() {
        let pins = pinsToWrite
        pinsToWrite = []
        pinsDue = nil
        guard !pins.isEmpty else { return }
        guard let store else {
            for (f, key) in pins { core.storeFailed(.pin(f, key), reason: "the store is not open") }
            return
        }
        do { try store.setPins(pins.map { ($0.0.hex, $0.1) }, at: Self.now) } catch {
            let reason = Self.reason(error, directory: directory)
            for (f, key) in pins { core.storeFailed(.pin(f, key), reason: reason) }
        }
    }
    package var drives: Bool { !stopped }
    /// While a history burst waits, a look every 250 ms; otherwise no timer at all.
    package var nextWake: UInt64? {
        [core.wantsTick ? clockMillis + 250 : nil, pinsDue].compactMap { $0 }.min()
    }
    package func clockNow() -> UInt64 { clockMillis }
    package func due(now: UInt64) async {
        if let d = pinsDue, now >= d { writePins() }
        guard core.wantsTick else { return }
        core.tick(now: Self.now)
        await carryOut()
    }

    private let clockStart = ContinuousClock.now
    private var clockMillis: UInt64 {
        let d = (ContinuousClock.now - clockStart).components
        return UInt64(d.seconds) * 1_000 + UInt64(d.attoseconds / 1_000_000_000_000_000)
    }


    private func serverChanged(_ up: Bool) async {
        core.serverChanged(up: up, now: Self.now)
        await carryOut()
    }

    private func take(_ event: NodeEvent) async {
        // A contact added meanwhile (`starling contact add` beside a running chat)
        // is known before its message is filed.
        if case .privateMessage = event { reloadContacts() }
        if case .peer = event { reloadContacts() }
        core.handle(event, peers: await node.peers, now: Self.now)
        await carryOut()
        // Its delivery receipt goes now that it is stored (or held while the store
        // is locked); not when the write failed: the sender's retry is taken again.
        if case let .privateMessage(_, _, _, messageID, _, _) = event {
            if unstored.remove(messageID) != nil { await node.notStored(messageID) } else { await node.stored(messageID) }
        }
    }

    /// Incoming messages whose write failed in this event's effects (by transport message ID).
    private var unstored: Set<String> = []

    /// Carries out what the core said, in order.
    private func carryOut() async {
        var effects = core.takeEffects()
        var rounds = 0
        while !effects.isEmpty, rounds < 16 {
            rounds += 1
            for effect in effects { await apply(effect) }
            effects = core.takeEffects()
        }
        rearm()
    }

    private func apply(_ effect: MessengerCore.Effect) async {
        switch effect {
        case let .event(e):
            continuation.yield(e)
        case let .store(w):
            guard let store else {
                core.storeFailed(w, reason: "the store is not open")
                return
            }
            do {
                switch w {
                case let .insertMessage(m): try store.insertMessage(m)
                case let .updateMessage(m):
                    do { try store.updateMessage(m) } catch MessengerStore.Error.notFound { try store.insertMessage(m) }
                case let .trust(t): try store.setTrust(t)
                case let .contact(c): try store.updateContact(c)
                case let .conversation(c): try store.setConversation(c)
                case let .mergeConversation(old, new): try store.mergeConversation(old, into: new)
                case let .pin(f, key):
                    // Kept within a second, with the others of that second in one commit (``writePins()``).
                    pinsToWrite.append((f, key))
                    if pinsDue == nil {
                        pinsDue = clockMillis + 1_000
                        rearm()
                    }
                case .groups:
                    let kept = await node.groupStates.map { GroupRecord(groupID: $0.groupID, state: $0.encoded()) }
                        + (await node.groupsLeft).map { GroupRecord(groupID: $0.id, leftAtEpoch: $0.epoch) }
                    try store.setGroups(kept)
                case let .receipt(id, conversation, state, at):
                    if var m = try store.message(id, contact: conversation), m.progress != nil {
                        let before = m.progress!.state
                        m.progress!.receipt(state, at: at)
                        if m.progress!.state != before {
                            try store.updateMessage(m)
                            continuation.yield(.progress(conversation: conversation, record: m))
                        }
                    }
                }
            } catch {
                if case let .insertMessage(m) = w, !m.outgoing, let id = m.transportID { unstored.insert(id) }
                core.storeFailed(w, reason: Self.reason(error, directory: directory))
            }
        case let .node(c):
            switch c {
            case let .sendPrivate(text, to, id):
                do { _ = try await node.sendPrivate(text, to: to, messageID: id) } catch {
                    continuation.yield(.warning("not sent: \(error)"))
                }
            case let .sendDrop(text, key, id):
                do { try await node.sendDrop(text, toNoiseKey: key, messageID: id) } catch {
                    continuation.yield(.warning("not left with a courier: \(error)"))
                }
            case let .sendReadReceipt(id, to):
                do { try await node.sendReadReceipt(id, to: to) } catch {
                    continuation.yield(.diagnostic(Rejection(.transport, peer: to, "read receipt not sent: \(error)")))
                }
            case let .block(f): await node.block(f)
            case let .unblock(f): await node.unblock(f)
            case let .setFavorite(f, on): await node.setFavorite(f, on)
            case let .setVerified(f, on): await node.setVerified(f, on)
            case let .pin(key, f): await node.pinSigningKey(key, for: f)
            case .trustDecided: await node.trustDecided()
            case let .restoreGroups(records):
                let states = records.compactMap { r in r.state.flatMap { try? GroupState(decoding: $0[...]) } }
                let unreadable = records.filter { $0.state != nil }.count - states.count
                if unreadable > 0 { // never silently: a group whose state is lost can only come back by a new invite
                    continuation.yield(.warning("\(unreadable) group\(unreadable == 1 ? "" : "s") kept in the store cannot be read: ask the creator to invite you again"))
                }
                let left = records.compactMap { r in r.leftAtEpoch.map { (id: r.groupID, epoch: $0) } }
                await node.restoreGroups(states, left: left)
            case let .declineFileOffer(id):
                do { try await node.answerFileOffer(id, accept: false) } catch {
                    // Gone already (answered or timed out): nothing waits.
                }
            }
        case let .offMesh(.nostrContact(peer, npub, variant)):
            let key = npub.flatMap { try? Bech32.publicKey(npub: $0) }
            await nostr?.setContact(peer, publicKey: key, variant: GiftWrap.Variant(rawValue: variant) ?? .bitchat)
        case let .offMesh(.serverContact(peer, bytes)):
            await server?.setContact(peer, card: bytes.flatMap { try? ContactCard(bytes: $0) })
        case let .offMesh(.nostrOpened(ids)):
            await nostr?.markOpened(ids)
        }
    }

    // MARK: The store

    /// The store opened: everything the core needs from it, after moving in
    /// what older versions kept outside it (`nostr-contacts`). All or nothing:
    /// a read that fails leaves the store closed (its handle closed too). Two
    /// faces unlocking at once open it once: a second handle, while one is
    /// open or opening, is closed and the call succeeds.
    public func open(_ store: MessengerStore) async throws {
        // Opening it is a person's doing (a PIN typed): the auto-lock's idle time starts now, not
        // from before (CI found a store locked again at once after an unlock).
        lastActivity = Self.now
        guard self.store == nil, !opening else {
            try? store.close() // (a second unlock: the first one's handle is the store)
            return
        }
        opening = true
        defer { opening = false }
        var contents = MessengerCore.StoreContents()
        do {
            try NostrContactsFile.migrate(from: directory, into: store, now: Self.now)
            try FavoritesFile.migrate(from: directory, into: store, now: Self.now)
            contents.contacts = try store.contacts()
            contents.trust = try store.trust()
            contents.pins = try store.pins().compactMap { hex, key in Fingerprint(hex: hex).map { ($0, key) } }
            contents.conversations = try store.conversations()
            let ids = contents.contacts.compactMap { $0.card?.userID } + contents.conversations.map(\.id)
            for id in ids { contents.messages[id] = try store.conversation(with: id, limit: 200) }
            contents.pending = try store.pendingMessages()
            contents.groups = try store.groups()
            for g in contents.groups where g.state != nil {
                let id = MessengerCore.conversationID(forGroup: g.groupID.hexString)
                contents.messages[id] = try store.conversation(with: id, limit: 200)
            }
        } catch {
            try? store.close()
            throw error
        }
        contents.favorites = await node.favoriteFingerprints
        let peers = await node.peers
        self.store = store
        lastActivity = Self.now // (and again once open: reading it may take a while on a loaded machine)
        knownContacts = contents.contacts.count
        core.storeOpened(contents, peers: peers, now: Self.now)
        await carryOut()
    }

    /// The store closes (locked): writes wait in memory until it opens again.
    /// Closed whatever its handle says on closing; every face hears it (`reason`).
    public func lock(reason: String = "locked") throws {
        guard store != nil else { return }
        core.storeClosed()
        let closing = store
        store = nil
        continuation.yield(.storeLocked(reason: reason))
        try closing?.close()
    }

    // MARK: Auto-lock (the messenger's, whichever face the person uses)

    private var autoLockAfter: Double = 0
    private var lastActivity: Double = Messenger.now
    private var autoLock: Task<Void, Never>?
    /// Whether the store has a PIN or passphrase (the key file would open it again at once: no auto-lock).
    private var lockable = false

    /// Closes the store after `seconds` with no activity from any face (0: never),
    /// while it has a PIN or passphrase (a PIN set later counts from then).
    public func setAutoLock(after seconds: Double) {
        lockable = MessengerStore.protection(in: directory).map { $0 != .keyFile } ?? false
        autoLockAfter = max(0, seconds)
        lastActivity = Self.now
        autoLock?.cancel()
        autoLock = nil
        guard autoLockAfter > 0 else { return }
        // One wake a period at most: it sleeps to the idle deadline, never polls.
        autoLock = Task { [weak self] in
            while !Task.isCancelled {
                guard let wait = await self?.idleLockDue() else { return }
                try? await Task.sleep(for: .seconds(wait))
            }
        }
    }

    /// A new PIN, passphrase, or the key file again, given the current one (the store open or locked).
    public func changeProtection(from current: Keyring.Protection, to new: Keyring.Protection) throws {
        try MessengerStore.changeProtection(directory: directory, from: current, to: new)
        if case .keyFile = new { lockable = false } else { lockable = true }
        lastActivity = Self.now
    }

    /// Replaces the store with a backup (the newest good one, or `from`): the store closes (every face
    /// hears it), the backup is checked and put in its place, and it opens again with `protection`.
    /// Refused (a wrong secret, no good backup), the store as it was opens again. The backup used.
    public func restore(from: URL?, protection: Keyring.Protection) async throws -> URL {
        // The secret first, with the store still open: a wrong PIN is refused without closing it for every face.
        _ = try KeyringFile(url: directory.appendingPathComponent(MessengerStore.keyringName)).unlock(protection, now: Self.now)
        let wasOpen = store != nil
        try lock(reason: "restoring a backup")
        let used: URL
        do {
            used = try MessengerStore.restore(directory: directory, protection: protection, from: from)
        } catch {
            // No good backup: the store as it was opens again; if even that fails, every face is told.
            if wasOpen {
                do { try await open(try MessengerStore.open(directory: directory, protection: protection)) } catch let reopen {
                    continuation.yield(.warning("the store did not open again after a refused restore (\(reopen)): open it with its PIN"))
                }
            }
            throw error
        }
        try await open(try MessengerStore.open(directory: directory, protection: protection))
        return used
    }

    /// A backup of the store now (a daily one is made too; 7 kept): where, and how many are kept.
    public func backup() throws -> (url: URL, kept: Int) {
        guard let store else { throw StoreError.locked }
        let url = try store.backup(now: Self.now)
        return (url, store.backups.count)
    }

    /// A person did something in a face (typed, clicked): the idle time starts again.
    public func noteActivity() { lastActivity = Self.now }

    public var autoLockSeconds: Double { autoLockAfter }

    /// Locks when idle long enough; the seconds until it should look again.
    private func idleLockDue() -> Double {
        let due = lastActivity + autoLockAfter - Self.now
        guard due <= 0 else { return due }
        if store != nil, lockable {
            do { try lock(reason: "locked after \(Int(autoLockAfter)) s idle") } catch {
                continuation.yield(.warning("the store did not close cleanly on its auto-lock: \(error)"))
            }
        }
        return autoLockAfter
    }

    /// A file handed to the node for `peer`: kept in their conversation's history.
    @discardableResult
    public func fileSent(_ attachment: FileAttachment, to peer: PeerID) async -> MessageRecord? {
        let record = core.fileSent(attachment, to: peer, now: Self.now)
        await carryOut()
        return record
    }

    /// Changes made while the store was locked, held in memory until a face opens it (1,000 at most).
    public var heldWriteCount: Int { core.heldWriteCount }
    public var isStoreOpen: Bool { store != nil }
    /// This person's Nostr public key (npub), which a contact on a NIP-17 client writes to.
    public var npub: String? { core.configuration.npub }
    public var trustKnown: Bool { core.trustKnown }
    /// Our messages waiting for a route, from memory (no store read).
    public var pendingCount: Int { core.pendingCount }

    /// Contacts the store gained from outside (another command) are taken in.
    public func reloadContacts() {
        guard let store, let all = try? store.contacts(), all.count != knownContacts else { return }
        knownContacts = all.count
        for r in all where r.card.map({ core.contacts[$0.userID] == nil }) == true {
            core.contactAdded(r, now: Self.now)
        }
    }

    // MARK: Commands

    /// One of our group messages went out: kept in the group's conversation.
    func recordSentToGroup(_ groupID: String, text: String, messageID: String) async -> MessageRecord {
        let record = core.sentToGroup(groupID, text: text, messageID: messageID, now: Self.now)
        await carryOut()
        return record
    }

    /// Sends a private message in a conversation (recorded first; queued when no route is there).
    @discardableResult
    public func send(_ text: String, to conversation: UserID) async throws -> MessageRecord {
        let record = try core.send(text, to: conversation, now: Self.now)
        await carryOut()
        return record
    }

    /// The conversation with a mesh peer (made when new); nil when its key is not known yet.
    public func conversation(withPeer peer: PeerID) async -> UserID? {
        core.updatePeers(await node.peers)
        let id = core.conversation(withPeer: peer, now: Self.now)
        await carryOut()
        return id
    }

    /// The person has seen this conversation: read receipts go to its sender.
    public func markSeen(_ conversation: UserID, through last: UserID? = nil) async {
        guard core.unreadCount(conversation) > 0 else { return }
        core.markSeen(conversation, through: last, now: Self.now)
        await carryOut()
    }

    /// One message seen, and no other (a face that prints them one by one).
    public func markSeen(_ conversation: UserID, only id: UserID) async {
        core.markSeen(conversation, only: id, now: Self.now)
        await carryOut()
    }

    public func decide(_ change: MessengerCore.TrustChange, about fingerprint: Fingerprint, nickname: String?) async {
        core.decide(change, about: fingerprint, nickname: nickname, now: Self.now)
        await carryOut()
    }

    public func setNostrVariant(_ variant: GiftWrap.Variant, for fingerprint: Fingerprint) async -> Bool {
        let done = core.setNostrVariant(variant.rawValue, for: fingerprint, now: Self.now)
        await carryOut()
        return done
    }

    // MARK: Names and contacts

    /// What a typed name means.
    public enum Resolution: Sendable, Equatable {
        case conversation(UserID)
        /// Several match: each as it can be typed to pick it.
        case ambiguous([String])
        case none
    }

    /// The conversation a name means: a contact, then a peer here (both by
    /// ``Names``' rules), a Nostr contact or favourite by the name kept, a
    /// conversation kept from before, or a conversation's ID itself.
    public func resolve(_ name: String) async -> Resolution {
        if let id = UserID(string: name), core.contacts[id] != nil || core.peerConversations[id] != nil { return .conversation(id) }
        reloadContacts()
        switch Names.contact(name, among: core.contacts.values.compactMap(\.card), card: { $0 }) {
        case let .one(card): return .conversation(card.userID)
        case let .several(cards): return .ambiguous(cards.map(Names.label))
        case .none: break
        }
        let peers = await node.peers
        switch Names.peer(name, among: peers, nickname: \.nickname) {
        case let .one(p): if let id = await conversation(withPeer: p) { return .conversation(id) }
        case let .several(ids): return .ambiguous(ids.map { Names.label(peers[$0]?.nickname ?? name, peer: $0) })
        case .none: break
        }
        // Names a peer chose (its announce): several are never chosen between silently.
        let nostr = core.trust.filter { $0.value.npub != nil && $0.value.favorite && $0.value.nickname == name }
        if nostr.count > 1 { return .ambiguous(nostr.keys.map { core.conversation(for: $0).description }.sorted()) }
        if let f = nostr.keys.first { return .conversation(await conversation(withKey: f)) }
        let kept = core.peerConversations.values.filter { $0.nickname == name }
        if kept.count > 1 { return .ambiguous(kept.map(\.id.description).sorted()) }
        if let k = kept.first { return .conversation(k.id) }
        return .none
    }

    /// A conversation as a list shows it.
    public struct Summary: Sendable {
        public var id: UserID
        public var name: String
        public var unread: Int
        public var fingerprint: Fingerprint?
        public var last: MessageRecord?
        /// A group's conversation: the group (its messages are sent to the group, not to a person).
        public var group: GroupSummary?
        public init(id: UserID, name: String, unread: Int, fingerprint: Fingerprint?, last: MessageRecord?, group: GroupSummary? = nil) {
            self.id = id
            self.name = name
            self.unread = unread
            self.fingerprint = fingerprint
            self.last = last
            self.group = group
        }
    }

    /// Every conversation: people's (``conversations``) and the groups' this node is in,
    /// the most recent first (issue 52: the page had no groups, `/v1/conversations` left them out).
    public func conversations(groups: [GroupSummary]) -> [Summary] {
        let kept = groups.map { g in
            let id = MessengerCore.conversationID(forGroup: g.groupID)
            return Summary(id: id, name: g.name, unread: core.unreadCount(id), fingerprint: nil, last: core.recent[id]?.last, group: g)
        }
        return (conversations + kept).sorted { ($0.last?.recordedAt ?? 0, $0.name) > ($1.last?.recordedAt ?? 0, $1.name) }
    }

    /// Every conversation kept (contacts' and peers'), the most recent first.
    public var conversations: [Summary] {
        let ids = Set(core.contacts.keys).union(core.peerConversations.keys)
        return ids.map { id in
            Summary(id: id, name: core.name(of: id), unread: core.unreadCount(id), fingerprint: core.fingerprint(of: id),
                    last: core.recent[id]?.last)
        }.sorted { ($0.last?.recordedAt ?? 0, $0.name) > ($1.last?.recordedAt ?? 0, $1.name) }
    }

    /// Adds a contact from their card (the store first, then the messenger).
    @discardableResult
    public func addContact(_ card: ContactCard, replace: Bool = false) async throws -> ContactRecord {
        guard let store else { throw StoreError.locked }
        let record = try store.addContact(card, replace: replace, now: Self.now)
        knownContacts += 1
        core.contactAdded(record, now: Self.now)
        await carryOut()
        return record
    }

    // MARK: Strangers' requests over Nostr (Requests.swift)

    func strangerWrote(_ m: NostrClientCore.StrangerMessage) async {
        core.strangerWrote(m, now: Self.now)
        await carryOut()
    }

    func requestsNow() -> [StrangerRequest] {
        core.waitingRequests(now: Self.now)
    }

    func findRequest(_ who: String) -> StrangerRequest? { core.requests.find(who) }

    func answered(_ change: (inout MessengerCore) -> Void) async {
        change(&core)
        await carryOut()
    }

    func storeTrust(_ t: TrustRecord) throws {
        guard let store else { throw StoreError.locked }
        try store.setTrust(t)
        core.trustRecordAdded(t)
    }

    /// Removes a card contact (by its conversation, their user ID) and the conversation with them.
    public func removeContact(_ conversation: UserID) async throws -> Bool {
        guard let store else { throw StoreError.locked }
        guard core.contacts[conversation] != nil else { return false }
        _ = try store.removeContact(conversation)
        knownContacts = max(0, knownContacts - 1)
        core.contactRemoved(conversation)
        await carryOut()
        return true
    }

    /// Adds a contact known by an npub alone (standard NIP-17 over Nostr).
    public func addNostrContact(npub: String, name: String) async throws {
        guard let store else { throw StoreError.locked }
        let t = try NostrContacts.record(npub: npub, name: name, now: Self.now)
        try store.setTrust(t)
        core.trustRecordAdded(t)
        await carryOut()
    }

    public enum StoreError: Error, Hashable, Sendable, CustomStringConvertible {
        case locked
        public var description: String { "the store is locked: unlock it first" }
    }

    // MARK: Location channels

    public enum ChannelError: Error, Hashable, Sendable, CustomStringConvertible {
        case noNostr
        case noWay(String)
        public var description: String {
            switch self {
            case .noNostr: "location channels travel over Nostr, and this node has no Nostr transport"
            case let .noWay(g): "not said in #\(g): no relay, and no gateway on the mesh (a peer running with --gateway) to carry it; try again when one is here"
            }
        }
    }

    /// Joins the location channel of a geohash (a new identity there); returns the geohash as joined.
    public func join(channel name: String) async throws -> String {
        let g = try LocationChannel.geohash(name)
        guard let nostr else {
            // No Nostr here: the channel is reached through a gateway on the mesh (its events come as gatewayMessage).
            guard geoSeed != nil else { throw ChannelError.noNostr }
            core.joinedChannel(g)
            return g
        }
        try await nostr.join(g)
        core.joinedChannel(g)
        return g
    }

    func channelEventShown(_ eventID: String) -> Bool { core.channelEventShown(eventID) }

    /// The location channels joined (lowercase geohashes, sorted).
    public var joinedChannels: [String] { core.channels.sorted() }

    public func leave(channel geohash: String) async {
        core.leftChannel(geohash)
        await nostr?.leave(geohash.lowercased())
    }

    /// Says `text` in a joined channel, under our nickname.
    /// Says `text` in a channel: over Nostr when this node has it (queued while
    /// no relay is up: handing it to a mesh gateway would show our mesh key
    /// beside our channel key to every node on the way); with no Nostr here,
    /// signed with our key for that channel and handed to a gateway on the mesh
    /// (docs/PROTOCOL.md, "Nostr carriers (0x28)"), or refused in words.
    public func say(_ text: String, in geohash: String) async throws {
        if let nostr {
            try await nostr.say(text, nickname: await node.currentNickname, in: geohash)
            return
        }
        if let seed = geoSeed {
            let g = try LocationChannel.geohash(geohash)
            let event = try LocationChannel.message(text, nickname: await node.currentNickname, geohash: g,
                                                    key: LocationChannel.identity(seed: seed, geohash: g), now: Int64(Self.now))
            if try await node.sendViaGateway(event, geohash: g) != nil { return }
        }
        throw ChannelError.noWay(geohash)
    }

    // MARK: Queries

    /// Every contact as one record (cards, Nostr-only contacts, favourites).
    public var contactList: [Contact] { core.contactList }
    public var contacts: [ContactRecord] { core.contacts.values.sorted { ($0.card?.displayName ?? "") < ($1.card?.displayName ?? "") } }
    public var trust: [Fingerprint: TrustRecord] { core.trust }
    public var peerConversations: [ConversationRecord] { Array(core.peerConversations.values) }
    public func name(of conversation: UserID) -> String { core.name(of: conversation) }
    /// What a face calls a peer (their nickname, also after they left).
    public func displayName(ofPeer peer: PeerID) -> String { core.displayName(peer) }
    public func fingerprint(of conversation: UserID) -> Fingerprint? { core.fingerprint(of: conversation) }
    /// The Noise static key a courier drop for this conversation is sealed to, when known.
    public func noiseKey(of conversation: UserID) -> [UInt8]? { core.noiseKey(of: conversation) }
    public func fingerprint(ofPeer peer: PeerID) -> Fingerprint? { core.fingerprint(ofPeer: peer) }
    /// The name a key is known by here: its contact's, the trust record's, its
    /// conversation's, else its fingerprint's first 16 digits.
    public func knownName(of f: Fingerprint) -> String {
        core.contact(for: f)?.card?.displayName ?? core.trust[f]?.nickname
            ?? core.peerConversations[MessengerCore.conversationID(for: f)]?.nickname ?? String(f.hex.prefix(16))
    }
    public func conversation(for fingerprint: Fingerprint) -> UserID { core.conversation(for: fingerprint) }

    /// The conversation with a Noise key, kept when new (a Nostr contact away from the mesh).
    public func conversation(withKey fingerprint: Fingerprint) async -> UserID {
        let name = core.trust[fingerprint]?.nickname ?? fingerprint.peerID.description
        let id = core.conversation(withKey: fingerprint, nickname: name, now: Self.now)
        await carryOut()
        return id
    }
    public func isBlocked(_ f: Fingerprint) -> Bool { core.isBlocked(f) }
    public func isVerified(_ f: Fingerprint) -> Bool { core.isVerified(f) }
    public func isFavorite(_ f: Fingerprint) -> Bool { core.isFavorite(f) }
    public func route(to f: Fingerprint) -> MessageRoute? { core.route(to: f) }
    /// The peer ID that reaches a conversation's peer now.
    public func peer(of conversation: UserID) -> PeerID? { core.fingerprint(of: conversation).map { core.peer(for: $0) } }
    public func unreadCount(_ conversation: UserID) -> Int { core.unreadCount(conversation) }

    /// A conversation's messages, oldest first: from the store when it is open
    /// (with what was said before the peer became a contact), else those in memory.
    public func history(_ named: UserID, limit: Int = 200) throws -> [MessageRecord] {
        let conversation = core.current(named) // one merged into a contact's: theirs
        guard let store else { return core.recent[conversation] ?? [] }
        // (A contact's earlier mesh conversation is merged into theirs when the store opens.)
        return try store.conversation(with: conversation, limit: limit)
    }

    /// A page of a conversation's messages, oldest first: the `limit` stored
    /// before `position` (the newest when nil), each with its position. Without
    /// the store, those in memory, numbered in their order from 1.
    public func history(_ named: UserID, limit: Int, before position: Int64?) throws -> [HistoryEntry] {
        let conversation = core.current(named)
        guard let store else {
            let all = (core.recent[conversation] ?? []).enumerated().map { HistoryEntry(position: Int64($0.offset + 1), record: $0.element) }
            return Array(all.filter { $0.position < position ?? .max }.suffix(limit))
        }
        return try store.conversation(with: conversation, limit: limit, before: position)
    }

    /// The messages of a conversation whose text holds `text` (any case),
    /// oldest first: the newest `limit` stored before `position` (the store
    /// opens the conversation to look; without it, those in memory).
    public func search(_ named: UserID, for text: String, limit: Int, before position: Int64?) throws -> [HistoryEntry] {
        let conversation = core.current(named)
        guard let store else {
            return Array(try history(named, limit: .max, before: position).filter { $0.record.text.localizedCaseInsensitiveContains(text) }.suffix(limit))
        }
        return try store.search(conversation, for: text, limit: limit, before: position)
    }

    /// A file (or voice note) that came in a conversation, found in its
    /// history by the transfer's ID: for a face that shows it after a restart.
    public func receivedFile(_ transferID: String, in named: UserID) throws -> FileAttachment? {
        let conversation = core.current(named)
        guard let f = core.fingerprint(of: conversation) else { return nil }
        let id = MessengerCore.incomingFileID(transferID, from: f)
        if let r = core.recent[conversation]?.first(where: { $0.id == id }) { return r.file }
        return try store?.message(id, contact: conversation)?.file
    }
}

/// `nostr-contacts`: where versions before the messenger kept the npubs that
/// favourites told us, in plain text beside the encrypted store (one per
/// line: fingerprint, npub, `variant=standard` when chosen, nickname). Moved
/// into the store's trust records, then removed.
public enum NostrContactsFile {
    public static let name = "nostr-contacts"

    public struct Entry: Hashable, Sendable {
        public var fingerprint: Fingerprint
        public var npub: String
        public var variant: String
        public var nickname: String
    }

    public static func parse(_ text: String) -> [Entry] {
        var out: [Entry] = []
        for line in text.split(whereSeparator: \.isNewline) {
            var parts = line.split(separator: " ", maxSplits: 2).map(String.init)
            guard parts.count == 3, let f = Fingerprint(hex: parts[0]), (try? Bech32.publicKey(npub: parts[1])) != nil else { continue }
            var variant = "bitchat"
            if parts[2].hasPrefix("variant="), let space = parts[2].firstIndex(of: " ") {
                let v = String(parts[2][..<space].dropFirst("variant=".count))
                if GiftWrap.Variant(rawValue: v) != nil { variant = v }
                parts[2] = String(parts[2][space...].dropFirst())
            }
            out.append(Entry(fingerprint: f, npub: parts[1], variant: variant, nickname: parts[2]))
        }
        return out
    }

    /// Moves the file's contacts into the store (a trust record each), then
    /// removes the file. A record already holding an npub keeps its own.
    public static func migrate(from directory: URL, into store: MessengerStore, now: Double) throws {
        let file = directory.appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: file.path) else { return }
        let text = try String(contentsOf: file, encoding: .utf8)
        for entry in parse(text) {
            var t = try store.trust(fingerprint: entry.fingerprint.hex)
                ?? TrustRecord(fingerprint: entry.fingerprint.hex, nickname: entry.nickname, updatedAt: now)
            guard t.npub == nil else { continue }
            t.npub = entry.npub
            t.nostrVariant = entry.variant
            t.favoritesUs = true
            if t.nickname == nil { t.nickname = entry.nickname }
            t.updatedAt = now
            try store.setTrust(t)
        }
        try FileManager.default.removeItem(at: file)
    }
}

/// The favourites file of earlier versions (`favorites`: a fingerprint a line,
/// in clear beside the encrypted store: a person's closest contacts for
/// anyone who takes the disk). Moved into the store's trust records (the
/// store holds favourites since), then overwritten and removed.
public enum FavoritesFile {
    public static let name = "favorites"

    public static func migrate(from directory: URL, into store: MessengerStore, now: Double) throws {
        let file = directory.appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: file.path) else { return }
        let text = try String(contentsOf: file, encoding: .utf8)
        for line in text.split(whereSeparator: \.isNewline) {
            guard let f = Fingerprint(hex: line.trimmingCharacters(in: .whitespaces).lowercased()) else { continue }
            var t = try store.trust(fingerprint: f.hex) ?? TrustRecord(fingerprint: f.hex, updatedAt: now)
            guard !t.favorite else { continue }
            t.favorite = true
            t.updatedAt = now
            try store.setTrust(t)
        }
        let size = (try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
        if size > 0 { try Data(repeating: 0, count: size).write(to: file) }
        try FileManager.default.removeItem(at: file)
    }
}
