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
    private let continuation: AsyncStream<Event>.Continuation
    private let logger: Logger
    private var core: NodeCore
    private let time: NodeTime
    private var bulkServer: BulkServer?
    /// Our offers: transfer ID → to whom, its chunks.
    private var bulkOffers: [[UInt8]: (peer: PeerID, offer: BulkOffer)] = [:]
    /// What ``BulkOptions/keptOffers`` holds, by transfer ID.
    private var kept: [[UInt8]: KeptOffers.Record] = [:]
    private var downloads: Set<[UInt8]> = []
    /// Offers waiting for their person's answer, oldest first.
    private var asked: [(offer: BulkOffer, peer: PeerID, expiry: Task<Void, Never>)] = []
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
    private func readClock() -> Millis {
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

    // MARK: Bulk transfers

    /// At start: offers of the last run that can still be served are served
    /// again (their listener opens on the port they name); otherwise the
    /// listener opens with the first offer (``sendFile(at:mimeType:to:)``)
    /// and closes when no offer waits. Receiving needs no listener.
    private func startBulk() async {
        guard let bulk = options.bulk, options.downloads != nil else { return }
        if let keeper = bulk.keptOffers.map(KeptOffers.init(directory:)) {
            do {
                let (records, removed) = try keeper.load()
                if !removed.isEmpty { logger.notice("removed offers that can no longer be served", metadata: ["files": "\(removed)"]) }
                if !records.isEmpty, let server = await openBulkServer() {
                    for r in records {
                        guard let peer = PeerID(hex: r.peer) else { continue }
                        await server.keep(r.offer, r.file)
                        bulkOffers[r.offer.transferID] = (peer, r.offer)
                        kept[r.offer.transferID] = r
                        resumedAtStart.insert(r.offer.transferID)
                    }
                    if let last = keeper.lastPort, await server.port != last {
                        logger.warning("the large-file port of the last run is taken: offers made then cannot resume until sent again",
                                       metadata: ["port": "\(last)"])
                    }
                    closeBulkServerIfIdle()
                }
            } catch {
                logger.error("offers of the last run cannot be served again", metadata: ["directory": "\(keeper.directory.path)", "error": "\(error)"])
            }
        }
        // Transfers a restart cut: on again, from what the disk holds; what
        // none can finish (a week old, unreadable, a save cut midway) goes.
        if let downloads = options.downloads {
            do {
                let removed = try BulkDownload.removeLeftovers(in: downloads)
                if !removed.isEmpty { logger.notice("removed partial files no transfer can finish", metadata: ["files": "\(removed)"]) }
                for offer in try BulkDownload.pending(in: downloads) {
                    guard let from = BulkDownload.origin(of: offer, in: downloads).flatMap(PeerID.init(hex:)) else { continue }
                    download(offer, from: from)
                }
            } catch {
                continuation.yield(.rejected(Rejection(.fileNotSaved, "large files cut by a restart cannot go on: \(downloads.path) cannot be read: \(error.localizedDescription)")))
            }
        }
    }

    /// The large-file listener, opened when an offer needs it: the port of
    /// the last run first (offers kept from then name it), then the one
    /// configured (0: any). nil when it cannot listen (said as a rejection).
    private func openBulkServer() async -> BulkServer? {
        if let bulkServer { return bulkServer }
        guard let bulk = options.bulk else { return nil }
        let keeper = bulk.keptOffers.map(KeptOffers.init(directory:))
        var o = BulkServer.Options()
        o.host = bulk.host
        o.pace = bulk.pace
        var ports = [bulk.port]
        if bulk.port == 0, let last = keeper?.lastPort { ports.insert(last, at: 0) }
        var failure = ""
        for port in ports {
            o.port = port
            let s = BulkServer(options: o)
            do {
                try await s.start()
            } catch {
                failure = "\(error)"
                continue
            }
            if let bulkServer { // another call opened one meanwhile
                await s.stop()
                return bulkServer
            }
            bulkServer = s
            let events = s.events
            Task { [weak self] in
                for await e in events { await self?.bulkServerEvent(e, from: s) }
            }
            if let keeper {
                do { try keeper.remember(port: await s.port) } catch {
                    logger.warning("the large-file port could not be kept for after a restart", metadata: ["error": "\(error)"])
                }
            }
            bulkListens += 1
            return s
        }
        continuation.yield(.rejected(Rejection(.transport, "large files: cannot listen on \(bulk.host):\(bulk.port): \(failure)")))
        return nil
    }

    /// No offer waits: the listener closes (the next offer opens it again).
    private func closeBulkServerIfIdle() {
        guard bulkOffers.isEmpty, let server = bulkServer else { return }
        bulkServer = nil
        Task { await server.stop() }
    }

    /// Whether the large-file listener is open now (it is while an offer waits).
    public var isListeningForBulk: Bool { bulkServer != nil }
    /// Times the large-file listener opened in this run.
    public private(set) var bulkListens = 0
    /// Offers an earlier run kept that this run served again (transfer IDs).
    private var resumedAtStart: Set<[UInt8]> = []
    /// Those of them the receiver saved in this run, and when.
    private var finishedAtStart: [(record: KeptOffers.Record, at: ContinuousClock.Instant)] = []

    /// Transfers that ``sendFile(at:mimeType:to:)`` offered again rather than
    /// anew (the same file to the same peer, unchanged: the receiver resumes).
    /// (The newest 256.)
    public private(set) var resumedTransfers: Set<String> = []
    private var resumedOrder: [String] = []

    private func noteResumed(_ id: String) {
        guard resumedTransfers.insert(id).inserted else { return }
        resumedOrder.append(id)
        if resumedOrder.count > 256 { resumedTransfers.remove(resumedOrder.removeFirst()) }
    }

    /// The transfer ID of an offer as the faces see it (its receipts and events name it).
    public nonisolated static func bulkTransferID(_ id: [UInt8]) -> String { id.map { String(format: "%02x", $0) }.joined() }

    /// Events about our offers name the transfer, not the offer's tracking ID.
    private func bulkEvent(_ event: NodeEvent) -> NodeEvent {
        func plain(_ id: String) -> String? { id.hasPrefix("bulk-") ? String(id.dropFirst(5)) : nil }
        switch event {
        case let .delivered(id, by):
            // The offer arrived; the file's own receipt is its saving.
            guard let t = plain(id) else { return event }
            return .fileSent(transferID: t, to: by, fragments: 0) // 0: offered, not over the mesh
        case let .failed(id, to): return plain(id).map { .failed(messageID: $0, to: to) } ?? event
        case let .held(id, to): return plain(id).map { .held(messageID: $0, for: to) } ?? event
        default: return event
        }
    }

    /// A transfer ended: its kept offer goes.
    private func forgetKept(_ id: [UInt8]) {
        guard let record = kept.removeValue(forKey: id), let dir = options.bulk?.keptOffers else { return }
        if resumedAtStart.contains(id) {
            // Offered by an earlier run and finished in this one: the same file sent again
            // now (that run's command again) is this transfer, not a new one.
            finishedAtStart.append((record, ContinuousClock.now))
            if finishedAtStart.count > 64 { finishedAtStart.removeFirst() }
        }
        do { try KeptOffers(directory: dir).forget(id) } catch {
            // Served once more after a restart at worst; the next start removes it after a week.
            logger.warning("an ended offer could not be forgotten", metadata: ["error": "\(error)"])
        }
    }

    private func bulkServerEvent(_ e: BulkServer.Event, from server: BulkServer) {
        guard server === bulkServer else { return } // a listener closed since
        switch e {
        case let .saved(id):
            guard let o = bulkOffers.removeValue(forKey: id) else { return }
            Task { await server.withdraw(id) }
            forgetKept(id)
            continuation.yield(.delivered(messageID: Self.bulkTransferID(id), by: o.peer))
            closeBulkServerIfIdle()
        case let .interrupted(id, reason):
            logger.info("bulk transfer interrupted", metadata: ["transfer": "\(Self.bulkTransferID(id))", "reason": "\(reason)"])
        case let .refused(reason):
            logger.info("bulk connection refused", metadata: ["reason": "\(reason)"])
        case let .listenerFailed(reason):
            // Offers out there can no longer be fetched; new files go nowhere.
            logger.error("the large-file listener stopped", metadata: ["reason": "\(reason)"])
            bulkServer = nil
            for (id, o) in bulkOffers {
                continuation.yield(.failed(messageID: Self.bulkTransferID(id), to: o.peer))
            }
            bulkOffers.removeAll()
            continuation.yield(.rejected(Rejection(.transport, "large files: the listener stopped (\(reason)); files offered cannot be fetched: send them again")))
        case let .progress(id, acked, _):
            guard let o = bulkOffers[id] else { return }
            let sent = min(o.offer.size, UInt64(acked) * UInt64(o.offer.chunkSize))
            continuation.yield(.fileSending(transferID: Self.bulkTransferID(id), to: o.peer, sent: Int(sent), total: Int(o.offer.size)))
        case .started:
            break
        }
    }

    /// Where receivers may connect: the configured addresses, or this
    /// machine's IPv4 addresses (loopback last) with the listener's port.
    private func advertised(port: Int) -> [String] {
        if let a = options.bulk?.advertise, !a.isEmpty { return Array(a.prefix(BulkOffer.maxAddresses)) }
        if let host = options.bulk?.host, host != "0.0.0.0", host != "::" { return ["\(host.contains(":") ? "[\(host)]" : host):\(port)"] }
        var ips: [String] = []
        var list: UnsafeMutablePointer<ifaddrs>?
        if getifaddrs(&list) == 0, let first = list {
            var p: UnsafeMutablePointer<ifaddrs>? = first
            while let a = p {
                if let sa = a.pointee.ifa_addr, sa.pointee.sa_family == sa_family_t(AF_INET) {
                    var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
                    if getnameinfo(sa, socklen_t(MemoryLayout<sockaddr_in>.size), &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 {
                        ips.append(String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
                    }
                }
                p = a.pointee.ifa_next
            }
            freeifaddrs(first)
        }
        var seen = Set<String>()
        let sorted = (ips.filter { !$0.hasPrefix("127.") } + ips.filter { $0.hasPrefix("127.") }).filter { seen.insert($0).inserted }
        return sorted.prefix(BulkOffer.maxAddresses).map { "\($0):\(port)" }
    }

    /// Sends a file from disk: over the mesh when it fits, else offered over
    /// TCP to a peer that announces `wifiBulk`. Returns its transfer ID.
    public func sendFile(at url: URL, mimeType: String? = nil, to peer: PeerID) async throws -> String {
        let size = (try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? UInt64) ?? 0
        var tooLarge: NodeCore.FileTooLarge?
        if size <= 1 << 20 {
            let content = [UInt8](try Data(contentsOf: url))
            do { return try sendFile(name: url.lastPathComponent, mimeType: mimeType, content: content, to: peer) } catch let e as NodeCore.FileTooLarge {
                tooLarge = e
            }
        }
        guard options.bulk != nil, options.downloads != nil else {
            // Said with the way to send it (issue 52: "file too large" never said how).
            throw BulkUnavailable(peer: peer, bytes: size, off: true, meshLimit: tooLarge?.limit)
        }
        guard core.peers[peer]?.capabilities?.contains(.wifiBulk) == true else {
            throw BulkUnavailable(peer: peer, bytes: size, off: false)
        }
        guard let server = await openBulkServer() else {
            throw BulkUnavailable(peer: peer, bytes: size, off: true)
        }
        // The same file to the same peer, unchanged since it was offered: the
        // same offer again (its receiver resumes from what its disk holds).
        let stamp = try KeptOffers.stamp(url)
        let path = url.absoluteURL.standardizedFileURL.path
        func same(_ r: KeptOffers.Record) -> Bool {
            r.file.absoluteURL.standardizedFileURL.path == path && r.peer == peer.description && r.size == stamp.size && r.modified == stamp.modified
        }
        // Resumed at start and saved since (within 10 minutes): already there.
        if let done = finishedAtStart.last(where: { same($0.record) && ContinuousClock.now - $0.at < .seconds(600) }) {
            let id = Self.bulkTransferID(done.record.offer.transferID)
            noteResumed(id)
            closeBulkServerIfIdle()
            return id
        }
        if let again = kept.values.first(where: same) {
            bulkOffers[again.offer.transferID] = (peer, again.offer)
            await server.keep(again.offer, again.file)
            let id = Self.bulkTransferID(again.offer.transferID)
            noteResumed(id)
            _ = try command { try $0.sendBulkOffer(again.offer, to: peer, now: $1) }
            return id
        }
        let port = await server.port
        let offer: BulkOffer
        do { offer = try await server.offer(url, mimeType: mimeType, addresses: advertised(port: port)) } catch {
            closeBulkServerIfIdle()
            throw error
        }
        bulkOffers[offer.transferID] = (peer, offer)
        if let dir = options.bulk?.keptOffers {
            let record = KeptOffers.Record(offer: offer, file: URL(fileURLWithPath: path), peer: peer.description, size: stamp.size, modified: stamp.modified)
            do {
                try KeptOffers(directory: dir).keep(record)
                kept[offer.transferID] = record
            } catch {
                // It goes now; only a restart's resumption is lost.
                logger.warning("an offer could not be kept for after a restart", metadata: ["directory": "\(dir.path)", "error": "\(error)"])
            }
        }
        _ = try command { try $0.sendBulkOffer(offer, to: peer, now: $1) }
        return Self.bulkTransferID(offer.transferID)
    }

    /// A file too large for the mesh, to a peer that takes none over TCP.
    public struct BulkUnavailable: Error, CustomStringConvertible {
        public var peer: PeerID
        public var bytes: UInt64
        /// Large files over the network are off here (no download directory, or not asked for).
        public var off: Bool
        /// The largest file the mesh's links carry now, when known.
        public var meshLimit: Int?
        public init(peer: PeerID, bytes: UInt64, off: Bool, meshLimit: Int? = nil) {
            self.peer = peer
            self.bytes = bytes
            self.off = off
            self.meshLimit = meshLimit
        }
        public var description: String {
            let tooLarge = "file too large for the mesh (\(bytes) bytes" + (meshLimit.map { "; at most \($0)" } ?? "") + ")"
            return off ? tooLarge + ", and large files over the network are off here: start without --no-bulk to offer it over the local network (docs/BULK.md)"
                : tooLarge + ", and \(peer) takes no large files over the network (no wifiBulk in its announce: it runs with --no-bulk or an old app)"
        }
    }

    private func bulkOffered(_ offer: BulkOffer, from peer: PeerID) {
        guard let bulk = options.bulk, options.downloads != nil else { return }
        // The same offer again (the sender's retry): as before.
        guard !downloads.contains(offer.transferID), !asked.contains(where: { $0.offer.transferID == offer.transferID }) else { return }
        guard offer.size <= bulk.acceptUpTo else {
            guard bulk.ask else {
                declineOffer(offer, from: peer, "larger than the \(bulk.acceptUpTo >> 20) MiB taken without asking (--accept-up-to)")
                return
            }
            if asked.count >= max(1, bulk.maxAsked) {
                let oldest = asked.removeFirst()
                oldest.expiry.cancel()
                declineOffer(oldest.offer, from: oldest.peer, "not answered: too many files offered at once")
            }
            let id = offer.transferID, wait = bulk.askTimeout
            let expiry = Task { [weak self] in
                do { try await Task.sleep(for: wait) } catch { return }
                await self?.askExpired(id)
            }
            asked.append((offer, peer, expiry))
            continuation.yield(.fileOffered(from: peer, transferID: Self.bulkTransferID(id), name: DisplayText.clean(offer.name),
                                            size: Int(offer.size), mimeType: offer.mimeType.map(DisplayText.clean)))
            return
        }
        take(offer, from: peer)
    }

    /// An offer over the network waiting for its person's answer.
    public struct FileOffer: Hashable, Sendable {
        public var from: PeerID
        public var transferID: String
        public var name: String
        public var size: Int
        public var mimeType: String?
        public init(from: PeerID, transferID: String, name: String, size: Int, mimeType: String?) {
            self.from = from
            self.transferID = transferID
            self.name = name
            self.size = size
            self.mimeType = mimeType
        }
    }

    /// Offers over the network waiting for an answer (see ``BulkOptions/ask``), oldest first.
    public var fileOffers: [FileOffer] {
        asked.map { FileOffer(from: $0.peer, transferID: Self.bulkTransferID($0.offer.transferID), name: DisplayText.clean($0.offer.name),
                              size: Int($0.offer.size), mimeType: $0.offer.mimeType.map(DisplayText.clean)) }
    }

    /// No offer waits under that transfer ID (answered, withdrawn, or never made).
    public struct UnknownFileOffer: Error, CustomStringConvertible {
        public var transferID: String
        public var description: String { "no file offer waits with transfer ID \(transferID)" }
    }

    /// A person's answer to an offer told as `fileOffered`: accepted, it is
    /// fetched as one under the limit would be (the disk and the number of
    /// transfers still checked); declined, the sender reads so.
    public func answerFileOffer(_ transferID: String, accept: Bool) throws(UnknownFileOffer) {
        guard let i = asked.firstIndex(where: { Self.bulkTransferID($0.offer.transferID) == transferID.lowercased() }) else {
            throw UnknownFileOffer(transferID: transferID)
        }
        let (offer, peer, expiry) = asked.remove(at: i)
        expiry.cancel()
        if accept { take(offer, from: peer) } else { declineOffer(offer, from: peer, "not wanted", tell: false) }
    }

    private func askExpired(_ id: [UInt8]) {
        guard let i = asked.firstIndex(where: { $0.offer.transferID == id }) else { return }
        let (offer, peer, _) = asked.remove(at: i)
        let minutes = Int((options.bulk?.askTimeout ?? .seconds(600)).components.seconds / 60)
        declineOffer(offer, from: peer, minutes > 0 ? "not answered within \(minutes) min" : "not answered in time")
    }

    /// Declines in words, to the sender and (`tell`) to this node's faces.
    private func declineOffer(_ offer: BulkOffer, from peer: PeerID, _ why: String, tell: Bool = true) {
        answer(BulkAnswer(transferID: offer.transferID, accepted: false, reason: why), to: peer)
        if tell {
            continuation.yield(.rejected(Rejection(.fileRefused, peer: peer, "\(DisplayText.clean(offer.name)) (\(offer.size) bytes) from \(peer) declined: \(why)")))
        }
    }

    /// Takes an offer: the disk and the number of transfers allowing, accepts and fetches it.
    private func take(_ offer: BulkOffer, from peer: PeerID) {
        // The disk keeps 256 MiB free, whatever comes; a disk that cannot say takes nothing.
        if let downloads = options.downloads {
            let free: UInt64
            do {
                let attributes = try FileManager.default.attributesOfFileSystem(forPath: Self.existingAncestor(downloads).path)
                free = (attributes[.systemFreeSize] as? NSNumber)?.uint64Value ?? 0
            } catch {
                declineOffer(offer, from: peer, "the receiver cannot read its free disk space")
                logger.error("cannot read free disk space", metadata: ["directory": "\(downloads.path)", "error": "\(error)"])
                return
            }
            guard offer.size + (256 << 20) <= free else {
                declineOffer(offer, from: peer, "the disk has \(free >> 20) MiB free, and keeps 256 MiB")
                return
            }
        }
        guard downloads.count < options.bulk?.maxDownloads ?? 4 else {
            declineOffer(offer, from: peer, "busy: \(downloads.count) transfers under way")
            return
        }
        answer(BulkAnswer(transferID: offer.transferID, accepted: true), to: peer)
        download(offer, from: peer)
    }

    /// Answers an offer over the session (queued behind a handshake when there
    /// is none); an answer that cannot be sealed at all is logged.
    private func answer(_ a: BulkAnswer, to peer: PeerID) {
        do {
            try command { try $0.sendBulkAnswer(a, to: peer, now: $1) }
        } catch {
            logger.error("could not answer a file offer", metadata: ["peer": "\(peer)", "accepted": "\(a.accepted)", "error": "\(error)"])
        }
    }

    /// Carries an accepted offer, resuming after a broken connection (5 tries, 2 s doubling).
    private func download(_ offer: BulkOffer, from peer: PeerID) {
        guard let directory = options.downloads, downloads.insert(offer.transferID).inserted else { return }
        let events = continuation, logger = self.logger
        let chunk = UInt64(offer.chunkSize), size = offer.size
        let attempts = max(1, options.bulk?.attempts ?? 6)
        var wait = options.bulk?.retryWait ?? .seconds(2)
        Task { [weak self] in
            var failure = ""
            for attempt in 1...attempts {
                do {
                    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                    var d = BulkDownload(offer: offer, directory: directory)
                    d.origin = peer.description
                    let saved = try await d.run { done, _ in
                        events.yield(.fileProgress(from: peer, received: Int(min(size, UInt64(done) * chunk)), total: Int(size)))
                    }
                    events.yield(.fileReceived(from: peer, name: saved.lastPathComponent, size: Int(size), path: saved.path,
                                               transferID: MeshNode.bulkTransferID(offer.transferID)))
                    await self?.downloadEnded(offer.transferID)
                    return
                } catch BulkTransferError.hashMismatch {
                    failure = BulkTransferError.hashMismatch.description
                    break
                } catch {
                    failure = "\(error)"
                    logger.info("bulk download interrupted", metadata: ["attempt": "\(attempt)", "error": "\(error)"])
                    if attempt < attempts { try? await Task.sleep(for: wait) }
                    wait *= 2
                }
            }
            events.yield(.rejected(Rejection(.fileNotSaved, peer: peer, "\(DisplayText.clean(offer.name)) from \(peer): \(failure)")))
            // The sender hears it in words too, and stops serving it.
            await self?.gaveUp(offer, from: peer, failure)
        }
    }

    private func downloadEnded(_ id: [UInt8]) { downloads.remove(id) }

    /// The directory itself, or the nearest parent that exists (downloads are made on first use).
    nonisolated static func existingAncestor(_ url: URL) -> URL {
        var u = url
        while !FileManager.default.fileExists(atPath: u.path), u.pathComponents.count > 1 { u = u.deletingLastPathComponent() }
        return u
    }

    private func gaveUp(_ offer: BulkOffer, from peer: PeerID, _ why: String) {
        downloads.remove(offer.transferID)
        answer(BulkAnswer(transferID: offer.transferID, accepted: false, reason: String(why.utf8.prefix(200)) ?? "gave up"), to: peer)
    }

    private func save(_ file: NodeCore.IncomingFile) {
        guard let downloads = options.downloads else {
            core.notStored(file.transferID)
            return
        }
        do {
            try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
            var target = downloads.appendingPathComponent(file.name)
            if FileManager.default.fileExists(atPath: target.path) {
                target = downloads.appendingPathComponent("\(file.transferID.prefix(8))-\(file.name)")
            }
            // One rule for every received file, small or large: readable by its owner only (0600).
            let fd = open(target.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) // never over another file
            guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            do {
                try handle.write(contentsOf: Data(file.content))
                try handle.synchronize()
            } catch {
                try? FileManager.default.removeItem(at: target) // nothing half-written is left to look received
                throw error
            }
            core.stored(file.transferID, now: readClock()) // its receipt: the file is on disk
            continuation.yield(.fileReceived(from: file.from, name: file.name, size: file.content.count, path: target.path,
                                             transferID: file.transferID))
        } catch {
            logger.error("could not save a received file", metadata: ["name": "\(file.name)", "error": "\(error)"])
            core.notStored(file.transferID) // no receipt: its sender tries again
            continuation.yield(.rejected(Rejection(.fileNotSaved, peer: file.from,
                                                   "file from \(file.from) could not be saved: \(error.localizedDescription)")))
        }
    }

    /// A voice burst as `voice_<burst>_<peer>_<dm|mesh>.aac` (AAC in ADTS, as the
    /// apps save them) in the downloads; without downloads, or when the disk
    /// refuses, said in words.
    private func save(_ note: VoiceAssembler.Note) {
        let name = note.id + ".aac"
        guard let downloads = options.downloads else {
            continuation.yield(.rejected(Rejection(.fileRefused, peer: note.from, "voice from \(note.from) not kept: no download directory")))
            return
        }
        do {
            try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
            let target = downloads.appendingPathComponent(name)
            try Data(note.adts).write(to: target) // the same burst again (a retried note) replaces its file
            chmod(target.path, 0o600) // as every received file
            continuation.yield(.voiceNote(from: note.from, path: target.path, durationMillis: note.durationMillis, isPrivate: note.isPrivate,
                                          id: note.id, size: note.adts.count))
        } catch {
            continuation.yield(.rejected(Rejection(.fileNotSaved, peer: note.from,
                                                   "voice from \(note.from) could not be saved: \(error.localizedDescription)")))
        }
    }

    /// Runs a command on the core, then carries out what it produced.
    private func command<T, E: Error>(_ body: (inout NodeCore, Millis) throws(E) -> T) throws(E) -> T {
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
