import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
@_exported import StarlingNodeCore
import StarlingNostr
import StarlingBulk
import StarlingBulkTransport
import StarlingCrypto
import StarlingMesh
import StarlingStately
import StarlingTransport
import StarlingWire

/// A running node: a ``NodeCore`` over real transports, the wall clock and the
/// file system. It owns nothing of the protocol: frames go from the
/// transports into the core, the core's frames go out on the transports, its
/// events come out of ``events``, and the node sleeps until the core's next
/// deadline or the next frame.
///
/// UDP (loopback discovery, explicit peers, opt-in LAN) is built in; other
/// transports (Bluetooth LE through `StarlingBluetooth`, an ``InMemoryHub``'s
/// endpoints) are handed in through ``Options/transports``.
public actor MeshNode: DeadlineDriven {
    public typealias Event = NodeEvent
    public typealias PeerInfo = NodeCore.PeerInfo
    public typealias FileTooLarge = NodeCore.FileTooLarge

    public struct Options: Sendable {
        /// The node core's settings: nickname, announce interval, relay policy,
        /// retries, favourites, Stately.
        public var core: NodeCore.Configuration
        /// The built-in UDP transport; nil: none.
        public var udp: UDPTransport.Options? = UDPTransport.Options()
        /// Further transports (Bluetooth LE, in-memory …), started with the node.
        public var transports: [any Transport] = []
        /// Off-mesh transports (Nostr): peers reached by who they are, used only
        /// for a peer with no mesh route.
        public var offMeshTransports: [any OffMeshTransport] = []
        /// With `core.gateway` or `core.bridge`: hands what the gateway or the
        /// bridge took to the relays (the events as they came, each its author's).
        public var nostrPublisher: (@Sendable (GatewayCore.Upload) -> Void)?
        /// With `core.bridge`: the recipient tags whose courier drops (kind 1401)
        /// the bridge reads from the relays, each time they change.
        public var dropFollower: (@Sendable ([String]) -> Void)?
        /// With `core.courierMailbox`: a drop for the courier mailbox to keep.
        public var mailboxPoster: (@Sendable (CourierEnvelope) -> Void)?
        /// Where received files are saved (nil: files are refused).
        public var downloads: URL?
        /// Where battery readings come from (read every minute).
        public var power: any PowerProvider = SysfsPowerProvider()
        /// Files too large for the mesh, over TCP (nil: off; needs `downloads`
        /// to receive). docs/PROTOCOL.md, "Bulk transfer".
        public var bulk: BulkOptions?
        /// Where the time comes from: timers run on its monotonic clock, packets
        /// are stamped with its wall clock (a test steps a clock of its own).
        public var clock: any NodeClock = SystemClock()
        /// Where the mesh board is kept across restarts (``BoardFile``; nil: in memory only).
        public var boardFile: URL?
        /// Where a mesh bridge keeps what it took and sent (``BridgeCore/Memory``,
        /// JSON, 0600) across restarts; nil: in memory only.
        public var bridgeMemoryFile: URL?
        /// Where our own one-time prekeys are kept (0600) when the node
        /// publishes a prekey bundle (``NodeCore/Configuration/publishesPrekeys``).
        public var prekeyFile: URL?
        public init(nickname: String) { core = NodeCore.Configuration(nickname: nickname) }
    }

    public struct BulkOptions: Sendable {
        /// Where the listener binds: every address (the LAN) by default.
        public var host = "0.0.0.0"
        public var port = 0
        /// Where receivers are told to connect (nil: this machine's IPv4
        /// addresses, loopback last, with the port).
        public var advertise: [String]?
        /// Files up to this size are taken without asking; larger ones are
        /// asked (with `ask`) or declined in words.
        public var acceptUpTo: UInt64 = 1 << 30
        /// A face with a person behind it (chat, the daemon): offers above
        /// `acceptUpTo` are told as ``NodeEvent/fileOffered(from:transferID:name:size:mimeType:)``
        /// and wait for ``MeshNode/answerFileOffer(_:accept:)``.
        public var ask = false
        /// How long an asked offer waits for its answer; then it is declined, "not answered".
        public var askTimeout: Duration = .seconds(600)
        /// Offers waiting for an answer at once; past it the oldest is declined.
        public var maxAsked = 16
        /// Downloads at once (more are declined, "busy").
        public var maxDownloads = 4
        /// A pause after each 64 KiB chunk sent (nil: none): at most 64 KiB per pace.
        public var pace: Duration?
        /// A broken download is tried this many times in all, waiting `retryWait` (doubling) between.
        public var attempts = 6
        public var retryWait: Duration = .seconds(2)
        /// Where the offers this node made are kept (with the listener's port),
        /// so that a restart serves them again on the same port and its
        /// receivers resume; and sending the same file to the same peer again
        /// offers it again, not anew. nil: offers end with the process.
        public var keptOffers: URL?
        public init() {}
    }

    struct LinkKey: Hashable {
        var transport: Int
        var key: String
    }

    nonisolated public let identity: Identity
    public let options: Options
    public nonisolated let events: AsyncStream<Event>
    let continuation: AsyncStream<Event>.Continuation
    let logger: Logger
    var core: NodeCore
    private let time: NodeTime
    var bulkServer: BulkServer?
    /// Our offers: transfer ID → to whom, its chunks.
    var bulkOffers: [[UInt8]: (peer: PeerID, offer: BulkOffer)] = [:]
    /// What ``BulkOptions/keptOffers`` holds, by transfer ID.
    var kept: [[UInt8]: KeptOffers.Record] = [:]
    var downloads: Set<[UInt8]> = []
    /// Offers waiting for their person's answer, oldest first.
    var asked: [(offer: BulkOffer, peer: PeerID, expiry: Task<Void, Never>)] = []
    /// Times the large-file listener opened in this run.
    public internal(set) var bulkListens = 0
    /// Offers an earlier run kept that this run served again (transfer IDs).
    var resumedAtStart: Set<[UInt8]> = []
    /// Those of them the receiver saved in this run, and when.
    var finishedAtStart: [(record: KeptOffers.Record, at: ContinuousClock.Instant)] = []

    /// Transfers that ``sendFile(at:mimeType:to:)`` offered again rather than
    /// anew (the same file to the same peer, unchanged: the receiver resumes).
    /// (The newest 256.)
    public internal(set) var resumedTransfers: Set<String> = []
    var resumedOrder: [String] = []
    private let udp: UDPTransport?
    private let transports: [any Transport]
    private var linkOf: [LinkKey: LinkID] = [:]
    private var keyOf: [LinkID: LinkKey] = [:]
    private var nextLink: UInt32 = 1
    private var running = false
    private var hasRun = false
    private var stopping: Task<Void, Never>?
    private var runDeadline: Millis?
    package var driver = DeadlineDriver()
    private var lastPowerReading: Millis = 0
    private let stopped: AsyncStream<Void>
    private let stoppedContinuation: AsyncStream<Void>.Continuation
    /// Times the node woke for its own deadlines (not for a frame or a command).
    public var wakeUps: Int { driver.wakeUps }
    /// When the node will next wake by itself (node time: ms, the wall clock at
    /// its start going on at a monotonic pace), if it is running.
    public var scheduledWake: Millis? { driver.wakeAt }
    /// When the core has something to do next (the timer may be armed earlier: it fires harmlessly then).
    public var coreDeadline: Millis? { core.nextDeadline }

    public init(identity: Identity, options: Options, logger: Logger = Logger(label: "starling.node")) throws {
        self.identity = identity
        self.options = options
        self.logger = logger
        let udp = try options.udp.map { try UDPTransport(localPeer: identity.peerID, options: $0) }
        self.udp = udp
        self.transports = (udp.map { [$0] } ?? []) + options.transports
        var configuration = options.core
        configuration.acceptsFiles = options.downloads != nil
        configuration.bulk = options.bulk != nil && options.downloads != nil
        if configuration.offMeshOrder.isEmpty { configuration.offMeshOrder = options.offMeshTransports.map(\.name) }
        self.core = NodeCore(identity: identity, configuration: configuration, seed: UInt64.random(in: 0...UInt64.max))
        // Our prekeys, before any tick publishes (or, with none kept, makes) them.
        if configuration.publishesPrekeys, let url = options.prekeyFile {
            do {
                if let kept = try PrekeyFile(url: url).load() { core.adoptPrekeys(kept) }
            } catch {
                logger.warning("our prekeys cannot be read: new ones are made", metadata: ["file": "\(url.path)", "error": "\(error)"])
            }
        }
        self.time = NodeTime(clock: options.clock)
        // A flood's relays (each with its jitter of 0–10 ms) share wakes: at most 100 a second,
        // each relay late by under 10 ms, and only within 10 ms of the last wake (the hostile
        // bench's 200 announces a second cost ~150 wakes a second before).
        driver.spacing = 10
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(10_000))
        (stopped, stoppedContinuation) = AsyncStream.makeStream(of: Void.self)
    }

    /// The node's time (monotonic, from the wall clock at start); the core
    /// learns the wall clock's offset from it at every reading.
    func readClock() -> Millis {
        let now = time.now()
        let offset = time.wallOffset()
        // Two readings a few µs apart differ by a millisecond in rounding: only
        // a real step (≥ 100 ms) moves the offset, and one of a second is logged.
        let change = (offset - core.wallClockOffset).magnitude
        if change >= 100 {
            if change >= 1_000 { logger.info("wall clock stepped", metadata: ["offset_ms": "\(offset)"]) }
            core.wallClockOffset = offset
        }
        return now
    }

    /// The UDP port (nil without UDP).
    public var port: UInt16? { udp?.port }
    public var peerID: PeerID { identity.peerID }

    /// Runs until `deadline` (ms since 1970, in the node's time: a step of the
    /// wall clock after the start moves no deadline), ``stop()``, or until the task is cancelled.
    /// A node runs once: a second call returns at once.
    public func run(until deadline: Millis? = nil) async {
        guard !hasRun else { return }
        hasRun = true
        running = true
        runDeadline = deadline
        loadBridgeMemory() // before any relay event can come
        continuation.yield(.started(port: port, peerID: peerID, nickname: core.nickname))
        var started: [Int] = []
        var offMeshStarted: [Int] = []
        for (i, m) in options.offMeshTransports.enumerated() {
            do {
                try await m.start()
                offMeshStarted.append(i)
            } catch {
                continuation.yield(.rejected(Rejection(.transport, "\(m.name): \(error)")))
            }
        }
        for (i, t) in transports.enumerated() {
            do {
                try await t.start()
                started.append(i)
                logger.debug("transport started", metadata: ["transport": "\(t.name)"])
            } catch {
                logger.info("transport failed to start", metadata: ["transport": "\(t.name)", "error": "\(error)"])
                continuation.yield(.rejected(Rejection(.transport, "\(t.name == "ble" ? "Bluetooth" : t.name): \(error)")))
            }
        }
        readPower(now: readClock())
        loadBoard()
        await startBulk()
        rearm()
        let stopped = self.stopped
        await withTaskGroup(of: Void.self) { group in
            for i in started {
                let events = transports[i].events
                group.addTask { [weak self] in
                    for await event in events {
                        guard let self else { return }
                        await self.transportEvent(event, from: i)
                    }
                }
            }
            for i in offMeshStarted {
                let events = options.offMeshTransports[i].events
                group.addTask { [weak self] in
                    for await event in events {
                        guard let self else { return }
                        await self.offMeshEvent(event, from: i)
                    }
                }
            }
            group.addTask { [weak self] in
                // Cancelling the task that runs the node stops it.
                let node = self
                await withTaskCancellationHandler { for await _ in stopped {} } onCancel: { Task { await node?.stop() } }
            }
            await group.next()
            await stop()
            await group.waitForAll()
        }
        continuation.finish()
    }

    /// Stops: transports end their links (Bluetooth is waited for, so that
    /// centrals and peripherals see the links end), ``run(until:)`` returns.
    public func stop() async {
        if let stopping {
            await stopping.value // a second call waits for the first to finish
            return
        }
        guard running else {
            stoppedContinuation.finish()
            return
        }
        running = false
        driver.stop()
        saveBoard(force: true)
        saveBridgeMemory(force: true)
        let transports = self.transports, offMesh = options.offMeshTransports, done = stoppedContinuation, bulk = bulkServer
        let task = Task {
            await bulk?.stop()
            for t in transports { await t.stop() }
            for m in offMesh { await m.stop() }
            done.finish()
        }
        stopping = task
        await task.value
    }

    // MARK: Time

    /// The earliest of: the core's next deadline, the next battery reading,
    /// the end of the run (``DeadlineDriven``: the driver keeps the timer armed for it).
    package var nextWake: UInt64? {
        var next = min(core.nextDeadline ?? .max, lastPowerReading + 60_000)
        if let runDeadline { next = min(next, runDeadline) }
        return next
    }
    package var drives: Bool { running }
    package func clockNow() -> UInt64 { readClock() }

    package func due(now: UInt64) async {
        if let runDeadline, now >= runDeadline {
            await stop()
            return
        }
        if now >= lastPowerReading + 60_000 { readPower(now: now) }
        core.tick(now: now)
        flush()
    }

    private func readPower(now: Millis) {
        lastPowerReading = now
        core.updatePower(options.power.read(), now: now)
    }

    // MARK: Transports

    private func transportEvent(_ event: TransportEvent, from transport: Int) {
        guard running else { return }
        let now = readClock()
        switch event {
        case let .up(key, maxFrame):
            let k = LinkKey(transport: transport, key: key)
            guard linkOf[k] == nil else { break }
            let l = LinkID(nextLink)
            nextLink += 1
            linkOf[k] = l
            keyOf[l] = k
            core.linkUp(l, maxFrame: maxFrame, now: now)
            continuation.yield(.linkUp(transports[transport].address(of: key)))
        case let .frame(key, bytes, channel):
            guard let l = linkOf[LinkKey(transport: transport, key: key)] else { break }
            core.receive(bytes, channel: channel, on: l, now: now)
        case let .heard(key):
            if let l = linkOf[LinkKey(transport: transport, key: key)] { core.heard(l, now: now) }
        case let .resized(keys, maxFrame):
            for key in keys { if let l = linkOf[LinkKey(transport: transport, key: key)] { core.setMaxFrame(l, maxFrame) } }
        case let .down(key):
            guard let l = linkOf.removeValue(forKey: LinkKey(transport: transport, key: key)) else { break }
            keyOf[l] = nil
            core.linkDown(l, now: now)
            continuation.yield(.linkDown(transports[transport].address(of: key)))
        case let .notice(text):
            continuation.yield(.notice(text))
        }
        flush()
        rearm()
    }

    private func offMeshEvent(_ event: OffMeshEvent, from index: Int) {
        guard running else { return }
        let now = readClock(), name = options.offMeshTransports[index].name
        switch event {
        case let .reachable(peer, on): core.setOffMeshRoute(peer, via: name, reachable: on, now: now)
        case let .received(payload, peer): core.receiveOffMesh(payload, from: peer, via: name, now: now)
        case let .accepted(ticket): core.offMeshAccepted(ticket, now: now)
        case let .failed(ticket, reason): core.offMeshFailed(ticket, reason: reason, now: now)
        case let .notice(text): continuation.yield(.notice(text))
        }
        flush()
        rearm()
    }

    /// Carries out what the core produced.
    private func flush() {
        // Carrying out an output can make more (a file saved: its receipt); a few rounds at most.
        var outputs = core.takeOutputs(), rounds = 0
        while !outputs.isEmpty, rounds < 8 {
            rounds += 1
            carryOut(outputs)
            outputs = core.takeOutputs()
        }
        if !outputs.isEmpty { carryOut(outputs) }
        saveBoard(force: false)
        saveBridgeMemory(force: false)
    }

    // MARK: The bridge's memory on disk

    /// The bridge's memory last written (its change counter, that of the deletions waiting to cross),
    /// and when: at most every 30 s, at once when a deletion waits or left, and at the stop.
    private var bridgeSaved = (changes: 0, deletions: 0, at: Millis(0))
    private var bridgeSaveFailing = false
    /// A file past this is not read (2,048 IDs of 7 sets: under 1 MiB).
    static let maxBridgeMemoryBytes = 4 << 20

    private func loadBridgeMemory() {
        guard let url = options.bridgeMemoryFile, core.bridgeMemory != nil, FileManager.default.fileExists(atPath: url.path) else { return }
        do {
            // Read as written: never through a link, never past 4 MiB.
            let fd = open(url.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { throw CocoaError(.fileReadNoPermission) }
            defer { close(fd) }
            var bytes = [UInt8](repeating: 0, count: Self.maxBridgeMemoryBytes + 1)
            var filled = 0
            while filled < bytes.count {
                let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
                guard n > 0 else { break }
                filled += n
            }
            guard filled <= Self.maxBridgeMemoryBytes else { throw CocoaError(.fileReadTooLarge) }
            core.restoreBridgeMemory(try JSONDecoder().decode(BridgeCore.Memory.self, from: Data(bytes[..<filled])))
            bridgeSaved = (core.bridgeMemoryChanges, core.deletionsToCrossChanges, readClock())
        } catch {
            continuation.yield(.rejected(Rejection(.transport,
                "the bridge's memory in \(url.path) cannot be read (\(error.localizedDescription)): it starts afresh, and may show the last 15 minutes again")))
        }
    }

    private func saveBridgeMemory(force: Bool) {
        guard let url = options.bridgeMemoryFile, core.bridgeMemoryChanges != bridgeSaved.changes else { return }
        let now = readClock()
        // A deletion waiting or gone is written at once (then, after a failed write, every 5 s).
        let deletions = core.deletionsToCrossChanges != bridgeSaved.deletions && now >= bridgeSaved.at + (bridgeSaveFailing ? 5_000 : 0)
        guard force || now >= bridgeSaved.at + 30_000 || deletions, let memory = core.bridgeMemory else { return }
        do {
            try BoardFile.writeWhole([UInt8](try JSONEncoder().encode(memory)), to: url)
            bridgeSaved = (core.bridgeMemoryChanges, core.deletionsToCrossChanges, now)
            bridgeSaveFailing = false
        } catch {
            // Not taken as written: tried again (30 s; 5 s while a deletion waits), said once until a write works.
            bridgeSaved.at = now
            if !bridgeSaveFailing {
                continuation.yield(.rejected(Rejection(.transport, "the bridge's memory could not be kept in \(url.path) (\(error.localizedDescription)): free some disk")))
            }
            bridgeSaveFailing = true
        }
    }

    // MARK: The board on disk

    /// The board version last written, and when (written at most every 5 s, and at the stop).
    private var boardSaved = (version: 0, at: Millis(0))

    private func loadBoard() {
        guard let url = options.boardFile else { return }
        do {
            let packets = try BoardFile(url: url).load()
            let taken = core.restoreBoard(packets, now: readClock())
            boardSaved = (core.boardVersion, readClock())
            if !packets.isEmpty { logger.info("board restored", metadata: ["kept": "\(packets.count)", "taken": "\(taken)"]) }
        } catch {
            continuation.yield(.rejected(Rejection(.transport, "the board kept in \(url.path) cannot be read (\(error.localizedDescription)): it starts empty")))
        }
    }

    private func saveBoard(force: Bool) {
        guard let url = options.boardFile, core.boardVersion != boardSaved.version else { return }
        let now = readClock()
        guard force || now >= boardSaved.at + 5_000 else {
            rearmBoardSave(at: boardSaved.at + 5_000)
            return
        }
        do {
            try BoardFile(url: url).save(core.boardPackets(now: now))
            boardSaved = (core.boardVersion, now)
        } catch {
            // Said once per change; the board lives on in memory and is written again at the next change.
            boardSaved.version = core.boardVersion
            continuation.yield(.rejected(Rejection(.transport, "the board could not be kept in \(url.path) (\(error.localizedDescription)): free some disk")))
        }
    }

    /// A write held back by the 5 s spacing happens then, even if nothing else wakes the node.
    private var boardSaveArmed = false
    private func rearmBoardSave(at: Millis) {
        guard !boardSaveArmed, running else { return }
        boardSaveArmed = true
        let delay = at > readClock() ? at - readClock() : 0
        Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(Int(delay))) // a cancelled sleep writes at once: harmless
            await self?.boardSaveDue()
        }
    }

    private func boardSaveDue() {
        boardSaveArmed = false
        saveBoard(force: false)
    }

    private func carryOut(_ outputs: [NodeCore.Output]) {
        for output in outputs {
            switch output {
            case let .send(bytes, channel, links):
                var byTransport: [Int: [String]] = [:]
                for l in links { if let k = keyOf[l] { byTransport[k.transport, default: []].append(k.key) } }
                for (t, keys) in byTransport { transports[t].send(bytes, on: channel, to: keys) }
            case let .event(event):
                continuation.yield(bulkEvent(event))
            case let .closeLink(l):
                guard let k = keyOf.removeValue(forKey: l) else { break }
                linkOf[k] = nil
                let transport = transports[k.transport]
                continuation.yield(.linkDown(transport.address(of: k.key)))
                // A peer that never announced, or went silent: let it go.
                Task { await transport.close(k.key) }
            case let .saveFile(file):
                save(file)
            case let .saveVoice(note):
                save(note)
            case let .savePrekeys(p):
                guard let url = options.prekeyFile else { break }
                do { try PrekeyFile(url: url).save(p) } catch {
                    continuation.yield(.rejected(Rejection(.transport, "our prekeys could not be kept in \(url.path) (\(error.localizedDescription)): free some disk, or drops sealed to them may not open after a restart")))
                }
            case let .sendOffMesh(payload, peer, via, ticket):
                options.offMeshTransports.first { $0.name == via }?.send(payload, to: peer, ticket: ticket)
            case let .acknowledged(id):
                for m in options.offMeshTransports { m.acknowledged(id) }
            case let .publishNostr(upload):
                options.nostrPublisher?(upload)
            case let .followDrops(tags):
                options.dropFollower?(tags)
            case let .postToMailbox(envelope):
                options.mailboxPoster?(envelope)
            case let .bulkOffered(offer, from):
                bulkOffered(offer, from: from)
            case let .bulkAnswered(answer, from):
                if !answer.accepted, bulkOffers.removeValue(forKey: answer.transferID) != nil {
                    let server = bulkServer
                    Task { await server?.withdraw(answer.transferID) }
                    forgetKept(answer.transferID)
                    continuation.yield(.rejected(Rejection(.fileRefused, peer: from, "\(from) declined the file: \(DisplayText.clean(answer.reason))")))
                    continuation.yield(.failed(messageID: Self.bulkTransferID(answer.transferID), to: from))
                    closeBulkServerIfIdle()
                }
            }
        }
    }

    /// Runs a command on the core, then carries out what it produced.
    func command<T, E: Error>(_ body: (inout NodeCore, Millis) throws(E) -> T) throws(E) -> T {
        defer {
            flush()
            rearm()
        }
        return try body(&core, readClock())
    }

    // MARK: Commands

    /// Sends a signed public message to everyone.
    public func sendPublic(_ text: String) throws {
        try command { try $0.sendPublic(text, now: $1) }
    }

    /// Posts on the mesh board ("": the mesh's own; docs/PROTOCOL.md "Board (0x23)").
    @discardableResult
    public func postToBoard(_ text: String, geohash: String = "", urgent: Bool = false, lifetime: UInt64 = 86_400_000) throws -> BoardPost {
        try command { try $0.postToBoard(text, geohash: geohash, urgent: urgent, lifetime: lifetime, now: $1) }
    }

    /// Deletes one of our board posts (a signed tombstone goes out).
    public func deleteBoardPost(_ postID: [UInt8]) throws {
        try command { try $0.deleteBoardPost(postID, now: $1) }
    }

    /// The live board posts, urgent first, then the newest.
    public var boardPosts: [BoardEntry] { core.boardPosts(now: readClock()) }

    // Private groups (docs/PROTOCOL.md, "Groups"): the rules are the node core's.

    public var groups: [GroupSummary] { core.groups }
    /// With their keys, and the groups left: what the messenger's store keeps.
    public var groupStates: [GroupState] { core.groupStates }
    public var groupsLeft: [(id: [UInt8], epoch: UInt32)] { core.groupsLeft }
    public func restoreGroups(_ states: [GroupState], left: [(id: [UInt8], epoch: UInt32)]) { core.restoreGroups(states, left: left) }

    @discardableResult
    public func createGroup(named name: String) throws(NodeCore.GroupError) -> GroupSummary {
        try command { (core, now) throws(NodeCore.GroupError) in try core.createGroup(named: name, now: now) }
    }

    public func inviteToGroup(_ id: [UInt8], peer: PeerID) throws(NodeCore.GroupError) {
        try command { (core, now) throws(NodeCore.GroupError) in try core.inviteToGroup(id, peer: peer, now: now) }
    }

    public func removeFromGroup(_ id: [UInt8], member: Fingerprint) throws(NodeCore.GroupError) {
        try command { (core, now) throws(NodeCore.GroupError) in try core.removeFromGroup(id, member: member, now: now) }
    }

    public func leaveGroup(_ id: [UInt8]) throws(NodeCore.GroupError) {
        try command { (core, now) throws(NodeCore.GroupError) in try core.leaveGroup(id, now: now) }
    }

    @discardableResult
    public func sendToGroup(_ id: [UInt8], text: String) throws(NodeCore.GroupError) -> String {
        try command { (core, now) throws(NodeCore.GroupError) in try core.sendToGroup(id, text: text, now: now) }
    }

    /// Sends a private message, end-to-end encrypted with Noise (a handshake
    /// first when there is no session). Returns its message ID.
    @discardableResult
    public func sendPrivate(_ text: String, to peer: PeerID, messageID: String? = nil) throws -> String {
        try command { try $0.sendPrivate(text, to: peer, messageID: messageID, now: $1) }
    }

    /// Seals a private message as a courier drop for someone away (their Noise
    /// static key) and hands it to the neighbours here; how many took it.
    @discardableResult
    public func sendDrop(_ text: String, toNoiseKey key: [UInt8], messageID: String) throws -> Int {
        try command { try $0.sendDrop(text, toNoiseKey: key, messageID: messageID, now: $1) }
    }

    /// Hands a location-channel event of ours to a gateway on the mesh; the
    /// gateway's peer ID (nil: none here).
    @discardableResult
    public func sendViaGateway(_ event: NostrEvent, geohash: String) throws -> PeerID? {
        try command { try $0.sendViaGateway(event, geohash: geohash, now: $1) }
    }

    /// The gateway or the bridge: a relay is up (or none is) for what they publish.
    public func nostrRelays(up: Bool) { command { $0.nostrRelays(up: up, now: $1) } }
    /// The bridge: a courier drop (kind 1401) its subscription brought, opened or handed to the peer here it is for.
    public func dropFromRelay(_ event: NostrEvent) { command { $0.dropFromRelay(event, now: $1) } }
    /// The courier mailbox (`core.courierMailbox`): a drop its fetch brought, opened or handed to the peer here it is for.
    public func dropFromMailbox(_ envelope: CourierEnvelope) { command { $0.dropFromMailbox(envelope, now: $1) } }
    /// The bridge (`core.bridge`): an event its subscription brought, shown and carried into the mesh when it is one to carry.
    public func bridgeFromRelay(_ event: NostrEvent) { command { $0.bridgeFromRelay(event, now: $1) } }
    /// The gateway: an event of a channel it follows, carried into the mesh when it is one to carry.
    @discardableResult
    public func gatewayDownlink(_ event: NostrEvent, geohash: String) -> Bool {
        command { $0.gatewayDownlink(event, geohash: geohash, now: $1) }
    }

    /// Trust decisions are loaded (the node was made with
    /// `trustKnown` false): what waited for them is taken now.
    public func trustDecided() { command { $0.trustDecided(now: $1) } }
    /// A private message is stored: its receipt goes (``NodeCore/Configuration/receiptsAfterStored``).
    public func stored(_ messageID: String) { command { $0.stored(messageID, now: $1) } }
    /// A private message could not be stored: no receipt; the sender's retry is taken again.
    public func notStored(_ messageID: String) { command { c, _ in c.notStored(messageID) } }

    /// The off-mesh transport that reaches `peer` off the mesh now, if any.
    public func offMeshRoute(_ peer: PeerID) -> String? { core.offMeshRoute(peer) }

    /// Sends a file privately (end-to-end encrypted, fragmented on the way).
    /// Returns its transfer ID, which the delivered receipt names.
    @discardableResult
    public func sendFile(name: String, mimeType: String?, content: [UInt8], to peer: PeerID) throws -> String {
        try command { try $0.sendFile(name: name, mimeType: mimeType, content: content, to: peer, now: $1) }
    }

    /// Pings `peer`; the pong comes as an event.
    public func ping(_ peer: PeerID) { command { $0.ping(peer, now: $1) } }

    /// Tells `peer` that its message was displayed.
    public func sendReadReceipt(_ messageID: String, to peer: PeerID) throws {
        try command { try $0.sendReadReceipt(messageID, to: peer, now: $1) }
    }

    public func setFavorite(_ fingerprint: Fingerprint, _ on: Bool) { command { c, _ in c.setFavorite(fingerprint, on) } }
    public var favoriteFingerprints: Set<Fingerprint> { core.favoriteFingerprints }
    public func setVerified(_ fingerprint: Fingerprint, _ on: Bool) { command { c, _ in c.setVerified(fingerprint, on) } }
    public var verifiedFingerprints: Set<Fingerprint> { core.verified }
    public func block(_ fingerprint: Fingerprint) { command { c, _ in c.block(fingerprint) } }
    /// Pins a signing key to a Noise key (a kept pin, or a contact card's).
    public func pinSigningKey(_ key: [UInt8], for fingerprint: Fingerprint) {
        command { c, _ in c.pinSigningKey(key, for: fingerprint) }
    }
    public func unblock(_ fingerprint: Fingerprint) { command { c, _ in c.unblock(fingerprint) } }
    public func isBlocked(_ peer: PeerID) -> Bool { core.isBlocked(peer) }

    /// Changes this node's nickname and announces it at once.
    public func rename(_ name: String) { command { $0.rename(name, now: $1) } }

    /// Tells everyone this node is leaving (a signed LEAVE), then stops.
    public func leave() async {
        command { $0.leave(now: $1) }
        await stop()
    }

    /// Forgets every session and key in memory (panic), then stops.
    public func wipe() async {
        core.wipe()
        await stop()
    }

    // MARK: Stately

    /// Sets this node's state and broadcasts it at once (`invisible` stops broadcasting).
    public func setStatus(_ state: StateKind) { command { $0.setStatus(state, now: $1) } }
    /// Ends an SOS: the state before it goes out at once.
    public func clearSOS() { command { $0.clearSOS(now: $1) } }
    public var status: StateKind { core.status }
    public var statusBoard: [StatelyEngine.PeerState] { core.statusBoard }
    public var powerMode: PowerMode { core.powerMode }
    public var statusInterval: Millis { core.statusInterval }
    public var statelyStatistics: StatelyEngine.Statistics { core.statelyStatistics }

    // MARK: Queries

    public var peers: [PeerID: PeerInfo] { core.peers }
    /// Who vouches for a peer now (Noise 0x12): peers we verify, within 30 days.
    public func vouchers(of f: Fingerprint) -> [Fingerprint] { core.vouchers(of: f, now: readClock()) }
    /// The fingerprint of the Noise key our session with `peer` authenticated.
    public func sessionFingerprint(_ peer: PeerID) -> Fingerprint? { core.sessionFingerprint(peer) }
    /// Noise sessions established now.
    public var sessionCount: Int { core.sessionCount }
    /// The peers one hop away (bound to a link).
    public var neighborPeers: Set<PeerID> { core.neighborPeers }
    /// What each peer's verified announce says its neighbours are (TLV, at most
    /// `Announce.maxNeighbors` each): the mesh as the node pictures it.
    public var neighborLists: [PeerID: Set<PeerID>] { core.router.neighborhood.neighborsOfPeer }
    public func peer(named nickname: String) -> PeerID? { core.peer(named: nickname) }
    public var knownPeers: [PeerID: String] { core.peers.mapValues(\.nickname) }
    public var currentNickname: String { core.nickname }
    public var linkCount: Int { linkOf.count }
    public var statistics: MeshStatistics { core.statistics }
    /// What the node refused before relaying (forged, stale, oversized …).
    public var refusals: NodeCore.Refusals { core.refusals }
    public var unacknowledgedCount: Int { core.unacknowledgedCount }
}
