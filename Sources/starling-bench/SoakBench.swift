import Foundation
import StarlingEmbeddedNetwork
import StarlingMesh
import StarlingNode
import StarlingNodeCore
import StarlingTransport
#if canImport(Glibc)
import Glibc
#endif

/// `starling-bench soak`: long runs with churn (issue 37, item 6).
///
/// - In process: ``Soak``, 50 node cores on the virtual clock for 24 hours
///   (`STARLING_SOAK_HOURS` to change), churn every minute; a line an hour:
///   delivery, the largest tables, this process's resident memory.
/// - Real processes: five `starling listen` on loopback for 10 minutes
///   (`STARLING_SOAK_MINUTES`), this process a sixth node that sends; two of
///   the five restart in turn every minute. Resident memory of the three that
///   run throughout, at the first minute and at the end.
enum SoakBench {
    static func run() async {
        print("starling-bench soak (release)")
        let environment = ProcessInfo.processInfo.environment
        if environment["STARLING_SOAK_HOURS"] != "0" { virtual() }
        if environment["STARLING_SOAK_MINUTES"] != "0" { do { try await processes() } catch { print("soak with processes failed: \(error)") } }
    }

    static func megabytes(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }

    static func virtual() {
        let hours = Double(ProcessInfo.processInfo.environment["STARLING_SOAK_HOURS"] ?? "") ?? 24
        var c = Soak.Configuration()
        c.duration = Millis(hours * 3_600_000)
        print("\nIn process: \(c.nodes) node cores, \(hours) virtual hours, a public message every \(c.publicEvery / 1000) s, "
              + "a private one every \(c.privateEvery / 1000) s; a minute's churn: \(c.awayPerMinute * 100)% go away for 1–10 min, "
              + "\(c.restartPerMinute * 100)% restart")
        let watched = ["node.present", "node.sessions", "node.publicShown", "node.privateShown", "router.dedup", "router.gossip",
                       "router.gossipBytes", "router.routes", "router.pendingRelays", "node.unacknowledged"]
        print("  (a line an hour, once its messages had the next hour to arrive; RSS is the process's as the line is printed)")
        print("  hour  private  public  churn   RSS        " + watched.map { $0.split(separator: ".").last! }.joined(separator: " "))
        let started = ContinuousClock.now
        var soak = Soak(c)
        var rss: [Int] = []
        let samples = soak.run { s in
            let r = NodeBench.residentBytes()
            rss.append(r)
            let line = String(format: "  %4.0f  %6.1f%%  %5.1f%%  %5d   ", Double(s.at) / 3_600_000, s.privateRatio * 100, s.publicRatio * 100, s.churn)
            print(line + megabytes(r).padding(toLength: 11, withPad: " ", startingAt: 0) + watched.map { String(s.largest[$0] ?? 0) }.joined(separator: " "))
        }
        let elapsed = ContinuousClock.now - started
        // Ratios are settled a period later: print them again, with the caps.
        let over = samples.flatMap { s in s.largest.compactMap { name, size in Soak.caps[name].flatMap { size > $0 ? "\(name) \(size) > \($0) at \(s.at / 3_600_000) h" : nil } } }
        let firstQuarter = samples.prefix(max(1, samples.count / 4)), lastQuarter = samples.suffix(max(1, samples.count / 4))
        func mean(_ xs: ArraySlice<Soak.Sample>, _ f: (Soak.Sample) -> Double) -> Double { xs.map(f).reduce(0, +) / Double(max(1, xs.count)) }
        print(String(format: "  delivery, first quarter → last: private %.1f%% → %.1f%%, public %.1f%% → %.1f%%",
                     mean(firstQuarter) { $0.privateRatio } * 100, mean(lastQuarter) { $0.privateRatio } * 100,
                     mean(firstQuarter) { $0.publicRatio } * 100, mean(lastQuarter) { $0.publicRatio } * 100))
        print("  tables above their caps: \(over.isEmpty ? "none" : over.joined(separator: "; "))")
        if let first = rss.first, let last = rss.last {
            print("  resident memory: \(megabytes(first)) after the first period, \(megabytes(last)) at the end, largest \(megabytes(rss.max() ?? 0))")
        }
        print("  ran in \(elapsed)")
    }

