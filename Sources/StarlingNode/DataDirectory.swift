import Foundation

/// Where a node keeps its state: `$XDG_DATA_HOME/starling`, else
/// `~/.local/share/starling`, unless a directory is given (`--data-dir`).
public struct DataDirectory: Sendable {
    public let url: URL

    public init(explicit path: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment) {
        if let path {
            url = URL(fileURLWithPath: path, isDirectory: true)
        } else if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            url = URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("starling", isDirectory: true)
        } else {
            let home = environment["HOME"] ?? NSHomeDirectory()
            url = URL(fileURLWithPath: home, isDirectory: true)
                .appendingPathComponent(".local/share/starling", isDirectory: true)
        }
    }

    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Creates the directory (0700) when missing.
    public func create() throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive lock on a data directory (`lock`, holding the owner's PID),
/// held while a node runs on it: two nodes on one identity would see each
/// other as a second peer with the same keys. The kernel drops the lock when
/// the process ends, however it ends.
public final class DirectoryLock: @unchecked Sendable {
    public struct Held: Error, CustomStringConvertible {
        public let path: String
        public let pid: Int32?
        public var description: String {
            "another starling process\(pid.map { " (pid \($0))" } ?? "") is using \(path): stop it, or use another data directory"
        }
    }

    private let fd: Int32

    /// Takes the lock, or throws `Held` naming the process that holds it.
    public init(_ directory: DataDirectory) throws {
        try directory.create()
        let path = directory.file("lock").path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 32)
            let n = read(fd, &buffer, buffer.count)
            close(fd)
            let text = n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
            throw Held(path: directory.url.path, pid: Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        ftruncate(fd, 0)
        let pid = Array("\(getpid())\n".utf8)
        _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        self.fd = fd
    }

    deinit {
        flock(fd, LOCK_UN)
        close(fd)
    }
}
