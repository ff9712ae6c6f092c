import Foundation
import StarlingTransport
import StarlingWire
import StarlingYaOKServerCore
import StarlingYaOKServerPostgres
#if canImport(Glibc)
import Glibc
#endif

/// `starling-bench yaok-server --servers 1,2,4` (or the area
/// `yaok-server-fleet`): N `starling yaok-server --postgres` processes on one
/// PostgreSQL, 4 senders registered with each (256 unanswered each), one
/// recipient away (everything is queued, so every message is a write). For
/// each N: messages/s flat out and their p99, then p50/p99 at a fixed
/// offered load (half the single server's maximum, spread over the N), and
/// the CPU the servers and PostgreSQL used; beside the database's own rates
/// measured in the same run (pgbench's one-row commits, and the store's own
/// commits of 500 without UDP), so that the table shows which one is the limit.
enum FleetBench {
    nonisolated(unsafe) static var counts = [1, 2, 4]

    struct Row {
        var servers: Int, rate: Double, flatP99: Double, halfP50: Double, halfP99: Double, answered: String
        var serversCPU: Double, databaseCPU: Double
    }

    static func run() {
        print("starling-bench yaok-server --servers \(counts.map(String.init).joined(separator: ",")) "
              + "(release; `starling yaok-server --postgres` processes on one PostgreSQL; loopback UDP; every QUEUED answer durable)\n")
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let starling = here.appendingPathComponent("starling").path
        guard FileManager.default.isExecutableFile(atPath: starling) else {
            return print("  needs the starling binary beside starling-bench: swift build -c release --product starling")
        }
        guard let pg = BenchPostgres.start() else { return print("  PostgreSQL: not installed here (Debian's postgresql), not measured") }
        defer { pg.stop() }
        print("  this machine: \(ProcessInfo.processInfo.activeProcessorCount) cores; PostgreSQL with \(pg.options.isEmpty ? "default settings" : pg.options), fsync on")
        let echo = ServerBench.udpEcho(seconds: 2)
        print("  UDP echo on loopback (window \(ServerBench.window)): \(Int(echo)) round trips/s")
        let one = pg.pgbench(clients: 1), eight = pg.pgbench(clients: 8)
        print("  PostgreSQL's own durable commits (pgbench, one 300-byte row each): \(Int(one))/s from 1 connection, \(Int(eight))/s from 8")
        let ceiling = storeCeiling(pg)
        print("  the store alone (relay_commit, 500 messages a commit, back to back, no UDP): \(Int(ceiling)) messages/s\n")
        var rows: [Row] = []
        for n in counts {
            guard let row = fleet(n, pg: pg, starling: starling, offered: rows.first.map { $0.rate / 2 }) else { continue }
            rows.append(row)
            print("  \(n) server\(n == 1 ? "" : "s"): \(Int(row.rate)) messages/s flat out (p99 \(format2(row.flatP99)) ms); "
                  + "at \(row.answered): p50 \(format2(row.halfP50)) ms, p99 \(format2(row.halfP99)) ms; "
                  + "CPU: servers \(Int(row.serversCPU * 100))%, PostgreSQL \(Int(row.databaseCPU * 100))%")
        }
        guard let base = rows.first else { return }
        print("\n  servers  messages/s  × 1 server  × echo  × store alone  flat-out p99  half-load p99")
        for r in rows {
            print("  " + [String(r.servers).padded(7), String(Int(r.rate)).padded(10), format2(r.rate / base.rate).padded(10),
                          format2(r.rate / max(1, echo)).padded(6), format2(r.rate / max(1, ceiling)).padded(12),
                          (format1(r.flatP99) + " ms").padded(12), (format1(r.halfP99) + " ms").padded(13)].joined(separator: "  "))
        }
        let widest = rows.map(\.rate).max() ?? 1
        print("")
        for r in rows {
            print("  \(String(r.servers).padded(2)) │" + String(repeating: "█", count: max(1, Int(48 * r.rate / widest))) + " \(Int(r.rate))/s")
        }
    }

