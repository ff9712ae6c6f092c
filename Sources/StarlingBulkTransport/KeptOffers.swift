import Foundation
#if canImport(Glibc)
import Glibc
#endif
import StarlingWire

/// The offers a sender made, kept on disk so that a restart serves them again
/// and a receiver's download resumes where its disk ends (docs/BULK.md).
///
/// One file a transfer in `directory` (0700): `ID.kept`, 0600 (the offer holds
/// its transfer key), a line each: the offer (hex), the file's path, the peer
/// it went to (an opaque string), the file's size and modification time when
/// offered. Removed when the transfer ends; a week untouched, at the next start.
public struct KeptOffers: Sendable {
    public let directory: URL

    public struct Record: Sendable, Hashable {
        public var offer: BulkOffer
        public var file: URL
        public var peer: String
        public var size: UInt64
        public var modified: Double

        public init(offer: BulkOffer, file: URL, peer: String, size: UInt64, modified: Double) {
            self.offer = offer
            self.file = file
            self.peer = peer
            self.size = size
            self.modified = modified
        }
    }

    public init(directory: URL) { self.directory = directory }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    func url(_ id: [UInt8]) -> URL { directory.appendingPathComponent(Self.hex(id) + ".kept") }

    /// The file's size and modification time now (what a kept offer must still match).
    public static func stamp(_ file: URL) throws -> (size: UInt64, modified: Double) {
        let a = try FileManager.default.attributesOfItem(atPath: file.path)
        return ((a[.size] as? NSNumber)?.uint64Value ?? 0, (a[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0)
    }

    /// Keeps a record, written whole (a temporary file renamed) and private.
    public func keep(_ r: Record) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let text = [Self.hex(try r.offer.encoded()), r.file.path, r.peer, String(r.size), String(r.modified)].joined(separator: "\n") + "\n"
        let target = url(r.offer.transferID), temporary = target.appendingPathExtension("tmp")
        guard FileManager.default.createFile(atPath: temporary.path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: temporary.path])
        }
        // rename(2): the old record, if any, is replaced whole.
        guard rename(temporary.path, target.path) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: target.path])
        }
    }

    /// Forgets a transfer (saved, declined, given up).
    public func forget(_ id: [UInt8]) throws {
        let u = url(id)
        if FileManager.default.fileExists(atPath: u.path) { try FileManager.default.removeItem(at: u) }
    }

    /// The records that can still be served: their file unchanged since the offer.
    /// What cannot (unreadable, a week untouched, its file changed or gone) is
    /// removed; the names removed come back too.
    public func load(olderThan age: TimeInterval = 7 * 86_400, now: Date = Date()) throws -> (records: [Record], removed: [String]) {
        let fm = FileManager.default
        guard fm.fileExists(atPath: directory.path) else { return ([], []) }
        var records: [Record] = [], removed: [String] = []
        for name in try fm.contentsOfDirectory(atPath: directory.path).sorted() where name.hasSuffix(".kept") || name.hasSuffix(".kept.tmp") {
            let u = directory.appendingPathComponent(name)
            let written = try fm.attributesOfItem(atPath: u.path)[.modificationDate] as? Date ?? .distantPast
            if let r = Self.parse(fm.contents(atPath: u.path)), name == Self.hex(r.offer.transferID) + ".kept",
               now.timeIntervalSince(written) <= age, let stamp = try? Self.stamp(r.file), stamp.size == r.size, stamp.modified == r.modified {
                records.append(r)
            } else {
                try fm.removeItem(at: u)
                removed.append(name)
            }
        }
        return (records, removed)
    }

    /// The files the readable records name, by transfer ID (hex), removing
    /// nothing: what an owner of the files (the daemon's uploads) must keep.
    /// None when the directory does not exist; throws when it cannot be read
    /// (then nobody knows what is kept, and an owner must remove nothing).
    public func files() throws -> [String: URL] {
        let fm = FileManager.default
        guard fm.fileExists(atPath: directory.path) else { return [:] } // none kept yet
        let names = try fm.contentsOfDirectory(atPath: directory.path)
        var files: [String: URL] = [:]
        for name in names where name.hasSuffix(".kept") {
            if let r = Self.parse(fm.contents(atPath: directory.appendingPathComponent(name).path)) {
                files[Self.hex(r.offer.transferID)] = r.file
            }
        }
        return files
    }

    static func parse(_ data: Data?) -> Record? {
        guard let data else { return nil }
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count >= 5, lines[0].count % 2 == 0, let size = UInt64(lines[3]), let modified = Double(lines[4]) else { return nil }
        var bytes: [UInt8] = []
        var i = lines[0].startIndex
        while i < lines[0].endIndex {
            let j = lines[0].index(i, offsetBy: 2)
            guard let b = UInt8(lines[0][i..<j], radix: 16) else { return nil }
            bytes.append(b)
            i = j
        }
        guard let offer = try? BulkOffer(decoding: bytes[...]) else { return nil } // unreadable: removed
        return Record(offer: offer, file: URL(fileURLWithPath: lines[1]), peer: lines[2], size: size, modified: modified)
    }

    /// The port the listener had (to listen on it again: the offers name it).
    public var lastPort: Int? {
        FileManager.default.contents(atPath: directory.appendingPathComponent("port").path)
            .flatMap { Int(String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    public func remember(port: Int) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try Data("\(port)\n".utf8).write(to: directory.appendingPathComponent("port"), options: .atomic)
    }
}