    static func processes() async throws {
        let minutes = Double(ProcessInfo.processInfo.environment["STARLING_SOAK_MINUTES"] ?? "") ?? 10
        print("\nFive `starling listen` processes in a ring on loopback for \(minutes) minutes, this process a sixth node linked to "
              + "two of them, sending a public message a second and a private one every 5 s; nodes 4 and 5 restart in turn every minute.")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("starling-soak-\(getpid())").path
        let ports = (0..<5).map { _ in PlainTCP.freePort() }
        func start(_ i: Int) throws -> NodeBench.Listener {
            try NodeBench.Listener(["listen", "--no-discovery", "--port", String(ports[i]), "--json", "--name", "n\(i + 1)",
                                    "--data-dir", dir + "/n\(i + 1)", "--duration", String(Int(minutes * 60) + 120),
                                    "--peer", "127.0.0.1:\(ports[(i + 4) % 5])", "--peer", "127.0.0.1:\(ports[(i + 1) % 5])"])
        }
        var listeners = try (0..<5).map(start)
        defer { for l in listeners { l.stop() } }
        let me = try NodeBench.node("sender", peers: [ports[0], ports[2]], jitterFree: false)
        let runner = Task { await me.run() }
        defer { runner.cancel() }
        let delivered = DeliveredCount()
        let reader = Task { for await e in me.events { if case .delivered = e { delivered.add() } } }
        defer { reader.cancel() }
        let clock = ContinuousClock()
        let t0 = clock.now
        while await me.peers.count < 5, clock.now - t0 < .seconds(60) { try await Task.sleep(for: .milliseconds(100)) }
        print("  the mesh formed in \(clock.now - t0) (\(await me.peers.count) peers seen)")
        var publicSent = 0, privateSent = 0, restarts = 0
        var rssAtMinute: [Int] = []
        let end = clock.now + .seconds(minutes * 60)
        var second = 0
        while clock.now < end {
            try await Task.sleep(for: .seconds(1))
            second += 1
            try await me.sendPublic("s\(second)")
            publicSent += 1
            if second % 5 == 0, let peer = await me.peer(named: "n\(1 + second / 5 % 3)") {
                _ = try? await me.sendPrivate("p\(second)", to: peer)
                privateSent += 1
            }
            if second == 60 { rssAtMinute = (0..<3).map { HostileBench.residentBytes(pid: listeners[$0].process.processIdentifier) } }
            if second % 60 == 0 {
                let i = 3 + (second / 60) % 2
                listeners[i].stop()
                listeners[i].process.waitUntilExit()
                listeners[i] = try start(i)
                restarts += 1
            }
        }
        try await Task.sleep(for: .seconds(10)) // the last messages land
        let rssAtEnd = (0..<3).map { HostileBench.residentBytes(pid: listeners[$0].process.processIdentifier) }
        print("  sent \(publicSent) public, \(privateSent) private; \(restarts) restarts")
        for i in 0..<3 {
            print("  n\(i + 1) (ran throughout): heard \(listeners[i].arrived) of \(publicSent) public (\(String(format: "%.1f", Double(listeners[i].arrived) / Double(max(1, publicSent)) * 100))%); "
                  + "resident \(rssAtMinute.indices.contains(i) ? megabytes(rssAtMinute[i]) : "–") at 1 min → \(megabytes(rssAtEnd[i])) at the end")
        }
        print("  private messages acknowledged: \(delivered.value) of \(privateSent)")
        await me.stop()
    }

    final class DeliveredCount: @unchecked Sendable {
        private let lock = NSLock()
        private var n = 0
        func add() { lock.withLock { n += 1 } }
        var value: Int { lock.withLock { n } }
    }
}
