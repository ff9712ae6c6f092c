import Crypto
import Foundation
import NIOCore
import NIOPosix
import StarlingBulk
@testable import StarlingBulkTransport
import StarlingWire
import Testing

/// Issue 40: large files over the LAN, sealed under the offer's key, resumable.
@Suite struct BulkCoreTests {
    static func offer(size: Int, chunk: Int = 1_024, key: [UInt8] = [UInt8](repeating: 7, count: 32)) -> (BulkOffer, [UInt8]) {
        var rng = SystemRandomNumberGenerator()
        let content = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let offer = BulkOffer(transferID: [UInt8](repeating: 0xA5, count: 16), name: "map.pdf", size: UInt64(size),
                              sha256: Array(SHA256.hash(data: content)), mimeType: "application/pdf", key: key,
                              addresses: ["127.0.0.1:4000", "[::1]:4000"], chunkSize: chunk)
        return (offer, content)
    }

    @Test func theOfferRoundTripsAndDecodingIsStrict() throws {
        let (offer, _) = Self.offer(size: 100_000)
        let bytes = try offer.encoded()
        #expect(try BulkOffer(decoding: bytes[...]) == offer)
        #expect(offer.chunkCount == 98 && offer.length(ofChunk: 97) == 100_000 - 97 * 1_024)
        // An unknown TLV is skipped; a missing one, a bad size, a second copy are errors.
        #expect(try BulkOffer(decoding: (bytes + [0x30, 0x00, 0x01, 0xFF])[...]) == offer)
        var bad = offer
        bad.size = 0
        #expect(throws: WireError.self) { try bad.encoded() }
        bad = offer
        bad.chunkSize = 70_000
        #expect(throws: WireError.self) { try bad.encoded() }
        #expect(throws: WireError.self) { try BulkOffer(decoding: (bytes + bytes.prefix(19))[...]) } // transfer ID twice
        #expect(throws: WireError.self) { try BulkOffer(decoding: bytes.prefix(19 + 10)) }
        for n in stride(from: 0, to: bytes.count, by: 7) { _ = try? BulkOffer(decoding: bytes.prefix(n)) } // no trap
        let answer = BulkAnswer(transferID: offer.transferID, accepted: false, reason: "too large")
        #expect(try BulkAnswer(decoding: try answer.encoded()[...]) == answer)
    }

    /// The two ends without I/O: a whole file in order, acknowledged, then saved.
    @Test func aFileCrossesChunkByChunkAndTheLastAckSaysSaved() throws {
        let (offer, content) = Self.offer(size: 50_000)
        var receiving = BulkReceiving(offer: offer, from: 0, nonce: [UInt8](repeating: 1, count: 32))
        var sending = try BulkSending(hello: receiving.hello, offer: offer, window: 4)
        var received: [UInt8] = []
        var events: [BulkSending.Event] = []
        while !sending.isSaved {
            var frames: [BulkFrame] = []
            while let i = sending.due { frames.append(try sending.sealDue(Array(content[Int(i) * 1_024..<min(content.count, (Int(i) + 1) * 1_024)]))) }
            #expect(frames.count <= 4, "the window")
            for f in frames {
                let (_, bytes) = try receiving.open(f)
                received += Array(bytes)
                events.append(try sending.receive(receiving.written()))
            }
            if receiving.isComplete, !sending.isSaved { events.append(try sending.receive(receiving.saved())) }
        }
        #expect(received == content)
        #expect(events.last == .saved && events.count == offer.chunkCount + 1)
    }