    /// Messages a second through `PostgresServerStore` alone: batches of 500 to
    /// one recipient for 2 s, `underWay` commits begun at a time (the next batch
    /// made and begun while the others run, as a server does).
    static func storeCeiling(_ pg: BenchPostgres, underWay: Int = 1) -> Double {
        ServerBench.blocking {
            let store = try await PostgresServerStore(url: pg.url)
            defer { store.close() }
            let recipient = UserID.random(), sender = UserID.random()
            _ = try await store.register(recipient, key: [1], timestamp: 1)
            let template = ServerBench.template(from: sender, to: recipient)
            var limits = QueueLimits()
            limits.perUser = 100_000_000
            limits.total = 100_000_000
            let start = Date()
            var n = 0
            var begun: [CommitUnderWay] = []
            while Date().timeIntervalSince(start) < 2 {
                let batch = (0..<500).map { _ in
                    var payload = template
                    let id = UserID.random()
                    payload.replaceSubrange(1..<17, with: id.bytes)
                    return QueuedMessage(messageID: id, sender: sender, recipient: recipient, payload: payload, receivedAt: 1)
                }
                begun.append(store.beginCommit(StoreWrites(messages: batch, limits: limits)))
                if begun.count >= underWay { n += try await begun.removeFirst().value.stored.filter { $0 == .stored }.count }
            }
            for c in begun { n += try await c.value.stored.filter { $0 == .stored }.count }
            let rate = Double(n) / Date().timeIntervalSince(start)
            _ = pg.sql("TRUNCATE relay_queue, relay_queue_lengths, relay_users; UPDATE relay_queue_count SET total = 0; UPDATE relay_user_count SET total = 0")
            return rate
        } ?? 0
    }

    /// One fleet of `n` servers: started, measured, stopped.
    static func fleet(_ n: Int, pg: BenchPostgres, starling: String, offered: Double?) -> Row? {
        _ = pg.sql("TRUNCATE relay_queue, relay_queue_lengths, relay_users; UPDATE relay_queue_count SET total = 0; UPDATE relay_user_count SET total = 0")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("starling-fleet-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var servers: [ServerProcess] = []
        defer { for s in servers { s.stop() } }
        for _ in 0..<n {
            guard let s = ServerProcess.start(starling, arguments: [
                "yaok-server", "--postgres", pg.url, "--port", "0", "--bind", "127.0.0.1", "--json", "--data-dir", dir.path,
                "--rate-per-address", "1000000000", "--rate-per-user", "1000000000",
                "--max-per-user", "100000000", "--max-total", "100000000",
                // STARLING_BENCH_PG_UNDER_WAY: each server's commits under way (the server's default otherwise).
            ] + (ProcessInfo.processInfo.environment["STARLING_BENCH_PG_UNDER_WAY"].map { ["--commits-under-way", $0] } ?? [])) else { print("  \(n) servers: one did not start"); return nil }
            servers.append(s)
        }
        let started = servers
        return ServerBench.blocking {
            let servers = started
            let recipient = try ServerBench.Sender()
            let readers = [recipient.start()]
            defer { for r in readers { r.cancel() } }
            guard await recipient.register(port: servers[0].port) else { print("  the recipient did not register"); return nil }
            _ = recipient.socket.send(ServerPacket.bye(token: recipient.token!).encode(), to: .loopback(servers[0].port))
            // Four senders a server, each registered with its own.
            let senders = try (0..<4 * n).map { _ in try ServerBench.Sender() }
            let senderReaders = senders.map { $0.start() }
            defer { for r in senderReaders { r.cancel() } }
            for (i, s) in senders.enumerated() {
                s.server = servers[i % n].port
                guard await s.register(port: s.server) else { print("  a sender did not register"); return nil }
            }
            let templates = senders.map { ServerBench.template(from: $0.id, to: recipient.id) }
            let prefix = UserID.random().bytes.prefix(8)
            var counter: UInt64 = 0
            func send(_ i: Int) {
                let s = senders[i]
                var payload = templates[i]
                counter += 1
                let id = UserID(bytes: prefix + withUnsafeBytes(of: counter.bigEndian, Array.init))!
                payload.replaceSubrange(1..<17, with: id.bytes)
                let packet = ServerPacket.message(sender: s.id, recipient: recipient.id, payload: payload, token: s.token!).encode()
                s.lock.withLock { s.sentAt[id] = DispatchTime.now().uptimeNanoseconds }
                _ = s.socket.send(packet, to: .loopback(s.server))
            }
            func latencies() -> [Double] { senders.flatMap { s in s.lock.withLock { s.latencies } }.sorted() }
            func p(_ all: [Double], _ q: Double) -> Double { all.isEmpty ? 0 : all[min(all.count - 1, Int(Double(all.count) * q))] }
            func reset() { for s in senders { s.lock.withLock { s.latencies = []; s.sentAt = [:] } } }

            // Flat out, 3 s.
            reset()
            var (cpu0, db0) = (0.0, 0.0)
            var sent = senders.map { _ in 0 }
            let (rate, elapsed, _) = await ServerBench.flatOut(seconds: 3, fill: {
                var any = false
                for i in senders.indices where sent[i] - senders[i].lock.withLock({ senders[i].queued }) < ServerBench.window {
                    send(i)
                    sent[i] += 1
                    any = true
                }
                return any
            }, answered: { senders.map { s in s.lock.withLock { s.queued } }.reduce(0, +) },
               opened: { (cpu0, db0) = (servers.map(\.cpuSeconds).reduce(0, +), pg.cpuSeconds()) })
            let cpu = (servers.map(\.cpuSeconds).reduce(0, +) - cpu0) / elapsed, db = (pg.cpuSeconds() - db0) / elapsed
            try? await Task.sleep(for: .milliseconds(300)) // the last answers, for the latencies
            let flat = latencies()
            try? await Task.sleep(for: .milliseconds(300))

            // A fixed offered load, 2 s: half the single server's maximum (or of this one's, for the first).
            reset()
            let load = offered ?? rate / 2
            let t1 = Date()
            var k = 0
            while Date().timeIntervalSince(t1) < 2 {
                let due = Int(Date().timeIntervalSince(t1) * load)
                while k < due {
                    send(k % senders.count)
                    k += 1
                }
                try? await Task.sleep(for: .microseconds(200))
            }
            try? await Task.sleep(for: .milliseconds(500))
            let half = latencies()
            return Row(servers: n, rate: rate, flatP99: p(flat, 0.99), halfP50: p(half, 0.5), halfP99: p(half, 0.99),
                       answered: "\(Int(load))/s offered (\(half.count)/\(k) answered)", serversCPU: cpu, databaseCPU: db)
        } ?? nil
    }
}

/// A `starling yaok-server` child: its port from the started line (--json).
final class ServerProcess: @unchecked Sendable {
    let process: Process
    let port: UInt16

