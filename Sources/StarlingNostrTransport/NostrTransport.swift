import Foundation
import Logging
import NIOCore
import NIOPosix
import StarlingMesh
import StarlingNostr
import StarlingTransport
import StarlingWire
import WSClient

/// Private messages to favourites over Nostr relays, through a SOCKS5 proxy
/// (Tor in real use), fail-closed: with a proxy set, no byte goes to a relay
/// any other way; if the proxy is down, nothing is sent and the node is told.
/// Only ``Proxy/directForDevelopment`` connects without one.
///
/// The protocol lives in ``NostrClientCore``; this class owns the WebSockets
/// (hummingbird's swift-websocket, whose client speaks SOCKS5 and passes the
/// relay's host name to the proxy, so Tor resolves it) and the clock.
public final class NostrTransport: OffMeshTransport, Sendable {
    public enum Proxy: Hashable, Sendable, CustomStringConvertible {
        /// A SOCKS5 proxy: Tor's is 127.0.0.1:9050.
        case socks5(host: String, port: Int)
        /// Straight to the relays, the node's address in plain view of each:
        /// for development against a relay on this machine only.
        case directForDevelopment

        public var description: String {
            switch self {
            case let .socks5(host, port): "SOCKS5 proxy \(host):\(port)"
            case .directForDevelopment: "no proxy (development)"
            }
        }
    }

    public struct Options: Sendable {
        /// The apps' default relays (iOS and Android, 2026).
        public static let defaultRelays = ["wss://relay.damus.io", "wss://nos.lol", "wss://relay.primal.net", "wss://offchain.pub",
                                           "wss://nostr21.com"]
        public var relays: [String] = Options.defaultRelays
        public var proxy: Proxy = .socks5(host: "127.0.0.1", port: 9050)
        public var core = NostrClientCore.Configuration()
        /// Reconnection: the first wait, doubled each failure up to the last (±20 %).
        public var reconnect: (first: Duration, max: Duration) = (.seconds(1), .seconds(300))
        public var connectTimeout: Duration = .seconds(30)
        /// Where the IDs of the gift wraps taken are kept (one a line), so that
        /// a restart does not show again what the relays still hold; nil: memory only.
        public var openedFile: URL?
        /// The seed location-channel identities are derived from (32 bytes, kept
        /// by the device; a random one each run when not given).
        public var geoSeed: [UInt8] = (0..<32).map { _ in UInt8.random(in: 0...255) }
        public init() {}
    }

    public let name = "nostr"
    public let events: AsyncStream<OffMeshEvent>
    /// What happens in the location channels joined.
    public let channelEvents: AsyncStream<ChannelEvent>
    private let channelContinuation: AsyncStream<ChannelEvent>.Continuation

    /// What happens in the location channels joined (``NostrChannelEvent``).
    public typealias ChannelEvent = NostrChannelEvent
    public let publicKey: [UInt8]
    public var npub: String { Bech32.npub(publicKey) }
    let pool: Pool
    private let eventsContinuation: AsyncStream<OffMeshEvent>.Continuation
    /// Sends, in the order they were made (one task takes them to the pool).
    private let sends: AsyncStream<(NoisePayload, PeerID, String)>
    private let sendsContinuation: AsyncStream<(NoisePayload, PeerID, String)>.Continuation

    public init(key: Secp256k1.PrivateKey, meshPeerID: PeerID, options: Options = Options(),
                logger: Logger = Logger(label: "starling.nostr")) {
        (events, eventsContinuation) = AsyncStream.makeStream(of: OffMeshEvent.self, bufferingPolicy: .bufferingNewest(10_000))
        (channelEvents, channelContinuation) = AsyncStream.makeStream(of: ChannelEvent.self, bufferingPolicy: .bufferingNewest(10_000))
        publicKey = key.publicKey
        (sends, sendsContinuation) = AsyncStream.makeStream(of: (NoisePayload, PeerID, String).self, bufferingPolicy: .bufferingNewest(10_000))
        let opened = options.openedFile.flatMap { try? String(contentsOf: $0, encoding: .utf8) }?
            .split(whereSeparator: \.isNewline).map(String.init).filter { $0.utf8.count == 64 } ?? []
        pool = Pool(core: NostrClientCore(key: key, meshPeerID: meshPeerID, configuration: options.core, opened: opened),
                    options: options, events: eventsContinuation, channels: channelContinuation, logger: logger, openedCount: opened.count)
    }

