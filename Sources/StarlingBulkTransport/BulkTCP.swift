import Crypto
import Foundation
import NIOCore
import NIOExtras
import NIOPosix
import StarlingBulk
import StarlingWire

/// Bulk transfers over TCP (docs/PROTOCOL.md, "Bulk transfer"): the sender
/// listens (``BulkServer``), the receiver connects (``BulkDownload``). Frames
/// are length-prefixed (u32 big-endian, as Android's Wi-Fi Aware transport
/// frames TCP), at most one sealed 64 KiB chunk each; the protocol itself is
/// `StarlingBulk`'s, without I/O.
enum BulkSocket {
    /// Writes wait only past 2 MiB queued (NIO's default, 64 KiB, is one chunk:
    /// each write would wait for the socket).
    static let waterMark = ChannelOptions.Types.WriteBufferWaterMark(low: 1 << 20, high: 2 << 20)
    /// Reads of up to 1 MiB (NIO's default stops at 64 KiB: a chunk in pieces).
    static let reads = AdaptiveRecvByteBufferAllocator(minimum: 4_096, initial: 256 << 10, maximum: 1 << 20)

    static func pipeline(_ channel: any Channel) -> EventLoopFuture<NIOAsyncChannel<ByteBuffer, ByteBuffer>> {
        channel.eventLoop.makeCompletedFuture {
            // A length past one frame is never buffered: a peer announcing 4 GiB gets closed.
            try channel.pipeline.syncOperations.addHandler(
                ByteToMessageHandler(LengthFieldBasedFrameDecoder(lengthFieldBitLength: .fourBytes),
                                     maximumBufferSize: 4 + BulkFrame.maxBody))
            return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
        }
    }

    static func frame(_ buffer: ByteBuffer) throws(BulkTransferError) -> BulkFrame {
        guard buffer.readableBytes <= BulkFrame.maxBody else {
            throw .wire(WireError(.lengthOutOfRange(declared: buffer.readableBytes, limit: BulkFrame.maxBody), field: "bulkFrame.length", offset: 0))
        }
        // A chunk (nearly every frame): its sealed bytes copied once, straight from the buffer.
        if buffer.readableBytes >= 5 + 16, buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) == 0x02,
           let index = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt32.self),
           let sealed = buffer.getBytes(at: buffer.readerIndex + 5, length: buffer.readableBytes - 5) {
            return .chunk(index: index, sealed: sealed)
        }
        do { return try BulkFrame(body: Array(buffer.readableBytesView)[...]) } catch { throw .wire(error) }
    }

    /// A frame as it goes on the connection: `frame.encoded()`, a chunk's
    /// bytes copied once into the buffer.
    static func buffer(_ frame: BulkFrame) -> ByteBuffer {
        guard case let .chunk(index, sealed) = frame else { return ByteBuffer(bytes: frame.encoded()) }
        var b = ByteBuffer()
        b.reserveCapacity(9 + sealed.count)
        b.writeInteger(UInt32(5 + sealed.count))
        b.writeInteger(UInt8(0x02))
        b.writeInteger(index)
        b.writeBytes(sealed)
        return b
    }

    /// "host:port" or "[v6]:port".
    static func split(_ address: String) -> (host: String, port: Int)? {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]), (1...65_535).contains(port)
        else { return nil }
        var host = String(address[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }
}

/// A SHA-256 fed on a serial queue of its own, at most 32 pieces behind.
final class RunningHash: @unchecked Sendable {
    private var hasher: SHA256
    private let queue = DispatchQueue(label: "starling.bulk.hash")
    private let lock = NSLock()
    private var behind = 0

    init(_ hasher: SHA256) { self.hasher = hasher }

    func add(_ bytes: Data) {
        if lock.withLock({ behind }) >= 32 { queue.sync {} }
        lock.withLock { behind += 1 }
        queue.async { [self] in
            hasher.update(data: bytes)
            lock.withLock { behind -= 1 }
        }
    }

    func finish() -> [UInt8] { queue.sync { Array(hasher.finalize()) } }
}

/// Streams a file's SHA-256, 1 MiB at a time (memory independent of its size).
public func bulkSHA256(of url: URL, upTo limit: UInt64? = nil) throws -> [UInt8] {
    var hasher = SHA256()
    try bulkHash(url, upTo: limit, into: &hasher)
    return Array(hasher.finalize())
}