    private init(process: Process, port: UInt16) {
        self.process = process
        self.port = port
    }

    static func start(_ executable: String, arguments: [String]) -> ServerProcess? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return nil }
        // The first line, within 60 s (PostgreSQL's schema is made by the first one).
        var line = Data()
        let deadline = Date().addingTimeInterval(60)
        let fd = out.fileHandleForReading.fileDescriptor
        while Date() < deadline, !line.contains(UInt8(ascii: "\n")) {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 200) >= 0 else { break }
            if poller.revents & Int16(POLLIN | POLLHUP) != 0 {
                var buffer = [UInt8](repeating: 0, count: 4_096)
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 { break }
                line.append(contentsOf: buffer.prefix(n))
            }
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.prefix { $0 != UInt8(ascii: "\n") })) as? [String: Any],
              let port = object["port"] as? Int, let port = UInt16(exactly: port) else {
            p.terminate()
            return nil
        }
        return ServerProcess(process: p, port: port)
    }

    /// User and system CPU so far.
    var cpuSeconds: Double { BenchPostgres.cpuSeconds(pid: process.processIdentifier) }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        for _ in 0..<200 where process.isRunning { usleep(25_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

extension BenchPostgres {
    /// psql through the server's socket directory; whether it succeeded.
    @discardableResult
    func sql(_ statement: String) -> Bool {
        Self.run(["\(bin)/psql", "-h", "127.0.0.1", "-p", String(port), "-U", "starling", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-q", "-c", statement]) == 0
    }

    /// Transactions a second from pgbench: one INSERT of a 300-byte row each, 2 s, `clients` connections.
    func pgbench(clients: Int) -> Double {
        let script = directory + "/commit-\(clients).sql"
        guard sql("CREATE TABLE IF NOT EXISTS bench_commit (id BIGSERIAL PRIMARY KEY, payload TEXT)"),
              (try? "INSERT INTO bench_commit (payload) VALUES (repeat('x', 300));\n".write(toFile: script, atomically: true, encoding: .utf8)) != nil
        else { return 0 }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "\(bin)/pgbench")
        p.arguments = ["-h", "127.0.0.1", "-p", String(port), "-U", "starling", "-n", "-c", String(clients), "-j", String(min(clients, 2)),
                       "-T", "2", "-f", script, "postgres"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return 0 }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        _ = sql("DROP TABLE bench_commit")
        // "tps = 1234.567890 (without initial connection time)"
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("tps = ") }),
              let value = Double(line.dropFirst(6).split(separator: " ").first ?? "") else { return 0 }
        return value
    }

    /// CPU seconds of the cluster's processes (the postmaster and its children).
    func cpuSeconds() -> Double {
        guard let text = try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8),
              let first = text.split(separator: "\n").first, let master = Int32(first) else { return 0 }
        var total = Self.cpuSeconds(pid: master)
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, Int32(fields[1]) == master { total += Self.cpuSeconds(pid: pid) }
        }
        return total
    }

    static func cpuSeconds(pid: Int32) -> Double { NodeBench.cpuSeconds(pid: pid) ?? 0 }
}

extension String {
    func padded(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
