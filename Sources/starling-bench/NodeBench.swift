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
        options.port = 0
        options.discovery = false
        options.announceInterval = 1_000
        options.peers = peers.map { .loopback($0) }
        if jitterFree { options.policy = FloodingPolicy(jitter: 0) }
        return try MeshNode(identity: .generate(), options: options)
    }

    static func run() async {
        print("starling-bench node (release; three nodes in one process, each with its own UDP socket on 127.0.0.1)")
        do {
            try await line()
            try await thousandPeers()
        } catch {
            print("node bench failed: \(error)")
        }
    }

    /// A – B – C, relay jitter zero: latency across 2 hops and messages per second.
    static func line() async throws {
        let b = try node("b", peers: [], jitterFree: true)
        let bPort = await b.port
        let a = try node("a", peers: [bPort], jitterFree: true)
        let c = try node("c", peers: [bPort], jitterFree: true)
        let tasks = [a, b, c].map { n in Task { await n.run(until: UInt64(Date().timeIntervalSince1970 * 1000) + 60_000) } }
        defer { tasks.forEach { $0.cancel() } }
        let clock = ContinuousClock()
        // Wait until A knows C (2 hops) — the line is up.
        let up = clock.now
        while await a.peers.count < 2, clock.now - up < .seconds(10) { try await Task.sleep(for: .milliseconds(10)) }
        guard await a.peers.count >= 2 else { print("  line did not form"); return }

        final class Arrivals: @unchecked Sendable {
            let lock = NSLock()
            var at: [String: ContinuousClock.Instant] = [:]
            func record(_ text: String, _ t: ContinuousClock.Instant) { lock.lock(); at[text] = t; lock.unlock() }
            var count: Int { lock.lock(); defer { lock.unlock() }; return at.count }
            func get(_ text: String) -> ContinuousClock.Instant? { lock.lock(); defer { lock.unlock() }; return at[text] }
        }
        let arrivals = Arrivals()
        let listener = Task {
            for await event in c.events {
                if case let .message(_, _, text, _, _) = event { arrivals.record(text, clock.now) }
            }
        }
        defer { listener.cancel() }

        // Latency: one message at a time.
        var latencies: [Double] = []
        for i in 0..<200 {
            let text = "latency \(i)"
            let sent = clock.now
            try await a.sendPublic(text)
            let limit = clock.now
            while arrivals.get(text) == nil, clock.now - limit < .seconds(1) { try await Task.sleep(for: .microseconds(200)) }
            if let got = arrivals.get(text) {
                let d = got - sent
                latencies.append(Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15)
            }
        }
        latencies.sort()
        func p(_ q: Double) -> Double { latencies.isEmpty ? .nan : latencies[min(latencies.count - 1, Int(Double(latencies.count - 1) * q))] }
        print("\nA → B → C, relay jitter 0: end-to-end latency over 2 hops (\(latencies.count) of 200 arrived)")
        print("  p50 \(format2(p(0.5))) ms   p99 \(format2(p(0.99))) ms   (goal: p99 < 20 ms)")

        // Throughput: a burst, counted at C.
        let before = arrivals.count
        let n = 2_000
        let start = clock.now
        for i in 0..<n { try await a.sendPublic("burst \(i)") }
        var last = start
        var seen = 0
        while arrivals.count - before < n, clock.now - last < .seconds(2) {
            if arrivals.count - before > seen { seen = arrivals.count - before; last = clock.now }
            try await Task.sleep(for: .milliseconds(2))
        }
        let elapsed = last - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let got = arrivals.count - before
        print("  burst of \(n) signed public messages sent as fast as A signs them: \(got) arrived at C in \(format2(seconds)) s → \(Int(Double(got) / seconds)) messages/s (the rest overflowed socket buffers)")
        for node in [a, b, c] { await node.stop() }
    }

    /// Resident memory of a node that knows 1,000 peers (signed, verified announces).
    static func thousandPeers() async throws {
        var options = MeshNode.Options(nickname: "big")
        options.port = 0
        options.discovery = false
        let node = try MeshNode(identity: .generate(), options: options)
        let task = Task { await node.run(until: UInt64(Date().timeIntervalSince1970 * 1000) + 60_000) }
        defer { task.cancel() }
        let port = await node.port
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