    /// What someone on the LAN, or someone who saw the sealed offer, can try.
    @Test func forgedReplayedAndForeignFramesAreRefused() throws {
        let (offer, content) = Self.offer(size: 10_000)
        // A hello without the key.
        var stranger = offer
        stranger.key = [UInt8](repeating: 8, count: 32)
        let forgedHello = BulkReceiving(offer: stranger, from: 0, nonce: [UInt8](repeating: 2, count: 32)).hello
        #expect(throws: BulkTransferError.self) { try BulkSending(hello: forgedHello, offer: offer) }
        // A chunk sealed under another key, a replayed chunk, a chunk out of order.
        var receiving = BulkReceiving(offer: offer, from: 0, nonce: [UInt8](repeating: 3, count: 32))
        var sending = try BulkSending(hello: receiving.hello, offer: offer, window: 8)
        var evil = try BulkSending(hello: BulkReceiving(offer: stranger, from: 0, nonce: [UInt8](repeating: 3, count: 32)).hello, offer: stranger)
        #expect(throws: BulkTransferError.self) { try receiving.open(try evil.sealDue(Array(content.prefix(1_024)))) }
        let first = try sending.sealDue(Array(content.prefix(1_024)))
        let second = try sending.sealDue(Array(content[1_024..<2_048]))
        #expect(throws: BulkTransferError.self) { try receiving.open(second) } // out of order
        _ = try receiving.open(first)
        _ = receiving.written()
        #expect(throws: BulkTransferError.self) { try receiving.open(first) } // replayed
        // A chunk from another connection of the same transfer (other keys: another nonce).
        var other = try BulkSending(hello: BulkReceiving(offer: offer, from: 1, nonce: [UInt8](repeating: 4, count: 32)).hello, offer: offer)
        #expect(throws: BulkTransferError.self) { try receiving.open(try other.sealDue(Array(content[1_024..<2_048]))) }
        #expect(Array(try receiving.open(second).bytes) == Array(content[1_024..<2_048]))
        // A forged ack.
        #expect(throws: BulkTransferError.self) { try sending.receive(.ack(index: 0, tag: [UInt8](repeating: 0, count: 16))) }
    }
}

