import Foundation
import StarlingBulk
import StarlingBulkTransport
import StarlingWire
#if canImport(Glibc)
import Glibc
#endif

/// `starling-bench bulk`, second part: the same 100 MiB between two network
/// namespaces joined by a veth pair whose sender side is held to a LAN's rate
/// (`tc tbf`, 1 Gbit/s: a wired LAN, the best Wi-Fi), a plain TCP copy against
/// the bulk transfer. Each end is a child process (`ip netns exec`); each
/// receiver times itself from its first byte to its last. Needs root and
/// iproute2; without them it says so and measures nothing.
enum BulkLinkBench {
    static let rate = "1gbit"

    static func run(file: URL, megabytes: Int) async {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") || FileManager.default.isExecutableFile(atPath: "/sbin/ip") else {
            print("\nOver a LAN-rate link: not measured (needs root and iproute2 for two network namespaces)")
            return
        }
        let tag = String(getpid() % 100_000)
        let (a, b) = ("stba\(tag)", "stbb\(tag)")
        defer { _ = sh("ip netns del \(a); ip netns del \(b)") }
        let setup = """
            ip netns add \(a) && ip netns add \(b) && \
            ip link add va\(tag) netns \(a) type veth peer name vb\(tag) netns \(b) && \
            ip -n \(a) addr add 10.203.0.1/24 dev va\(tag) && ip -n \(b) addr add 10.203.0.2/24 dev vb\(tag) && \
            ip -n \(a) link set va\(tag) up && ip -n \(b) link set vb\(tag) up && ip -n \(a) link set lo up && ip -n \(b) link set lo up && \
            ip netns exec \(a) tc qdisc add dev va\(tag) root tbf rate \(rate) burst 512kb latency 20ms
            """
        guard sh(setup) == 0 else {
            print("\nOver a LAN-rate link: not measured (the namespaces could not be made)")
            return
        }
        let me = CommandLine.arguments[0].hasPrefix("/") ? CommandLine.arguments[0]
            : FileManager.default.currentDirectoryPath + "/" + CommandLine.arguments[0]
        let dir = file.deletingLastPathComponent()
        do {
            // Plain: a receiver in b listens; a sender in a connects and writes the file.
            let receiver = try child(["ip", "netns", "exec", b, me, "link-plain-receive", "5001", dir.appendingPathComponent("link-plain.bin").path])
            _ = receiver.readLine() // "ready"
            let sender = try child(["ip", "netns", "exec", a, me, "link-plain-send", file.path, "10.203.0.2", "5001"])
            let plain = Double(receiver.readLine() ?? "") ?? 0
            sender.process.waitUntilExit()
            receiver.process.waitUntilExit()
            // Bulk: the sender in a offers the file; the receiver in b fetches it.
            let server = try child(["ip", "netns", "exec", a, me, "link-bulk-serve", file.path, "10.203.0.1"])
            let offer = server.readLine() ?? ""
            let fetch = try child(["ip", "netns", "exec", b, me, "link-bulk-fetch", offer, dir.appendingPathComponent("link-bulk").path])
            let bulk = Double(fetch.readLine() ?? "") ?? 0
            fetch.process.waitUntilExit()
            server.process.terminate()
            server.process.waitUntilExit()
            let mb = Double(megabytes << 20) / 1_000_000
            print("\n\(megabytes) MiB between two network namespaces, a veth pair held to \(rate)/s (tc tbf):")
            guard plain > 0, bulk > 0 else {
                print("  a run failed: plain \(plain) s, bulk \(bulk) s")
                return
            }
            print("  plain TCP copy:      \(BulkBench.fmt(mb / plain)) MB/s")
            print("  bulk (sealed, acked, hashed, renamed): \(BulkBench.fmt(mb / bulk)) MB/s")
            print("  bulk ÷ plain: \(BulkBench.fmt(plain / bulk))×   (goal ≥ 0.8×)")
        } catch {
            print("\nOver a LAN-rate link: failed: \(error)")
        }
    }

    @discardableResult
    static func sh(_ script: String) -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", script + " 2>/dev/null"]
        do { try p.run() } catch { return -1 }
        p.waitUntilExit()
        return p.terminationStatus
    }

    final class Child: @unchecked Sendable {
        let process: Process
        let out: FileHandle
        var pending = Data()
        init(_ process: Process, _ out: FileHandle) {
            self.process = process
            self.out = out
        }
        /// The child's next line (nil at its end), waiting at most 5 minutes in all.
        func readLine() -> String? {
            let deadline = Date().addingTimeInterval(300)
            while Date() < deadline {
                if let nl = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[..<nl], as: UTF8.self)
                    pending.removeSubrange(...nl)
                    return line
                }
                let d = out.availableData
                if d.isEmpty { return nil }
                pending.append(d)
            }
            return nil
        }
    }

    static func child(_ arguments: [String]) throws -> Child {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = arguments
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        return Child(p, pipe.fileHandleForReading)
    }

    // MARK: The children

    /// `link-plain-receive PORT OUT`: "ready", then, after one connection's
    /// bytes, the seconds from its first byte to its end.
    static func plainReceive(_ args: [String]) {
        guard args.count == 2, let port = UInt16(args[0]) else { return }
        let (listener, _) = PlainTCP.bound(host: "0.0.0.0", port: port)
        listen(listener, 1)
        print("ready")
        let fd = accept(listener, nil, nil)
        guard let first = try? PlainTCP.receive(fd, into: args[1]) else { return }
        print(String(format: "%.4f", Date().timeIntervalSince(first)))
    }

    /// `link-plain-send FILE HOST PORT`: the file into one connection.
    static func plainSend(_ args: [String]) {
        guard args.count == 3, let port = UInt16(args[2]), let fd = PlainTCP.connected(args[1], port) else { return }
        PlainTCP.send(args[0], to: fd)
    }

    /// `link-bulk-serve FILE HOST`: offers the file on HOST (a line: the offer,
    /// hex), and serves it until terminated.
    static func bulkServe(_ args: [String]) async {
        guard args.count == 2 else { return }
        var o = BulkServer.Options()
        o.host = args[1]
        let server = BulkServer(options: o)
        do {
            try await server.start()
            let offer = try await server.offer(URL(fileURLWithPath: args[0]))
            print(try offer.encoded().map { String(format: "%02x", $0) }.joined())
            try await Task.sleep(for: .seconds(600))
        } catch {
            print("failed: \(error)")
        }
    }

    /// `link-bulk-fetch OFFER DIR`: the seconds the download took, from its start to the file saved.
    static func bulkFetch(_ args: [String]) async {
        guard args.count == 2 else { return }
        let hex = Array(args[0].utf8)
        var bytes: [UInt8] = []
        var i = 0
        while i + 1 < hex.count, let v = UInt8(String(decoding: hex[i...i + 1], as: UTF8.self), radix: 16) {
            bytes.append(v)
            i += 2
        }
        do {
            let offer = try BulkOffer(decoding: bytes[...])
            let dir = URL(fileURLWithPath: args[1])
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            let start = Date()
            _ = try await BulkDownload(offer: offer, directory: dir).run()
            print(String(format: "%.4f", Date().timeIntervalSince(start)))
        } catch {
            print("failed: \(error)")
        }
    }
}
