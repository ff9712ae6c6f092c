import Foundation
import Glibc
import Logging
import StarlingNostr
import StarlingBulk
import StarlingBulkTransport
import StarlingCrypto
import StarlingMesh
import StarlingStately
import StarlingTransport
import StarlingWire

// Large files and voice notes: offers over the mesh, the bytes over TCP (the
// bulk listener and downloads), and what arrives saved to the downloads directory.
extension MeshNode {
    /// At start: offers of the last run that can still be served are served
    /// again (their listener opens on the port they name); otherwise the
    /// listener opens with the first offer (``sendFile(at:mimeType:to:)``)
    /// and closes when no offer waits. Receiving needs no listener.
    func startBulk() async {
        guard let bulk = options.bulk, options.downloads != nil else { return }
        if let keeper = bulk.keptOffers.map(KeptOffers.init(directory:)) {
            do {
                let (records, removed) = try keeper.load()
                if !removed.isEmpty { logger.notice("removed offers that can no longer be served", metadata: ["files": "\(removed)"]) }
                if !records.isEmpty, let server = await openBulkServer() {
                    for r in records {
                        guard let peer = PeerID(hex: r.peer) else { continue }
                        await server.keep(r.offer, r.file)
                        bulkOffers[r.offer.transferID] = (peer, r.offer)
                        kept[r.offer.transferID] = r
                        resumedAtStart.insert(r.offer.transferID)
                    }
                    if let last = keeper.lastPort, await server.port != last {
                        logger.warning("the large-file port of the last run is taken: offers made then cannot resume until sent again",
                                       metadata: ["port": "\(last)"])
                    }
                    closeBulkServerIfIdle()
                }
            } catch {
                logger.error("offers of the last run cannot be served again", metadata: ["directory": "\(keeper.directory.path)", "error": "\(error)"])
            }
        }
        // Transfers a restart cut: on again, from what the disk holds; what
        // none can finish (a week old, unreadable, a save cut midway) goes.
        if let downloads = options.downloads {
            do {
                let removed = try BulkDownload.removeLeftovers(in: downloads)
                if !removed.isEmpty { logger.notice("removed partial files no transfer can finish", metadata: ["files": "\(removed)"]) }
                for offer in try BulkDownload.pending(in: downloads) {
                    guard let from = BulkDownload.origin(of: offer, in: downloads).flatMap(PeerID.init(hex:)) else { continue }
                    download(offer, from: from)
                }
            } catch {
                continuation.yield(.rejected(Rejection(.fileNotSaved, "large files cut by a restart cannot go on: \(downloads.path) cannot be read: \(error.localizedDescription)")))
            }
        }
    }

    /// The large-file listener, opened when an offer needs it: the port of
    /// the last run first (offers kept from then name it), then the one
    /// configured (0: any). nil when it cannot listen (said as a rejection).
    private func openBulkServer() async -> BulkServer? {
        if let bulkServer { return bulkServer }
        guard let bulk = options.bulk else { return nil }
        let keeper = bulk.keptOffers.map(KeptOffers.init(directory:))
        var o = BulkServer.Options()
        o.host = bulk.host
        o.pace = bulk.pace
        var ports = [bulk.port]
        if bulk.port == 0, let last = keeper?.lastPort { ports.insert(last, at: 0) }
        var failure = ""
        for port in ports {
            o.port = port
            let s = BulkServer(options: o)
            do {
                try await s.start()
            } catch {
                failure = "\(error)"
                continue
            }
            if let bulkServer { // another call opened one meanwhile
                await s.stop()
                return bulkServer
            }
            bulkServer = s
            let events = s.events
            Task { [weak self] in
                for await e in events { await self?.bulkServerEvent(e, from: s) }
            }
            if let keeper {
                do { try keeper.remember(port: await s.port) } catch {
                    logger.warning("the large-file port could not be kept for after a restart", metadata: ["error": "\(error)"])
                }
            }
            bulkListens += 1
            return s
        }
        continuation.yield(.rejected(Rejection(.transport, "large files: cannot listen on \(bulk.host):\(bulk.port): \(failure)")))
        return nil
    }

