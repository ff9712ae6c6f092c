import ArgumentParser
import Foundation
import StarlingCrypto
import StarlingNode
import StarlingRelayClient
import StarlingRelayPostgres
import StarlingRelayServer
import StarlingTransport
import StarlingWire
import StarlingYaOK
import StarlingYaOKRelay
import StarlingYaOKStore

/// `starling relay-server`: holds Ya OK messages for users who are away.
struct RelayServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay-server",
        abstract: "Run a Ya OK relay server: UDP, holding sealed messages for users who are offline.",
        discussion: """
        Users register with a signed REGISTER (the first one pins their Ed25519 key), poll every 30 s \
        and acknowledge what they stored. Queues: 1,000 messages a user, 7 days, 100,000 in all. \
        docs/PROTOCOL.md ("Ya OK relay") has the packets; README.md how to run one under systemd.
        """
    )
    @Option(help: "UDP port.") var port: UInt16 = 41_641
    @Option(help: "Address to listen on (0.0.0.0: every interface).") var bind = "0.0.0.0"
    @Option(help: "The SQLite database (default: relay-server.sqlite in the data directory).") var db: String?
    @Option(help: "Keep the queues in PostgreSQL instead (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE): several servers, one population.")
    var postgres: String?
    @Option(help: "Serve Prometheus metrics on HOST:PORT (GET /metrics).") var metrics: String?
    @Option(help: "The data directory (default: $XDG_DATA_HOME/starling).") var dataDir: String?
    @Option(help: "Messages a user may have waiting.") var maxPerUser = 1_000
    @Option(help: "Messages waiting in all.") var maxTotal = 100_000
    @Option(help: "Days a message waits at most.") var maxAgeDays = 7.0
    @Option(help: "Packets a second one address may send (and twice that in a burst).") var ratePerAddress = 500.0
    @Option(help: "Messages a second one user may send (and five times that in a burst).") var ratePerUser = 100.0

    func validate() throws {
        guard maxAgeDays.isFinite, maxAgeDays > 0, maxAgeDays <= 3_650 else { throw ValidationError("--max-age-days must be between 0 and 3,650") }
        guard ratePerAddress.isFinite, ratePerAddress >= 1 else { throw ValidationError("--rate-per-address must be at least 1") }
        guard ratePerUser.isFinite, ratePerUser >= 1 else { throw ValidationError("--rate-per-user must be at least 1") }
        guard maxPerUser >= 1, maxTotal >= 1 else { throw ValidationError("--max-per-user and --max-total must be at least 1") }
    }
    @Option(help: "Stop after this many seconds (default: run until interrupted).") var duration: Double?
    @Flag(help: "One JSON object per line.") var json = false

    func run() async throws {
        let directory = DataDirectory(explicit: dataDir)
        guard let host = UDPAddress("\(bind):\(port)") else { throw ValidationError("--bind \(bind): expected an IPv4 address") }
        if postgres != nil, db != nil { throw ValidationError("--db and --postgres exclude each other") }
        let store: any RelayStore
        let path: String
        if let postgres {
            path = postgres.replacingOccurrences(of: #":[^:@/]*@"#, with: ":…@", options: .regularExpression) // no password in logs
            do { store = try await PostgresRelayStore(url: postgres) } catch {
                throw ValidationError("PostgreSQL at \(path) did not answer: \(error)")
            }
        } else {
            if let db { path = db } else {
                try UserError.writableDirectory(directory)
                try directory.create()
                path = directory.url.appendingPathComponent("relay-server.sqlite").path
            }
            do { store = try SQLiteRelayStore(path: path) } catch {
                throw ValidationError("the database \(path) did not open: \(error)")
            }
        }
        var config = RelayServer.Core.Configuration()
        config.limits.perUser = maxPerUser
        config.limits.total = maxTotal
        config.limits.maxAge = UInt64(maxAgeDays * 86_400_000)
        config.perAddressRate = ratePerAddress
        config.perAddressBurst = ratePerAddress * 2
        config.perUserRate = ratePerUser
        config.perUserBurst = ratePerUser * 5
        let server: RelayServer
        do { server = try RelayServer(store: store, bind: host, configuration: config) } catch {
            throw ValidationError("UDP \(bind):\(port) is not free (\(error)); choose another with --port")
        }
        let counts = try await store.counts()
        var started: [String: Any] = ["event": "started", "port": Int(server.port), "db": path, "users": counts.users, "queued": counts.queued]
        var metricsTask: Task<Void, Never>?
        if let metrics {
            let parts = metrics.split(separator: ":")
            guard parts.count == 2, let metricsPort = Int(parts[1]) else { throw ValidationError("--metrics \(metrics): expected HOST:PORT") }
            let m = RelayMetrics()
            let (channel, bound) = try await m.serve(host: String(parts[0]), port: metricsPort)
            started["metricsPort"] = bound
            metricsTask = Task {
                while !Task.isCancelled {
                    await m.update(server, store)
                    try? await Task.sleep(for: .seconds(1))
                }
                try? await channel.close()
            }
        }
        let line = json
            ? String(decoding: (try? JSONSerialization.data(withJSONObject: started, options: [.sortedKeys])) ?? Data(), as: UTF8.self)
            : "* relay server on \(bind):\(server.port), \(counts.users) users, \(counts.queued) messages waiting (\(path))"
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
        let running = Task { await server.run() }
        if let duration {
            try? await Task.sleep(for: .seconds(duration))
        } else {
            var watch: SignalWatch?
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                watch = SignalWatch([SIGINT, SIGTERM]) { c.resume() } // resumed once: SignalWatch fires once
            }
            watch?.cancel()
        }
        await server.stop()
        await running.value
        metricsTask?.cancel()
        (store as? PostgresRelayStore)?.close()
    }
}

