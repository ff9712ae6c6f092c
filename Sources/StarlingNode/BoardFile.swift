import Foundation
#if canImport(Glibc)
import Glibc
#endif
import StarlingNodeCore
import StarlingWire

/// The mesh board kept on disk (the data directory's `board`, 0600): the
/// packets that carried its posts and tombstones, each as u32 big-endian
/// length + the packet's wire bytes, written whole (a temporary file renamed).
/// On load each is checked again by the node core, as if it came.
public struct BoardFile: Sendable {
    public let url: URL
    /// More than the board holds (200 posts, 300 tombstones): a file past it is cut.
    static let maxPackets = 1_000
    static let maxPacketBytes = 64 << 10

    public init(url: URL) { self.url = url }

    /// The packets kept (none when there is no file). A file cut short or
    /// with bytes that are not packets gives what came before the damage.
    public func load() throws -> [Packet] {
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        let bytes = [UInt8](try Data(contentsOf: url))
        var packets: [Packet] = [], i = 0
        while i + 4 <= bytes.count, packets.count < Self.maxPackets {
            let n = Int(bytes[i]) << 24 | Int(bytes[i + 1]) << 16 | Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            guard n > 0, n <= Self.maxPacketBytes, i + 4 + n <= bytes.count, let p = try? Packet(decoding: Array(bytes[(i + 4)..<(i + 4 + n)])) else { break }
            packets.append(p)
            i += 4 + n
        }
        return packets
    }

    public func save(_ packets: [Packet]) throws {
        var out: [UInt8] = []
        for p in packets.prefix(Self.maxPackets) {
            let b = try p.encoded()
            out += [UInt8(b.count >> 24 & 0xFF), UInt8(b.count >> 16 & 0xFF), UInt8(b.count >> 8 & 0xFF), UInt8(b.count & 0xFF)] + b
        }
        try Self.writeWhole(out, to: url)
    }

    /// Writes `out` to `url` whole: a private temporary file (0600, never a
    /// link followed), synced to disk, then renamed over the old one.
    static func writeWhole(_ out: [UInt8], to url: URL) throws {
        let tmp = url.path + ".tmp"
        unlink(tmp)
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: tmp]) }
        let written = out.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == out.count, fsync(fd) == 0 else {
            close(fd)
            unlink(tmp)
            throw CocoaError(.fileWriteOutOfSpace, userInfo: [NSFilePathErrorKey: tmp])
        }
        close(fd)
        guard rename(tmp, url.path) == 0 else {
            unlink(tmp)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
    }
}

/// Our own one-time prekeys kept on disk (the data directory's `prekeys`,
/// 0600: they are private keys), as JSON, written whole at every change. Lost,
/// drops sealed to the prekeys we published could not be opened.
public struct PrekeyFile: Sendable {
    public let url: URL
    public init(url: URL) { self.url = url }

    /// The prekeys kept; nil when there is no file yet.
    public func load() throws -> LocalPrekeys? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return try JSONDecoder().decode(LocalPrekeys.self, from: Data(contentsOf: url))
    }

    public func save(_ p: LocalPrekeys) throws {
        try BoardFile.writeWhole([UInt8](try JSONEncoder().encode(p)), to: url)
    }
}