/// Over TCP on 127.0.0.1.
@Suite struct BulkTCPTests {
    static func directory(_ label: String) -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("starling-bulk-\(label)-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Random bytes from the kernel (fast, and no long loop on the cooperative pool).
    static func file(_ dir: URL, bytes: Int) throws -> URL {
        let url = dir.appendingPathComponent("source.bin")
        let random = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/dev/urandom"))
        defer { try? random.close() }
        try (try random.read(upToCount: bytes) ?? Data()).write(to: url)
        return url
    }

    final class Box: @unchecked Sendable {
        let lock = NSLock()
        var values: [Int] = []
        func add(_ v: Int) { lock.withLock { values.append(v) } }
        var last: Int { lock.withLock { values.last ?? 0 } }
    }

    @Test func aFileCrossesCutInTheMiddleAndResumesWithoutTheFirstHalfAgain() async throws {
        let out = Self.directory("out"), into = Self.directory("in")
        let source = try Self.file(out, bytes: 8 << 20)
        let server = BulkServer()
        try await server.start()
        let offer = try await server.offer(source, name: "video.mp4", mimeType: "video/mp4")
        let events = Box()
        let watcher = Task { for await e in server.events { if case let .started(_, from, _) = e { events.add(from) } } }
        // Cut: the receiver stops (its task cancelled) once half is on disk.
        let done = Box()
        let first = Task { try await BulkDownload(offer: offer, directory: into).run { n, _ in done.add(n) } }
        for _ in 0..<3_000 where done.last < offer.chunkCount / 2 { try await Task.sleep(for: .milliseconds(10)) }
        first.cancel()
        _ = await first.result
        let download = BulkDownload(offer: offer, directory: into)
        let onDisk = download.chunksOnDisk()
        #expect(onDisk >= UInt32(offer.chunkCount / 2) && onDisk < UInt32(offer.chunkCount), "\(onDisk) of \(offer.chunkCount)")
        #expect(try BulkDownload.pending(in: into) == [offer], "the offer is kept to resume after a restart")
        // Again: from where the disk ends.
        let saved = try await download.run()
        #expect(saved.lastPathComponent == "video.mp4")
        #expect(try bulkSHA256(of: saved) == offer.sha256)
        #expect(events.values.count == 2 && events.values[0] == 0 && events.values[1] == Int(onDisk), "\(events.values)")
        #expect(try BulkDownload.pending(in: into).isEmpty && !FileManager.default.fileExists(atPath: download.partURL.path))
        await server.stop()
        watcher.cancel()
    }

    /// An attacker on the LAN connects to the port: garbage, a forged hello,
    /// an endless length. Nothing is served, and the real receiver still is.
    /// A file changed under its offer (another file under the offered hash)
    /// is not saved.
    @Test func strangersGetNothingAndAnotherFileUnderTheHashIsNotSaved() async throws {
        let out = Self.directory("out2"), into = Self.directory("in2")
        let source = try Self.file(out, bytes: 300_000)
        let server = BulkServer()
        let port = try await server.start()
        let offer = try await server.offer(source)
        let refused = Box()
        let watcher = Task { for await e in server.events { if case .refused = e { refused.add(1) } } }
        func raw(_ bytes: [UInt8]) async throws {
            let c = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get()
            try await c.writeAndFlush(ByteBuffer(bytes: bytes))
            try await Task.sleep(for: .milliseconds(100))
            try? await c.close()
        }
        var stranger = offer
        stranger.key = [UInt8](repeating: 9, count: 32)
        let forged = BulkReceiving(offer: stranger, from: 0, nonce: [UInt8](repeating: 5, count: 32)).hello
        try await raw(forged.encoded())
        try await raw([0, 0, 0, 5, 0x09, 1, 2, 3, 4])
        try await raw([0xFF, 0xFF, 0xFF, 0xFF] + [UInt8](repeating: 0, count: 100_000))
        for _ in 0..<500 where refused.values.count < 3 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(refused.values.count == 3)
        // The control: the real receiver gets the file.
        let saved = try await BulkDownload(offer: offer, directory: into).run()
        #expect(try bulkSHA256(of: saved) == offer.sha256)
        // The sender's file changed after the offer: the receiver saves nothing.
        let h = try FileHandle(forWritingTo: source)
        try h.seek(toOffset: 1_000)
        try h.write(contentsOf: Data([0xDE, 0xAD]))
        try h.close()
        let into3 = Self.directory("in3")
        await #expect(throws: BulkTransferError.hashMismatch) { try await BulkDownload(offer: offer, directory: into3).run() }
        #expect(try FileManager.default.contentsOfDirectory(atPath: into3.path).isEmpty, "nothing half-written remains")
        await server.stop()
        watcher.cancel()
    }

    /// What no transfer can finish is removed at start; what can is kept.
    @Test func leftoversGoAndResumableTransfersStay() throws {
        let dir = Self.directory("leftovers")
        let fm = FileManager.default
        func offer(_ byte: UInt8) -> BulkOffer {
            BulkOffer(transferID: [UInt8](repeating: byte, count: 16), name: "f\(byte)", size: 10_000, sha256: [UInt8](repeating: 1, count: 32),
                      mimeType: nil, key: [UInt8](repeating: 2, count: 32), addresses: ["127.0.0.1:1"], chunkSize: 1_024)
        }
        func put(_ name: String, _ bytes: [UInt8], age: TimeInterval = 0) throws {
            let url = dir.appendingPathComponent(name)
            try Data(bytes).write(to: url)
            try fm.setAttributes([.modificationDate: Date().addingTimeInterval(-age)], ofItemAtPath: url.path)
        }
        func files(_ o: BulkOffer) -> BulkDownload { BulkDownload(offer: o, directory: dir) }
        let live = offer(1), old = offer(2), orphan = offer(3), garbled = offer(4)
        // Resumable: an offer and what came (the control).
        try put(files(live).offerURL.lastPathComponent, try live.encoded())
        try put(files(live).partURL.lastPathComponent, [UInt8](repeating: 0, count: 2_048))
        // A week and a day untouched.
        try put(files(old).offerURL.lastPathComponent, try old.encoded(), age: 8 * 86_400)
        try put(files(old).partURL.lastPathComponent, [1, 2, 3], age: 8 * 86_400)
        // A save cut after its offer went: a .part and a .from alone.
        try put(files(orphan).partURL.lastPathComponent, [1, 2, 3])
        try put(files(orphan).originURL.lastPathComponent, Array("abcd".utf8))
        // An offer that does not decode.
        try put(files(garbled).offerURL.lastPathComponent, [0xFF, 0x00, 0x13])
        try put(files(garbled).partURL.lastPathComponent, [1])
        // Not ours.
        try put("notes.txt", [1])
        try put(".starling-bulk-zz.other", [1])
        #expect(Set(try BulkDownload.pending(in: dir)) == [live, old], "before: what decodes")
        let removed = try BulkDownload.removeLeftovers(in: dir)
        #expect(removed.count == 6, "\(removed)")
        #expect(try BulkDownload.pending(in: dir) == [live])
        #expect(Set(try fm.contentsOfDirectory(atPath: dir.path)) ==
                [files(live).offerURL.lastPathComponent, files(live).partURL.lastPathComponent, "notes.txt", ".starling-bulk-zz.other"])
        #expect(files(live).chunksOnDisk() == 2)
        #expect(try BulkDownload.removeLeftovers(in: dir).isEmpty, "a second pass removes nothing")
        #expect(try BulkDownload.pending(in: dir.appendingPathComponent("none")).isEmpty, "no directory yet: nothing pending")
    }

