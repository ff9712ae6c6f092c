import Foundation
import StarlingTestSupport
import Testing

/// Issue 52, item 1: a node with a Ya OK server spun more than a core for as
/// long as it ran (the Ya OK client's wake flag re-armed itself). A node with
/// every off-mesh transport on — the Ya OK server, Nostr through a SOCKS5
/// proxy, a courier mailbox — must idle as cheaply as one without them: its
/// CPU time over 20 s is read from /proc beside a plain node's, in the same
/// window, as a ratio. `starling-bench node` prints the same figures.
@Suite(.serialized, .usesProcesses) struct IdleProcessTests {
    /// CPU seconds (user + system) of a process, from /proc.
    static func cpuSeconds(_ p: LiveProcess) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(p.process.processIdentifier)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    @Test func aNodeWithEveryOffMeshTransportIdlesAsCheaplyAsOneWithout() async throws {
        let dbDir = ContactCommandTests.temporaryDirectory("idle-server")
        try FileManager.default.createDirectory(atPath: dbDir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dbDir) }
        let (server, serverPort) = try await ServerProcessTests.server(db: dbDir + "/relay.sqlite", duration: 180)
        defer { server.stop() }
        let (relay, relayPort, _) = try await NostrProcessTests.relay()
        defer { relay.stop() }
        let (proxy, proxyPort) = try await NostrProcessTests.socks()
        defer { proxy.stop() }

        let offMesh = ["--server", "127.0.0.1:\(serverPort)", "--courier-mailbox", "127.0.0.1:\(serverPort)",
                       "--nostr", "--nostr-relay", "ws://127.0.0.1:\(relayPort)", "--proxy", "127.0.0.1:\(proxyPort)"]
        // As README shows them (default announce interval), each in a data directory of its own.
        func listen(_ name: String, _ extra: [String]) throws -> LiveProcess {
            try LiveProcess(["listen", "--json", "--no-discovery", "--port", "0", "--name", name, "--duration", "120",
                             "--data-dir", ContactCommandTests.temporaryDirectory(name)] + extra)
        }
        let plain = try listen("idlePlain", []), all = try listen("idleAll", offMesh)
        defer { plain.stop(); all.stop() }
        let daemonDir = ContactCommandTests.temporaryDirectory("idleDaemon")
        let daemon = try LiveProcess(["daemon", "--no-discovery", "--port", "0", "--name", "idleDaemon", "--data-dir", daemonDir] + offMesh)
        defer { daemon.stop() }

        // Ready: each transport said it is up (the Ya OK server registered us, Nostr connected through the proxy).
        #expect(await all.waitForText("registered with the Ya OK server", seconds: 60), "\(all.text)")
        #expect(await all.waitForText("nostr: connected", seconds: 60), "\(all.text)")
        #expect(await plain.waitFor(seconds: 60) { $0["event"] as? String == "started" } != nil, "\(plain.text)")
        #expect(await daemon.waitForText("API on", seconds: 60), "\(daemon.text)")

        let before = try #require([plain, all, daemon].map(Self.cpuSeconds) as? [Double])
        try await Task.sleep(for: .seconds(20))
        let after = try #require([plain, all, daemon].map(Self.cpuSeconds) as? [Double])
        let used = zip(after, before).map { $0 - $1 }
        let (plainCPU, allCPU, daemonCPU) = (used[0], used[1], used[2])
        print("idle over 20 s: plain listen \(plainCPU) s, listen with every off-mesh transport \(allCPU) s, daemon with them \(daemonCPU) s")
        // Ratios against the plain node, with a floor of 0.3 s (1.5% of a core) for a loaded machine's noise.
        // Before the fix: about 24 s of CPU in 20 s.
        #expect(allCPU <= max(3 * plainCPU, 0.3), "listen with every transport on used \(allCPU) s of CPU in 20 s idle (plain: \(plainCPU) s)")
        #expect(daemonCPU <= max(3 * plainCPU, 0.3), "the daemon with every transport on used \(daemonCPU) s of CPU in 20 s idle (plain: \(plainCPU) s)")
        // Positive control: the transports really were up through the window.
        #expect(all.process.isRunning && daemon.process.isRunning)
        #expect(!all.text.contains("nostr: lost"), "\(all.text)")
    }
}
