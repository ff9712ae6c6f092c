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

    /// An idle `starling relay` (loopback discovery on, no peers) against the
    /// same wake-up pattern as the old runtime, both over 60 s, side by side.
    static func idle() async throws {
        let seconds = 60.0
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("starling-bench-idle-\(getpid())").path
        let relay = Process()
        relay.executableURL = starlingBinary
        relay.arguments = ["relay", "--name", "idle", "--data-dir", dir, "--duration", String(seconds + 10)]
        relay.standardOutput = FileHandle.nullDevice
        relay.standardError = FileHandle.nullDevice
        let poll = Process()
        poll.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        poll.arguments = ["poll-loop", String(seconds + 10)]
        try relay.run()
        try poll.run()
        defer {
            if relay.isRunning { relay.terminate() }
            if poll.isRunning { poll.terminate() }
        }
        // Start-up (key file, sockets) is not idling: measure from 3 s in.
        try await Task.sleep(for: .seconds(3))
        let r0 = cpuSeconds(pid: relay.processIdentifier), p0 = cpuSeconds(pid: poll.processIdentifier)
        try await Task.sleep(for: .seconds(seconds))
        let r1 = cpuSeconds(pid: relay.processIdentifier), p1 = cpuSeconds(pid: poll.processIdentifier)
        guard let r0, let r1, let p0, let p1 else { print("  idle: could not read /proc"); return }
        let relayShare = (r1 - r0) / seconds * 100, pollShare = (p1 - p0) / seconds * 100
        print("\nAn idle `starling relay` (discovery on, no peers) over \(Int(seconds)) s:")
        print("  relay:            \(format2(r1 - r0)) s of CPU = \(format3(relayShare))% of a core   (goal ≤ 0.1%)")
        print("  10 ms poll loop:  \(format2(p1 - p0)) s of CPU = \(format3(pollShare))% of a core   (the old runtime's wake pattern, measured now)")
        print("  relay ÷ poll loop: \(pollShare > 0 ? format2(relayShare / pollShare) : "–")×   (the old runtime measured 1.2–2.2% on this kind of machine)")
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
