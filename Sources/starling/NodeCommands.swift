import ArgumentParser
import StarlingRelayClient
import Foundation
import StarlingCrypto
import StarlingMesh
import Logging
import StarlingBluetooth
import StarlingNode
import StarlingStately
import StarlingTransport
import StarlingWire

/// Options shared by the commands that run a node.
/// The data directory's lock, held for the life of the process that runs a node.
nonisolated(unsafe) var runningNodeLock: DirectoryLock?

struct NodeOptions: ParsableArguments {
    @Option(name: .long, help: "Nickname (default: the stored one, else anon + 4 hex digits).") var name: String?
    @Option(help: "UDP port on 127.0.0.1 (default: the first free of 47370–47385, else any).") var port: UInt16?
    @Option(name: .long, parsing: .singleValue, help: "Also link this HOST:PORT (repeatable).") var peer: [String] = []
    @Flag(help: "No loopback discovery: only --peer links.") var noDiscovery = false
    @Flag(help: "Also find peers on the local network by multicast (239.255.73.70:47369); off unless asked.") var lan = false
    @Option(help: "The data directory (default: $XDG_DATA_HOME/starling).") var dataDir: String?
    @Option(help: "Seconds between announces.") var announceInterval = 10.0
    @Option(help: "Relay jitter in ms (0: relay at once, flooding; for measurements).") var relayJitter: UInt64?
    @Option(name: .long, parsing: .singleValue,
            help: "A favourite's fingerprint (64 hex digits; repeatable), besides those /fav stored: messages for it are held while it is away.")
    var favorite: [String] = []
    @Option(help: ArgumentHelp("Seconds a private message is retried before it fails (favourites' are then held).", visibility: .hidden))
    var retryBudget: Double?
    @Flag(help: "Also use Bluetooth LE (BlueZ over D-Bus): advertise, scan and link with nearby nodes and bitchat phones.")
    var ble = false
    @Option(help: "The Bluetooth adapter for --ble.") var adapter = "hci0"
    @Option(help: "Link only these Bluetooth addresses (comma-separated), e.g. to pin a topology.") var bleOnly: String?
    @Option(help: "Stately group passphrase: broadcast and read only that group's states (default: the shared key everyone has).")
    var group: String?
    @Option(help: "Stately power mode: performance, balanced, power-saver, ultra-low-power (default: from the battery).")
    var powerMode: String?
    @OptionGroup var nostr: NostrOptions

    func makeNode(configure: (inout MeshNode.Options, Identity) throws -> Void = { _, _ in }) throws -> MeshNode {
        keepFreedMemoryInTheHeap()
        let store = IdentityStore(directory: DataDirectory(explicit: dataDir))
        try UserError.writableDirectory(store.directory)
        do {
            runningNodeLock = try DirectoryLock(store.directory)
        } catch let held as DirectoryLock.Held {
            throw ValidationError(held.description)
        }
        let (identity, _) = try store.loadOrCreate(passphrase: try Passphrase.forStoredKey(store))
        if let name { try store.setNickname(name) }
        var options = MeshNode.Options(nickname: store.nickname(or: identity))
        var udp = UDPTransport.Options()
        udp.port = port
        udp.discovery = !noDiscovery
        udp.lan = lan
        udp.peers = try peer.map {
            guard let a = UDPAddress($0) else { throw ValidationError("--peer \($0): expected HOST:PORT with an IPv4 host") }
            return a
        }
        options.udp = udp
        if let relayJitter { options.core.policy = FloodingPolicy(jitter: relayJitter) }
        options.core.announceInterval = UInt64(announceInterval * 1000)
        options.downloads = store.directory.url.appendingPathComponent("files/incoming", isDirectory: true)
        options.core.favorites = store.favorites()
        if let retryBudget {
            // A shorter budget scales the backoff with it (for tests and measurements).
            let budget = UInt64(max(0.1, retryBudget) * 1000)
            options.core.retry.budget = budget
            options.core.retry.firstRetry = min(2_000, max(50, budget / 5))
            options.core.retry.maxInterval = min(60_000, max(100, budget / 2))
        }
        if let group { options.core.stateKey = try StateKey.group(passphrase: group) }
        if let powerMode {
            guard let mode = PowerMode(name: powerMode) else {
                throw ValidationError("--power-mode \(powerMode): one of \(PowerMode.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            options.core.powerMode = mode
        }
        for hex in favorite {
            guard let f = Fingerprint(hex: hex.lowercased()) else { throw ValidationError("--favorite \(hex): expected 64 hex digits") }
            options.core.favorites.insert(f)
        }
        if ble {
            // Bluetooth LE: its link budget and scan duty cycle follow the power mode.
            let mode = options.core.powerMode ?? BatteryOptimizer().mode(for: options.power.read())
            let t = try BLETransport(adapter: adapter)
            t.logger = Logging.Logger(label: "starling.ble")
            t.allowed = bleOnly.map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).uppercased() }) }
            t.maxLinks = mode.linkBudget
            t.scanDutyCycle = mode.scanDutyCycle
            options.transports.append(t)
        }
        try configure(&options, identity)
        return try MeshNode(identity: identity, options: options)
    }
}