    /// A listener that dies is said; one stopped on purpose is not.
    @Test func aListenerThatDiesIsSaid() async throws {
        for purpose in [true, false] {
            let server = BulkServer()
            try await server.start()
            let said = Task { () -> String? in
                for await e in server.events { if case let .listenerFailed(reason) = e { return reason } }
                return nil
            }
            if purpose { await server.stop() } else { try await server.closeListener() }
            if purpose {
                #expect(await said.value == nil, "stop() ends the events without a failure")
            } else {
                let reason = try await withThrowingTaskGroup(of: String?.self) { g in
                    g.addTask { await said.value }
                    g.addTask { try await Task.sleep(for: .seconds(30)); return nil }
                    defer { g.cancelAll() }
                    return try await g.next() ?? nil
                }
                #expect(reason != nil, "the listener's end is an event")
                await server.stop()
                said.cancel()
            }
        }
    }

    /// The socket's fast paths for chunks write and read exactly what the
    /// codec does (docs/PROTOCOL.md), and refuse what it refuses.
    @Test func theSocketsChunkPathsAreTheCodecs() throws {
        let (offer, _) = BulkCoreTests.offer(size: 3_000)
        let (hello, seal) = BulkSeal.hello(offer: offer, from: 0, nonce: [UInt8](repeating: 3, count: 32))
        let frames: [BulkFrame] = [hello, seal.chunk(0, [UInt8](repeating: 9, count: 1_024)), seal.chunk(2, Data([1, 2, 3])),
                                   seal.ack(1), .refused("full disk")]
        for f in frames {
            let wire = BulkSocket.buffer(f)
            #expect(Array(wire.readableBytesView) == f.encoded(), "\(f)")
            var body = wire
            body.moveReaderIndex(forwardBy: 4) // the length, as the frame decoder takes it off
            #expect(try BulkSocket.frame(body) == f)
        }
        // A chunk with fewer than 16 sealed bytes, an unknown type, a frame too long: refused as the codec refuses them.
        for bad: [UInt8] in [[0x02, 0, 0, 0, 0] + [UInt8](repeating: 1, count: 15), [0x09, 1], [0x02, 0, 0, 0, 0] + [UInt8](repeating: 0, count: BulkFrame.maxBody)] {
            #expect(throws: BulkTransferError.self) { try BulkSocket.frame(ByteBuffer(bytes: bad)) }
            #expect(throws: (any Error).self) { try BulkFrame(body: bad[...]) }
        }
    }

    /// Offers kept for a restart: served again while their file is unchanged;
    /// a changed or missing file, an unreadable record, a week-old one, removed.
    @Test func keptOffersServeOnlyUnchangedFiles() throws {
        let dir = Self.directory("kept"), files = Self.directory("kept-files")
        let keeper = KeptOffers(directory: dir)
        func record(_ byte: UInt8, _ name: String) throws -> KeptOffers.Record {
            let file = files.appendingPathComponent(name)
            try Data([byte, 1, 2, 3]).write(to: file)
            let stamp = try KeptOffers.stamp(file)
            let offer = BulkOffer(transferID: [UInt8](repeating: byte, count: 16), name: name, size: 4, sha256: [UInt8](repeating: 1, count: 32),
                                  mimeType: nil, key: [UInt8](repeating: 2, count: 32), addresses: ["127.0.0.1:1"], chunkSize: 1_024)
            return KeptOffers.Record(offer: offer, file: file, peer: "00112233aabbccdd", size: stamp.size, modified: stamp.modified)
        }
        let same = try record(1, "same.bin"), changed = try record(2, "changed.bin"), gone = try record(3, "gone.bin"), old = try record(4, "old.bin")
        for r in [same, changed, gone, old] { try keeper.keep(r) }
        try keeper.keep(same) // kept twice: one record
        try Data([9, 9, 9, 9, 9]).write(to: changed.file)
        try FileManager.default.removeItem(at: gone.file)
        try Data("not a record".utf8).write(to: dir.appendingPathComponent("05050505050505050505050505050505.kept"))
        let old8 = Date().addingTimeInterval(-8 * 86_400)
        try FileManager.default.setAttributes([.modificationDate: old8], ofItemAtPath: keeper.url(old.offer.transferID).path)
        try keeper.remember(port: 47_400)
        let (records, removed) = try keeper.load()
        #expect(records == [same], "\(records.map(\.file.lastPathComponent))")
        #expect(removed.count == 4, "\(removed)")
        #expect(keeper.lastPort == 47_400)
        let mode = try FileManager.default.attributesOfItem(atPath: keeper.url(same.offer.transferID).path)[.posixPermissions] as? Int
        #expect(mode == 0o600, "the record holds the transfer key")
        try keeper.forget(same.offer.transferID)
        #expect(try keeper.load().records.isEmpty)
    }
}
