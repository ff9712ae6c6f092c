import Foundation
import StarlingAPIContract
import Logging
import StarlingCrypto
import StarlingMessenger
import StarlingMessengerAPI
import StarlingNode
import StarlingTransport
import StarlingWire
import StarlingStore

/// `starling-bench api`: what the daemon's API adds. A private message
/// between two nodes on 127.0.0.1, each with its messenger and store, sent
/// and received in process (the baseline) and through the API (POST
/// /v1/messages on one, the event stream of the other), in one run; then
/// events per second to one event-stream client and to ten.
enum APIBench {
    struct Side {
        let node: MeshNode
        let messenger: Messenger
        let directory: URL
    }

    static func side(_ name: String, peers: [UInt16]) async throws -> Side {
        let dir = base.appendingPathComponent("starling-api-bench-\(name)-\(UUID().uuidString)")
        var options = MeshNode.Options(nickname: name)
        options.udp?.port = 0
        options.udp?.discovery = false
        options.udp?.peers = peers.map { .loopback($0) }
        options.core.announceInterval = 1_000
        let identity = Identity.generate()
        let node = try MeshNode(identity: identity, options: options)
        let messenger = Messenger(node: node, directory: dir)
        try await messenger.open(try MessengerStore.open(directory: dir, protection: .keyFile(identity), iterations: 1_000))
        return Side(node: node, messenger: messenger, directory: dir)
    }

    /// Where the stores go: a RAM disk when there is one (the stores' durable
    /// writes, the same on both sides, then do not drown what the API adds).
    static var base: URL {
        let shm = URL(fileURLWithPath: "/dev/shm")
        if FileManager.default.isWritableFile(atPath: shm.path) { return shm }
        return FileManager.default.temporaryDirectory
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
    }

    static func run() async {
        print("starling-bench api (release; two nodes on 127.0.0.1, each with its messenger and store, stores in \(base.path))")
        do {
            try await oneCall()
            try await latency()
            try await eventRate()
        } catch {
            print("api bench failed: \(error)")
        }
    }

    static func ms(_ d: Duration) -> Double { Double(d.components.seconds) * 1e3 + Double(d.components.attoseconds) / 1e15 }

