import StarlingCrypto
import StarlingMesh
import StarlingWire

/// Copies saved of each file, by transfer ID (1,024 files counted, any one
/// forgotten past it): the transfer ID is the file's hash, so a retry and a
/// second send of the same file look alike; past 3 copies one is refused in words.
struct FileCopies: Sendable {
    private var copies: [String: Int] = [:]
    var count: Int { copies.count }

    /// Counts one more copy of `id`: how many have come.
    mutating func count(_ id: String) -> Int {
        let n = (copies[id] ?? 0) + 1
        if copies[id] == nil, copies.count >= 1_024, let any = copies.keys.first { copies[any] = nil }
        copies[id] = n
        return n
    }
}

/// Private files on the node: sent in the Noise session (fragmented on the
/// way), or offered over TCP when too large for the mesh (docs/PROTOCOL.md,
/// "Bulk transfer"); received ones handed to the runtime to save.
extension NodeCore {
    /// Sends a file privately (end-to-end encrypted, fragmented on the way).
    /// Returns its transfer ID: the SHA-256 of the file TLV payload, in hex,
    /// which the delivered receipt names.
    @discardableResult
    public mutating func sendFile(name: String, mimeType: String?, content: [UInt8], to peer: PeerID, now: Millis) throws -> String {
        let file = FileTransfer(name: name, mimeType: mimeType, content: content)
        // The packet it makes must fit the links in as many fragments as receivers
        // accept; checked here, or it would only fail after the retry budget.
        let sealed = try NoisePayload.privateFile(file).encoded().count + NoiseTransport.overhead
        let probe = NoisePackets.encrypted([UInt8](repeating: 0, count: sealed), from: peerID, to: peer, timestamp: 0)
        let largest = router.largestPacket(like: probe, defaultFrame: configuration.maxFrame)
        let size = try probe.encoded().count
        guard size <= largest else { throw FileTooLarge(bytes: content.count, limit: max(0, content.count - (size - largest))) }
        let id = sha256Hex(try file.encoded())
        try sendTracked(.privateFile(file), id: id, to: peer, now: now)
        awaitRead(id, from: peer)
        return id
    }

    /// The ID an offer is tracked under (its delivered receipt names it).
    public static func bulkID(_ transferID: [UInt8]) -> String { "bulk-" + transferID.map { String(format: "%02x", $0) }.joined() }

    /// Offers a file over TCP (the runtime serves it): tracked and retried
    /// like a message until the peer's receipt; returns the ID it is tracked under.
    @discardableResult
    public mutating func sendBulkOffer(_ offer: BulkOffer, to peer: PeerID, now: Millis) throws -> String {
        let id = Self.bulkID(offer.transferID)
        try sendTracked(.bulkOffer(offer), id: id, to: peer, now: now)
        // The receiver's read receipt names the transfer (its file's ID), not the offer's tracking ID.
        awaitRead(offer.transferID.map { String(format: "%02x", $0) }.joined(), from: peer)
        return id
    }

    /// Accepts or declines a peer's offer, in words.
    public mutating func sendBulkAnswer(_ answer: BulkAnswer, to peer: PeerID, now: Millis) throws {
        try sendNoise(.bulkAnswer(answer), to: peer, now: now)
    }

    mutating func receiveFile(_ file: FileTransfer, from sender: PeerID, now: Millis) {
        guard configuration.acceptsFiles, let tlv = try? file.encoded() else {
            emit(.rejected(Rejection(.fileRefused, peer: sender, "file from \(sender) refused: no download directory")))
            return
        }
        let id = sha256Hex(tlv)
        if configuration.receiptsAfterStored {
            // Its receipt goes once the runtime has saved it (``stored(_:now:)``).
            if awaitingStore.isWaiting(id) { return } // a retry while it is being saved
            awaitAndKeep(id, from: sender, now: now)
        } else {
            try? sendNoise(.delivered(messageID: id), to: sender, now: now)
        }
        // The transfer ID is the hash of the file (as the apps make it), so a
        // retry and a deliberate second send of the same file look alike: each
        // complete copy is saved (a retry after a lost receipt costs a second
        // copy, never a lost file), at most 3 of one file, then refused in words.
        let copies = fileCopies.count(id)
        guard copies <= 3 else {
            emit(.rejected(Rejection(.fileRefused, peer: sender,
                                     "\(Self.safeName(file.name, id: id)) from \(sender) again (\(copies) times): not saved again")))
            stored(id, now: now) // saved before: acknowledged, so that its sender stops
            return
        }
        output(.saveFile(IncomingFile(from: sender, name: Self.safeName(file.name, id: id), mimeType: file.mimeType,
                                             content: file.content, transferID: id)))
    }

    /// Only a plain base name, never a path a stranger chose.
    static func safeName(_ name: String?, id: String) -> String {
        let raw = (name ?? "file").split(separator: "/").last.map(String.init) ?? "file"
        let base = DisplayText.clean(raw).filter { $0 != "\\" }
        return base.isEmpty || base.hasPrefix(".") ? "file-\(id.prefix(8))" : base
    }
}
