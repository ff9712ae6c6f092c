import Crypto
import Foundation
import StarlingCrypto
import StarlingMesh
import StarlingNode
import StarlingTransport
import StarlingWire

/// `starling-bench hostile`: one real `starling listen` (the victim) on
/// 127.0.0.1, an honest peer (alice, in this process) linked to it, and an
/// attacker's UDP socket. For each attack: the victim's resident memory before
/// → peak → after, its CPU seconds, and whether alice's signed public message
/// and her Noise private message arrive during the flood and after it.
enum HostileBench {
    /// A `starling listen --json` process and what it printed.
    final class Victim: @unchecked Sendable {
        let process = Process()
        private let lock = NSLock()
        private var texts: Set<String> = []
        private(set) var port: UInt16 = 0
        private(set) var peerID = PeerID(rawValue: 0)
        private var peers: Set<String> = []

        init(dataDir: String) throws {
            process.executableURL = NodeBench.starlingBinary
            process.arguments = ["listen", "--no-discovery", "--port", "0", "--json", "--name", "victim", "--data-dir", dataDir,
                                 "--duration", "600"]
            NodeBench.readJSONLines(of: process) { [weak self] e in
                guard let self else { return }
                self.lock.withLock {
                    switch e["event"] as? String {
                    case "started":
                        self.port = UInt16(e["port"] as? Int ?? 0)
                        self.peerID = PeerID(hex: e["peerID"] as? String ?? "") ?? self.peerID
                    case "message", "privateMessage": if let t = e["text"] as? String { self.texts.insert(t) }
                    case "peer": if let n = e["nickname"] as? String { self.peers.insert(n) }
                    default: break
                    }
                }
            }
            try process.run()
        }

        func got(_ text: String) -> Bool { lock.withLock { texts.contains(text) } }
        func knows(_ nickname: String) -> Bool { lock.withLock { peers.contains(nickname) } }
        var pid: Int32 { process.processIdentifier }
        func stop() { if process.isRunning { process.terminate() } }
    }