/// Feeds a file's first `limit` bytes (all of it: nil) to `hasher`.
func bulkHash(_ url: URL, upTo limit: UInt64?, into hasher: inout SHA256) throws {
    let handle = try FileHandle(forReadingFrom: url)
    defer { try? handle.close() }
    var left = limit ?? .max
    while left > 0, let data = try handle.read(upToCount: Int(min(left, 1 << 20))), !data.isEmpty {
        hasher.update(data: data)
        left -= UInt64(data.count)
    }
}

/// The sending side: a TCP listener that serves the files it offered, each to
/// whoever proves the offer's key, from any chunk (a resumed transfer starts
/// where the receiver's disk ends).
///
/// Bounds: `maxOffers` files offered at once (the oldest goes), `maxConnections`
/// connections at once (more are closed at once), a hello within
/// `helloTimeout`, `window` chunks unacknowledged per connection.
public actor BulkServer {
    public struct Options: Sendable {
        public var host = "127.0.0.1"
        public var port = 0
        public var maxOffers = 64
        public var maxConnections = 8
        public var helloTimeout: TimeAmount = .seconds(10)
        public var window: UInt32 = 32
        public var chunkSize = BulkOffer.maxChunkSize
        /// A pause after each chunk (nil: none): a rate limit on a shared network, and tests' slow motion.
        public var pace: Duration?
        public init() {}
    }

    public enum Event: Hashable, Sendable {
        /// A receiver proved the key and asked for the chunks from `from` on (> 0: a resumption).
        case started(transferID: [UInt8], from: Int, total: Int)
        /// `acked` of `total` chunks are on the receiver's disk.
        case progress(transferID: [UInt8], acked: Int, total: Int)
        /// The receiver verified the whole file and saved it.
        case saved(transferID: [UInt8])
        /// A connection for this transfer ended early (it may resume).
        case interrupted(transferID: [UInt8], reason: String)
        /// A connection that never proved a key (an attacker, a stale offer).
        case refused(reason: String)
        /// The listener itself ended, not by ``stop()``: nothing offered can be
        /// fetched any more.
        case listenerFailed(reason: String)
    }

    public let options: Options
    public nonisolated let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private var offers: [[UInt8]: (offer: BulkOffer, file: URL)] = [:]
    private var offerOrder: [[UInt8]] = []
    private var connections = 0
    private var channel: (any Channel)?
    private var serving: Task<Void, Never>?
    private var stopping = false
    public private(set) var port = 0

    public init(options: Options = .init()) {
        self.options = options
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(10_000))
    }

    /// Listens; returns the port.
    @discardableResult
    public func start() async throws -> Int {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: BulkSocket.waterMark)
            .childChannelOption(.recvAllocator, value: BulkSocket.reads)
            .bind(host: options.host, port: options.port) { channel in BulkSocket.pipeline(channel) }
        channel = server.channel
        port = server.channel.localAddress?.port ?? 0
        serving = Task { [weak self] in
            do {
                try await withThrowingDiscardingTaskGroup { group in
                    try await server.executeThenClose { inbound in
                        for try await connection in inbound {
                            group.addTask { await self?.serve(connection) }
                        }
                    }
                }
                await self?.listenerEnded("the listening socket closed")
            } catch {
                await self?.listenerEnded("\(error)")
            }
        }
        return port
    }

    private func listenerEnded(_ reason: String) {
        guard !stopping else { return }
        say(.listenerFailed(reason: reason))
    }

    /// Closes the listening socket as a failure would (tests).
    func closeListener() async throws { try await channel?.close() }

    public func stop() async {
        stopping = true
        try? await channel?.close() // closing what may be closed already: nothing to tell
        serving?.cancel()
        continuation.finish()
    }

    /// Offers `file` (hashed now): the offer to send over the session. `addresses`
    /// are where the receiver may connect (default: this listener's host and port).
    public func offer(_ file: URL, name: String? = nil, mimeType: String? = nil, addresses: [String]? = nil) async throws -> BulkOffer {
        let size = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? UInt64 ?? 0
        var rng = SystemRandomNumberGenerator()
        let offer = BulkOffer(transferID: (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) },
                              name: String((name ?? file.lastPathComponent).utf8.prefix(255)) ?? "file", size: size,
                              sha256: try await Self.hashOffPool(file), mimeType: mimeType,
                              key: (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) },
                              addresses: addresses ?? ["\(options.host.contains(":") ? "[\(options.host)]" : options.host):\(port)"],
                              chunkSize: options.chunkSize)
        keep(offer, file)
        return offer
    }

    /// A file's SHA-256 on a thread of its own: a large file takes a while,
    /// and Swift's cooperative threads are few.
    static func hashOffPool(_ file: URL) async throws -> [UInt8] {
        try await withCheckedThrowingContinuation { c in Thread { c.resume(with: Result { try bulkSHA256(of: file) }) }.start() }
    }

    /// Serves an offer made before (by this process before a restart, from its saved copy).
    public func keep(_ offer: BulkOffer, _ file: URL) {
        if offers[offer.transferID] == nil {
            offerOrder.append(offer.transferID)
            if offerOrder.count > options.maxOffers { offers[offerOrder.removeFirst()] = nil }
        }
        offers[offer.transferID] = (offer, file)
    }

    /// Forgets an offer (declined, or saved).
    public func withdraw(_ transferID: [UInt8]) {
        offers[transferID] = nil
        offerOrder.removeAll { $0 == transferID }
    }

    public var offerCount: Int { offers.count }
    public var connectionCount: Int { connections }

    private func admit() -> Bool {
        guard connections < options.maxConnections else { return false }
        connections += 1
        return true
    }

    private func leave() { connections -= 1 }

    private func lookup(_ id: [UInt8]) -> (offer: BulkOffer, file: URL)? { offers[id] }

    private func say(_ e: Event) { continuation.yield(e) }

    private func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        guard admit() else {
            try? await connection.channel.close()
            say(.refused(reason: "too many connections (\(options.maxConnections))"))
            return
        }
        defer { leave() }
        var transfer: [UInt8]?
        do {
            try await connection.executeThenClose { inbound, outbound in
                var frames = inbound.makeAsyncIterator()
                // The hello, in time: a connection that says nothing is closed.
                let channel = connection.channel
                let timer = channel.eventLoop.scheduleTask(in: options.helloTimeout) { channel.close(promise: nil) }
                let first = try await frames.next()
                timer.cancel()
                guard let first else { throw BulkTransferError.unexpected("no hello within \(options.helloTimeout.nanoseconds / 1_000_000_000) s") }
                let hello = try BulkSocket.frame(first)
                guard case let .hello(id, _, _, _) = hello, let (offer, file) = lookup(id) else {
                    throw BulkTransferError.unexpected("a hello for no transfer offered here")
                }
                var sending = try BulkSending(hello: hello, offer: offer, window: options.window)
                transfer = id
                say(.started(transferID: id, from: Int(sending.firstChunk), total: Int(sending.chunkCount)))
                let handle = try FileHandle(forReadingFrom: file)
                defer { try? handle.close() }
                try handle.seek(toOffset: UInt64(sending.firstChunk) * UInt64(offer.chunkSize))
                while !sending.isSaved {
                    while let index = sending.due {
                        let bytes = try handle.read(upToCount: offer.length(ofChunk: Int(index))) ?? Data()
                        try await outbound.write(BulkSocket.buffer(try sending.sealDue(bytes)))
                        if let pace = options.pace { try await Task.sleep(for: pace) }
                    }
                    guard let next = try await frames.next() else { throw BulkTransferError.unexpected("the receiver closed the connection") }
                    switch try sending.receive(try BulkSocket.frame(next)) {
                    case let .progress(acked):
                        if acked == sending.chunkCount || acked % 16 == 0 {
                            say(.progress(transferID: id, acked: Int(acked), total: Int(sending.chunkCount)))
                        }
                    case .saved:
                        say(.saved(transferID: id))
                    }
                }
            }
        } catch {
            let reason = (error as? BulkTransferError)?.description ?? "\(error)"
            if let transfer { say(.interrupted(transferID: transfer, reason: reason)) } else { say(.refused(reason: reason)) }
            try? await connection.channel.close()
        }
    }
}