    /// One message at a time, `count` of them: from the send call to the
    /// receiver's event, in process and through the two APIs.
    static func latency(count: Int = 300) async throws {
        let a = try await side("a", peers: [])
        guard let aPort = await a.node.port else { return }
        let b = try await side("b", peers: [aPort])
        var logger = Logger(label: "starling.bench.api")
        logger.logLevel = .critical // (servers cancelled at the end say so at error level)
        let apiA = APIServer(client: LocalMessengerClient(messenger: a.messenger, identityStore: IdentityStore(directory: DataDirectory(explicit: a.directory.path))), configuration: .init(directory: a.directory))
        let apiB = APIServer(client: LocalMessengerClient(messenger: b.messenger, identityStore: IdentityStore(directory: DataDirectory(explicit: b.directory.path))), configuration: .init(directory: b.directory))
        let servers = try apiA.applications(logger: logger) + apiB.applications(logger: logger)
        let inProcessArrivals = Arrivals(), apiArrivals = Arrivals()
        let tasks: [Task<Void, Never>] = [
            Task { await a.node.run() }, Task { await b.node.run() },
            Task { await a.messenger.run() }, Task { await b.messenger.run() },
            Task { await apiA.record() },
            // B's events: seen in process at once, and logged for its API's event stream.
            Task {
                for await e in b.messenger.events {
                    if case let .privateMessage(_, record, _, _, _, _, _) = e { await inProcessArrivals.arrived(record.text) }
                    for a in APIEvent.of(e) { await apiB.log.append(a) }
                }
            },
        ] + servers.map { s in Task<Void, Never> { try? await s.run() } }
        defer { for t in tasks { t.cancel() } }
        let until = Date().addingTimeInterval(20)
        func met() async -> Bool {
            let (x, y) = (await a.node.peers, await b.node.peers)
            return !x.isEmpty && !y.isEmpty
        }
        while await !met(), Date() < until { try await Task.sleep(for: .milliseconds(20)) }
        guard let bPeer = await a.node.peers.keys.first, let conversation = await a.messenger.conversation(withPeer: bPeer) else {
            print("  the two nodes did not meet")
            return
        }
        _ = try await a.messenger.send("warm-up", to: conversation) // the Noise session
        _ = await inProcessArrivals.wait("warm-up", seconds: 10)

        var inProcess: [Double] = []
        for i in 0..<count {
            let text = "in process \(i)"
            let start = ContinuousClock.now
            _ = try await a.messenger.send(text, to: conversation)
            if await inProcessArrivals.wait(text, seconds: 5) { inProcess.append(ms(ContinuousClock.now - start)) }
        }

        let clientA = APIClient(host: "127.0.0.1", port: await apiA.port, token: apiA.configuration.token)
        let clientB = APIClient(host: "127.0.0.1", port: await apiB.port, token: apiB.configuration.token)
        let since = await apiB.log.lastSeq
        let following = Task {
            for try await data in clientB.events(since: since) {
                if let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any], o["event"] as? String == "privateMessage",
                   let text = o["text"] as? String {
                    await apiArrivals.arrived(text)
                }
            }
        }
        defer { following.cancel() }
        try await Task.sleep(for: .milliseconds(300))
        var throughAPI: [Double] = []
        for i in 0..<count {
            let text = "through the API \(i)"
            let start = ContinuousClock.now
            _ = try await clientA.post("/v1/messages", ["to": conversation.description, "text": text])
            if await apiArrivals.wait(text, seconds: 5) { throughAPI.append(ms(ContinuousClock.now - start)) }
        }
        let p = inProcess.sorted(), q = throughAPI.sorted()
        print(String(format: "  in process     %d of %d delivered: p50 %.3f ms, p99 %.3f ms", p.count, count, percentile(p, 0.5), percentile(p, 0.99)))
        print(String(format: "  through APIs   %d of %d delivered: p50 %.3f ms, p99 %.3f ms", q.count, count, percentile(q, 0.5), percentile(q, 0.99)))
        print(String(format: "  the API adds   p50 %+.3f ms, p99 %+.3f ms (goal: < 1 ms at p99)",
                     percentile(q, 0.5) - percentile(p, 0.5), percentile(q, 0.99) - percentile(p, 0.99)))
        for d in [a.directory, b.directory] { try? FileManager.default.removeItem(at: d) }
    }

    /// The API alone: the same question (who we are, what the node holds) asked
    /// `count` times in process and through the API, one at a time.
    static func oneCall(count: Int = 2_000) async throws {
        let a = try await side("call", peers: [])
        let local = LocalMessengerClient(messenger: a.messenger, identityStore: IdentityStore(directory: DataDirectory(explicit: a.directory.path)))
        let server = APIServer(client: local, configuration: .init(directory: a.directory))
        var quiet = Logger(label: "starling.bench.api")
        quiet.logLevel = .critical
        let serving = try server.applications(logger: quiet).map { s in Task<Void, Never> { try? await s.run() } }
        defer {
            for t in serving { t.cancel() }
            try? FileManager.default.removeItem(at: a.directory)
        }
        let remote = APIMessengerClient(APIClient(host: "127.0.0.1", port: await server.port, token: server.configuration.token))
        func time(_ body: () async throws -> Void) async rethrows -> [Double] {
            var out: [Double] = []
            for _ in 0..<count {
                let start = ContinuousClock.now
                try await body()
                out.append(ms(ContinuousClock.now - start))
            }
            return out.sorted()
        }
        _ = try await remote.summary() // warm-up
        let p = try await time { _ = try await local.summary() }
        let q = try await time { _ = try await remote.summary() }
        print(String(format: "  one call (status), %d each: in process p50 %.3f ms, p99 %.3f ms; through the API p50 %.3f ms, p99 %.3f ms: adds p50 %+.3f, p99 %+.3f ms",
                     count, percentile(p, 0.5), percentile(p, 0.99), percentile(q, 0.5), percentile(q, 0.99),
                     percentile(q, 0.5) - percentile(p, 0.5), percentile(q, 0.99) - percentile(p, 0.99)))
    }

    /// Events per second from the log to 1 and to 10 event-stream clients.
    static func eventRate(events: Int = 20_000) async throws {
        let a = try await side("events", peers: [])
        var c = APIServer.Configuration(directory: a.directory)
        c.eventCapacity = events + 10
        let server = APIServer(client: LocalMessengerClient(messenger: a.messenger, identityStore: IdentityStore(directory: DataDirectory(explicit: a.directory.path))), configuration: c)
        var quiet = Logger(label: "starling.bench.api")
        quiet.logLevel = .critical
        let services = try server.applications(logger: quiet)
        let serving = services.map { s in Task<Void, Never> { try? await s.run() } }
        defer { for t in serving { t.cancel() } }
        let client = APIClient(host: "127.0.0.1", port: await server.port, token: c.token)
        for clients in [1, 10] {
            let since = await server.log.lastSeq
            let start = ContinuousClock.now
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<clients {
                    group.addTask {
                        var n = 0
                        for try await _ in client.events(since: since) {
                            n += 1
                            if n == events { break }
                        }
                        return n
                    }
                }
                let object = APIEvent.message(.init(from: "0123456789abcdef", nickname: "bench", text: "an event", hops: 1, timestamp: 1, history: nil))
                for _ in 0..<events { await server.log.append(object) }
                var total = 0
                for try await n in group { total += n }
                let d = ContinuousClock.now - start
                let seconds = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
                print(String(format: "  %2d client%@: %d events each in %.2f s: %.0f events/s to each, %.0f in all", clients, clients == 1 ? " " : "s",
                             total / clients, seconds, Double(total / clients) / seconds, Double(total) / seconds))
            }
        }
        try? FileManager.default.removeItem(at: a.directory)
    }

    actor Arrivals {
        var seen: Set<String> = []
        var waiters: [String: CheckedContinuation<Bool, Never>] = [:]
        func arrived(_ text: String) {
            seen.insert(text)
            waiters.removeValue(forKey: text)?.resume(returning: true)
        }
        func wait(_ text: String, seconds: Double) async -> Bool {
            if seen.contains(text) { return true }
            let timeout = Task { [weak self] in
                try? await Task.sleep(for: .seconds(seconds))
                await self?.expire(text)
            }
            defer { timeout.cancel() }
            return await withCheckedContinuation { waiters[text] = $0 }
        }
        func expire(_ text: String) { waiters.removeValue(forKey: text)?.resume(returning: false) }
    }
}