    static func residentBytes(pid: Int32) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return fields.count > 1 ? (Int(fields[1]) ?? 0) * 4096 : 0
    }

    static func waitFor(seconds: Double, _ condition: () async -> Bool) async -> Bool {
        let end = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < end {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return await condition()
    }

    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    struct Attack {
        var name: String
        /// Datagrams to send, made when the attack starts.
        var datagrams: () throws -> [[UInt8]]
        /// Datagrams per second (0: as fast as the socket takes them).
        var rate: Int
    }

    static func run() async {
        print("starling-bench hostile (release; a `starling listen` on 127.0.0.1 under attack)")
        do { try await attacks() } catch { print("hostile bench failed: \(error)") }
    }

    static func attacks() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("starling-bench-hostile-\(getpid())").path
        let victim = try Victim(dataDir: dir + "/victim")
        defer { victim.stop() }
        guard await waitFor(seconds: 30, { victim.port != 0 }) else { print("  the victim did not start"); return }
        // Alice: an honest peer, linked to the victim.
        var options = MeshNode.Options(nickname: "alice")
        options.udp?.port = 0
        options.udp?.discovery = false
        options.udp?.peers = [.loopback(victim.port)]
        let aliceIdentity = Identity.generate()
        let alice = try MeshNode(identity: aliceIdentity, options: options)
        let aliceRun = Task { await alice.run() }
        defer { aliceRun.cancel() }
        guard await waitFor(seconds: 30, { await alice.peers.contains { $0.value.nickname == "victim" } && victim.knows("alice") }) else {
            print("  alice and the victim did not link"); return
        }
        let victimID = victim.peerID
        // The attacker: one socket; it announces itself first, as anyone nearby can.
        let attacker = try UDPSocket(bindTo: .loopback(0))
        defer { attacker.close() }
        let mallory = Identity.generate()
        func announceMallory() throws {
            attacker.send(try Announcement.make(identity: mallory, nickname: "mallory", timestamp: now()).encoded(), to: .loopback(victim.port))
        }
        try announceMallory()
        _ = await waitFor(seconds: 10) { victim.knows("mallory") }

        func signed(_ text: String, by id: Identity, at time: UInt64, version: UInt8 = 1) throws -> [UInt8] {
            var p = Packet(version: version, type: .message, ttl: 7, timestamp: time, senderID: id.peerID, payload: Array(text.utf8))
            try PacketSigning.sign(&p, with: id.signingKey)
            return try p.encoded()
        }
        let attacks: [Attack] = [
            Attack(name: "forged public messages under alice's ID (10,000: unsigned, other key, bit-flipped)", datagrams: {
                let other = Identity.generate()
                let genuine = try signed(String(repeating: "genuine alice ", count: 8), by: aliceIdentity, at: now())
                return try (0..<10_000).map { i in
                    switch i % 3 {
                    case 0: return try Packet(type: .message, ttl: 7, timestamp: now(), senderID: aliceIdentity.peerID,
                                              payload: Array("unsigned \(i)".utf8)).encoded()
                    case 1:
                        var p = Packet(type: .message, ttl: 7, timestamp: now(), senderID: aliceIdentity.peerID, payload: Array("other \(i)".utf8))
                        try PacketSigning.sign(&p, with: other.signingKey)
                        return try p.encoded()
                    default:
                        var b = genuine
                        let bit = 14 * 8 + (i % ((b.count - 14) * 8))
                        b[bit / 8] ^= 1 << (bit % 8)
                        return b
                    }
                }
            }, rate: 2_000),
            Attack(name: "signed messages 10 minutes old and a day ahead (10,000)", datagrams: {
                try (0..<10_000).map { i in try signed("stale \(i)", by: mallory, at: i % 2 == 0 ? now() - 600_000 : now() + 86_400_000) }
            }, rate: 2_000),
            Attack(name: "compressed messages claiming 1 MiB inflated (2,000) and 120 KB ones (2,000)", datagrams: {
                var out: [[UInt8]] = []
                for i in 0..<4_000 {
                    let size = i % 2 == 0 ? 1 << 20 : 120_000
                    var p = Packet(version: 2, type: .message, ttl: 7, timestamp: now(), senderID: mallory.peerID,
                                   payload: Array("\(i) ".utf8) + [UInt8](repeating: 0x61, count: size))
                    try PacketSigning.sign(&p, with: mallory.signingKey)
                    out.append(try p.encoded())
                }
                return out
            }, rate: 1_000),
            Attack(name: "Noise first messages from peer IDs that never announced (100,000)", datagrams: {
                var hs = try HandshakeState(protocol: .bitchat, initiator: true, localStatic: Identity.generate().noiseKey)
                let m1 = try hs.writeMessage()
                return try (0..<100_000).map { i in
                    try NoisePackets.handshake(m1, from: PeerID(rawValue: UInt64(i) &* 0x9E37_79B9 &+ 1), to: victimID, timestamp: now()).encoded()
                }
            }, rate: 10_000),
            Attack(name: "1,000 signed announces of 100 identities, 10 changing neighbours each, 200 a second", datagrams: {
                let fakes = (0..<100).map { _ in Identity.generate() }
                return try (0..<1_000).map { i in
                    try Announcement.make(identity: fakes[i % 100], nickname: "fake\(i % 100)", timestamp: now() + UInt64(i / 100),
                                          directNeighbors: (0..<10).map { _ in PeerID(rawValue: .random(in: 1...UInt64.max)) }).encoded()
                }
            }, rate: 200),
            Attack(name: "60 KB public messages in one datagram (1,000)", datagrams: {
                try (0..<1_000).map { i in
                    var p = Packet(type: .message, ttl: 7, timestamp: now(), senderID: mallory.peerID,
                                   payload: Array("\(i) ".utf8) + (0..<60_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 32) % 94 + 32 },
                                   compress: false)
                    try PacketSigning.sign(&p, with: mallory.signingKey)
                    return try p.encoded()
                }
            }, rate: 500),
            Attack(name: "signed 60 KB public messages compressed into ~200-byte datagrams, 500 a second (1,000)", datagrams: {
                try (0..<1_000).map { i in try signed("\(i) " + String(repeating: "x", count: 60_000), by: mallory, at: now()) }
            }, rate: 500),
            Attack(name: "messages claiming the victim's own sender ID (10,000)", datagrams: {
                try (0..<10_000).map { i in try Packet(type: .message, ttl: 7, timestamp: now(), senderID: victimID,
                                                       payload: Array("me \(i)".utf8)).encoded() }
            }, rate: 2_000),
        ]
        print("\n| attack | RSS before → peak → after (MiB) | victim CPU (s) | honest traffic during / after |")
        print("|---|---|---|---|")
        var round = 0
        for attack in attacks {
            round += 1
            try announceMallory()
            let datagrams = try attack.datagrams()
            try await Task.sleep(for: .milliseconds(500))
            let before = residentBytes(pid: victim.pid)
            let cpu0 = NodeBench.cpuSeconds(pid: victim.pid) ?? 0
            var peak = before
            let start = ContinuousClock.now
            // The flood, paced, and alice's messages in the middle of it.
            let during = (pub: "alice public during \(round)", priv: "alice private during \(round)")
            for (i, d) in datagrams.enumerated() {
                attacker.send(d, to: .loopback(victim.port))
                if i == datagrams.count / 2 {
                    try await alice.sendPublic(during.pub)
                    try await alice.sendPrivate(during.priv, to: victimID)
                }
                if attack.rate > 0, i % max(1, attack.rate / 100) == 0 {
                    // 100 slices a second: sleep until this datagram's time.
                    let due = start + .milliseconds(i * 1000 / attack.rate)
                    if ContinuousClock.now < due { try await Task.sleep(until: due) }
                    peak = max(peak, residentBytes(pid: victim.pid))
                }
                if i % 2_000 == 0 { try announceMallory() }
            }
            let gotDuring = await waitFor(seconds: 15) { victim.got(during.pub) && victim.got(during.priv) }
            for _ in 0..<10 {
                peak = max(peak, residentBytes(pid: victim.pid))
                try await Task.sleep(for: .milliseconds(100))
            }
            let cpu1 = NodeBench.cpuSeconds(pid: victim.pid) ?? 0
            let after = (pub: "alice public after \(round)", priv: "alice private after \(round)")
            let sentAfter = ContinuousClock.now
            try await alice.sendPublic(after.pub)
            try await alice.sendPrivate(after.priv, to: victimID)
            let gotAfter = await waitFor(seconds: 15) { victim.got(after.pub) && victim.got(after.priv) }
            let shownIn = (ContinuousClock.now - sentAfter).components
            let shownSeconds = Double(shownIn.seconds) + Double(shownIn.attoseconds) / 1e18
            let settled = residentBytes(pid: victim.pid)
            func mib(_ b: Int) -> String { format1(Double(b) / 1_048_576) }
            print("| \(attack.name) | \(mib(before)) → \(mib(peak)) → \(mib(settled)) (+\(mib(max(0, peak - before)))) | "
                  + "\(format2(cpu1 - cpu0)) | \(gotDuring ? "yes" : "NO") / \(gotAfter ? "yes, both shown in \(format2(shownSeconds)) s" : "NO") |")
        }
        print("\ngoals: RSS growth < 64 MiB under every flood; the 1,000 announces < 1 s of CPU; honest traffic arrives during and after each, after within 1 s.")
        await alice.stop()
    }
}