    /// Makes `peer` reachable at this Nostr key (nil: no longer).
    public func setContact(_ peer: PeerID, publicKey: [UInt8]?, variant: GiftWrap.Variant = .bitchat) async {
        await pool.setContact(peer, publicKey: publicKey, variant: variant)
    }

    public func start() async throws {
        for relay in pool.options.relays {
            guard let url = URL(string: relay), ["ws", "wss"].contains(url.scheme ?? ""), url.host != nil else {
                throw NostrTransportError.badRelay(relay)
            }
        }
        let pool = self.pool, sends = self.sends
        await pool.start(taking: Task { for await (payload, peer, ticket) in sends { await pool.send(payload, to: peer, ticket: ticket) } })
    }

    public func send(_ payload: NoisePayload, to peer: PeerID, ticket: String) {
        sendsContinuation.yield((payload, peer, ticket))
    }

    public func stop() async {
        sendsContinuation.finish()
        await pool.stop()
        eventsContinuation.finish()
        channelContinuation.finish()
    }

    /// Joins a location channel (a geohash) with this device's identity there.
    public func join(_ geohash: String) async throws {
        try await pool.join(geohash)
    }

    public func leave(_ geohash: String) async { await pool.leave(geohash) }

    /// Says `text` in a joined channel; returns the event's ID.
    public func say(_ text: String, nickname: String?, in geohash: String) async throws {
        try await pool.say(text, nickname: nickname, in: geohash)
    }

    /// Publishes an event someone else signed (a gateway's deposit) as it is;
    /// a `failed` channel event says when no relay took it.
    public func publishSigned(_ event: NostrEvent) async {
        await pool.publishSigned(event)
    }

    /// Follows a mesh bridge's cells on every relay (its events come as ``ChannelEvent/bridge(_:)``).
    /// Keeps these gift wraps as opened (a request answered: accepted or blocked), so
    /// that relays' copies are not shown again after a restart.
    public func markOpened(_ wrapIDs: [String]) async { await pool.markOpened(wrapIDs) }

    public func followBridge(cells: [String]) async {
        await pool.followBridge(cells: cells)
    }

    /// Follows courier drops for these recipient tags on every relay (they come as ``ChannelEvent/drop(_:)``).
    public func followDrops(tags: [String]) async {
        await pool.followDrops(tags: tags)
    }

    /// Our public key in a channel (to tell our own lines from others').
    public func channelKey(_ geohash: String) -> String? {
        (try? LocationChannel.geohash(geohash)).map { LocationChannel.identity(seed: pool.options.geoSeed, geohash: $0).publicKey.hexString }
    }

    /// The relays connected now, and the core's counters.
    public var status: (relays: Set<String>, statistics: NostrClientCore.Statistics) {
        get async { await (pool.core.connectedRelays, pool.core.statistics) }
    }
}

public enum NostrTransportError: Error, Hashable, Sendable, CustomStringConvertible {
    case badRelay(String)

    public var description: String {
        switch self {
        case let .badRelay(r): "\(r): a relay is a ws:// or wss:// URL with a host"
        }
    }
}

