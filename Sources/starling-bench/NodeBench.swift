import Foundation
import StarlingCrypto
import StarlingMesh
import StarlingNode
import StarlingTransport
import StarlingWire

/// `starling-bench node`: real nodes over UDP on 127.0.0.1.
enum NodeBench {
    /// Resident memory of this process, in bytes.
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return fields.count > 1 ? (Int(fields[1]) ?? 0) * 4096 : 0
    }

    static func node(_ name: String, peers: [UInt16], jitterFree: Bool) throws -> MeshNode {
        var options = MeshNode.Options(nickname: name)
        options.udp?.port = 0
        options.udp?.discovery = false
        options.core.announceInterval = 1_000
        options.udp?.peers = peers.map { .loopback($0) }
        if jitterFree { options.core.policy = FloodingPolicy(jitter: 0) }
        return try MeshNode(identity: .generate(), options: options)
    }

    static func run() async {
        print("starling-bench node (release; UDP on 127.0.0.1)")
        do {
            try await idle()
            try await line()
            try await thousandPeers()
        } catch {
            print("node bench failed: \(error)")
        }
    }

    /// CPU seconds (user + system) a process has used, from /proc.
    static func cpuSeconds(pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // Fields after the command name: state is field 3; utime and stime are 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// How long each of a process's live threads has run, ns (/proc/PID/task/*/schedstat).
    static func threadRun(pid: Int32) -> [String: UInt64]? {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
        var run: [String: UInt64] = [:]
        for t in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/schedstat", encoding: .utf8),
                  let first = text.split(separator: " ").first, let v = UInt64(first) else { continue }
            run[t] = v
        }
        return run
    }

    /// CPU seconds a process's threads ran between two readings, in nanoseconds'
    /// precision: each thread alive at the end, less what it had run at the start
    /// (a thread that ended meanwhile is not counted, and never counted against:
    /// ``cpuSeconds(pid:)``, to the clock tick, is shown beside it and taken
    /// instead when it is the larger by more than a tick).
    static func runSeconds(from start: [String: UInt64], to end: [String: UInt64]) -> Double {
        Double(end.reduce(UInt64(0)) { sum, t in sum + (t.value &- min(t.value, start[t.key] ?? 0)) }) / 1e9
    }

    /// What the node runtime used to do when idle: wake every 10 ms (measured
    /// here, in the same run, as the baseline).
    static func pollLoop(seconds: Double) async {
        let end = ContinuousClock.now + .seconds(seconds)
        var wakes = 0
        while ContinuousClock.now < end {
            wakes &+= 1
            try? await Task.sleep(for: .milliseconds(10))
        }
        blackHole(wakes)
    }

    /// An idle `starling relay` (loopback discovery on, no peers), the same
    /// with every off-mesh transport on (a Ya OK server and its courier
    /// mailbox, Nostr through a SOCKS5 proxy), a `starling daemon` with them,
    /// and the old runtime's wake pattern, all over the same 60 s.
    static func idle() async throws {
        let seconds = 60.0
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("starling-bench-idle-\(getpid())").path
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: base) }
        var helpers: [Process] = []
        defer { for p in helpers where p.isRunning { p.terminate() } }
        func start(_ exe: URL, _ arguments: [String]) throws -> Process {
            let p = Process()
            p.executableURL = exe
            p.arguments = arguments
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            helpers.append(p)
            return p
        }
        // The off-mesh side: a Ya OK server (UDP), and where they are installed, nostr-relay and microsocks.
        let serverPort = try freeUDPPort(), relayPort = try freeTCPPort(), proxyPort = try freeTCPPort()
        _ = try start(starlingBinary, ["yaok-server", "--bind", "127.0.0.1", "--port", String(serverPort),
                                       "--db", base + "/server.sqlite", "--duration", String(seconds + 30)])
        var offMesh = ["--server", "127.0.0.1:\(serverPort)", "--courier-mailbox", "127.0.0.1:\(serverPort)"]
        let venv = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".venv/bin/nostr-relay")
        var transports = "a Ya OK server, its courier mailbox"
        if FileManager.default.isExecutableFile(atPath: venv.path), FileManager.default.isExecutableFile(atPath: "/usr/bin/microsocks") {
            try """
            storage:
              sqlalchemy.url: sqlite+aiosqlite:///\(base)/events.sqlite3
            gunicorn:
              bind: 127.0.0.1:\(relayPort)
              workers: 1
              loglevel: warning
            verification:
              nip05_verification: disabled

            """.write(toFile: base + "/config.yaml", atomically: true, encoding: .utf8)
            _ = try start(venv, ["-c", base + "/config.yaml", "serve"])
            _ = try start(URL(fileURLWithPath: "/usr/bin/microsocks"), ["-i", "127.0.0.1", "-p", String(proxyPort)])
            offMesh += ["--nostr", "--nostr-relay", "ws://127.0.0.1:\(relayPort)", "--proxy", "127.0.0.1:\(proxyPort)"]
            transports += ", Nostr through microsocks"
        } else {
            print("  (no .venv/bin/nostr-relay or microsocks: scripts/install-deps --test; measuring without Nostr)")
        }
        let relay = try start(starlingBinary, ["relay", "--name", "idle", "--data-dir", base + "/plain", "--duration", String(seconds + 10)])
        let all = try start(starlingBinary, ["relay", "--name", "idleAll", "--data-dir", base + "/all", "--duration", String(seconds + 10)] + offMesh)
        let daemon = try start(starlingBinary, ["daemon", "--name", "idleDaemon", "--data-dir", base + "/daemon"] + offMesh)
        let poll = try start(URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath(), ["poll-loop", String(seconds + 10)])
        // Start-up (key files, sockets, registering, connecting) is not idling: measure from 5 s in.
        try await Task.sleep(for: .seconds(5))
        let measured = [relay, all, daemon, poll]
        let before = measured.map { cpuSeconds(pid: $0.processIdentifier) }, runBefore = measured.map { threadRun(pid: $0.processIdentifier) }
        try await Task.sleep(for: .seconds(seconds))
        let after = measured.map { cpuSeconds(pid: $0.processIdentifier) }, runAfter = measured.map { threadRun(pid: $0.processIdentifier) }
        guard let ticks = zip(after, before).map({ a, b in a.flatMap { a in b.map { a - $0 } } }) as? [Double],
              let precise = zip(runAfter, runBefore).map({ a, b in a.flatMap { a in b.map { runSeconds(from: $0, to: a) } } }) as? [Double] else {
            print("  idle: could not read /proc"); return
        }
        let tick = 1 / Double(sysconf(Int32(_SC_CLK_TCK)))
        let used = zip(precise, ticks).map { p, t in t > p + tick ? t : p }
        let share = used.map { $0 / seconds * 100 }
        func line(_ i: Int) -> String {
            "\(format3(used[i])) s of CPU = \(format3(share[i]))% of a core (to the tick: \(format2(ticks[i])) s)"
        }
        print("\nIdle over \(Int(seconds)) s, the three nodes linked on loopback (off-mesh: \(transports)):")
        print("  relay:                      \(line(0))   (goal ≤ 0.1%)")
        print("  relay, every transport on:  \(line(1))   (goal ≤ 0.1%; was 150% with a Ya OK server)")
        print("  daemon, every transport on: \(line(2))   (goal ≤ 0.1%)")
        print("  10 ms poll loop:            \(line(3))   (the old runtime's wake pattern, measured now)")
        if share[3] > 0 {
            print("  ÷ poll loop: relay \(format2(share[0] / share[3]))×, every transport \(format2(share[1] / share[3]))×, daemon \(format2(share[2] / share[3]))×")
        }
    }

    static func freeUDPPort() throws -> UInt16 { try UDPSocket(bindTo: .loopback(0)).localPort }

    static func freeTCPPort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return UInt16(bigEndian: addr.sin_port)
    }

    /// Sends each JSON line the process prints to `handle`, as it comes (its
    /// standard error is dropped).
    static func readJSONLines(of process: Process, _ handle: @escaping @Sendable ([String: Any]) -> Void) {
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        let buffer = LineBuffer()
        pipe.fileHandleForReading.readabilityHandler = { h in
            let data = h.availableData
            guard !data.isEmpty else { return }
            for line in buffer.append(data) {
                if let e = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] { handle(e) }
            }
        }
    }

    /// Bytes in, whole lines out.
    final class LineBuffer: @unchecked Sendable {
        private let lock = NSLock()
        private var text = ""
        func append(_ data: Data) -> [String] {
            lock.withLock {
                text += String(decoding: data, as: UTF8.self)
                var lines: [String] = []
                while let newline = text.firstIndex(of: "\n") {
                    lines.append(String(text[..<newline]))
                    text = String(text[text.index(after: newline)...])
                }
                return lines
            }
        }
    }

    /// The `starling` binary next to this one (both built in release).
    static var starlingBinary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("starling")
    }

    /// A `starling listen --json` process whose message events are timed as they are read.
    final class Listener: @unchecked Sendable {
        let process = Process()
        private let lock = NSLock()
        private(set) var port: UInt16 = 0
        private var arrivals: [String: ContinuousClock.Instant] = [:]
        private var peersSeen = 0
        let clock = ContinuousClock()

        init(_ arguments: [String]) throws {
            process.executableURL = NodeBench.starlingBinary
            process.arguments = arguments
            NodeBench.readJSONLines(of: process) { [weak self] event in
                guard let self else { return }
                let now = self.clock.now
                self.lock.withLock {
                    switch event["event"] as? String {
                    case "started": self.port = UInt16(event["port"] as? Int ?? 0)
                    case "peer": self.peersSeen += 1
                    case "message": if let text = event["text"] as? String { self.arrivals[text] = now }
                    default: break
                    }
                }
            }
            try process.run()
        }

        func arrival(_ text: String) -> ContinuousClock.Instant? { lock.lock(); defer { lock.unlock() }; return arrivals[text] }
        var arrived: Int { lock.lock(); defer { lock.unlock() }; return arrivals.count }
        var peers: Int { lock.lock(); defer { lock.unlock() }; return peersSeen }
        var boundPort: UInt16 { lock.lock(); defer { lock.unlock() }; return port }
        func stop() { if process.isRunning { process.terminate() } }
    }

    /// A – B – C as three processes (A is this one), relay jitter zero:
    /// latency across 2 hops and messages per second.
    static func line() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("starling-bench-\(getpid())").path
        let common = ["listen", "--no-discovery", "--port", "0", "--json", "--duration", "60", "--announce-interval", "1",
                      "--relay-jitter", "0"]
        let b = try Listener(common + ["--name", "b", "--data-dir", dir + "/b"])
        defer { b.stop() }
        let clock = ContinuousClock()
        let t0 = clock.now
        while b.boundPort == 0, clock.now - t0 < .seconds(10) { try await Task.sleep(for: .milliseconds(10)) }
        let c = try Listener(common + ["--name", "c", "--data-dir", dir + "/c", "--peer", "127.0.0.1:\(b.boundPort)"])
        defer { c.stop() }
        let a = try node("a", peers: [b.boundPort], jitterFree: true)
        let task = Task { await a.run(until: UInt64(Date().timeIntervalSince1970 * 1000) + 60_000) }
        defer { task.cancel() }
        let up = clock.now
        while await a.peers.count < 2 || c.peers < 2, clock.now - up < .seconds(10) { try await Task.sleep(for: .milliseconds(10)) }
        guard await a.peers.count >= 2 else { print("  line did not form"); return }

        var latencies: [Double] = []
        for i in 0..<200 {
            let text = "latency \(i)"
            let sent = clock.now
            try await a.sendPublic(text)
            while c.arrival(text) == nil, clock.now - sent < .seconds(1) { try await Task.sleep(for: .microseconds(200)) }
            if let got = c.arrival(text) {
                let d = got - sent
                latencies.append(Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15)
            }
        }
        latencies.sort()
        func p(_ q: Double) -> Double { latencies.isEmpty ? .nan : latencies[min(latencies.count - 1, Int(Double(latencies.count - 1) * q))] }
        print("\nA → B → C, three processes, relay jitter 0: end-to-end latency over 2 hops (\(latencies.count) of 200 arrived)")
        print("  p50 \(format2(p(0.5))) ms   p99 \(format2(p(0.99))) ms   (goal: p99 < 20 ms)")

        let before = c.arrived
        let n = 2_000
        let start = clock.now
        for i in 0..<n { try await a.sendPublic("burst \(i)") }
        var last = start, seen = 0
        while c.arrived - before < n, clock.now - last < .seconds(2) {
            if c.arrived - before > seen { seen = c.arrived - before; last = clock.now }
            try await Task.sleep(for: .milliseconds(2))
        }
        let elapsed = last - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let got = c.arrived - before
        print("  burst of \(n) signed public messages: \(got) arrived at C in \(format2(seconds)) s → \(Int(Double(got) / seconds)) messages/s")
        // What each hop now spends to check the sender's signature (docs/PROTOCOL.md,
        // "Authentication and freshness"), measured here on the same kind of packet.
        let signer = Identity.generate()
        var sample = Packet(type: .message, ttl: 7, timestamp: 1_763_800_000_000, senderID: signer.peerID, payload: Array("burst 1234".utf8))
        try PacketSigning.sign(&sample, with: signer.signingKey)
        let key = signer.signingPublicKey
        let verify = Timer.measure("verify") { blackHole(PacketSigning.isValid(sample, publicKey: key)) }
        print("  each hop verifies the sender's signature: \(format2(verify.nanosPerOp / 1000)) µs a message "
              + "(\(format1(verify.nanosPerOp / 1e9 * Double(got) / seconds * 100))% of this burst's time at each of B and C)")
        await a.stop()
    }

    /// Resident memory of a node that knows 1,000 peers (signed, verified announces).
    static func thousandPeers() async throws {
        var options = MeshNode.Options(nickname: "big")
        options.udp?.port = 0
        options.udp?.discovery = false
        let node = try MeshNode(identity: .generate(), options: options)
        let task = Task { await node.run(until: UInt64(Date().timeIntervalSince1970 * 1000) + 60_000) }
        defer { task.cancel() }
        guard let port = await node.port else { return }
        let sender = try UDPSocket(bindTo: .loopback(0))
        defer { sender.close() }
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        var announces: [[UInt8]] = []
        for i in 0..<1_000 {
            let id = Identity.generate()
            var p = try Announcement.make(identity: id, nickname: "peer\(i)", timestamp: now,
                                          directNeighbors: (0..<4).map { _ in PeerID(rawValue: .random(in: 0...UInt64.max)) })
            p.ttl = 5 // as if relayed from afar (and the signature still holds)
            announces.append(try p.encoded())
        }
        let before = residentBytes()
        for a in announces {
            sender.send(a, to: .loopback(port))
            try await Task.sleep(for: .microseconds(200))
        }
        let clock = ContinuousClock(), start = clock.now
        while await node.peers.count < 1_000, clock.now - start < .seconds(10) { try await Task.sleep(for: .milliseconds(10)) }
        let after = residentBytes()
        let known = await node.peers.count
        print("\nA node that knows \(known) peers: resident memory \(after / 1_048_576) MiB in all, +\(max(0, after - before) / 1024) KiB for the peers")
        await node.stop()
    }
}
