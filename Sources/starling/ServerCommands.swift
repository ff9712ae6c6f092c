import ArgumentParser
import Foundation
import StarlingCrypto
import StarlingNode
import StarlingYaOKClient
import StarlingYaOKServerPostgres
import StarlingYaOKServer
import StarlingTransport
import StarlingWire
import StarlingYaOK
import StarlingYaOKServerCore
import StarlingStore

/// `starling yaok-server` (once `relay-server`, still an alias): holds Ya OK messages for users who are away.
struct YaOKServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "yaok-server",
        abstract: "Run a Ya OK server: UDP, holding sealed messages for users who are offline.",
        discussion: """
        Users register with a signed REGISTER (the first one pins their Ed25519 key), poll every 30 s \
        and acknowledge what they stored. Queues: 1,000 messages a user, 7 days, 100,000 in all. \
        It is also a courier mailbox: nodes (--courier-mailbox) leave courier drops by recipient tag, \
        each kept until its expiry (a day at most), and fetch those for the peers around them. \
        docs/PROTOCOL.md ("Ya OK server", "The courier mailbox") has the packets; README.md how to run one under systemd. \
        (Its old name, relay-server, still works: "relay" now means mesh forwarding only, docs/GLOSSARY.md.)
        """,
        aliases: ["relay-server"]
    )
    @Option(help: "UDP port.") var port: UInt16 = 41_641
    @Option(help: "Address to listen on (0.0.0.0: every interface; an IPv6 one, :: for every interface, takes IPv4 too).") var bind = "0.0.0.0"

    /// `--bind` and a port as an address: IPv4 dotted, or IPv6 (written bare, as ::1).
    static func address(_ bind: String, _ port: UInt16) -> UDPAddress? {
        bind.contains(":") ? UDPAddress("[\(bind)]:\(port)") : UDPAddress("\(bind):\(port)")
    }
    @Option(help: "The SQLite database (default: yaok-server.sqlite in the data directory, or relay-server.sqlite where an older version made one).") var db: String?
    @Option(help: "Keep the queues in PostgreSQL instead (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE): several servers, one population.")
    var postgres: String?
    @Option(help: "With --postgres: group commits a server keeps under way at once, written in order to one connection (2: the database runs the next as soon as the last is done; 1: each waits for the last to return, for several servers on one database).")
    var commitsUnderWay = 2
    @Option(help: "Serve Prometheus metrics on HOST:PORT (GET /metrics).") var metrics: String?
    @Option(help: "The data directory (default: $XDG_DATA_HOME/starling).") var dataDir: String?
    @Option(help: "Messages a user may have waiting.") var maxPerUser = 1_000
    @Option(help: "Messages waiting in all.") var maxTotal = 100_000
    @Option(help: "Days a message waits at most.") var maxAgeDays = 7.0
    @Option(help: "Packets a second one address may send (and twice that in a burst).") var ratePerAddress = 500.0
    @Option(help: "Messages a second one user may send (and five times that in a burst).") var ratePerUser = 100.0
    @Option(help: "Courier drops the mailbox keeps in all (each 16 KiB at most, a day at most).") var maxDrops = 10_000
    @Option(help: "Courier drops kept for one recipient tag (a new one pushes out the tag's oldest).") var dropsPerTag = 32

    func validate() throws {
        guard maxAgeDays.isFinite, maxAgeDays > 0, maxAgeDays <= 3_650 else { throw ValidationError("--max-age-days must be between 0 and 3,650") }
        guard ratePerAddress.isFinite, ratePerAddress >= 1 else { throw ValidationError("--rate-per-address must be at least 1") }
        guard ratePerUser.isFinite, ratePerUser >= 1 else { throw ValidationError("--rate-per-user must be at least 1") }
        guard maxPerUser >= 1, maxTotal >= 1 else { throw ValidationError("--max-per-user and --max-total must be at least 1") }
        guard maxDrops >= 1, dropsPerTag >= 1 else { throw ValidationError("--max-drops and --drops-per-tag must be at least 1") }
        guard Self.address(bind, port) != nil else { throw ValidationError("--bind \(bind): expected an IPv4 address, or an IPv6 one (:: for every interface)") }
        if postgres != nil, db != nil { throw ValidationError("--db and --postgres exclude each other") }
        guard (1...8).contains(commitsUnderWay) else { throw ValidationError("--commits-under-way must be between 1 and 8") }
        if let metrics {
            let parts = metrics.split(separator: ":")
            guard parts.count == 2, Int(parts[1]) != nil else { throw ValidationError("--metrics \(metrics): expected HOST:PORT") }
        }
    }
    @Option(help: "Stop after this many seconds (default: run until interrupted).") var duration: Double?
    @Flag(help: "One JSON object per line.") var json = false

    func run() async throws {
        let directory = DataDirectory(explicit: dataDir)
        guard let host = Self.address(bind, port) else { throw ValidationError("--bind \(bind): expected an IPv4 address, or an IPv6 one (:: for every interface)") }
        if postgres != nil, db != nil { throw ValidationError("--db and --postgres exclude each other") }
        let store: any ServerStore
        let path: String
        if let postgres {
            path = postgres.replacingOccurrences(of: #":[^:@/]*@"#, with: ":…@", options: .regularExpression) // no password in logs
            do { store = try await PostgresServerStore(url: postgres, commitsUnderWay: commitsUnderWay) } catch {
                throw RuntimeFailure("PostgreSQL at \(path) did not answer: \(error)")
            }
        } else {
            if let db { path = db } else {
                try UserError.writableDirectory(directory)
                try directory.create()
                // An older version's database keeps its name (its queues are in it).
                let older = directory.url.appendingPathComponent("relay-server.sqlite").path
                let now = directory.url.appendingPathComponent("yaok-server.sqlite").path
                path = FileManager.default.fileExists(atPath: older) && !FileManager.default.fileExists(atPath: now) ? older : now
            }
            do { store = try SQLiteServerStore(path: path) } catch {
                throw RuntimeFailure("the database \(path) did not open: \(error)")
            }
        }
        var config = YaOKServer.Core.Configuration()
        config.limits.perUser = maxPerUser
        config.limits.total = maxTotal
        config.limits.maxAge = UInt64(maxAgeDays * 86_400_000)
        config.perAddressRate = ratePerAddress
        config.perAddressBurst = ratePerAddress * 2
        config.perUserRate = ratePerUser
        config.perUserBurst = ratePerUser * 5
        config.dropLimits.total = maxDrops
        config.dropLimits.perTag = dropsPerTag
        let server: YaOKServer
        do { server = try YaOKServer(store: store, bind: host, configuration: config) } catch {
            throw RuntimeFailure("UDP \(bind):\(port) is not free (\(error)); choose another with --port")
        }
        let counts = try await store.counts()
        var started: [String: Any] = ["event": "started", "port": Int(server.port), "db": path, "users": counts.users, "queued": counts.queued]
        var metricsTask: Task<Void, Never>?
        if let metrics {
            let parts = metrics.split(separator: ":")
            guard parts.count == 2, let metricsPort = Int(parts[1]) else { throw ValidationError("--metrics \(metrics): expected HOST:PORT") }
            let m = ServerMetrics()
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
            : "* Ya OK server on \(Self.address(bind, server.port)?.description ?? bind), \(counts.users) users, \(counts.queued) messages waiting (\(path))"
        StandardOutput.write(Data((line + "\n").utf8))
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
        (store as? PostgresServerStore)?.close()
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


/// Commands with `--server`, whose old name `--relay` (before "relay" came to
/// mean mesh forwarding only) still works for scripts, and says the new one.
protocol ServerAlias {
    var server: String? { get set }
    var relayAlias: String? { get }
}

extension ServerAlias {
    mutating func takeRelayAlias() {
        guard let relayAlias else { return }
        StandardError.write(Data("starling: --relay is now --server (the Ya OK server, HOST:PORT); --relay still works for now\n".utf8))
        if server == nil { server = relayAlias }
    }
}