extension NostrTransport {
    /// The relay pool: the core, one connection task a relay, the timer.
    actor Pool: DeadlineDriven {
        var core: NostrClientCore
        let options: Options
        let events: AsyncStream<OffMeshEvent>.Continuation
        let logger: Logger
        private var writers: [String: AsyncStream<String>.Continuation] = [:]
        private var tasks: [Task<Void, Never>] = []
        package var driver = DeadlineDriver()
        private var running = false
        /// The last thing said about each relay.
        private var lastNotice: [String: String] = [:]

        /// Lines in the opened file (rewritten with the newest when it doubles).
        private var openedCount: Int

        let channels: AsyncStream<ChannelEvent>.Continuation

        init(core: NostrClientCore, options: Options, events: AsyncStream<OffMeshEvent>.Continuation,
             channels: AsyncStream<ChannelEvent>.Continuation, logger: Logger, openedCount: Int) {
            self.core = core
            self.options = options
            self.events = events
            self.channels = channels
            self.logger = logger
            self.openedCount = openedCount
        }

        /// Keeps a taken wrap's ID on disk, before its payload goes to the node.
        /// A write that fails is logged: the ID is still deduplicated in memory,
        /// so the cost is at most one message shown again after a restart.
        func markOpened(_ ids: [String]) { for id in ids { remember(id) } }

        private func remember(_ id: String) {
            guard let file = options.openedFile else { return }
            let capacity = options.core.dedupCapacity
            do {
                if openedCount >= 2 * capacity {
                    let kept = ((try? String(contentsOf: file, encoding: .utf8)) ?? "").split(whereSeparator: \.isNewline).suffix(capacity - 1)
                    try Data((kept.joined(separator: "\n") + "\n" + id + "\n").utf8).write(to: file, options: .atomic)
                    openedCount = kept.count + 1
                    return
                }
                if let handle = try? FileHandle(forWritingTo: file) {
                    defer { try? handle.close() }
                    try handle.seekToEnd()
                    try handle.write(contentsOf: Data((id + "\n").utf8))
                } else if !FileManager.default.createFile(atPath: file.path, contents: Data((id + "\n").utf8),
                                                          attributes: [.posixPermissions: 0o600]) {
                    logger.warning("nostr: \(file.path) could not be written: an opened message may show again after a restart")
                }
            } catch {
                logger.warning("nostr: \(file.path) could not be written (\(error)): an opened message may show again after a restart")
            }
            openedCount += 1
        }

        /// Monotonic time for the core's timers; the wall clock's offset from
        /// it goes to the core at every reading (``NodeTime``).
        private let time = NodeTime()

        private func readClock() -> Millis {
            core.wallClockOffset = time.wallOffset()
            return time.now()
        }

        func setContact(_ peer: PeerID, publicKey: [UInt8]?, variant: GiftWrap.Variant) {
            let had = core.contact(peer) != nil
            core.setContact(peer, publicKey: publicKey, variant: variant)
            let has = core.contact(peer) != nil
            if had != has { events.yield(.reachable(peer, has)) }
        }

        func start(taking sends: Task<Void, Never>) {
            tasks.append(sends)
            guard !running else { return }
            running = true
            if case .directForDevelopment = options.proxy {
                events.yield(.notice("nostr: connecting to relays WITHOUT a proxy (development only): they see this machine's address"))
            }
            for relay in options.relays {
                tasks.append(Task { [weak self] in await self?.maintain(relay) })
            }
        }

        func stop() {
            running = false
            for t in tasks { t.cancel() }
            tasks = []
            driver.stop()
            for w in writers.values { w.finish() }
            writers = [:]
        }

        func join(_ geohash: String) throws {
            let g = try LocationChannel.geohash(geohash)
            try core.join(g, key: LocationChannel.identity(seed: options.geoSeed, geohash: g), now: readClock())
            flush()
        }

        func leave(_ geohash: String) {
            core.leave(geohash)
            flush()
        }

        func say(_ text: String, nickname: String?, in geohash: String) throws {
            try core.sendChannel(text, nickname: nickname, geohash: geohash, ticket: "geo:" + geohash, now: readClock())
            flush()
        }

        func followDrops(tags: [String]) {
            core.followDrops(tags: tags, now: readClock())
            flush()
        }

        func followBridge(cells: [String]) {
            core.followBridge(cells: cells, now: readClock())
            flush()
        }

        func publishSigned(_ event: NostrEvent) {
            core.publishSigned(event, ticket: "gateway:" + event.id, now: readClock())
            flush()
        }

        func send(_ payload: NoisePayload, to peer: PeerID, ticket: String) {
            do {
                try core.send(payload, to: peer, ticket: ticket, now: readClock())
            } catch {
                events.yield(.failed(ticket: ticket, reason: "\(error)"))
            }
            flush()
        }

        /// Carries out the core's outputs, then sleeps until its next deadline.
        private func flush() {
            for output in core.takeOutputs() {
                switch output {
                case let .send(text, relay): writers[relay]?.yield(text)
                case let .received(payload, peer, _): events.yield(.received(payload, from: peer))
                case let .accepted(ticket, relay):
                    if !ticket.isEmpty, !ticket.hasPrefix("gateway:") { events.yield(.accepted(ticket: ticket)) }
                    logger.debug("relay accepted", metadata: ["relay": "\(relay)", "ticket": "\(ticket)"])
                case let .failed(ticket, reason):
                    if ticket.hasPrefix("geo:") {
                        channels.yield(.failed(reason))
                    } else if ticket.hasPrefix("gateway:") {
                        channels.yield(.failed("a deposit the gateway took was not published: \(reason)"))
                    } else if !ticket.isEmpty {
                        events.yield(.failed(ticket: ticket, reason: reason))
                    }
                case let .channelMessage(m): channels.yield(.message(m))
                case let .presence(g, key): channels.yield(.presence(geohash: g, publicKey: key))
                case let .bridgeEvent(e): channels.yield(.bridge(e))
                case let .dropEvent(e): channels.yield(.drop(e))
                case let .request(m): channels.yield(.request(m))
                case let .rejected(why):
                    logger.info("nostr: refused", metadata: ["why": "\(why)"])
                case let .opened(id):
                    remember(id)
                }
            }
            rearm()
        }

        package var drives: Bool { running }
        package var nextWake: UInt64? { core.nextDeadline }
        package func clockNow() -> UInt64 { readClock() }
        package func due(now: UInt64) async {
            core.tick(now: now)
            flush()
        }

        // MARK: Connections

        func connected(_ relay: String, writer: AsyncStream<String>.Continuation) {
            guard running else { return writer.finish() }
            writers[relay] = writer
            lastNotice[relay] = nil
            events.yield(.notice("nostr: connected to \(relay) through \(options.proxy)"))
            core.relayUp(relay, now: readClock())
            flush()
        }

        func disconnected(_ relay: String, why: String) {
            let was = writers.removeValue(forKey: relay) != nil
            core.relayDown(relay, now: readClock())
            // Said once per cause, not at every retry.
            let text = was ? "nostr: lost \(relay): \(why)" : "nostr: cannot reach \(relay) through \(options.proxy): \(why); nothing is sent to it"
            if running, lastNotice[relay] != text {
                lastNotice[relay] = text
                events.yield(.notice(text))
            }
            flush()
        }

        func received(_ text: String, from relay: String) {
            core.receive(text, from: relay, now: readClock())
            flush()
        }

        /// Keeps one relay connected, with backoff between tries, until stopped.
        private nonisolated func maintain(_ relay: String) async {
            var wait = options.reconnect.first
            while !Task.isCancelled {
                let started = ContinuousClock.now
                let why = await connectOnce(relay)
                await disconnected(relay, why: why)
                if ContinuousClock.now - started > .seconds(60) { wait = options.reconnect.first } // it was up a while
                let jittered = wait * Double.random(in: 0.8...1.2)
                do { try await Task.sleep(for: jittered) } catch { return }
                wait = min(wait * 2, options.reconnect.max)
            }
        }

        /// One connection: returns why it ended.
        private nonisolated func connectOnce(_ relay: String) async -> String {
            var configuration = WebSocketClientConfiguration(maxFrameSize: NostrRelayMessage.maxBytes)
            configuration.closeTimeout = .seconds(5)
            let handler: WebSocketDataHandler<WebSocketClient.Context> = { [weak self] inbound, outbound, _ in
                guard let self else { return }
                let (out, writer) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(1_000))
                await self.connected(relay, writer: writer)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await text in out { try await outbound.write(.text(text)) }
                    }
                    group.addTask {
                        for try await message in inbound.messages(maxSize: NostrRelayMessage.maxBytes) {
                            if case let .text(text) = message { await self.received(text, from: relay) }
                        }
                    }
                    try await group.next()
                    group.cancelAll()
                    writer.finish()
                }
            }
            do {
                let client: WebSocketClient
                switch options.proxy {
                case let .socks5(host, port):
                    client = WebSocketClient(url: relay, configuration: configuration,
                                             proxySettings: .init(host: host, port: port, type: .socks, timeout: options.connectTimeout),
                                             logger: logger, handler: handler)
                case .directForDevelopment:
                    client = WebSocketClient(url: relay, configuration: configuration, logger: logger, handler: handler)
                }
                try await client.run()
                return "closed"
            } catch is CancellationError {
                return "stopped"
            } catch {
                return Self.words(error)
            }
        }

        static func words(_ error: any Error) -> String {
            let text = "\(error)"
            if text.contains("connection refused") || text.contains("Connection refused") { return "connection refused (is the proxy running?)" }
            return String(text.prefix(200))
        }
    }
}