/// The receiving side of one transfer: connects to the offer's addresses,
/// writes chunks to a hidden partial file beside where the file will be,
/// resumes from what that file holds (after a broken connection, or a
/// restart of either side), and renames it into place only once the whole
/// hashes to the offer's SHA-256.
///
/// Files in `directory`: `.starling-bulk-ID.part` (what came), and
/// `.starling-bulk-ID.offer` (the offer, with its key: 0600), removed when the
/// file is saved or found wrong.
public struct BulkDownload: Sendable {
    public let offer: BulkOffer
    public let directory: URL
    public var connectTimeout: TimeAmount = .seconds(5)
    /// Who offered it (a peer ID), kept beside the offer to resume after a restart.
    public var origin: String?

    public init(offer: BulkOffer, directory: URL) {
        self.offer = offer
        self.directory = directory
    }

    var hex: String { offer.transferID.map { String(format: "%02x", $0) }.joined() }
    public var partURL: URL { directory.appendingPathComponent(".starling-bulk-\(hex).part") }
    public var offerURL: URL { directory.appendingPathComponent(".starling-bulk-\(hex).offer") }
    var originURL: URL { directory.appendingPathComponent(".starling-bulk-\(hex).from") }

    /// Who offered a pending transfer (as ``origin`` was given).
    public static func origin(of offer: BulkOffer, in directory: URL) -> String? {
        let d = BulkDownload(offer: offer, directory: directory)
        return FileManager.default.contents(atPath: d.originURL.path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Offers accepted and not finished in `directory` (to resume after a
    /// restart). Call ``removeLeftovers(in:olderThan:now:)`` first: what it
    /// leaves is readable.
    public static func pending(in directory: URL) throws -> [BulkOffer] {
        try transfers(in: directory).compactMap(\.offer)
    }

    /// How long a partial file waits for its transfer to go on (a week).
    public static let keepPartial: TimeInterval = 7 * 86_400

    /// Removes what no transfer can finish: an `.offer` that does not decode, a
    /// `.part` or `.from` with no `.offer` beside it (a save cut between its
    /// steps), and a transfer whose files were last written more than `age`
    /// seconds before `now`. Returns the names removed.
    @discardableResult
    public static func removeLeftovers(in directory: URL, olderThan age: TimeInterval = keepPartial, now: Date = Date()) throws -> [String] {
        let fm = FileManager.default
        var removed: [String] = []
        for (hex, offer) in try transfers(in: directory) {
            let names = ["part", "offer", "from"].map { ".starling-bulk-\(hex).\($0)" }.filter { fm.fileExists(atPath: directory.appendingPathComponent($0).path) }
            let newest = try names.map { try fm.attributesOfItem(atPath: directory.appendingPathComponent($0).path)[.modificationDate] as? Date ?? .distantPast }.max() ?? .distantPast
            guard offer == nil || now.timeIntervalSince(newest) > age else { continue }
            for name in names {
                try fm.removeItem(at: directory.appendingPathComponent(name))
                removed.append(name)
            }
        }
        return removed
    }

    /// Transfers with files in `directory`, by ID, with their offer when it decodes.
    static func transfers(in directory: URL) throws -> [(hex: String, offer: BulkOffer?)] {
        let fm = FileManager.default
        guard fm.fileExists(atPath: directory.path) else { return [] }
        var ids: Set<String> = []
        for name in try fm.contentsOfDirectory(atPath: directory.path) where name.hasPrefix(".starling-bulk-") {
            let rest = name.dropFirst(".starling-bulk-".count)
            guard let dot = rest.firstIndex(of: "."), ["part", "offer", "from"].contains(rest[rest.index(after: dot)...]) else { continue }
            ids.insert(String(rest[..<dot]))
        }
        return ids.sorted().map { hex in
            let data = fm.contents(atPath: directory.appendingPathComponent(".starling-bulk-\(hex).offer").path)
            let offer = data.flatMap { try? BulkOffer(decoding: Array($0)[...]) } // nil: unreadable, a leftover
            return (hex, offer.flatMap { BulkDownload(offer: $0, directory: directory).hex == hex ? $0 : nil })
        }
    }

    /// Whole chunks on disk already.
    public func chunksOnDisk() -> UInt32 {
        let size = (try? FileManager.default.attributesOfItem(atPath: partURL.path)[.size] as? UInt64) ?? 0
        return UInt32(min(size / UInt64(offer.chunkSize), UInt64(offer.chunkCount)))
    }

    /// Carries the file; returns where it was saved. `progress(done, total)` in chunks.
    public func run(progress: @Sendable (Int, Int) -> Void = { _, _ in }) async throws(BulkTransferError) -> URL {
        do {
            return try await carry(progress)
        } catch let e as BulkTransferError {
            throw e
        } catch {
            throw .io("\(error)")
        }
    }

    private func carry(_ progress: @Sendable (Int, Int) -> Void) async throws -> URL {
        let fm = FileManager.default
        if !fm.fileExists(atPath: offerURL.path) {
            guard fm.createFile(atPath: offerURL.path, contents: Data(try offer.encoded()), attributes: [.posixPermissions: 0o600]) else {
                throw BulkTransferError.io("cannot write in \(directory.path)")
            }
        }
        if let origin, !fm.fileExists(atPath: originURL.path) {
            _ = fm.createFile(atPath: originURL.path, contents: Data(origin.utf8), attributes: [.posixPermissions: 0o600])
        }
        if !fm.fileExists(atPath: partURL.path) {
            guard fm.createFile(atPath: partURL.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw BulkTransferError.io("cannot write in \(directory.path)")
            }
        }
        // What is on disk counts in whole chunks; the rest is cut and comes again.
        let from = chunksOnDisk()
        let handle = try FileHandle(forUpdating: partURL)
        defer { try? handle.close() }
        try handle.truncate(atOffset: UInt64(from) * UInt64(offer.chunkSize))
        try handle.seekToEnd()
        // The hash runs along as chunks are written; what a cut left on disk is read once.
        var hasher = SHA256()
        if from > 0 { try bulkHash(partURL, upTo: UInt64(from) * UInt64(offer.chunkSize), into: &hasher) }
        var receiving = BulkReceiving(offer: offer, from: from, nonce: (0..<32).map { _ in UInt8.random(in: 0...255) })
        progress(Int(from), Int(receiving.chunkCount))
        if !receiving.isComplete {
            let connection = try await connect()
            try await connection.executeThenClose { inbound, outbound in
                try await outbound.write(BulkSocket.buffer(receiving.hello))
                var frames = inbound.makeAsyncIterator()
                // The hash runs on a queue of its own beside the writes (at most 32
                // chunks behind: then this waits for it).
                let hashing = RunningHash(hasher)
                while !receiving.isComplete {
                    guard let next = try await frames.next() else { throw BulkTransferError.unexpected("the sender closed the connection") }
                    let (index, bytes) = try receiving.open(try BulkSocket.frame(next))
                    try handle.write(contentsOf: bytes)
                    hashing.add(bytes)
                    try await outbound.write(BulkSocket.buffer(receiving.written()))
                    if index % 16 == 15 || receiving.isComplete { progress(Int(index) + 1, Int(receiving.chunkCount)) }
                }
                try handle.synchronize()
                guard hashing.finish() == offer.sha256 else {
                    try? await outbound.write(BulkSocket.buffer(.refused("the file does not hash to the offer's SHA-256")))
                    try? fm.removeItem(at: partURL)
                    try? fm.removeItem(at: offerURL)
                    try? fm.removeItem(at: originURL)
                    throw BulkTransferError.hashMismatch
                }
                try await outbound.write(BulkSocket.buffer(receiving.saved()))
            }
        } else {
            guard try bulkSHA256(of: partURL) == offer.sha256 else {
                try? fm.removeItem(at: partURL)
                try? fm.removeItem(at: offerURL)
                try? fm.removeItem(at: originURL)
                throw BulkTransferError.hashMismatch
            }
        }
        // The offer goes first: a cut after it leaves a .part that the next
        // start removes; a cut before it resumes and saves (never a second copy).
        try fm.removeItem(at: offerURL)
        let target = Self.unique(directory, Self.safeName(offer.name))
        try fm.moveItem(at: partURL, to: target)
        if fm.fileExists(atPath: originURL.path) { try fm.removeItem(at: originURL) }
        return target
    }

    private func connect() async throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer> {
        var last: (any Error)?
        for address in offer.addresses {
            guard let (host, port) = BulkSocket.split(address) else { continue }
            do {
                return try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .connectTimeout(connectTimeout)
                    .channelOption(.writeBufferWaterMark, value: BulkSocket.waterMark)
                    .channelOption(.recvAllocator, value: BulkSocket.reads)
                    .connect(host: host, port: port) { channel in BulkSocket.pipeline(channel) }
            } catch {
                last = error
            }
        }
        throw BulkTransferError.io("cannot reach the sender at \(offer.addresses.joined(separator: ", "))\(last.map { ": \($0)" } ?? "")")
    }

    /// A plain base name: no path, no control characters, not hidden.
    static func safeName(_ name: String) -> String {
        let base = name.split(separator: "/").last.map(String.init) ?? "file"
        let clean = String(base.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.map(Character.init))
            .trimmingCharacters(in: CharacterSet(charactersIn: ". "))
        return clean.isEmpty ? "file" : clean
    }

    static func unique(_ directory: URL, _ name: String) -> URL {
        var url = directory.appendingPathComponent(name)
        let ext = url.pathExtension, stem = url.deletingPathExtension().lastPathComponent
        var n = 1
        while FileManager.default.fileExists(atPath: url.path) {
            n += 1
            url = directory.appendingPathComponent(ext.isEmpty ? "\(stem) (\(n))" : "\(stem) (\(n)).\(ext)")
        }
        return url
    }
}