    /// No offer waits: the listener closes (the next offer opens it again).
    func closeBulkServerIfIdle() {
        guard bulkOffers.isEmpty, let server = bulkServer else { return }
        bulkServer = nil
        Task { await server.stop() }
    }

    /// Whether the large-file listener is open now (it is while an offer waits).
    public var isListeningForBulk: Bool { bulkServer != nil }

    private func noteResumed(_ id: String) {
        guard resumedTransfers.insert(id).inserted else { return }
        resumedOrder.append(id)
        if resumedOrder.count > 256 { resumedTransfers.remove(resumedOrder.removeFirst()) }
    }

    /// The transfer ID of an offer as the faces see it (its receipts and events name it).
    public nonisolated static func bulkTransferID(_ id: [UInt8]) -> String { id.map { String(format: "%02x", $0) }.joined() }

    /// Events about our offers name the transfer, not the offer's tracking ID.
    func bulkEvent(_ event: NodeEvent) -> NodeEvent {
        func plain(_ id: String) -> String? { id.hasPrefix("bulk-") ? String(id.dropFirst(5)) : nil }
        switch event {
        case let .delivered(id, by):
            // The offer arrived; the file's own receipt is its saving.
            guard let t = plain(id) else { return event }
            return .fileSent(transferID: t, to: by, fragments: 0) // 0: offered, not over the mesh
        case let .failed(id, to): return plain(id).map { .failed(messageID: $0, to: to) } ?? event
        case let .held(id, to): return plain(id).map { .held(messageID: $0, for: to) } ?? event
        default: return event
        }
    }

    /// A transfer ended: its kept offer goes.
    func forgetKept(_ id: [UInt8]) {
        guard let record = kept.removeValue(forKey: id), let dir = options.bulk?.keptOffers else { return }
        if resumedAtStart.contains(id) {
            // Offered by an earlier run and finished in this one: the same file sent again
            // now (that run's command again) is this transfer, not a new one.
            finishedAtStart.append((record, ContinuousClock.now))
            if finishedAtStart.count > 64 { finishedAtStart.removeFirst() }
        }
        do { try KeptOffers(directory: dir).forget(id) } catch {
            // Served once more after a restart at worst; the next start removes it after a week.
            logger.warning("an ended offer could not be forgotten", metadata: ["error": "\(error)"])
        }
    }

    private func bulkServerEvent(_ e: BulkServer.Event, from server: BulkServer) {
        guard server === bulkServer else { return } // a listener closed since
        switch e {
        case let .saved(id):
            guard let o = bulkOffers.removeValue(forKey: id) else { return }
            Task { await server.withdraw(id) }
            forgetKept(id)
            continuation.yield(.delivered(messageID: Self.bulkTransferID(id), by: o.peer))
            closeBulkServerIfIdle()
        case let .interrupted(id, reason):
            logger.info("bulk transfer interrupted", metadata: ["transfer": "\(Self.bulkTransferID(id))", "reason": "\(reason)"])
        case let .refused(reason):
            logger.info("bulk connection refused", metadata: ["reason": "\(reason)"])
        case let .listenerFailed(reason):
            // Offers out there can no longer be fetched; new files go nowhere.
            logger.error("the large-file listener stopped", metadata: ["reason": "\(reason)"])
            bulkServer = nil
            for (id, o) in bulkOffers {
                continuation.yield(.failed(messageID: Self.bulkTransferID(id), to: o.peer))
            }
            bulkOffers.removeAll()
            continuation.yield(.rejected(Rejection(.transport, "large files: the listener stopped (\(reason)); files offered cannot be fetched: send them again")))
        case let .progress(id, acked, _):
            guard let o = bulkOffers[id] else { return }
            let sent = min(o.offer.size, UInt64(acked) * UInt64(o.offer.chunkSize))
            continuation.yield(.fileSending(transferID: Self.bulkTransferID(id), to: o.peer, sent: Int(sent), total: Int(o.offer.size)))
        case .started:
            break
        }
    }