#if canImport(Glibc)
@_silgen_name("mallopt")
private func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32
#endif

/// A node churns through frame-sized buffers; glibc's default returns freed
/// memory to the kernel after every large one, which halves the throughput of
/// 64 KiB frames (starling-bench noise). Keep up to 64 MiB in the heap instead.
private func keepFreedMemoryInTheHeap() {
    #if canImport(Glibc)
    _ = glibcMallopt(-1 /* M_TRIM_THRESHOLD */, 64 << 20)
    _ = glibcMallopt(-3 /* M_MMAP_THRESHOLD */, 16 << 20)
    #endif
}

/// Prints node events, as text or one JSON object per line.
struct EventPrinter: Sendable {
    var json: Bool

    /// One event as a line of JSON (its `Encodable` form, keys sorted).
    static func json(_ event: MeshNode.Event) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(event)).map { String(decoding: $0, as: UTF8.self) } ?? #"{"event":"unencodable"}"#
    }

    /// A line of text, unbuffered.
    func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    func print(_ event: MeshNode.Event) {
        let line: String
        if json {
            line = Self.json(event)
        } else {
            switch event {
            case let .started(port, peerID, nickname): line = "* \(nickname) (\(peerID))" + (port.map { " on 127.0.0.1:\($0)" } ?? "")
            case let .linkUp(a): line = "* link up: \(a)"
            case let .linkDown(a): line = "* link down: \(a)"
            case let .peer(id, nickname, hops): line = "* \(nickname) (\(id)) is here, \(hops) hop\(hops == 1 ? "" : "s") away"
            case let .message(from, nickname, text, hops, _, history):
                line = "<\(nickname ?? from.description)>\(history ? " (history)" : hops > 1 ? " (via \(hops - 1) relay\(hops == 2 ? "" : "s"))" : "") \(text)"
            case let .privateMessage(from, nickname, text, _, _, via): line = "<\(nickname ?? from.description) → you>\(via.map { " (via \($0))" } ?? "") \(text)"
            case let .sessionEstablished(peer, fingerprint): line = "* encrypted session with \(peer) (fingerprint \(fingerprint.prefix(16))…)"
            case let .delivered(id, _): line = "* delivered: \(id)"
            case let .read(id, _): line = "* read: \(id)"
            case let .left(peer): line = "* \(peer) left"
            case let .failed(id, to): line = "! message \(id) to \(to) was not delivered"
            case let .held(id, peer): line = "* message \(id) to \(peer) is held until they return"
            case let .state(s): line = "* \(DisplayText.clean(s.name)) (\(s.senderID)) is \(s.state.emoji) \(s.state.displayName), \(s.hops) hop\(s.hops == 1 ? "" : "s") away"
            case let .sos(s): line = "\u{1B}[1;31m🆘 SOS from \(DisplayText.clean(s.name)) (\(s.senderID)), \(s.hops) hop\(s.hops == 1 ? "" : "s") away\u{1B}[0m"
            case let .stateExpired(peer): line = "* \(peer)'s state expired"
            case let .fileProgress(from, received, total): line = "* receiving a file from \(from): \(received)/\(total)"
            case let .fileSent(id, to, fragments): line = "* file \(id.prefix(16))… sent to \(to) in \(fragments) fragment\(fragments == 1 ? "" : "s")"
            case let .fileReceived(from, name, size, path, _): line = "* file \(name) (\(size) bytes) from \(from) saved to \(path)"
            case let .rejected(why): line = "! \(why)"
            case let .pong(from, rtt, hops): line = "* pong from \(from): \(rtt) ms, \(hops) hop\(hops == 1 ? "" : "s")"
            case let .favorited(by, nickname, on, _): line = "* \(nickname.map(DisplayText.clean) ?? by.description) \(on ? "favorited" : "unfavorited") you"
            case .pinned: return // kept by applications with a store; nothing for a person here
            case .capabilities: return // in --json; a person asks chat's /who
            case let .sentOffMesh(id, to, via): line = "* \(id) sent to \(to) via \(via)"
            case let .notice(text): line = "* \(text)"
            }
        }
        // Unbuffered, so that a reader of a pipe sees each event at once.
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

struct Listen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Join the mesh (UDP; Bluetooth LE with --ble) and print what arrives (relaying for others meanwhile).",
        discussion: "With no flags it finds the other starling processes on this machine over loopback."
    )
    @OptionGroup var node: NodeOptions
    @Flag(help: "One JSON object per line.") var json = false
    @Option(help: "Stop after this many seconds (default: run until interrupted).") var duration: Double?
    @Option(help: "A Ya OK relay server (HOST:PORT): register, and take what it holds for us.") var relay: String?
    @Flag(help: "Poll the relay every 5 minutes instead of every 30 s (a device in the background).") var background = false

    func run() async throws {
        let (n, nostr) = try await node.makeNodeWithNostr()
        let printer = EventPrinter(json: json)
        let deadline = duration.map { UInt64(Date().timeIntervalSince1970 * 1000) + UInt64($0 * 1000) }
        var relayClient: RelayClient?
        if let relay {
            relayClient = try await RelayInbox.start(relay: relay, node: n, dataDir: node.dataDir, json: json, background: background)
        }
        // Interrupted: the node stops, and the relay hears BYE before we go.
        let signals = SignalWatch([SIGINT, SIGTERM]) { Task { await n.stop() } }
        defer { signals.cancel() }
        async let running: Void = n.run(until: deadline)
        for await event in n.events {
            await nostr.handle(event)
            printer.print(await nostr.named(event))
            // Displayed: the sender gets a read receipt.
            if case let .privateMessage(from, _, _, id, _, _) = event { try? await n.sendReadReceipt(id, to: from) }
        }
        await running
        await relayClient?.leave()
    }
}

struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Join the mesh, send one message (to everyone, or privately with --to), and leave."
    )
    @OptionGroup var node: NodeOptions
    @Argument(help: "The message.") var text: String
    @Option(help: "Send privately (end-to-end encrypted) to this nickname, and wait for its delivery.") var to: String?
    @Option(help: "A Ya OK relay server (HOST:PORT): a contact not on the mesh gets the message through it.") var relay: String?
    @Flag(help: "Send to everyone (the default without --to).") var `public` = false

    func validate() throws {
        if `public` && to != nil { throw ValidationError("--public and --to exclude each other") }
    }
    @Option(help: "Seconds to wait for a first peer (or the recipient) to appear; the default covers one announce interval.")
    var wait: Double?
    @Option(help: "Seconds to stay after sending, relaying meanwhile (with --to: the most to wait for the receipts, delivered then read).")
    var linger: Double?
    @Flag(help: "One JSON object per line.") var json = false

    /// A private message that was not delivered in time.
    struct NotDelivered: Error, CustomStringConvertible {
        var to: String
        var seconds: Double
        var description: String {
            "the message to \(to) was not delivered within \(format(seconds)) s (no delivered receipt); it may still arrive. Wait longer with --linger."
        }
    }

    static func format(_ s: Double) -> String { s == s.rounded() ? String(Int(s)) : String(s) }

    func run() async throws {
        let (n, nostr) = try await node.makeNodeWithNostr(tellsFavourites: false)
        let printer = EventPrinter(json: json)
        // A mutual favourite known over Nostr is looked for on the mesh first, briefly.
        var offMesh: NostrContact?
        if node.nostr.nostr, let to { offMesh = await nostr.contact(named: to) }
        let wait = offMesh != nil ? min(self.wait ?? 3, 3) : self.wait ?? (node.announceInterval + 2)
        let linger = self.linger ?? (to == nil ? 1 : 10)
        let start = Date()
        // A Ya OK contact: the mesh first, then the relay, then the store's queue.
        if let to, let relayText = relay {
            guard let relayAddress = UDPAddress(relayText) else { throw ValidationError("--relay \(relayText): expected HOST:PORT with an IPv4 host") }
            let directory = IdentityStore(directory: DataDirectory(explicit: node.dataDir))
            let store = try StoreAccess.open(directory: directory.directory.url, identity: n.identity)
            let (_, card) = try resolve(to, in: store)
            let deadline = UInt64(start.timeIntervalSince1970 * 1000) + UInt64((wait + linger + 5) * 1000)
            let runner = Task { await n.run(until: deadline) }
            let delivered = Delivered()
            let events = Task { for await event in n.events { if case let .delivered(id, _) = event { await delivered.add(id) } } }
            let delivery = ContactDelivery(node: n, store: store, userID: try directory.userID(), relay: relayAddress, json: json,
                                           isDelivered: { await delivered.contains($0) })
            let outcome = try await delivery.send(text, to: card, meshWait: min(wait, node.announceInterval + 1), linger: linger, wait: wait)
            await n.leave()
            await runner.value
            events.cancel()
            if case .kept = outcome { throw ExitCode(1) }
            return
        }
        let deadline = UInt64(start.timeIntervalSince1970 * 1000) + UInt64((wait + linger + 1) * 1000)
        let runner = Task { await n.run(until: deadline) }
        let delivered = Delivered(), read = Delivered()
        let quiet = !json
        let events = Task {
            for await event in n.events {
                if case let .delivered(id, _) = event { await delivered.add(id) }
                if case let .read(id, _) = event { await read.add(id) }
                await nostr.handle(event)
                // A one-shot sender prints what concerns it, not the mesh's comings and goings.
                if quiet { switch event { case .peer, .left, .linkUp, .linkDown, .message, .state, .stateExpired: continue; default: break } }
                printer.print(event)
            }
        }
        // Wait for a peer's announce (or the recipient's), so that the message has somewhere to go.
        func ready() async -> Bool {
            if let to { return await n.peer(named: to) != nil }
            return await !n.knownPeers.isEmpty
        }
        while await !ready(), Date().timeIntervalSince(start) < wait {
            try await Task.sleep(for: .milliseconds(20))
        }
        guard await ready() || offMesh != nil else {
            await n.stop()
            await runner.value
            let hint = " (announces come every \(Self.format(node.announceInterval)) s; try --wait \(Self.format(wait * 2)))"
            throw ValidationError((to.map { "\($0) not found within \(Self.format(wait)) s" } ?? "no peer found within \(Self.format(wait)) s") + hint)
        }
        // Give our own announce a moment to cross the mesh, so receivers know our name.
        try await Task.sleep(for: .milliseconds(300))
        var messageID: String?
        if let to, let recipient = await n.peer(named: to) {
            messageID = try await n.sendPrivate(text, to: recipient)
        } else if let offMesh {
            messageID = try await n.sendPrivate(text, to: offMesh.fingerprint.peerID) // not on the mesh: over Nostr
        } else {
            try await n.sendPublic(text)
        }
        if json {
            var object: [String: Any] = ["event": "sent", "text": text]
            if let messageID { object["messageID"] = messageID }
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        }
        if let messageID {
            // Until it is delivered and read, or the linger ends: the read receipt
            // follows the delivered one, and a sender that left first would miss it.
            let until = Date().addingTimeInterval(linger)
            while Date() < until {
                let wasDelivered = await delivered.contains(messageID), wasRead = await read.contains(messageID)
                if wasDelivered && wasRead { break }
                try await Task.sleep(for: .milliseconds(20))
            }
        } else {
            try await Task.sleep(for: .milliseconds(Int(linger * 1000)))
        }
        // Leave quietly: a signed LEAVE, so that nobody's chat shows us lingering.
        await n.leave()
        await runner.value
        events.cancel()
        if let messageID, let to, await !delivered.contains(messageID) {
            throw NotDelivered(to: to, seconds: linger)
        }
    }

    actor Delivered {
        var ids: Set<String> = []
        func add(_ id: String) { ids.insert(id) }
        func contains(_ id: String) -> Bool { ids.contains(id) }
    }
}
