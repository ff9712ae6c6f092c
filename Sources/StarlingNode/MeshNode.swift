import Foundation
import StarlingCrypto
import StarlingMesh
import StarlingStately
import StarlingTransport
import StarlingWire

/// Where a link goes: a UDP address, or a Bluetooth LE connection (named by
/// the role and the device object BlueZ gives it).
public enum LinkAddress: Hashable, Sendable, CustomStringConvertible {
    case udp(UDPAddress)
    case ble(String)
    public var description: String {
        switch self {
        case let .udp(a): a.description
        case let .ble(id): "ble " + id
        }
    }
}

/// A running node: the mesh router over the UDP transport, with this node's
/// identity, signed announces, loopback discovery and the application events.
public actor MeshNode {
    public struct Options: Sendable {
        public var nickname: String
        /// UDP port; nil: the first free rendezvous port, else one the system picks.
        public var port: UInt16?
        public var peers: [UDPAddress] = []
        public var discovery = true
        /// Multicast discovery on the local network (opt-in): binds every
        /// interface and joins ``Discovery/lanGroup``.
        public var lan = false
        public var announceInterval: UInt64 = 10_000
        /// A link with nothing heard for this long is dropped.
        public var linkTimeout: UInt64 = 15_000
        /// Largest frame per datagram, as on BLE.
        public var maxFrame = 512
        /// Links at most (configured, discovered and learnt from packets).
        public var maxLinks = 64
        /// How private messages and files are retried (2 s ×2 ≤ 60 s, 5 minutes;
        /// favourites' messages are then held until they return).
        public var retry = DeliveryTracker<String>.Schedule()
        /// Favourites, by fingerprint: their messages are held while they are
        /// away, and this node holds packets relayed for them (store-and-forward).
        public var favorites: Set<Fingerprint> = []
        /// Where received files are saved (nil: files are refused).
        public var downloads: URL?
        public var policy: any RelayPolicy = defaultRelayPolicy()
        /// Stately: the key states are sealed with (a group's, or the shared
        /// broadcast key), the power mode (nil: from the battery), and where
        /// battery readings come from.
        public var stateKey: StateKey = .broadcast
        public var powerMode: PowerMode?
        public var power: any PowerProvider = SysfsPowerProvider()
        /// Bluetooth LE through BlueZ on this adapter (hci0 …); nil: no BLE.
        public var bleAdapter: String?
        /// Only these Bluetooth addresses are linked (nil: any).
        public var bleAllowed: Set<String>?
        public init(nickname: String) { self.nickname = nickname }
    }

    /// A file whose packet would need more fragments than receivers accept.
    public struct FileTooLarge: Error, Hashable, Sendable, CustomStringConvertible {
        public var bytes: Int
        /// The largest file (of this name) the links carry now.
        public var limit: Int
        public var description: String { "file too large: \(bytes) bytes; at most \(limit) over these links" }
    }

    public enum Event: Sendable {
        case started(port: UInt16, peerID: PeerID, nickname: String)
        case linkUp(LinkAddress)
        case linkDown(LinkAddress)
        /// A verified announce from a peer not seen before (or renamed).
        case peer(PeerID, nickname: String, hops: Int)
        case message(from: PeerID, nickname: String?, text: String, hops: Int, timestamp: UInt64)
        /// A private message, decrypted; a delivered receipt went back already.
        case privateMessage(from: PeerID, nickname: String?, text: String, messageID: String, hops: Int)
        case sessionEstablished(PeerID, fingerprint: String)
        /// Our private message reached its recipient.
        case delivered(messageID: String, by: PeerID)
        /// Our private message was not acknowledged within its retry budget.
        case failed(messageID: String, to: PeerID)
        /// Our message to a favourite was not acknowledged within the retry
        /// budget: it is held, and sent again when the favourite returns.
        case held(messageID: String, for: PeerID)
        /// A file for us is arriving, `received` of `total` fragments.
        case fileProgress(from: PeerID, received: Int, total: Int)
        /// A file arrived, was saved at `path`, and a delivered receipt went back.
        case fileReceived(from: PeerID, name: String, size: Int, path: String, transferID: String)
        /// Our private message was displayed to its recipient.
        case read(messageID: String, by: PeerID)
        case left(PeerID)
        case rejected(String)
        /// A peer's Stately state is new or changed.
        case state(StatelyEngine.PeerState)
        /// An SOS arrived.
        case sos(StatelyEngine.PeerState)
        /// A peer's state expired (or it went invisible).
        case stateExpired(PeerID)
    }

    public let identity: Identity
    public let options: Options
    public nonisolated let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let socket: UDPSocket
    private let lanSocket: UDPSocket?
    private var router: MeshRouter
    private var linkOf: [LinkAddress: LinkID] = [:]
    private var addressOf: [LinkID: LinkAddress] = [:]
    private var ble: BLETransport?
    /// Link health: no announce within 15 s, or silence for `linkTimeout`, drops a link.
    private var watch = LinkWatch<LinkID>()
    /// Peers present (an announce within the last 60 s): the one record of them.
    private var present = PeerTable<PeerCard>()
    private var nextLink: UInt32 = 1
    /// What verified announces told about each peer.
    public struct PeerInfo: Sendable {
        public var nickname: String
        public var fingerprint: Fingerprint
        public var hops: Int
        public var lastSeen: UInt64
    }
    /// What an announce says that is kept per peer.
    struct PeerCard: Sendable {
        var nickname: String
        var fingerprint: Fingerprint
    }
    /// Fingerprints whose packets are dropped on arrival, unseen.
    private var blocked: Set<Fingerprint> = []
    private var nickname: String
    private var lastAnnounce: UInt64 = 0
    private var lastHello: UInt64 = 0
    private var running = false
    private var sessions: SessionManager
    /// Stately: this node's state and the states around, in memory only.
    private var stately: StatelyEngine
    private var lastPowerReading: UInt64 = 0
    /// Private payloads waiting for a session, per peer.
    private var waiting: [PeerID: [NoisePayload]] = [:]
    /// Our private messages and files not yet acknowledged, by message ID:
    /// what to send again, and when (``DeliveryTracker``).
    private var unacknowledged: [String: NoisePayload] = [:]
    private var tracker: DeliveryTracker<String>
    private var favorites: Set<Fingerprint>
    /// When each handshake we started began, to start over when one stalls.
    private var handshakeStarted: [PeerID: UInt64] = [:]
    /// Message IDs already shown, so a retried message is shown once.
    private var seenMessageIDs: Set<String> = []
    private var seenOrder: [String] = []

    public var port: UInt16 { socket.localPort }
    public var peerID: PeerID { identity.peerID }

    public init(identity: Identity, options: Options) throws {
        self.identity = identity
        self.options = options
        self.nickname = options.nickname
        var socket: UDPSocket?
        let lan = options.lan
        func bind(_ port: UInt16) -> UDPAddress { lan ? .any(port) : .loopback(port) }
        if let port = options.port {
            socket = try UDPSocket(bindTo: bind(port))
        } else if options.discovery {
            for p in Discovery.rendezvousPorts {
                if let s = try? UDPSocket(bindTo: bind(p)) { socket = s; break }
            }
        }
        self.socket = try socket ?? UDPSocket(bindTo: bind(0))
        self.watch.silenceLimit = options.linkTimeout
        if options.lan {
            let lan = try UDPSocket(bindTo: .any(Discovery.lanGroup.port), reuseAddress: true)
            try lan.joinMulticastGroup(Discovery.lanGroup.host)
            self.lanSocket = lan
        } else {
            self.lanSocket = nil
        }
        var routerConfiguration = MeshRouter.Configuration()
        routerConfiguration.sync = GossipStore.Configuration()
        self.router = MeshRouter(localPeer: identity.peerID, policy: options.policy, seed: UInt64.random(in: 0...UInt64.max),
                                 configuration: routerConfiguration)
        let signingKey = identity.signingKey
        self.router.signer = { packet in try? PacketSigning.sign(&packet, with: signingKey) }
        self.sessions = SessionManager(identity: identity)
        self.tracker = DeliveryTracker(schedule: options.retry)
        var statelyConfiguration = StatelyEngine.Configuration(name: StateReport.clip(options.nickname))
        statelyConfiguration.key = options.stateKey
        self.stately = StatelyEngine(senderID: identity.peerID, configuration: statelyConfiguration,
                                     seed: UInt64.random(in: 0...UInt64.max),
                                     nonce: { (0..<12).map { _ in UInt8.random(in: 0...255) } })
        self.stately.setOverride(options.powerMode, now: 0)
        self.favorites = options.favorites
        self.router.favorites = Set(options.favorites.map(\.peerID))
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(10_000))
    }

    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    /// Runs until `deadline` (wall ms) or until the task is cancelled.
    public func run(until deadline: UInt64? = nil) async {
        running = true
        continuation.yield(.started(port: port, peerID: peerID, nickname: nickname))
        for address in options.peers { _ = link(for: .udp(address)) }
        if let adapter = options.bleAdapter {
            do {
                let t = try BLETransport(adapter: adapter)
                t.allowed = options.bleAllowed
                let mode = stately.powerMode
                t.maxLinks = mode.linkBudget
                t.scanDutyCycle = mode.scanDutyCycle
                try await t.start()
                ble = t
            } catch {
                continuation.yield(.rejected("Bluetooth: \(error)"))
            }
        }
        let bleEvents = ble?.events
        let datagrams = socket.datagrams()
        let lanHellos = lanSocket?.datagrams()
        await withTaskGroup(of: Void.self) { group in
            if let lanHellos {
                group.addTask { [weak self] in
                    for await (from, bytes) in lanHellos where Discovery.isHello(bytes) {
                        guard let self else { return }
                        await self.handle(bytes, from: from)
                    }
                }
            }
            if let bleEvents {
                group.addTask { [weak self] in
                    for await event in bleEvents {
                        guard let self else { return }
                        await self.bleEvent(event)
                    }
                }
            }
            group.addTask { [weak self] in
                for await (from, bytes) in datagrams {
                    guard let self else { return }
                    await self.handle(bytes, from: from)
                }
            }
            group.addTask { [weak self] in
                while !Task.isCancelled {
                    guard let self, await self.timers() else { return }
                    if let deadline, Self.now() >= deadline { await self.stop(); return }
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            await group.next()
            group.cancelAll()
        }
        // Bluetooth goes last, and is waited for: centrals and peripherals see the links end.
        if let ble { await ble.stop() }
        continuation.finish()
    }

    public func stop() {
        running = false
        socket.close()
        lanSocket?.close()
    }

    /// Sends a signed public message to everyone.
    public func sendPublic(_ text: String) throws {
        var packet = Packet(type: .message, ttl: 7, timestamp: Self.now(), senderID: peerID, payload: Array(text.utf8))
        try PacketSigning.sign(&packet, with: identity.signingKey)
        perform(router.originate(packet, now: Self.now()))
    }

    /// Sends a private message, end-to-end encrypted with Noise (a handshake
    /// first when there is no session). Returns its message ID.
    @discardableResult
    public func sendPrivate(_ text: String, to peer: PeerID) throws -> String {
        let id = UUID().uuidString
        let message = PrivateMessage(messageID: id, content: text)
        try sendTracked(.privateMessage(message), id: id, to: peer)
        return id
    }

    /// Sends a file privately (end-to-end encrypted, fragmented on the way).
    /// Returns its transfer ID: the SHA-256 of the file TLV payload, in hex,
    /// which the delivered receipt names.
    @discardableResult
    public func sendFile(name: String, mimeType: String?, content: [UInt8], to peer: PeerID) throws -> String {
        let file = FileTransfer(name: name, mimeType: mimeType, content: content)
        // The packet it makes must fit the links in as many fragments as receivers
        // accept; checked here, or it would only fail after the retry budget.
        let sealed = try NoisePayload.privateFile(file).encoded().count + NoiseTransport.overhead
        let probe = NoisePackets.encrypted([UInt8](repeating: 0, count: sealed), from: peerID, to: peer, timestamp: 0)
        let largest = router.largestPacket(like: probe, defaultFrame: options.maxFrame)
        let size = try probe.encoded().count
        guard size <= largest else { throw FileTooLarge(bytes: content.count, limit: max(0, content.count - (size - largest))) }
        let id = Self.transferID(try file.encoded())
        try sendTracked(.privateFile(file), id: id, to: peer)
        return id
    }

    /// Sends a payload that a delivered receipt will acknowledge, and keeps
    /// sending it until one comes (or the tracker gives up).
    private func sendTracked(_ payload: NoisePayload, id: String, to peer: PeerID) throws {
        _ = try payload.encoded() // fails here, not on a retry
        unacknowledged[id] = payload
        tracker.sent(id, to: peer, now: Self.now(), favorite: isFavorite(peer))
        try sendNoise(payload, to: peer)
    }

    private func isFavorite(_ peer: PeerID) -> Bool {
        if let f = present[peer]?.info.fingerprint { return favorites.contains(f) }
        return router.favorites.contains(peer)
    }

    /// Marks a peer a favourite, or not: its messages are held while it is
    /// away, and this node holds what it relays for it.
    public func setFavorite(_ fingerprint: Fingerprint, _ on: Bool) {
        if on { favorites.insert(fingerprint) } else { favorites.remove(fingerprint) }
        router.favorites = Set(favorites.map(\.peerID))
    }

    public var favoriteFingerprints: Set<Fingerprint> { favorites }

    static func transferID(_ tlv: [UInt8]) -> String {
        sha256Hex(tlv)
    }

    /// Tells `peer` that its message was displayed.
    public func sendReadReceipt(_ messageID: String, to peer: PeerID) throws {
        try sendNoise(.readReceipt(messageID: messageID), to: peer)
    }

    /// The peer ID of a known nickname.
    public func peer(named nickname: String) -> PeerID? {
        present.entries.first { $0.value.info.nickname == nickname }?.key
    }

    /// Seals and sends; without a session the payload waits for a handshake.
    /// A retry is flooded (`routing: .flood`): the route the first try took
    /// may be what failed.
    private func sendNoise(_ payload: NoisePayload, to peer: PeerID, routing: MeshRouter.Routing = .automatic) throws {
        let now = Self.now()
        guard sessions.hasSession(with: peer) else {
            if !(waiting[peer] ?? []).contains(payload) { waiting[peer, default: []].append(payload) }
            if !sessions.isHandshaking(with: peer) { try startHandshake(with: peer, now: now) }
            return
        }
        let frame = try sessions.seal(try payload.encoded(), for: peer)
        perform(router.originate(NoisePackets.encrypted(frame, from: peerID, to: peer, timestamp: now), now: now, routing: routing))
    }

    private func startHandshake(with peer: PeerID, now: UInt64) throws {
        let m1 = try sessions.initiateHandshake(with: peer, now: now)
        handshakeStarted[peer] = now
        perform(router.originate(NoisePackets.handshake(m1, from: peerID, to: peer, timestamp: now), now: now))
    }

    /// Re-sends what is unacknowledged and restarts stalled handshakes.
    private func retry(now: UInt64) {
        for (peer, started) in handshakeStarted where now - started > 5_000 && !(waiting[peer] ?? []).isEmpty {
            if sessions.hasSession(with: peer) { handshakeStarted[peer] = nil; continue }
            try? startHandshake(with: peer, now: now) // rate-limited by the session manager
        }
        // Every 10 ms: ask the tracker only when something of it is due.
        if let due = tracker.nextDeadline, now >= due { followUp(tracker.due(now: now)) }
    }

    private func followUp(_ steps: [DeliveryTracker<String>.Step]) {
        for step in steps {
            switch step {
            case let .resend(id, peer, _):
                // Without a session it waits (once) for the handshake.
                if let payload = unacknowledged[id] { try? sendNoise(payload, to: peer, routing: .flood) }
            case let .failed(id, peer):
                unacknowledged[id] = nil
                continuation.yield(.failed(messageID: id, to: peer))
            case let .held(id, peer):
                continuation.yield(.held(messageID: id, for: peer))
            }
        }
    }

    public var peers: [PeerID: PeerInfo] {
        present.entries.mapValues {
            PeerInfo(nickname: $0.info.nickname, fingerprint: $0.info.fingerprint, hops: $0.hops, lastSeen: $0.lastAnnounce)
        }
    }
    public var currentNickname: String { nickname }

    /// Changes this node's nickname and announces it at once.
    public func rename(_ name: String) {
        nickname = name
        stately.configuration.name = StateReport.clip(name)
        announce()
    }

    public func block(_ fingerprint: Fingerprint) {
        blocked.insert(fingerprint)
        updateBlockedSenders()
    }

    public func unblock(_ fingerprint: Fingerprint) {
        blocked.remove(fingerprint)
        updateBlockedSenders()
    }

    /// The router drops packets from blocked peers before anything else: not
    /// processed, not relayed, not answered.
    private func updateBlockedSenders() {
        router.blockedSenders = Set(present.entries.filter { blocked.contains($0.value.info.fingerprint) }.keys)
    }
    public func isBlocked(_ peer: PeerID) -> Bool { present[peer].map { blocked.contains($0.info.fingerprint) } ?? false }

    /// Tells everyone this node is leaving (a signed LEAVE), then stops.
    public func leave() {
        var packet = Packet(type: .leave, ttl: 7, timestamp: Self.now(), senderID: peerID, payload: [])
        try? PacketSigning.sign(&packet, with: identity.signingKey)
        perform(router.originate(packet, now: Self.now()))
        stop()
    }

    /// Forgets every session and key in memory (panic), then stops.
    public func wipe() {
        sessions.wipeAll()
        waiting = [:]
        present.removeAll()
        stop()
    }

    public var linkCount: Int { linkOf.count }
    public var statistics: MeshStatistics { router.statistics }
    public var knownPeers: [PeerID: String] { present.entries.mapValues(\.info.nickname) }

    // MARK: Internals

    private func link(for address: LinkAddress, maxFrame: Int? = nil) -> LinkID {
        if let l = linkOf[address] { return l }
        let l = LinkID(nextLink)
        nextLink += 1
        linkOf[address] = l
        addressOf[l] = address
        watch.up(l, now: Self.now())
        router.linkUp(l, maxFrame: maxFrame ?? options.maxFrame, now: Self.now())
        performStately(stately.linkUp(l))
        continuation.yield(.linkUp(address))
        announce()
        return l
    }

    private func handle(_ bytes: [UInt8], from udp: UDPAddress) {
        guard running else { return }
        let address = LinkAddress.udp(udp)
        switch Channel.of(bytes) {
        case .hello:
            guard let from = Discovery.parseHello(bytes), from != peerID else { return } // our own, looped back
            let l = link(for: address)
            watch.heard(l, now: Self.now())
        case .stately:
            receiveState(Channel.statelyPacket(bytes), from: address)
        case .bitchat:
            receivePacket(bytes, from: address)
        }
    }

    /// A state packet: from an address we have no link with, it starts one only when well formed.
    private func receiveState(_ packet: [UInt8], from address: LinkAddress) {
        let l: LinkID
        if let known = linkOf[address] {
            l = known
        } else {
            guard linkOf.count < options.maxLinks, (try? StatePacket(decoding: packet)) != nil else { return }
            l = link(for: address)
        }
        watch.heard(l, now: Self.now())
        performStately(stately.receive(packet, on: l, now: Self.now()))
    }

    /// A bitchat packet from an address we have no link with yet starts one
    /// (any bitchat implementation can talk to us); junk does not.
    private func receivePacket(_ bytes: [UInt8], from address: LinkAddress) {
        let l: LinkID
        if let known = linkOf[address] {
            l = known
        } else {
            guard linkOf.count < options.maxLinks, (try? Packet(decoding: bytes)) != nil else {
                router.noteMalformed()
                return
            }
            l = link(for: address)
        }
        watch.heard(l, now: Self.now())
        perform(router.receive(bytes, on: l, now: Self.now()))
    }

    private func bleEvent(_ event: BLETransport.Event) {
        guard running else { return }
        switch event {
        case let .up(id, maxFrame):
            _ = link(for: .ble(id), maxFrame: maxFrame)
        case let .frame(id, bytes, channel):
            // States come on their own characteristic.
            if channel == .stately { receiveState(bytes, from: .ble(id)) } else { receivePacket(bytes, from: .ble(id)) }
        case let .resized(ids, maxFrame):
            for id in ids { if let l = linkOf[.ble(id)] { router.setMaxFrame(l, maxFrame) } }
        case let .down(id):
            dropLink(.ble(id))
        }
    }

    private func dropLink(_ a: LinkAddress) {
        guard let l = linkOf.removeValue(forKey: a) else { return }
        addressOf[l] = nil
        router.linkDown(l)
        stately.linkDown(l)
        continuation.yield(.linkDown(a))
    }

    /// Sends on each link by its transport. Over BLE a state packet goes as it
    /// is, on Stately's own characteristic.
    private func send(_ bytes: [UInt8], stately: [UInt8]? = nil, on links: [LinkID]) {
        var bleLinks: [String] = []
        for l in links {
            switch addressOf[l] {
            case let .udp(a)?: socket.send(bytes, to: a)
            case let .ble(id)?: bleLinks.append(id)
            case nil: break
            }
        }
        if !bleLinks.isEmpty, let ble {
            if let stately { ble.send(stately, to: bleLinks, on: .stately) } else { ble.send(bytes, to: bleLinks) }
        }
    }

    private func performStately(_ actions: [StatelyEngine.Action]) {
        for action in actions {
            switch action {
            case let .transmit(bytes, links):
                let datagram = Channel.stately(bytes)
                send(datagram, stately: bytes, on: links)
            case let .updated(state):
                if !isBlocked(state.senderID) { continuation.yield(.state(state)) }
            case let .sos(state):
                if !isBlocked(state.senderID) { continuation.yield(.sos(state)) }
            case let .expired(peer):
                continuation.yield(.stateExpired(peer))
            case let .rejected(why):
                continuation.yield(.rejected(why))
            }
        }
    }

    // MARK: Stately

    /// Sets this node's state and broadcasts it at once (`invisible` stops broadcasting).
    public func setStatus(_ state: StateKind) {
        performStately(stately.set(state, now: Self.now()))
    }

    /// Ends an SOS: the state before it goes out at once.
    public func clearSOS() {
        performStately(stately.clearSOS(now: Self.now()))
    }

    public var status: StateKind { stately.current }
    /// The states around, SOS first.
    public var statusBoard: [StatelyEngine.PeerState] { stately.sortedBoard.filter { !isBlocked($0.senderID) } }
    public var powerMode: PowerMode { stately.powerMode }
    public var statusInterval: UInt64 { stately.interval }
    public var statelyStatistics: StatelyEngine.Statistics { stately.statistics }

    private func perform(_ actions: [MeshRouter.Action]) {
        for action in actions {
            switch action {
            case let .transmit(bytes, links):
                send(bytes, on: links)
            case let .deliver(packet, link, hops):
                deliver(packet, link: link, hops: hops)
            case let .progress(sender, _, received, total):
                if !isBlocked(sender) {
                    continuation.yield(.fileProgress(from: sender, received: received, total: total))
                }
            }
        }
    }

    private func deliver(_ packet: Packet, link: LinkID?, hops: Int) {
        // Blocked peers are discarded at the earliest stage, without a word.
        if isBlocked(packet.senderID) { return }
        switch packet.type {
        case .announce:
            do {
                let a = try Announcement.verify(packet, now: Self.now())
                let now = Self.now()
                if hops == 1, let link {
                    perform(router.bind(link, to: packet.senderID, now: now)) // hands over what was held for it
                    watch.announced(link)
                }
                router.setNeighbors(of: packet.senderID, Set(a.directNeighbors ?? []), now: now)
                let card = PeerCard(nickname: a.nickname, fingerprint: Fingerprint(noiseStaticKey: a.noisePublicKey))
                let previous = present.announced(packet.senderID, info: card, hops: hops, now: now)
                if blocked.contains(card.fingerprint) { updateBlockedSenders() }
                if previous == nil { followUp(tracker.peerReturned(packet.senderID, now: now)) } // back: try again now
                if previous?.info.nickname != a.nickname {
                    continuation.yield(.peer(packet.senderID, nickname: a.nickname, hops: hops))
                }
            } catch {
                continuation.yield(.rejected("announce from \(packet.senderID): \(error)"))
            }
        case .message:
            guard let text = String(validating: packet.payload, as: UTF8.self) else {
                continuation.yield(.rejected("message from \(packet.senderID) is not UTF-8"))
                return
            }
            continuation.yield(.message(from: packet.senderID, nickname: present[packet.senderID]?.info.nickname, text: text,
                                        hops: hops, timestamp: packet.timestamp))
        case .leave:
            router.peerGone(packet.senderID)
            if present.left(packet.senderID) != nil { continuation.yield(.left(packet.senderID)) }
        case .noiseHandshake where packet.recipientID == peerID:
            handshake(packet)
        case .noiseEncrypted where packet.recipientID == peerID:
            do {
                // A frame that comes before its handshake completes is held (with its
                // hop count) and handed back in the handshake step.
                if case let .plaintext(p) = try sessions.open(packet.payload, from: packet.senderID, now: Self.now(), note: hops) {
                    inner(p, from: packet.senderID, hops: hops)
                }
            } catch {
                continuation.yield(.rejected("frame from \(packet.senderID): \(error)"))
                // A peer we know sends frames we cannot open: one of us restarted
                // and lost the session. A fresh handshake (rate-limited) recovers it.
                if present[packet.senderID] != nil, !sessions.isHandshaking(with: packet.senderID) {
                    try? startHandshake(with: packet.senderID, now: Self.now())
                }
            }
        default:
            break
        }
    }

    private func handshake(_ packet: Packet) {
        let now = Self.now()
        do {
            let step = try sessions.receiveHandshake(packet.payload, from: packet.senderID, now: now)
            if let reply = step.reply {
                perform(router.originate(NoisePackets.handshake(reply, from: peerID, to: packet.senderID, timestamp: now), now: now))
            }
            if let fingerprint = step.established {
                handshakeStarted[packet.senderID] = nil
                continuation.yield(.sessionEstablished(packet.senderID, fingerprint: fingerprint.hex))
                for (p, hops) in step.released { inner(p, from: packet.senderID, hops: hops) }
                let flushed = waiting.removeValue(forKey: packet.senderID) ?? []
                for payload in flushed { try? sendNoise(payload, to: packet.senderID) }
                // A session with the peer: it is back. What we still owe it goes now,
                // what was held for it with a fresh budget (but not twice).
                let again = tracker.peerReturned(packet.senderID, now: now).filter {
                    guard case let .resend(id, _, _) = $0, let p = unacknowledged[id] else { return true }
                    return !flushed.contains(p)
                }
                followUp(again)
            }
        } catch {
            continuation.yield(.rejected("handshake from \(packet.senderID): \(error)"))
        }
    }

    /// A decrypted inner payload.
    private func inner(_ plaintext: [UInt8], from sender: PeerID, hops: Int) {
        guard let payload = try? NoisePayload(decoding: plaintext) else {
            continuation.yield(.rejected("malformed private payload from \(sender)"))
            return
        }
        switch payload {
        case let .privateMessage(m):
            // A retried copy is acknowledged again but shown once.
            if seenMessageIDs.insert(m.messageID).inserted {
                seenOrder.append(m.messageID)
                if seenOrder.count > 10_000 { seenMessageIDs.remove(seenOrder.removeFirst()) }
                continuation.yield(.privateMessage(from: sender, nickname: present[sender]?.info.nickname, text: m.content,
                                                   messageID: m.messageID, hops: hops))
            }
            try? sendNoise(.delivered(messageID: m.messageID), to: sender)
        case let .privateFile(file):
            receiveFile(file, from: sender)
        case let .delivered(id):
            // A duplicate receipt, or one from anyone but the recipient, counts for nothing.
            guard tracker.recipient(of: id) == sender, tracker.acknowledged(id) != nil else { return }
            unacknowledged[id] = nil
            continuation.yield(.delivered(messageID: id, by: sender))
        case let .readReceipt(id):
            continuation.yield(.read(messageID: id, by: sender))
        default:
            break
        }
    }

    private func receiveFile(_ file: FileTransfer, from sender: PeerID) {
        guard let downloads = options.downloads, let tlv = try? file.encoded() else {
            continuation.yield(.rejected("file from \(sender) refused: no download directory"))
            return
        }
        let id = Self.transferID(tlv)
        try? sendNoise(.delivered(messageID: id), to: sender)
        guard seenMessageIDs.insert(id).inserted else { return } // a retried copy
        // Only a plain base name, never a path a stranger chose.
        let raw = (file.name ?? "file").split(separator: "/").last.map(String.init) ?? "file"
        let base = DisplayText.clean(raw).filter { $0 != "\\" }
        let name = base.isEmpty || base.hasPrefix(".") ? "file-\(id.prefix(8))" : base
        do {
            try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
            var target = downloads.appendingPathComponent(name)
            if FileManager.default.fileExists(atPath: target.path) {
                target = downloads.appendingPathComponent("\(id.prefix(8))-\(name)")
            }
            try Data(file.content).write(to: target, options: .withoutOverwriting)
            continuation.yield(.fileReceived(from: sender, name: name, size: file.content.count, path: target.path, transferID: id))
        } catch {
            continuation.yield(.rejected("file from \(sender) could not be saved: \(error)"))
        }
    }

    private func announce() {
        let now = Self.now()
        lastAnnounce = now
        let neighbors = Array(router.neighborhood.neighborPeers.sorted().prefix(Announce.maxNeighbors))
        guard let packet = try? Announcement.make(identity: identity, nickname: nickname, timestamp: now,
                                                  directNeighbors: neighbors) else { return }
        perform(router.originate(packet, now: now))
    }

    /// Periodic work; false once stopped.
    private func timers() -> Bool {
        guard running else { return false }
        let now = Self.now()
        perform(router.tick(now: now))
        if now - lastPowerReading >= 60_000 {
            lastPowerReading = now
            stately.update(reading: options.power.read(), now: now)
        }
        performStately(stately.tick(now: now))
        retry(now: now)
        if now - lastHello >= Discovery.helloInterval {
            lastHello = now
            let hello = Discovery.hello(from: peerID)
            if options.discovery {
                for p in Discovery.rendezvousPorts where p != port { socket.send(hello, to: .loopback(p)) }
            }
            for a in options.peers { socket.send(hello, to: a) }
            if options.lan { socket.send(hello, to: Discovery.lanGroup) }
            for (l, _) in watch.check(now: now) {
                if let a = addressOf.removeValue(forKey: l) {
                    linkOf[a] = nil
                    continuation.yield(.linkDown(a))
                    // A Bluetooth peer that never announced, or went silent: let it go.
                    if case let .ble(id) = a, let ble { Task { await ble.disconnect(id) } }
                }
                router.linkDown(l)
                stately.linkDown(l)
            }
            for gone in present.expire(now: now) {
                router.peerGone(gone)
                continuation.yield(.left(gone)) // no announce for 60 s
            }
        }
        if now - lastAnnounce >= options.announceInterval { announce() }
        return true
    }
}
