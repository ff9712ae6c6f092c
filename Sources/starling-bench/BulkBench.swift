import Foundation
import StarlingBulk
import StarlingBulkTransport
#if canImport(Glibc)
import Glibc
#endif

/// `starling-bench bulk`: a large file over TCP on 127.0.0.1, sealed chunk by
/// chunk and verified (``BulkServer`` and ``BulkDownload`` in this process),
/// against a plain TCP copy of the same file in the same run (a sender thread
/// reading 64 KiB at a time into a socket, a receiver writing what comes to a
/// file). Resident memory is sampled during each transfer: it should not grow
/// with the file.
enum BulkBench {
    static func run() async {
        print("starling-bench bulk (release; TCP on 127.0.0.1)")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("starling-bench-bulk-\(getpid())")
        defer { try? FileManager.default.removeItem(at: dir) }
        do {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            for megabytes in [10, 100] {
                let source = dir.appendingPathComponent("source-\(megabytes).bin")
                try write(source, megabytes: megabytes)
                let plain = try plainCopy(source, to: dir.appendingPathComponent("plain-\(megabytes).bin"))
                let bulk = try await bulkCopy(source, into: dir.appendingPathComponent("bulk-\(megabytes)"))
                let mb = Double(megabytes << 20) / 1_000_000
                print("\n\(megabytes) MiB:")
                print("  plain TCP copy:      \(fmt(mb / plain.seconds)) MB/s   resident peak \(SoakBench.megabytes(plain.peak))")
                print("  bulk (sealed, acked, hashed, renamed): \(fmt(mb / bulk.seconds)) MB/s   resident peak \(SoakBench.megabytes(bulk.peak))"
                      + "   (the sender's SHA-256 at the offer: \(fmt(bulk.offerSeconds * 1000)) ms, not counted)")
                print("  bulk ÷ plain: \(fmt(plain.seconds / bulk.seconds))×   (goal ≥ 0.8×)")
                if megabytes == 100 { await BulkLinkBench.run(file: source, megabytes: megabytes) }
            }
        } catch {
            print("bulk bench failed: \(error)")
        }
    }

    static func fmt(_ x: Double) -> String { String(format: "%.2f", x) }

    /// Random bytes from the kernel, a MiB at a time.
    static func write(_ url: URL, megabytes: Int) throws {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let h = try FileHandle(forWritingTo: url)
        defer { try? h.close() }
        let random = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom"))
        defer { try? random.close() }
        for _ in 0..<megabytes { try h.write(contentsOf: try random.read(upToCount: 1 << 20) ?? Data()) }
    }

    /// Samples resident memory every 20 ms while `body` runs; the peak.
    static func sampled<T>(_ body: () async throws -> T) async rethrows -> (T, peak: Int) {
        let peak = Peak()
        let sampler = Task.detached {
            while !Task.isCancelled {
                peak.see(NodeBench.residentBytes())
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        let result = try await body()
        sampler.cancel()
        peak.see(NodeBench.residentBytes())
        return (result, peak.value)
    }

    final class Peak: @unchecked Sendable {
        private let lock = NSLock()
        private var v = 0
        func see(_ x: Int) { lock.withLock { v = max(v, x) } }
        var value: Int { lock.withLock { v } }
    }

    static func bulkCopy(_ source: URL, into dir: URL) async throws -> (seconds: Double, offerSeconds: Double, peak: Int) {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var o = BulkServer.Options()
        if let w = ProcessInfo.processInfo.environment["STARLING_BULK_WINDOW"].flatMap(UInt32.init) { o.window = w }
        let server = BulkServer(options: o)
        try await server.start()
        defer { Task { await server.stop() } }
        let clock = ContinuousClock()
        let t0 = clock.now
        let offer = try await server.offer(source)
        let offerTime = clock.now - t0
        let (elapsed, peak) = try await sampled {
            let t1 = clock.now
            _ = try await BulkDownload(offer: offer, directory: dir).run()
            return clock.now - t1
        }
        return (seconds(elapsed), seconds(offerTime), peak)
    }

    static func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

    /// The baseline: the same bytes over a loopback TCP socket, no sealing, no hashing.
    static func plainCopy(_ source: URL, to target: URL) throws -> (seconds: Double, peak: Int) {
        let (listener, port) = PlainTCP.bound()
        defer { close(listener) }
        listen(listener, 1)
        let sourcePath = source.path
        let sender = Thread { PlainTCP.send(sourcePath, to: accept(listener, nil, nil)) }
        let start = Date()
        sender.start()
        guard let fd = PlainTCP.connected("127.0.0.1", port) else { throw CocoaError(.fileReadUnknown) }
        defer { close(fd) }
        var peak = NodeBench.residentBytes(), reads = 0
        _ = try PlainTCP.receive(fd, into: target.path) { _ in
            reads += 1
            if reads % 64 == 0 { peak = max(peak, NodeBench.residentBytes()) }
        }
        return (Date().timeIntervalSince(start), peak)
    }
}
