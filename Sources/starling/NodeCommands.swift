import ArgumentParser
import StarlingYaOKClient
import StarlingMessenger
import StarlingMessengerCore
import StarlingMessengerAPI
import StarlingYaOK
import StarlingStore
import Foundation
import StarlingAPIContract
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
    @Option(help: ArgumentHelp("Also leave courier drops at this Ya OK server's courier mailbox (UDP, over the LAN in a blackout), and fetch those for us and the peers one hop away to hand over.",
                               valueName: "HOST:PORT"))
    var courierMailbox: String?
    @Flag(inversion: .prefixedNo,
          help: "Carry files too large for the mesh over the local network (TCP, sealed end to end; the port is open only while an offer waits), and take them: announced as wifiBulk. On unless --no-bulk.")
    var bulk = true
    @Option(help: "Large files: the address to listen on (default: every address; 127.0.0.1 keeps it on this machine).") var bulkHost = "0.0.0.0"
    @Option(help: "Large files: the TCP port (default: any free one).") var bulkPort = 0
    @Option(help: "Large files: take files up to this many MiB without asking; chat and the daemon ask about larger ones, listen declines them.") var acceptUpTo = 1024
    @Option(help: "Large files: send at most this many MiB a second (default: as fast as the network takes).") var bulkRate: Double?

    /// The shapes of the options, before anything is opened or bound.
    func validate() throws {
        for p in peer where UDPAddress(p).map({ $0.ipv6 != nil }) ?? true { throw ValidationError("--peer \(p): expected HOST:PORT with an IPv4 host (the mesh's links are IPv4)") }
        if let powerMode, PowerMode(name: powerMode) == nil {
            throw ValidationError("--power-mode \(powerMode): one of \(PowerMode.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        for hex in favorite where Fingerprint(hex: hex.lowercased()) == nil {
            throw ValidationError("--favorite \(hex): expected 64 hex digits")
        }
        if let courierMailbox, UDPAddress.hostAndPort(courierMailbox) == nil {
            throw ValidationError("--courier-mailbox \(courierMailbox): \(UDPAddress.expected)")
        }
        if !(0...65_535).contains(bulkPort) { throw ValidationError("--bulk-port \(bulkPort): 0 … 65535") }
        if acceptUpTo < 0 { throw ValidationError("--accept-up-to \(acceptUpTo): a number of MiB, 0 or more") }
        if let bulkRate, !(bulkRate > 0) { throw ValidationError("--bulk-rate \(bulkRate): a number of MiB a second, more than 0") }
    }

    func makeNode(configure: (inout MeshNode.Options, Identity) throws -> Void = { _, _ in }) throws -> MeshNode {
        let (_, identity, options) = try nodeParts(configure: configure)
        return try MeshNode(identity: identity, options: options)
    }

    /// The data directory (locked for this process), its identity, and the node's options these flags make.
    func nodeParts(configure: (inout MeshNode.Options, Identity) throws -> Void = { _, _ in }) throws -> (IdentityStore, Identity, MeshNode.Options) {
        keepFreedMemoryInTheHeap()
        let store = IdentityStore(directory: DataDirectory(explicit: dataDir))
        store.tightenPermissions()
        try UserError.writableDirectory(store.directory)
        do {
            runningNodeLock = try DirectoryLock(store.directory)
        } catch let held as DirectoryLock.Held {
            if FileManager.default.fileExists(atPath: store.directory.url.appendingPathComponent("api.json").path) {
                throw RuntimeFailure("a starling daemon (pid \(held.pid.map(String.init) ?? "?")) runs for \(held.path): chat, send, listen and status go through it; this command runs a node of its own, so stop the daemon first")
            }
            throw RuntimeFailure(held.description)
        }
        let (identity, _) = try store.loadOrCreate(passphrase: try Passphrase.forStoredKey(store))
        if let name { try store.setNickname(name) }
        var options = MeshNode.Options(nickname: store.nickname(or: identity))
        var udp = UDPTransport.Options()
        udp.port = port
        udp.discovery = !noDiscovery
        udp.lan = lan
        udp.peers = try peer.map {
            guard let a = UDPAddress($0), a.ipv6 == nil else { throw ValidationError("--peer \($0): expected HOST:PORT with an IPv4 host (the mesh's links are IPv4)") }
            return a
        }
        options.udp = udp
        if let relayJitter { options.core.policy = FloodingPolicy(jitter: relayJitter) }
        options.core.announceInterval = UInt64(announceInterval * 1000)
        options.downloads = store.directory.url.appendingPathComponent("files/incoming", isDirectory: true)
        options.boardFile = store.directory.url.appendingPathComponent("board")
        options.bridgeMemoryFile = store.directory.url.appendingPathComponent("bridge")
        // Our one-time prekeys (0600): others seal courier drops to them while we are away.
        options.core.publishesPrekeys = true
        options.prekeyFile = store.directory.url.appendingPathComponent("prekeys")
        if bulk {
            var b = MeshNode.BulkOptions()
            b.host = bulkHost
            b.port = bulkPort
            b.acceptUpTo = UInt64(acceptUpTo) << 20
            if let bulkRate { b.pace = .microseconds(Int64(1_000_000 / (bulkRate * 16))) } // 16 chunks of 64 KiB a MiB
            b.keptOffers = store.directory.url.appendingPathComponent("files/offered", isDirectory: true)
            options.bulk = b
        }
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
        return (store, identity, options)
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

/// Whom a peer ID or a conversation names, for lines of words: the messenger
/// in process, or a daemon's.
protocol EventNames: Sendable {
    func displayName(ofPeer peer: PeerID) async -> String
    func name(of conversation: UserID) async -> String
}

extension Messenger: EventNames {}

/// What a face says of one of our messages as it moves (chat on its line or a
/// line of its own, `listen` for what a one-shot `send` kept): a key (each said
/// once), the full screen's mark, and the words after "to NAME:". nil: nothing
/// at this state. `server`: the Ya OK server's route name, when there is one.
enum ProgressWords {
    static func of(_ record: MessageRecord, server: String?) -> (key: String, mark: String, words: String)? {
        guard let state = record.progress?.state else { return nil }
        switch state {
        case .sending:
            return record.route == .mesh ? ("mesh", "✓", "sent") : nil
        case .sent:
            guard let via = record.route, via != .mesh else { return nil }
            return via.name == server ? ("sent", "✓ queued at \(via)", "queued at \(via)") : ("sent", "→ \(via)", "sent via \(via)")
        case .delivered:
            return ("delivered", "✓✓", "delivered")
        case .read:
            return ("read", "✓✓ read", "read")
        case .retrying:
            return record.transport == nil ? ("waiting", "↻ kept: sent when they are back", "not delivered yet; kept and sent when they are back")
                : ("held", "↻ held until they are back", "held until they are back")
        case .failed:
            return ("failed", "✗ not delivered", "failed (not delivered)")
        case .composing, .encrypting, .routing:
            return nil
        }
    }
}

/// What `listen` says of our own messages that go while it runs (those a
/// one-shot `send` kept, "sent again later (… `listen --server`)"): that they
/// go, then each way and receipt once (1,024 remembered). The terminal shows
/// these on the message's line; `--json` carries them as the API's events.
struct OwnMessageLines {
    private var said: Set<String> = []
    private var order: [String] = []

    mutating func line(_ event: MessengerEvent, names: any EventNames) async -> String? {
        switch event {
        case let .sendingWaiting(conversation, count):
            return "* sending \(count) waiting message\(count == 1 ? "" : "s") to \(DisplayText.clean(await names.name(of: conversation)))"
        case let .progress(conversation, record):
            // Its way and receipts, in chat's words; not what it waits for (listen sends nothing of its own).
            guard record.outgoing, let id = record.transportID, let state = record.progress?.state, state >= .sent || state == .failed,
                  let w = ProgressWords.of(record, server: MessageRoute.yaokServer.name) else { return nil }
            let what = w.words
            guard said.insert(id + " " + w.key).inserted else { return nil }
            order.append(id + " " + w.key)
            if order.count > 1_024 { said.remove(order.removeFirst()) }
            let text = DisplayText.clean(record.text)
            let quoted = text.count > 40 ? String(text.prefix(39)) + "…" : text
            return "  · to \(DisplayText.clean(await names.name(of: conversation))): \(what) (“\(quoted)”)"
        default:
            return nil
        }
    }
}

/// A daemon's names, through its API (an ID when it does not answer).
struct DaemonNames: EventNames {
    let client: APIMessengerClient
    func displayName(ofPeer peer: PeerID) async -> String {
        if let name = try? await client.identity(ofPeer: peer)?.name { return name }
        return (try? await client.peers().first { $0.id == peer }?.nickname) ?? peer.description
    }
    func name(of conversation: UserID) async -> String { (try? await client.conversation(conversation).name) ?? conversation.description }
}

/// Prints events, as words or one JSON object per line (the API's events).
struct EventPrinter: Sendable {
    var json: Bool

    /// One event as a line of JSON, as the API writes it (nil: the messenger's own event stands for it).
    static func json(_ event: MeshNode.Event) -> String? {
        APIEvent(event).flatMap { try? $0.json() }.map { String(decoding: $0, as: UTF8.self) }
    }

    /// A line of text, unbuffered.
    func say(_ line: String) {
        StandardOutput.write(Data((line + "\n").utf8))
    }

    /// One of `send`'s own lines (docs/API.md).
    func write(_ line: APISendLine) {
        guard let data = try? APIJSONCoding.data(line) else { return } // plain values: never fails
        StandardOutput.write(data + Data("\n".utf8))
    }

    /// API events as lines of JSON (every face writes the same: docs/API.md).
    func write(_ events: [APIEvent]) {
        for e in events {
            guard let data = try? e.json() else { continue } // plain values: never fails
            StandardOutput.write(data + Data("\n".utf8))
        }
    }

    /// A messenger event: with --json, the API's events for it (the same
    /// objects a daemon's stream carries); else a line of words, for the
    /// events a person follows. `names` says whom a peer ID or a conversation is.
    func print(_ event: MessengerEvent, names: any EventNames) async {
        if json { return write(APIEvent.of(event)) }
        switch event {
        case let .node(e): print(e)
        case let .privateMessage(_, record, from, name, _, via, _):
            say("<\(DisplayText.clean(name.isEmpty ? from.description : name)) → you>\(via.map { " (via \($0))" } ?? "") \(Self.lines(record.text))")
        case let .peerJoined(peer, nickname, hops): print(.peer(peer, nickname: nickname, hops: hops))
        case let .peerLeft(peer): say("* \(DisplayText.clean(await names.displayName(ofPeer: peer))) (\(peer)) left")
        case let .sessionEstablished(peer, _, f): print(.sessionEstablished(peer, fingerprint: f.hex))
        case let .favorited(by, name, on, npub, _): print(.favorited(by: by, nickname: name, on: on, npub: npub))
        case let .warning(text), let .notSaved(text): say("! \(text)")
        case .diagnostic: return
        case let .publicHistory(burst):
            for e in burst { print(e) } // oldest first, as the chat shows it
        case let .dropDeposited(conversation, _, couriers):
            let name = DisplayText.clean(await names.name(of: conversation))
            say("* \(name) is away: your message went as a courier drop to \(couriers) neighbour\(couriers == 1 ? "" : "s"), "
                + "who hand it on if they meet \(name) within 24 h; it waits here too, and goes directly when \(name) is here")
        case let .request(r):
            guard let m = r.messages.last else { return }
            say("* \(r.npub) (not a contact) writes over Nostr: \(DisplayText.clean(m.text)) "
                + "(`starling contact add \(r.npub) --name NAME`, or /accept in `starling chat`)")
        case let .channel(c):
            // A location channel `--channel` follows over Nostr.
            if case let .message(m) = c {
                say(ChannelText.line(geohash: m.geohash, nickname: m.nickname, publicKey: m.publicKey, text: m.text))
            } else if case let .failed(why) = c {
                say("! #\(why)")
            }
        case let .storeLocked(reason): say("* \(reason): the store is closed (messages still arrive and wait)")
        case .trustLoaded, .storeUnlocked, .sent, .sendingWaiting, .trustChanged, .progress:
            return
        }
    }

    /// Text from the network as lines a person reads: each cleaned of controls,
    /// the lines after the first marked, so that a line break cannot pass for
    /// another message.
    static func lines(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { DisplayText.clean(String($0)) }.joined(separator: "\n    ┆ ")
    }

    /// A board post as a person reads it: "[board] <alice> water at gate 2 (urgent)".
    /// `[board] <alice> TEXT`, or `<alice? 03a107bf>` when the post's key is
    /// no peer's this node knows (its nickname is only a claim).
    static func boardLine(_ entry: BoardEntry) -> String {
        let post = entry.post
        return "[board\(post.geohash.isEmpty ? "" : " #\(post.geohash)")] <\(entry.shownName)>\(entry.crossed ? " (across a bridge)" : "") "
            + Self.lines(post.content) + (post.isUrgent ? " (urgent)" : "")
    }

    /// `#u4pruy <alice? 1b84c556> (via a gateway) TEXT`: the channel, the name the
    /// event claims with its key's first digits (a Nostr key, not a mesh peer).
    static func gatewayLine(_ m: GatewayMessage) -> String {
        "#\(DisplayText.clean(m.geohash)) <\(DisplayText.clean(m.nickname ?? "anon"))? \(m.pubkey.prefix(8))> (via a gateway) " + Self.lines(m.text)
    }

    /// `<alice? 1b84c556> (across a bridge) TEXT`: a public message from another
    /// mesh, the name its event claims with its key's first digits (a Nostr
    /// key, not a mesh peer).
    static func bridgedLine(_ m: BridgedMessage) -> String {
        "<\(DisplayText.clean(m.nickname ?? "anon"))? \(m.pubkey.prefix(8))> (across a bridge) " + Self.lines(m.text)
    }

    /// `[trail crew] <bob> TEXT`: the group's name, the sender as its roster names them.
    static func groupLine(_ m: GroupMessage) -> String {
        "[\(DisplayText.clean(m.group.name))] <\(DisplayText.clean(m.nickname))>\(m.history ? " (history)" : "") " + Self.lines(m.text)
    }

    func print(_ event: MeshNode.Event) {
        let line: String
        if json {
            guard let written = Self.json(event) else { return }
            line = written
        } else {
            switch event {
            case let .started(port, peerID, nickname): line = "* \(nickname) (\(peerID))" + (port.map { " on 127.0.0.1:\($0)" } ?? "")
            case let .linkUp(a): line = "* link up: \(a)"
            case let .linkDown(a): line = "* link down: \(a)"
            case let .peer(id, nickname, hops): line = "* \(DisplayText.clean(nickname)) (\(id)) is here, \(hops) hop\(hops == 1 ? "" : "s") away"
            case let .message(from, nickname, text, hops, _, history):
                line = "<\(nickname.map(DisplayText.clean) ?? from.description)>\(history ? " (history)" : hops > 1 ? " (via \(hops - 1) relay\(hops == 2 ? "" : "s"))" : "") \(Self.lines(text))"
            case let .privateMessage(from, nickname, text, _, _, via): line = "<\(nickname.map(DisplayText.clean) ?? from.description) → you>\(via.map { " (via \($0))" } ?? "") \(Self.lines(text))"
            case let .dropOpened(from, _, _, nickname, text, _, _): line = "<\(nickname.map(DisplayText.clean) ?? from.description) → you> (via courier) \(Self.lines(text))"
            case let .dropDeposited(id, to, couriers):
                line = couriers == 0 ? "* message \(id) to \(to) waits: no neighbour here to carry it"
                    : "* message \(id) to \(to) left with \(couriers) courier\(couriers == 1 ? "" : "s") (a courier drop: handed on if they meet them within 24 h)"
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
            case let .fileSent(id, to, 0): line = "* file \(id.prefix(16))… offered to \(to) over the network"
            case let .fileSent(id, to, fragments): line = "* file \(id.prefix(16))… sent to \(to) in \(fragments) fragment\(fragments == 1 ? "" : "s")"
            case let .fileSending(id, to, sent, total): line = "* file \(id.prefix(16))… on \(to)'s disk: \(sent)/\(total) bytes"
            case let .fileOffered(from, id, name, size, _): line = "* \(from) offers \(name) (\(size) bytes), transfer \(id)"
            case let .fileReceived(from, name, size, path, _): line = "* file \(name) (\(size) bytes) from \(from) saved to \(path)"
            case let .rejected(why): line = "! \(why)"
            case let .pong(from, rtt, hops): line = "* pong from \(from): \(rtt) ms, \(hops) hop\(hops == 1 ? "" : "s")"
            case let .favorited(by, nickname, on, _): line = "* \(nickname.map(DisplayText.clean) ?? by.description) \(on ? "favorited" : "unfavorited") you"
            case .pinned: return // kept by applications with a store; nothing for a person here
            case .capabilities: return // in --json; a person asks chat's /who
            case let .sentOffMesh(id, to, via): line = "* \(id) sent to \(to) via \(via)"
            case let .notice(text): line = "* \(text)"
            case let .boardPost(post, _, _): line = Self.boardLine(post)
            case .boardPostDeleted: line = "* a board post was deleted by its author"
            case let .groupMessage(m): line = Self.groupLine(m)
            case let .gatewayMessage(m): line = Self.gatewayLine(m)
            case let .bridgedMessage(m): line = Self.bridgedLine(m)
            case .recognized, .vouched: line = "* " + (event.sentence ?? "")
            case .groupChanged: line = "* " + (event.sentence ?? "")
            case let .voiceNote(from, path, ms, isPrivate, _, _):
                line = "* voice from \(from)\(isPrivate ? " (private)" : "") (\(ChatScreen.seconds(ms))): \(path)"
            }
        }
        // Unbuffered, so that a reader of a pipe sees each event at once.
        StandardOutput.write(Data((line + "\n").utf8))
    }
}

struct Listen: AsyncParsableCommand, ServerAlias {
    static let configuration = CommandConfiguration(
        abstract: "Join the mesh (UDP; Bluetooth LE with --ble) and print what arrives (relaying for others meanwhile).",
        discussion: """
        With no flags it finds the other starling processes on this machine over loopback. Private \
        messages are acknowledged as delivered; a read receipt goes only with --mark-read (a program \
        that shows them to a person says so), or when they are printed on a terminal.
        """
    )
    @OptionGroup var node: NodeOptions
    @Flag(help: "One JSON object per line.") var json = false
    @Option(help: "Stop after this many seconds (default: run until interrupted).") var duration: Double?
    @Option(name: .customLong("server"), help: "A Ya OK server (HOST:PORT, or several separated by commas, tried in turn; `starling yaok-server`): register, and take what it holds for us.")
    var server: String?
    /// The old name of --server, kept for scripts: it works, and says the new one.
    @Option(name: .customLong("relay"), help: .private) var relayAlias: String?
    @Flag(help: "Poll the Ya OK server every 5 minutes instead of every 30 s (a device in the background).") var background = false
    @Flag(help: "Send read receipts for private messages as they are printed (the reader is a person).") var markRead = false
    @Option(name: .customLong("channel"), parsing: .singleValue,
            help: ArgumentHelp("Print the location channel GEOHASH too (repeatable): over Nostr with --nostr, else as a gateway on the mesh carries it.",
                               valueName: "GEOHASH"))
    var channels: [String] = []

    mutating func validate() throws {
        takeRelayAlias()
        if let server, UDPAddress.hostList(server) == nil { throw ValidationError("--server \(server): \(UDPAddress.expected), or several separated by commas") }
        for g in channels where !NostrCarrier.isValidGeohash(g.lowercased()) {
            throw ValidationError("--channel \(g): a geohash of 1 to 12 characters of 0123456789bcdefghjkmnpqrstuvwxyz")
        }
    }

    func run() async throws {
        // A daemon runs for this data directory: its events, through its API.
        if let api = await APIClient.find(directory: DataDirectory(explicit: node.dataDir).url) { return try await listenThrough(api) }
        let session = try await NodeSession.start(node, server: server, background: background)
        let n = session.node, messenger = session.messenger
        for g in channels {
            do { _ = try await messenger.join(channel: g) } catch { throw RuntimeFailure("--channel \(g): \(error)") }
        }
        let printer = EventPrinter(json: json)
        let seen = markRead || (!json && isatty(STDOUT_FILENO) == 1)
        let deadline = duration.map { UInt64(Date().timeIntervalSince1970 * 1000) + UInt64($0 * 1000) }
        // Interrupted: a signed LEAVE (the others see us go at once, not when our
        // announce ages out), the node stops, and the relay hears BYE before we go.
        let signals = SignalWatch([SIGINT, SIGTERM]) { Task { await n.leave() } }
        defer { signals.cancel() }
        async let running: Void = n.run(until: deadline)
        let taking = Task { await messenger.run() }
        var own = OwnMessageLines()
        for await event in messenger.events {
            await printer.print(event, names: messenger)
            if !json, let line = await own.line(event, names: messenger) { printer.say(line) }
            // Read as printed: this message's receipt, not those of messages an earlier run printed unmarked.
            if seen, case let .privateMessage(conversation, record, _, _, _, _, _) = event { await messenger.markSeen(conversation, only: record.id) }
        }
        await running
        await taking.value
    }
}

struct Send: AsyncParsableCommand, ServerAlias {
    static let configuration = CommandConfiguration(
        abstract: "Join the mesh, send one message (to everyone, or privately with --to), and leave."
    )
    @OptionGroup var node: NodeOptions
    @Argument(help: "The message.") var text: String?
    @Option(help: "Send privately (end-to-end encrypted) to this nickname, and wait for its delivery.") var to: String?
    @Option(help: "Send this file to --to instead of a message: over the mesh when it fits (1 MiB), else over the local network (unless either side has --no-bulk).")
    var file: String?
    @Option(name: .customLong("server"), help: "A Ya OK server (HOST:PORT, or several separated by commas, tried in turn; `starling yaok-server`): a contact not on the mesh gets the message through it.")
    var server: String?
    /// The old name of --server, kept for scripts: it works, and says the new one.
    @Option(name: .customLong("relay"), help: .private) var relayAlias: String?
    @Flag(help: "Send to everyone (the default without --to).") var `public` = false
    @Flag(help: "Post the message on the mesh's board (signed, kept by every node and synced to newcomers) instead.") var board = false
    @Option(name: .customLong("to-group"),
            help: "Send to a private group this data directory belongs to (its name, or its ID's first digits; `starling chat`'s /group makes one).")
    var toGroup: String?
    @Flag(help: "With --board: mark the post urgent (shown first).") var urgent = false
    @Option(help: "With --board: days the post lives, 1 to 7.") var days: Int = 1

    mutating func validate() throws {
        takeRelayAlias()
        if `public` && to != nil { throw ValidationError("--public and --to exclude each other") }
        if board && (to != nil || file != nil || `public`) { throw ValidationError("--board posts to everyone: not with --to, --file or --public") }
        if toGroup != nil && (to != nil || file != nil || `public` || board) {
            throw ValidationError("--to-group sends to a group's members: not with --to, --file, --public or --board")
        }
        if (urgent || days != 1) && !board { throw ValidationError("--urgent and --days go with --board") }
        if !(1...7).contains(days) { throw ValidationError("--days \(days): a board post lives 1 to 7 days") }
        if file != nil {
            if text != nil { throw ValidationError("a message or --file, not both") }
            if to == nil { throw ValidationError("--file needs --to NICK: files go to one person") }
        } else if text == nil {
            throw ValidationError("Missing expected argument '<text>' (or --file FILE)")
        }
        if let server, UDPAddress.hostList(server) == nil { throw ValidationError("--server \(server): \(UDPAddress.expected), or several separated by commas") }
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

    /// How long a one-shot send waits for a read receipt once its message is delivered.
    static let readGrace = 3.0

    /// What a one-shot `send` prints: its own message's way and receipts, and
    /// what went wrong. Nothing the mesh replays (issue 52: three replayed
    /// public messages and board posts came before the sending).
    /// (Its own message's records, `sent` and `progress`, it says as the receipts they stand for.)
    static func concernsASend(_ event: MessengerEvent) -> Bool {
        switch event {
        case .dropDeposited, .sendingWaiting, .warning, .notSaved, .storeUnlocked: return true
        case let .node(e):
            switch e {
            case .started, .delivered, .sentOffMesh, .failed, .held, .read, .dropDeposited, .notice, .fileSent, .fileSending: return true
            case let .rejected(r): return r.kind == .fileRefused || r.kind == .transport
            default: return false
            }
        default: return false
        }
    }

    func run() async throws {
        // A daemon runs for this data directory: through its API (it is the node).
        if let api = await APIClient.find(directory: DataDirectory(explicit: node.dataDir).url) { return try await sendThrough(api) }
        if let file, let to { return try await sendFile(file, to: to) }
        if let toGroup { return try await sendToGroup(toGroup) }
        let text = self.text ?? ""
        let session = try await NodeSession.start(node, server: server, tellsFavourites: false)
        let n = session.node, messenger = session.messenger
        let printer = EventPrinter(json: json)
        let linger = self.linger ?? (to == nil ? 1 : 10)
        let start = Date()
        // Who --to means: a Ya OK contact, a mutual favourite known over Nostr, or a peer to wait for.
        var contact: ContactCard?
        var overNostr: Fingerprint?
        if let to {
            let named = await messenger.contacts.compactMap(\.card).filter { $0.displayName.lowercased() == to.lowercased() }
            if named.count > 1 { throw RuntimeFailure("\(named.count) contacts are called \(to): `starling contact list` shows them") }
            contact = named.first
            if contact == nil, node.nostr.nostr {
                overNostr = await messenger.trust.filter { $0.value.npub != nil && $0.value.favorite && $0.value.nickname == to }
                    .keys.min()
            }
        }
        let offMesh = contact != nil || overNostr != nil
        let wait = overNostr != nil ? min(self.wait ?? 3, 3) : self.wait ?? (node.announceInterval + 2)
        let deadline = UInt64(start.timeIntervalSince1970 * 1000) + UInt64((wait + linger + 1) * 1000)
        let runner = Task { await n.run(until: deadline) }
        let taking = Task { await messenger.run() }
        let watch = Watch()
        // To a contact, in words, `report` says the way and the receipts by name ("queued at the
        // Ya OK server … for bob", "delivered to bob"): the node's lines would say them again by ID.
        let reported = contact != nil && !json
        let events = Task {
            for await event in messenger.events {
                if case let .dropDeposited(_, record, couriers) = event, let id = record.transportID { await watch.deposit(id, couriers) }
                if case let .progress(conversation, record) = event, let id = record.transportID, let state = record.progress?.state {
                    await watch.moved(id, state, via: record.transport)
                    // Our message's way and receipts, as the node events they stand for (JSON, and words to a peer).
                    if !reported, let peer = await messenger.peer(of: conversation) {
                        for e in await watch.newly(id, state, via: record.transport, peer: peer) { printer.print(e) }
                    }
                }
                // A one-shot sender prints what it did, never what the mesh replays to it
                // (others' messages, board posts, comings and goings).
                guard Self.concernsASend(event) else { continue }
                await printer.print(event, names: messenger)
            }
        }
        let outcomes = Task {
            guard let server = session.server else { return }
            for await o in server.outcomes { await watch.server(o) }
        }
        defer { events.cancel(); outcomes.cancel() }
        // Wait for the recipient (or any peer), so that the message has somewhere to go.
        func ready() async -> Bool {
            if let contact { return await n.peers.contains { $0.value.fingerprint == contact.meshFingerprint } }
            if let to { return await Self.peer(named: to, on: n) != nil }
            return await !n.knownPeers.isEmpty
        }
        let meshWait = contact != nil ? min(wait, node.announceInterval + 1) : wait
        while await !ready(), Date().timeIntervalSince(start) < meshWait {
            try await Task.sleep(for: .milliseconds(20))
        }
        if let contact, await !ready(), let server = session.server {
            // Not on the mesh: the Ya OK server, once it has registered us.
            while await !server.client.isRegistered, Date().timeIntervalSince(start) < wait {
                try await Task.sleep(for: .milliseconds(20))
            }
            _ = contact
        }
        // Not here after the wait: someone this store talked with, whose Noise key it
        // kept, gets the message as a courier drop with the neighbours here.
        var away: UserID?
        if let to, contact == nil, overNostr == nil, await Self.peer(named: to, on: n) == nil,
           case let .conversation(id) = await messenger.resolve(to), await messenger.noiseKey(of: id) != nil,
           await n.peers.contains(where: { $0.value.hops == 1 }) {
            away = id
        }
        guard await ready() || offMesh || away != nil else {
            var why: String?
            if let to { why = await Self.notOne(to, on: n, within: wait) }
            await n.stop()
            await runner.value
            let hint = " (announces come every \(Self.format(node.announceInterval)) s; try --wait \(Self.format(wait * 2)))"
            if let why { throw RuntimeFailure(why + hint) }
            throw RuntimeFailure("no peer found within \(Self.format(wait)) s" + hint)
        }
        // Give our own announce a moment to cross the mesh, so receivers know our name.
        if await ready() || away != nil { try await Task.sleep(for: .milliseconds(300)) }
        var sent: MessageRecord?
        var recipient: PeerID?
        if let contact {
            sent = try await messenger.send(text, to: contact.userID)
            recipient = await n.peers.first { $0.value.fingerprint == contact.meshFingerprint }?.key ?? contact.meshFingerprint.peerID
        } else if let to, let peer = await Self.peer(named: to, on: n), let c = await messenger.conversation(withPeer: peer) {
            sent = try await messenger.send(text, to: c)
            recipient = peer
        } else if let away {
            sent = try await messenger.send(text, to: away) // queued, and left with couriers
            recipient = await messenger.fingerprint(of: away)?.peerID
        } else if let overNostr {
            sent = try await messenger.send(text, to: await messenger.conversation(withKey: overNostr)) // not on the mesh: over Nostr
            recipient = overNostr.peerID
        } else if board {
            let post: BoardPost
            do { post = try await n.postToBoard(text, urgent: urgent, lifetime: UInt64(days) * 86_400_000) } catch {
                throw RuntimeFailure("not posted: \(error)")
            }
            if json {
                printer.write(APISendLine(event: "sent", text: post.content, board: true, postID: post.postID.hexString))
            } else {
                print("* posted on the board for \(days) day\(days == 1 ? "" : "s"): \(post.content)")
            }
        } else {
            try await n.sendPublic(text)
        }
        let messageID = sent?.transportID
        if json, contact == nil, !board {
            printer.write(APISendLine(event: "sent", text: text, messageID: messageID))
        }
        var outcome: Watch.Outcome?
        var serverSaid: Watch.Outcome?
        if let messageID, let recipient {
            // Until it is delivered and read (or queued at the server), or the linger ends: the
            // read receipt follows the delivered one, and a sender that left first would miss it.
            // An explicit --linger is the time to wait for the receipts, past QUEUED (issue 52: `send
            // --server --linger 6` left at QUEUED); without it a contact's message ends at the server's word.
            let lingers = self.linger != nil
            let until = Date().addingTimeInterval(contact != nil && sent?.route != .mesh && !lingers ? max(linger, wait) : linger)
            var deliveredAt: Date?
            while Date() < until {
                outcome = await watch.outcome(messageID)
                if outcome == .read { break }
                if contact != nil, case .kept? = outcome { break }
                if contact != nil, !lingers, outcome != nil { break }
                // Delivered: the read receipt of someone looking comes at once; nobody is kept
                // waiting (and seeing us linger) for one that may never come.
                if outcome == .delivered, overNostr == nil {
                    if deliveredAt == nil { deliveredAt = Date() }
                    if let deliveredAt, Date().timeIntervalSince(deliveredAt) > Self.readGrace { break }
                }
                if away != nil, await watch.deposited[messageID] != nil { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            outcome = await watch.outcome(messageID)
            _ = recipient
            serverSaid = await watch.server[messageID]
        } else {
            try await Task.sleep(for: .milliseconds(Int(linger * 1000)))
        }
        // Leave quietly: a signed LEAVE, so that nobody's chat shows us lingering.
        await n.leave()
        await runner.value
        _ = await taking.value
        if let contact, let sent {
            try report(outcome, server: serverSaid, to: contact, id: sent.id.description, mailbox: session.server)
            return
        }
        if let messageID, let to, away != nil, await !watch.reached(messageID, .delivered) {
            guard await watch.deposited[messageID] != nil else {
                throw RuntimeFailure("\(to) is away and no neighbour took the courier drop; the message waits in this data directory's queue "
                                     + "and goes when \(to) is here (or when you send again among neighbours)")
            }
            return // left with couriers: said by its event
        }
        if let messageID, let to, await !watch.reached(messageID, .delivered) {
            throw NotDelivered(to: to, seconds: linger)
        }
    }

    /// `--to-group`: the group from the store, a first peer to hand it to (any
    /// node relays it; members read it), then the message, sealed for the group.
    func sendToGroup(_ name: String) async throws {
        let text = self.text ?? ""
        let session = try await NodeSession.start(node, server: nil, tellsFavourites: false)
        let n = session.node, messenger = session.messenger
        let client = LocalMessengerClient(messenger: messenger, identityStore: session.identityStore)
        let printer = EventPrinter(json: json)
        let start = Date()
        let wait = self.wait ?? (node.announceInterval + 2), linger = self.linger ?? 1
        let runner = Task { await n.run(until: UInt64(start.timeIntervalSince1970 * 1000) + UInt64((wait + linger + 2) * 1000)) }
        let taking = Task { await messenger.run() }
        let events = Task {
            for await event in messenger.events {
                switch event {
                case .node(.groupMessage), .node(.groupChanged), .notSaved, .warning: await printer.print(event, names: messenger)
                default: continue
                }
            }
        }
        defer { events.cancel() }
        func stop() async {
            await n.stop()
            await runner.value
        }
        let group: GroupSummary
        do { group = try GroupChoice.choose(name, among: try await client.groups()) } catch {
            await stop()
            let locked = await messenger.isStoreOpen ? "" : " (the store is locked: its groups are not known)"
            throw RuntimeFailure("\(error)\(locked)")
        }
        while await n.knownPeers.isEmpty, Date().timeIntervalSince(start) < wait { try await Task.sleep(for: .milliseconds(20)) }
        guard await !n.knownPeers.isEmpty else {
            await stop()
            throw RuntimeFailure("no peer found within \(Self.format(wait)) s to carry it (announces come every \(Self.format(node.announceInterval)) s; try --wait \(Self.format(wait * 2)))")
        }
        let record: MessageRecord
        do { record = try await client.sendToGroup(group.groupID, text: text) } catch {
            await stop()
            throw RuntimeFailure("not sent: \(error)")
        }
        if json {
            printer.write(APISendLine(event: "sent", text: text, messageID: record.transportID, group: group.name))
        } else {
            print("* sent to \(DisplayText.clean(group.name)) (\(group.members.count) members)")
        }
        try await Task.sleep(for: .milliseconds(Int(linger * 1000)))
        await n.leave()
        await runner.value
        _ = await taking.value
    }

    /// `--file`: waits for the recipient, sends the file (the mesh, or an offer
    /// over TCP), prints what becomes of it, and stays until it is saved at the
    /// other end (the sender serves it meanwhile), or the linger ends.
    func sendFile(_ path: String, to: String) async throws {
        let url = URL(fileURLWithPath: path)
        guard FileManager.default.isReadableFile(atPath: url.path) else { throw RuntimeFailure("cannot read \(path)") }
        let session = try await NodeSession.start(node, server: nil, tellsFavourites: false)
        let n = session.node, messenger = session.messenger
        let printer = EventPrinter(json: json)
        let start = Date()
        let wait = self.wait ?? (node.announceInterval + 2), linger = self.linger ?? 600
        let runner = Task { await n.run(until: UInt64(start.timeIntervalSince1970 * 1000) + UInt64((wait + linger + 5) * 1000)) }
        let taking = Task { await messenger.run() }
        // Ctrl-C: the node stops (an offer made is kept: the same command again resumes it).
        let signals = SignalWatch([SIGINT, SIGTERM]) {
            Task {
                await n.stop()
                StandardError.write(Data("! interrupted: \(url.lastPathComponent) is not sent yet; the same command again goes on from where the transfer is\n".utf8))
                Glibc.exit(130)
            }
        }
        defer { signals.cancel() }
        let done = Watch()
        let events = Task {
            for await event in messenger.events {
                switch event {
                case .peerJoined, .peerLeft, .node(.linkUp), .node(.linkDown), .node(.message), .node(.state), .node(.stateExpired), .diagnostic,
                     .sent, .progress: // (its own record: send says what it did in its own lines)
                    continue
                case let .node(.delivered(id, _)):
                    await done.moved(id, .delivered, via: nil)
                case let .node(.failed(id, _)):
                    await done.moved(id, .failed, via: nil)
                case .node(.rejected(let r)) where r.kind == .fileRefused:
                    await done.refuse(r.detail)
                default:
                    break
                }
                await printer.print(event, names: messenger)
            }
        }
        defer { events.cancel() }
        while await Send.peer(named: to, on: n) == nil, Date().timeIntervalSince(start) < wait { try await Task.sleep(for: .milliseconds(20)) }
        guard let peer = await Send.peer(named: to, on: n) else {
            let why = await Send.notOne(to, on: n, within: wait)
            await n.stop()
            await runner.value
            throw RuntimeFailure(why + " (announces come every \(Self.format(node.announceInterval)) s; try --wait \(Self.format(wait * 2)))")
        }
        try await Task.sleep(for: .milliseconds(300)) // our announce (and its wifiBulk) reaches them
        let id: String
        // Through the messenger, as every face sends a file: it keeps the file in the conversation's history.
        do { id = try await session.client.sendFile(at: url, to: peer) } catch {
            await n.stop()
            await runner.value
            throw RuntimeFailure("\(error)")
        }
        let resumed = await n.resumedTransfers.contains(id)
        if json {
            printer.write(APISendLine(event: "sent", file: url.lastPathComponent, transferID: id, resumed: resumed))
        } else if resumed {
            StandardOutput.write(Data("* resuming \(url.lastPathComponent) to \(to) (transfer \(id.prefix(16)), offered before: \(to) goes on from what it has)\n".utf8))
        } else {
            StandardOutput.write(Data("* sending \(url.lastPathComponent) to \(to) (transfer \(id.prefix(16)))\n".utf8))
        }
        let until = Date().addingTimeInterval(linger)
        while Date() < until, await done.outcome(id) == nil, await !done.failed(id), await done.refused == nil {
            try await Task.sleep(for: .milliseconds(50))
        }
        let outcome = await done.outcome(id)
        if outcome == nil, let why = await done.refused {
            await n.leave()
            await runner.value
            throw RuntimeFailure(why)
        }
        await n.leave()
        await runner.value
        _ = await taking.value
        guard outcome == .delivered else {
            throw RuntimeFailure(outcome == nil ? "\(url.lastPathComponent) was not saved by \(to) within \(Self.format(linger)) s; wait longer with --linger"
                                                : "\(url.lastPathComponent) to \(to) failed")
        }
        if !json { StandardOutput.write(Data("* \(to) saved \(url.lastPathComponent)\n".utf8)) }
    }

    /// What became of a message to a contact, said once; exit 1 when it is only kept.
    /// `outcome`: the furthest the message got; `said`: what the Ya OK server answered, when it was handed to it.
    func report(_ outcome: Watch.Outcome?, server said: Watch.Outcome?, to card: ContactCard, id: String, mailbox server: YaOKServerTransport?) throws {
        let name = DisplayText.clean(card.displayName)
        let printer = EventPrinter(json: json), peer = card.meshFingerprint.peerID.description
        func line(_ text: String, _ line: APISendLine) { if json { printer.write(line) } else { printer.say(text) } }
        func line(_ text: String, _ event: APIEvent) { if json { printer.write([event]) } else { printer.say(text) } }
        if case let .queued(online)? = said {
            line("* queued at the Ya OK server \(server?.shownAs ?? "") for \(name)" + (online ? " (online: sent on at once)" : " (they get it when they poll)"),
                 APISendLine(event: "queued", messageID: id, via: "yaok-server", online: online))
        }
        switch outcome {
        case .delivered?, .read?:
            line("* delivered to \(name)" + (said == nil ? " via the mesh" : ""), .delivered(.init(messageID: id, by: peer)))
            if outcome == .read { line("* read by \(name)", .read(.init(messageID: id, by: peer))) }
        case .queued?:
            break // said above
        case let .kept(why)?:
            line("! \(why); the message is kept and sent again later (`starling chat` or `listen --server`)", APISendLine(event: "kept", messageID: id, reason: why))
            throw ExitCode(1)
        case nil:
            let why = server == nil ? "\(name) is not on the mesh and no --server was given"
                                    : "the relay \(server!.shownAs) did not answer within \(Self.format(max(linger ?? 10, wait ?? 0))) s"
            line("! \(why); the message is kept and sent again later", APISendLine(event: "kept", messageID: id, reason: why))
            throw ExitCode(1)
        }
    }

    /// What the messenger and the server said of our message.
    actor Watch {
        enum Outcome: Equatable { case delivered, read, queued(online: Bool), kept(String) }
        var states: [String: MessageState] = [:]
        var server: [String: Outcome] = [:]
        /// Messages left with couriers, and with how many.
        var deposited: [String: Int] = [:]
        func deposit(_ id: String, _ couriers: Int) { deposited[id] = couriers }
        func moved(_ id: String, _ state: MessageState, via: String?) {
            if (states[id] ?? .composing) < state || state == .failed { states[id] = state }
        }
        func server(_ o: YaOKServerTransport.Outcome) {
            switch o {
            case let .queued(t, online): server[t] = .queued(online: online)
            case let .refused(t, why): server[t] = .kept("the Ya OK server refused it: \(why)")
            case let .unanswered(t): server[t] = .kept("the Ya OK server did not answer")
            }
        }
        var printed: Set<String> = []
        /// The node events a move stands for, each once.
        func newly(_ id: String, _ state: MessageState, via: String?, peer: PeerID) -> [MeshNode.Event] {
            var out: [MeshNode.Event] = []
            if let via, MessageRoute(name: via) != .mesh, state >= .sent, state != .failed, printed.insert("off:" + id).inserted {
                out.append(.sentOffMesh(messageID: id, to: peer, via: via))
            }
            if state >= .delivered, printed.insert("delivered:" + id).inserted { out.append(.delivered(messageID: id, by: peer)) }
            if state == .read, printed.insert("read:" + id).inserted { out.append(.read(messageID: id, by: peer)) }
            if state == .failed, printed.insert("failed:" + id).inserted { out.append(.failed(messageID: id, to: peer)) }
            return out
        }
        func failed(_ id: String) -> Bool { states[id] == .failed }
        var refused: String?
        func refuse(_ why: String) { refused = why }
        func reached(_ id: String, _ state: MessageState) -> Bool { (states[id].map { $0 >= state } ?? false) && states[id] != .failed }
        func outcome(_ id: String) -> Outcome? {
            if states[id] == .read { return .read }
            if states[id] == .delivered { return .delivered }
            return server[id]
        }
    }

    actor Delivered {
        var ids: Set<String> = []
        func add(_ id: String) { ids.insert(id) }
        func contains(_ id: String) -> Bool { ids.contains(id) }
    }
}


// MARK: Through a running daemon

extension Listen {
    /// The daemon's events (every one it still keeps, from its start), printed
    /// as they come: the same objects or words as `listen` in process prints.
    func listenThrough(_ api: APIClient) async throws {
        let until = duration.map { Date().addingTimeInterval($0) }
        let seen = markRead || (!json && isatty(STDOUT_FILENO) == 1)
        let client = APIMessengerClient(api), printer = EventPrinter(json: json), names = DaemonNames(client: client)
        let printing = Task {
            var own = OwnMessageLines()
            for try await event in try await client.events(since: 0) {
                await printer.print(event, names: names)
                if !json, let line = await own.line(event, names: names) { printer.say(line) }
                if seen, case let .privateMessage(conversation, record, _, _, _, _, _) = event, !record.outgoing {
                    // Read through the message printed (another face may have newer ones unshown).
                    do { try await client.markSeen(conversation, through: record.id) } catch {
                        StandardOutput.write(Data("! not marked read: \(error)\n".utf8))
                    }
                }
            }
        }
        let signals = SignalWatch([SIGINT, SIGTERM]) { printing.cancel() }
        defer { signals.cancel() }
        if let until {
            try? await Task.sleep(for: .seconds(max(0, until.timeIntervalSinceNow)))
            printing.cancel()
        }
        if case let .failure(error) = await printing.result, !(error is CancellationError) {
            throw RuntimeFailure("the daemon's events ended: \(error)")
        }
    }
}

extension Send {
    /// The one peer here `name` means (``Names``: a nickname, or `NAME#abcd`); nil when none is, or several.
    static func peer(named name: String, on node: MeshNode) async -> PeerID? {
        Names.peer(name, among: await node.peers, nickname: \.nickname).one
    }

    /// Why no one peer answers to `name`: several do (each as it can be typed), or none yet.
    static func notOne(_ name: String, on node: MeshNode, within wait: Double) async -> String {
        let peers = await node.peers
        if case let .several(ids) = Names.peer(name, among: peers, nickname: \.nickname) {
            return "\(ids.count) peers are called \(name): say which (\(ids.map { Names.label(name, peer: $0) }.joined(separator: ", ")))"
        }
        return "\(name) not found within \(format(wait)) s"
    }

    /// One message through the daemon: public, or to a name, waiting for its
    /// receipts as `send` does, and saying them in the same lines.
    func sendThrough(_ api: APIClient) async throws {
        if let file, let to { return try await sendFileThrough(api, file, to: to) }
        let client = APIMessengerClient(api), printer = EventPrinter(json: json)
        let text = self.text ?? ""
        let linger = self.linger ?? (to == nil ? 1 : 10)
        if let toGroup {
            let record = try await call { try await client.sendToGroup(toGroup, text: text) }
            if json { printer.write(APISendLine(event: "sent", text: text, messageID: record.transportID, group: toGroup)) } else { print("* sent to \(toGroup)") }
            return
        }
        if board {
            let post = try await call { try await client.postToBoard(text, urgent: urgent, days: days) }
            if json { printer.write(APISendLine(event: "sent", text: post.content, board: true, postID: post.postID.hexString)) }
            else { print("* posted on the board for \(days) day\(days == 1 ? "" : "s"): \(text)") }
            return
        }
        guard let to else {
            try await call { try await client.sendPublic(text) }
            if json { printer.write(APISendLine(event: "sent", text: text)) }
            return
        }
        let conversation: UserID
        switch try await call({ try await client.resolve(to) }) {
        case let .conversation(c): conversation = c
        case let .ambiguous(names): throw RuntimeFailure("\(names.count) are called \(to): \(names.joined(separator: ", ")); say which")
        case .none: throw RuntimeFailure("no contact or peer called \(to)")
        }
        let peer = try await call { try await client.conversation(conversation) }.fingerprint?.peerID ?? PeerID(rawValue: 0)
        // Following before sending: nothing it causes is missed.
        let events = try await call { try await client.events() }
        let record = try await call { try await client.send(text, to: conversation) }
        guard let messageID = record.transportID else { throw RuntimeFailure("the daemon did not say what it sent") }
        if json { printer.write(APISendLine(event: "sent", text: text, messageID: messageID)) }
        let said = Watch()
        let watch = Task {
            var reached: Set<String> = []
            // The linger's end cancels this wait: what was reached by then stands (issue 52: a delivered
            // receipt that came was lost when the cancelled stream threw, and the message looked undelivered).
            do { for try await event in events {
                if case let .dropDeposited(_, r, couriers) = event, r.transportID == messageID {
                    // Away: the daemon sealed it as a courier drop for the neighbours there (it stays queued too).
                    if json { printer.write(APIEvent.of(event)) }
                    else {
                        print("* \(to) is away: your message went as a courier drop to \(couriers) neighbour\(couriers == 1 ? "" : "s"), who hand it on if they "
                              + "meet \(to) within 24 h; it waits in the daemon too, and goes directly when \(to) is here")
                    }
                    reached.insert("carried")
                    return reached
                }
                guard case let .progress(_, r) = event, r.transportID == messageID, let state = r.progress?.state else { continue }
                // The way it went and its receipts, as the node events they stand for (as `send` in process says them).
                for e in await said.newly(messageID, state, via: r.transport, peer: peer) { printer.print(e) }
                if state >= .delivered, state != .failed { reached.insert("delivered") }
                if state == .read { return reached }
            } } catch {
                // Cancelled by the linger's end, or the stream broke: keep what we reached.
            }
            return reached
        }
        let timer = Task { try? await Task.sleep(for: .seconds(linger)); watch.cancel() }
        let result = await watch.value
        timer.cancel()
        if !result.contains("delivered"), !result.contains("carried") { throw NotDelivered(to: to, seconds: linger) }
    }

    /// `send --file` beside a daemon: the file streamed to it, then its
    /// transfer watched in the daemon's events until saved, refused or failed.
    func sendFileThrough(_ api: APIClient, _ path: String, to: String) async throws {
        let url = URL(fileURLWithPath: path)
        guard FileManager.default.isReadableFile(atPath: url.path) else { throw RuntimeFailure("cannot read \(path)") }
        let client = APIMessengerClient(api), printer = EventPrinter(json: json), names = DaemonNames(client: client)
        let wait = self.wait ?? (node.announceInterval + 2), linger = self.linger ?? 600
        let start = Date()
        var peer: PeerID?
        while peer == nil {
            let named = try await call { try await client.peers() }.filter { $0.nickname == to || $0.id.description == to.lowercased() }
            if named.count > 1 { throw RuntimeFailure("\(named.count) peers are called \(to): give its peer ID (`starling peers`)") }
            peer = named.first?.id
            if peer == nil {
                guard Date().timeIntervalSince(start) < wait else {
                    throw RuntimeFailure("\(to) not found within \(Self.format(wait)) s (announces come every \(Self.format(node.announceInterval)) s; try --wait \(Self.format(wait * 2)))")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let events = try await call { try await client.events() }
        let id = try await call { try await client.sendFile(at: url, to: peer ?? PeerID(rawValue: 0)) }
        if json {
            printer.write(APISendLine(event: "sent", file: url.lastPathComponent, transferID: id))
        } else {
            StandardOutput.write(Data("* sending \(url.lastPathComponent) to \(to) (transfer \(id.prefix(16)))\n".utf8))
        }
        // Its end, as the daemon's events tell it: saved (delivered), refused in words, or failed.
        let watch = Task { () throws -> String? in
            for try await event in events {
                guard case let .node(e) = event else { continue }
                switch e {
                case let .fileSent(t, _, _) where t == id, let .fileSending(t, _, _, _) where t == id:
                    await printer.print(event, names: names)
                case let .delivered(t, _) where t == id:
                    await printer.print(event, names: names)
                    return nil
                case let .failed(t, _) where t == id:
                    await printer.print(event, names: names)
                    return "\(url.lastPathComponent) was not delivered to \(to)"
                case let .rejected(r) where r.kind == .fileRefused && r.peer == peer:
                    await printer.print(event, names: names)
                    return r.detail
                default: continue
                }
            }
            return "the daemon stopped before the file arrived"
        }
        let timer = Task { try? await Task.sleep(for: .seconds(linger)); watch.cancel() }
        defer { timer.cancel() }
        let outcome: String?
        do { outcome = try await watch.value } catch {
            throw RuntimeFailure("\(url.lastPathComponent) did not arrive within \(Self.format(linger)) s; the daemon goes on with it (try --linger)")
        }
        if let outcome { throw RuntimeFailure(outcome) }
    }

    /// An API call whose refusal is said as the daemon words it.
    func call<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let f as APIClient.Failure { throw RuntimeFailure(f.message) } catch let e as MessengerClientError {
            throw RuntimeFailure(e.description)
        }
    }
}

/// A location channel's line, in words: where, who (their nickname and key's first digits), what.
enum ChannelText {
    static func line(geohash: String, nickname: String?, publicKey: String, text: String) -> String {
        "<\(EventPrinter.lines(nickname ?? "anon"))#\(publicKey.prefix(4))@#\(EventPrinter.lines(geohash))> \(EventPrinter.lines(text))"
    }
}