    /// Where receivers may connect: the configured addresses, or this
    /// machine's IPv4 addresses (loopback last) with the listener's port.
    private func advertised(port: Int) -> [String] {
        if let a = options.bulk?.advertise, !a.isEmpty { return Array(a.prefix(BulkOffer.maxAddresses)) }
        if let host = options.bulk?.host, host != "0.0.0.0", host != "::" { return ["\(host.contains(":") ? "[\(host)]" : host):\(port)"] }
        var ips: [String] = []
        var list: UnsafeMutablePointer<ifaddrs>?
        if getifaddrs(&list) == 0, let first = list {
            var p: UnsafeMutablePointer<ifaddrs>? = first
            while let a = p {
                if let sa = a.pointee.ifa_addr, sa.pointee.sa_family == sa_family_t(AF_INET) {
                    var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
                    if getnameinfo(sa, socklen_t(MemoryLayout<sockaddr_in>.size), &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 {
                        ips.append(String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
                    }
                }
                p = a.pointee.ifa_next
            }
            freeifaddrs(first)
        }
        var seen = Set<String>()
        let sorted = (ips.filter { !$0.hasPrefix("127.") } + ips.filter { $0.hasPrefix("127.") }).filter { seen.insert($0).inserted }
        return sorted.prefix(BulkOffer.maxAddresses).map { "\($0):\(port)" }
    }

    /// Sends a file from disk: over the mesh when it fits, else offered over
    /// TCP to a peer that announces `wifiBulk`. Returns its transfer ID.
    public func sendFile(at url: URL, mimeType: String? = nil, to peer: PeerID) async throws -> String {
        let size = (try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? UInt64) ?? 0
        var tooLarge: NodeCore.FileTooLarge?
        if size <= 1 << 20 {
            let content = [UInt8](try Data(contentsOf: url))
            do { return try sendFile(name: url.lastPathComponent, mimeType: mimeType, content: content, to: peer) } catch let e as NodeCore.FileTooLarge {
                tooLarge = e
            }
        }
        guard options.bulk != nil, options.downloads != nil else {
            // Said with the way to send it (issue 52: "file too large" never said how).
            throw BulkUnavailable(peer: peer, bytes: size, off: true, meshLimit: tooLarge?.limit)
        }
        guard core.peers[peer]?.capabilities?.contains(.wifiBulk) == true else {
            throw BulkUnavailable(peer: peer, bytes: size, off: false)
        }
        guard let server = await openBulkServer() else {
            throw BulkUnavailable(peer: peer, bytes: size, off: true)
        }
        // The same file to the same peer, unchanged since it was offered: the
        // same offer again (its receiver resumes from what its disk holds).
        let stamp = try KeptOffers.stamp(url)
        let path = url.absoluteURL.standardizedFileURL.path
        func same(_ r: KeptOffers.Record) -> Bool {
            r.file.absoluteURL.standardizedFileURL.path == path && r.peer == peer.description && r.size == stamp.size && r.modified == stamp.modified
        }
        // Resumed at start and saved since (within 10 minutes): already there.
        if let done = finishedAtStart.last(where: { same($0.record) && ContinuousClock.now - $0.at < .seconds(600) }) {
            let id = Self.bulkTransferID(done.record.offer.transferID)
            noteResumed(id)
            closeBulkServerIfIdle()
            return id
        }
        if let again = kept.values.first(where: same) {
            bulkOffers[again.offer.transferID] = (peer, again.offer)
            await server.keep(again.offer, again.file)
            let id = Self.bulkTransferID(again.offer.transferID)
            noteResumed(id)
            _ = try command { try $0.sendBulkOffer(again.offer, to: peer, now: $1) }
            return id
        }
        let port = await server.port
        let offer: BulkOffer
        do { offer = try await server.offer(url, mimeType: mimeType, addresses: advertised(port: port)) } catch {
            closeBulkServerIfIdle()
            throw error
        }
        bulkOffers[offer.transferID] = (peer, offer)
        if let dir = options.bulk?.keptOffers {
            let record = KeptOffers.Record(offer: offer, file: URL(fileURLWithPath: path), peer: peer.description, size: stamp.size, modified: stamp.modified)
            do {
                try KeptOffers(directory: dir).keep(record)
                kept[offer.transferID] = record
            } catch {
                // It goes now; only a restart's resumption is lost.
                logger.warning("an offer could not be kept for after a restart", metadata: ["directory": "\(dir.path)", "error": "\(error)"])
            }
        }
        _ = try command { try $0.sendBulkOffer(offer, to: peer, now: $1) }
        return Self.bulkTransferID(offer.transferID)
    }

    /// A file too large for the mesh, to a peer that takes none over TCP.
    public struct BulkUnavailable: Error, CustomStringConvertible {
        public var peer: PeerID
        public var bytes: UInt64
        /// Large files over the network are off here (no download directory, or not asked for).
        public var off: Bool
        /// The largest file the mesh's links carry now, when known.
        public var meshLimit: Int?
        public init(peer: PeerID, bytes: UInt64, off: Bool, meshLimit: Int? = nil) {
            self.peer = peer
            self.bytes = bytes
            self.off = off
            self.meshLimit = meshLimit
        }
        public var description: String {
            let tooLarge = "file too large for the mesh (\(bytes) bytes" + (meshLimit.map { "; at most \($0)" } ?? "") + ")"
            return off ? tooLarge + ", and large files over the network are off here: start without --no-bulk to offer it over the local network (docs/BULK.md)"
                : tooLarge + ", and \(peer) takes no large files over the network (no wifiBulk in its announce: it runs with --no-bulk or an old app)"
        }
    }

    func bulkOffered(_ offer: BulkOffer, from peer: PeerID) {
        guard let bulk = options.bulk, options.downloads != nil else { return }
        // The same offer again (the sender's retry): as before.
        guard !downloads.contains(offer.transferID), !asked.contains(where: { $0.offer.transferID == offer.transferID }) else { return }
        guard offer.size <= bulk.acceptUpTo else {
            guard bulk.ask else {
                declineOffer(offer, from: peer, "larger than the \(bulk.acceptUpTo >> 20) MiB taken without asking (--accept-up-to)")
                return
            }
            if asked.count >= max(1, bulk.maxAsked) {
                let oldest = asked.removeFirst()
                oldest.expiry.cancel()
                declineOffer(oldest.offer, from: oldest.peer, "not answered: too many files offered at once")
            }
            let id = offer.transferID, wait = bulk.askTimeout
            let expiry = Task { [weak self] in
                do { try await Task.sleep(for: wait) } catch { return }
                await self?.askExpired(id)
            }
            asked.append((offer, peer, expiry))
            continuation.yield(.fileOffered(from: peer, transferID: Self.bulkTransferID(id), name: DisplayText.clean(offer.name),
                                            size: Int(offer.size), mimeType: offer.mimeType.map(DisplayText.clean)))
            return
        }
        take(offer, from: peer)
    }

    /// An offer over the network waiting for its person's answer.
    public struct FileOffer: Hashable, Sendable {
        public var from: PeerID
        public var transferID: String
        public var name: String
        public var size: Int
        public var mimeType: String?
        public init(from: PeerID, transferID: String, name: String, size: Int, mimeType: String?) {
            self.from = from
            self.transferID = transferID
            self.name = name
            self.size = size
            self.mimeType = mimeType
        }
    }

    /// Offers over the network waiting for an answer (see ``BulkOptions/ask``), oldest first.
    public var fileOffers: [FileOffer] {
        asked.map { FileOffer(from: $0.peer, transferID: Self.bulkTransferID($0.offer.transferID), name: DisplayText.clean($0.offer.name),
                              size: Int($0.offer.size), mimeType: $0.offer.mimeType.map(DisplayText.clean)) }
    }

    /// No offer waits under that transfer ID (answered, withdrawn, or never made).
    public struct UnknownFileOffer: Error, CustomStringConvertible {
        public var transferID: String
        public var description: String { "no file offer waits with transfer ID \(transferID)" }
    }

    /// A person's answer to an offer told as `fileOffered`: accepted, it is
    /// fetched as one under the limit would be (the disk and the number of
    /// transfers still checked); declined, the sender reads so.
    public func answerFileOffer(_ transferID: String, accept: Bool) throws(UnknownFileOffer) {
        guard let i = asked.firstIndex(where: { Self.bulkTransferID($0.offer.transferID) == transferID.lowercased() }) else {
            throw UnknownFileOffer(transferID: transferID)
        }
        let (offer, peer, expiry) = asked.remove(at: i)
        expiry.cancel()
        if accept { take(offer, from: peer) } else { declineOffer(offer, from: peer, "not wanted", tell: false) }
    }

    private func askExpired(_ id: [UInt8]) {
        guard let i = asked.firstIndex(where: { $0.offer.transferID == id }) else { return }
        let (offer, peer, _) = asked.remove(at: i)
        let minutes = Int((options.bulk?.askTimeout ?? .seconds(600)).components.seconds / 60)
        declineOffer(offer, from: peer, minutes > 0 ? "not answered within \(minutes) min" : "not answered in time")
    }

    /// Declines in words, to the sender and (`tell`) to this node's faces.
    private func declineOffer(_ offer: BulkOffer, from peer: PeerID, _ why: String, tell: Bool = true) {
        answer(BulkAnswer(transferID: offer.transferID, accepted: false, reason: why), to: peer)
        if tell {
            continuation.yield(.rejected(Rejection(.fileRefused, peer: peer, "\(DisplayText.clean(offer.name)) (\(offer.size) bytes) from \(peer) declined: \(why)")))
        }
    }

    /// Takes an offer: the disk and the number of transfers allowing, accepts and fetches it.
    private func take(_ offer: BulkOffer, from peer: PeerID) {
        // The disk keeps 256 MiB free, whatever comes; a disk that cannot say takes nothing.
        if let downloads = options.downloads {
            let free: UInt64
            do {
                let attributes = try FileManager.default.attributesOfFileSystem(forPath: Self.existingAncestor(downloads).path)
                free = (attributes[.systemFreeSize] as? NSNumber)?.uint64Value ?? 0
            } catch {
                declineOffer(offer, from: peer, "the receiver cannot read its free disk space")
                logger.error("cannot read free disk space", metadata: ["directory": "\(downloads.path)", "error": "\(error)"])
                return
            }
            guard offer.size + (256 << 20) <= free else {
                declineOffer(offer, from: peer, "the disk has \(free >> 20) MiB free, and keeps 256 MiB")
                return
            }
        }
        guard downloads.count < options.bulk?.maxDownloads ?? 4 else {
            declineOffer(offer, from: peer, "busy: \(downloads.count) transfers under way")
            return
        }
        answer(BulkAnswer(transferID: offer.transferID, accepted: true), to: peer)
        download(offer, from: peer)
    }

    /// Answers an offer over the session (queued behind a handshake when there
    /// is none); an answer that cannot be sealed at all is logged.
    private func answer(_ a: BulkAnswer, to peer: PeerID) {
        do {
            try command { try $0.sendBulkAnswer(a, to: peer, now: $1) }
        } catch {
            logger.error("could not answer a file offer", metadata: ["peer": "\(peer)", "accepted": "\(a.accepted)", "error": "\(error)"])
        }
    }

    /// Carries an accepted offer, resuming after a broken connection (5 tries, 2 s doubling).
    private func download(_ offer: BulkOffer, from peer: PeerID) {
        guard let directory = options.downloads, downloads.insert(offer.transferID).inserted else { return }
        let events = continuation, logger = self.logger
        let chunk = UInt64(offer.chunkSize), size = offer.size
        let attempts = max(1, options.bulk?.attempts ?? 6)
        var wait = options.bulk?.retryWait ?? .seconds(2)
        Task { [weak self] in
            var failure = ""
            for attempt in 1...attempts {
                do {
                    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                    var d = BulkDownload(offer: offer, directory: directory)
                    d.origin = peer.description
                    let saved = try await d.run { done, _ in
                        events.yield(.fileProgress(from: peer, received: Int(min(size, UInt64(done) * chunk)), total: Int(size)))
                    }
                    events.yield(.fileReceived(from: peer, name: saved.lastPathComponent, size: Int(size), path: saved.path,
                                               transferID: MeshNode.bulkTransferID(offer.transferID)))
                    await self?.downloadEnded(offer.transferID)
                    return
                } catch BulkTransferError.hashMismatch {
                    failure = BulkTransferError.hashMismatch.description
                    break
                } catch {
                    failure = "\(error)"
                    logger.info("bulk download interrupted", metadata: ["attempt": "\(attempt)", "error": "\(error)"])
                    if attempt < attempts { try? await Task.sleep(for: wait) }
                    wait *= 2
                }
            }
            events.yield(.rejected(Rejection(.fileNotSaved, peer: peer, "\(DisplayText.clean(offer.name)) from \(peer): \(failure)")))
            // The sender hears it in words too, and stops serving it.
            await self?.gaveUp(offer, from: peer, failure)
        }
    }

    private func downloadEnded(_ id: [UInt8]) { downloads.remove(id) }

    /// The directory itself, or the nearest parent that exists (downloads are made on first use).
    nonisolated static func existingAncestor(_ url: URL) -> URL {
        var u = url
        while !FileManager.default.fileExists(atPath: u.path), u.pathComponents.count > 1 { u = u.deletingLastPathComponent() }
        return u
    }

    private func gaveUp(_ offer: BulkOffer, from peer: PeerID, _ why: String) {
        downloads.remove(offer.transferID)
        answer(BulkAnswer(transferID: offer.transferID, accepted: false, reason: String(why.utf8.prefix(200)) ?? "gave up"), to: peer)
    }

    func save(_ file: NodeCore.IncomingFile) {
        guard let downloads = options.downloads else {
            core.notStored(file.transferID)
            return
        }
        do {
            try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
            var target = downloads.appendingPathComponent(file.name)
            if FileManager.default.fileExists(atPath: target.path) {
                target = downloads.appendingPathComponent("\(file.transferID.prefix(8))-\(file.name)")
            }
            // One rule for every received file, small or large: readable by its owner only (0600).
            let fd = open(target.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) // never over another file
            guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            do {
                try handle.write(contentsOf: Data(file.content))
                try handle.synchronize()
            } catch {
                // Nothing half-written is left to look received; if it cannot go, the log says where it is.
                do { try FileManager.default.removeItem(at: target) } catch let removal {
                    logger.error("a half-written file could not be removed", metadata: ["path": "\(target.path)", "error": "\(removal)"])
                }
                throw error
            }
            core.stored(file.transferID, now: readClock()) // its receipt: the file is on disk
            continuation.yield(.fileReceived(from: file.from, name: file.name, size: file.content.count, path: target.path,
                                             transferID: file.transferID))
        } catch {
            logger.error("could not save a received file", metadata: ["name": "\(file.name)", "error": "\(error)"])
            core.notStored(file.transferID) // no receipt: its sender tries again
            continuation.yield(.rejected(Rejection(.fileNotSaved, peer: file.from,
                                                   "file from \(file.from) could not be saved: \(error.localizedDescription)")))
        }
    }

    /// A voice burst as `voice_<burst>_<peer>_<dm|mesh>.aac` (AAC in ADTS, as the
    /// apps save them) in the downloads; without downloads, or when the disk
    /// refuses, said in words.
    func save(_ note: VoiceAssembler.Note) {
        let name = note.id + ".aac"
        guard let downloads = options.downloads else {
            continuation.yield(.rejected(Rejection(.fileRefused, peer: note.from, "voice from \(note.from) not kept: no download directory")))
            return
        }
        do {
            try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
            let target = downloads.appendingPathComponent(name)
            try Data(note.adts).write(to: target) // the same burst again (a retried note) replaces its file
            chmod(target.path, 0o600) // as every received file
            continuation.yield(.voiceNote(from: note.from, path: target.path, durationMillis: note.durationMillis, isPrivate: note.isPrivate,
                                          id: note.id, size: note.adts.count))
        } catch {
            continuation.yield(.rejected(Rejection(.fileNotSaved, peer: note.from,
                                                   "voice from \(note.from) could not be saved: \(error.localizedDescription)")))
        }
    }
}