/// Runs `handler` (once) when one of `signals` comes, instead of dying.
final class SignalWatch: @unchecked Sendable {
    private var sources: [any DispatchSourceSignal] = []

    init(_ signals: [Int32], handler: @escaping @Sendable () -> Void) {
        let once = OnceFlag()
        for s in signals {
            signal(s, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: s)
            source.setEventHandler { if once.set() { handler() } }
            source.resume()
            sources.append(source)
        }
    }

    func cancel() { for s in sources { s.cancel() } }
}

final class OnceFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var done = false
    func set() -> Bool { lock.withLock { defer { done = true }; return !done } }
}

/// Sending to a Ya OK contact: the mesh first, then the relay, then the
/// store's queue (seed 002 §4.4, §8.1).
struct ContactDelivery {
    let node: MeshNode
    let store: YaOKStore
    let userID: UserID
    let relay: UDPAddress?
    let json: Bool
    /// Whether the mesh's delivered receipt for this transport ID came.
    let isDelivered: @Sendable (String) async -> Bool

    enum Outcome: Equatable {
        case deliveredOnMesh
        case queuedAtRelay(online: Bool)
        case kept(String)
    }

    func say(_ text: String, _ fields: [String: Any]) {
        if json {
            let data = (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])) ?? Data()
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        } else {
            FileHandle.standardOutput.write(Data((text + "\n").utf8))
        }
    }

    /// `meshWait`: how long the contact may take to appear on the mesh;
    /// `wait`: how long the relay may take to answer QUEUED.
    func send(_ text: String, to card: ContactCard, meshWait: Double, linger: Double, wait: Double) async throws -> Outcome {
        let now = Date().timeIntervalSince1970
        let id = UserID.random()
        var progress = MessageProgress(at: now)
        try? progress.move(to: .encrypting, at: now)
        try? progress.move(to: .routing, at: now)
        var record = MessageRecord(id: id, contact: card.userID, outgoing: true, text: text, timestamp: UInt64(now * 1000),
                                   recordedAt: now, progress: progress)
        _ = try store.insertMessage(record)
        let name = DisplayText.clean(card.displayName)

        // 1. The mesh, when the contact is there (direct or routed).
        let meshUntil = Date().addingTimeInterval(meshWait)
        var peer: PeerID?
        while peer == nil, Date() < meshUntil {
            peer = await node.peers.first { $0.value.fingerprint == card.meshFingerprint }?.key
            if peer == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        if let peer {
            let transportID = try await node.sendPrivate(text, to: peer)
            record.transport = "mesh"
            record.transportID = transportID
            let until = Date().addingTimeInterval(linger)
            while Date() < until {
                if await isDelivered(transportID) {
                    try? record.progress?.attempt(on: ChatScreen.meshTransport, at: Date().timeIntervalSince1970)
                    try? record.progress?.move(to: .sent, at: Date().timeIntervalSince1970)
                    try? record.progress?.receipt(.delivered, at: Date().timeIntervalSince1970)
                    try? store.updateMessage(record)
                    say("* delivered to \(name) via the mesh", ["event": "delivered", "via": "mesh", "messageID": id.description])
                    return .deliveredOnMesh
                }
                try await Task.sleep(for: .milliseconds(20))
            }
        }

        // 2. The relay.
        if let relay {
            let sealed = try SealedMessage.seal(.text(text), id: id, timestamp: record.timestamp, from: node.identity, senderID: userID,
                                                to: card.userID, recipientAgreementKey: card.agreementKey)
            let client = try RelayClient(server: relay, userID: userID, signingKey: node.identity.signingKey)
            await client.start()
            defer { Task { await client.stop() } }
            try await client.send(sealed: sealed)
            let until = Date().addingTimeInterval(wait)
            let outcome: Outcome? = await withTaskGroup(of: Outcome?.self) { group in
                group.addTask {
                    for await e in client.events {
                        switch e {
                        case let .queued(q, online) where q == id: return .queuedAtRelay(online: online)
                        case let .rejected(why, q) where q == id: return .kept("the relay refused it: \(why)")
                        case let .rejected(why, nil): return .kept("the relay refused us: \(why)")
                        case let .failed(q) where q == id: return .kept("the relay did not answer")
                        default: continue
                        }
                    }
                    return nil
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(max(0, until.timeIntervalSinceNow)))
                    return .kept("the relay \(relay) did not answer within \(Send.format(wait)) s")
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
            await client.stop()
            if case let .queuedAtRelay(online)? = outcome {
                record.transport = "relay"
                try? record.progress?.attempt(on: ChatScreen.relayTransport, at: Date().timeIntervalSince1970)
                try? record.progress?.move(to: .sent, at: Date().timeIntervalSince1970)
                try? store.updateMessage(record)
                say("* queued at the relay \(relay) for \(name)" + (online ? " (online: sent on at once)" : " (they get it when they poll)"),
                    ["event": "queued", "via": "relay", "messageID": id.description, "online": online])
                return .queuedAtRelay(online: online)
            }
            if case let .kept(why)? = outcome {
                say("! \(why); the message is kept and sent again later (`starling chat` or `listen --relay`)",
                    ["event": "kept", "reason": why, "messageID": id.description])
                return .kept(why)
            }
        }
        let why = relay == nil ? "\(name) is not on the mesh and no --relay was given" : "no way to \(name) now"
        say("! \(why); the message is kept and sent again later", ["event": "kept", "reason": why, "messageID": id.description])
        return .kept(why)
    }
}

/// `listen --relay`: takes what the relay holds for us, stores it, then
/// acknowledges it, and sends the sealed delivered receipt back.
struct RelayInbox {
    let client: RelayClient
    let store: YaOKStore
    let identity: Identity
    let userID: UserID
    let json: Bool

    /// Registers with the relay at `relay` as this node's Ya OK user, and
    /// takes what it holds for us (printing it) until the client stops.
    static func start(relay: String, node: MeshNode, dataDir: String?, json: Bool, background: Bool = false) async throws -> RelayClient {
        guard let address = UDPAddress(relay) else { throw ValidationError("--relay \(relay): expected HOST:PORT with an IPv4 host") }
        let directory = IdentityStore(directory: DataDirectory(explicit: dataDir))
        let userID = try directory.userID()
        let store = try StoreAccess.open(directory: directory.directory.url, identity: node.identity)
        let client = try RelayClient(server: address, userID: userID, signingKey: node.identity.signingKey,
                                     configuration: background ? .background : .init())
        let inbox = RelayInbox(client: client, store: store, identity: node.identity, userID: userID, json: json)
        Task { await inbox.run() }
        await client.start()
        return client
    }

    func run() async {
        for await event in client.events {
            switch event {
            case let .message(sender, payload):
                let now = Date().timeIntervalSince1970
                guard let header = try? SealedMessage.peek(payload) else { continue }
                let received: YaOKStore.Received?
                do { received = try store.receive(sealed: payload, as: userID, identity: identity, now: now) } catch is SealedMessage.Error {
                    // Signed and for us, but not a message we can read (a newer kind,
                    // a bad body): it will not get better; acknowledged, and said.
                    print(event: ["event": "rejected", "reason": "unreadable", "from": sender.description],
                          "! a sealed message from \(sender) that this version cannot read: dropped")
                    await client.acknowledge(header.messageID)
                    continue
                } catch {
                    received = nil // the store failed: not acknowledged, so the relay offers it again
                }
                switch received {
                case let .message(record)?:
                    let name = (try? store.contact(sender))??.card.map { DisplayText.clean($0.displayName) } ?? sender.description
                    print(event: ["event": "relayMessage", "from": name, "text": record.text, "messageID": header.messageID.description],
                          "<\(name) → you> \(DisplayText.clean(record.text))  · via the relay")
                    await client.acknowledge(header.messageID)
                    if let card = (try? store.contact(sender))??.card,
                       let receipt = try? SealedMessage.seal(.delivered(header.messageID), id: .random(), timestamp: UInt64(now * 1000),
                                                             from: identity, senderID: userID, to: sender,
                                                             recipientAgreementKey: card.agreementKey) {
                        try? await client.send(sealed: receipt)
                    }
                case .duplicate?:
                    await client.acknowledge(header.messageID) // stored before, or a receipt applied
                case let .receipt(record)?:
                    print(event: ["event": "relayReceipt", "messageID": record.id.description, "state": "\(record.progress?.state.rawValue ?? "")"],
                          "  · \(record.id): \(record.progress.map { "\($0.state)" } ?? "receipt")  · via the relay")
                    await client.acknowledge(header.messageID)
                case let .unknownSender(who)?:
                    print(event: ["event": "rejected", "reason": "unknown sender", "from": who.description],
                          "! a sealed message from \(who), who is not a contact: dropped")
                    await client.acknowledge(header.messageID)
                case .refused?:
                    print(event: ["event": "rejected", "reason": "refused", "from": sender.description],
                          "! a sealed message in \(sender)'s name did not verify: dropped and counted")
                    await client.acknowledge(header.messageID)
                case nil:
                    continue // not stored: not acknowledged, the relay keeps it
                }
            case .registered:
                print(event: ["event": "relayRegistered", "relay": client.server.description], "* registered with the relay \(client.server)")
            case let .rejected(why, _):
                print(event: ["event": "relayRejected", "reason": why.description], "! the relay: \(why)")
            default:
                continue
            }
        }
    }

    func print(event: [String: Any], _ text: String) {
        if json {
            let data = (try? JSONSerialization.data(withJSONObject: event, options: [.sortedKeys])) ?? Data()
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        } else {
            FileHandle.standardOutput.write(Data((text + "\n").utf8))
        }
    }
}
