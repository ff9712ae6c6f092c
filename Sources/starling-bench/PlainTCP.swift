import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Plain TCP with the C socket calls, for baselines with nothing in between:
/// a file written into a socket, a socket's bytes written to a file.
enum PlainTCP {
    static func address(_ host: String, _ port: UInt16) -> sockaddr_in {
        sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: port.bigEndian, sin_addr: in_addr(s_addr: inet_addr(host)),
                    sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
    }

    /// A socket bound to host:port (0: any free one), and its port.
    static func bound(_ type: Int32 = Int32(SOCK_STREAM.rawValue), host: String = "127.0.0.1", port: UInt16 = 0) -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, type, 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var a = address(host, port)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        return (fd, UInt16(bigEndian: a.sin_port))
    }

    /// A free port on 127.0.0.1 now (UDP).
    static func freePort() -> UInt16 {
        let (fd, port) = bound(Int32(SOCK_DGRAM.rawValue))
        close(fd)
        return port
    }

    static func connected(_ host: String, _ port: UInt16) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var to = address(host, port)
        guard withUnsafePointer(to: &to, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }) == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// The file into the socket, 64 KiB at a time; then the socket is closed.
    static func send(_ path: String, to fd: Int32) {
        defer { close(fd) }
        guard let h = FileHandle(forReadingAtPath: path) else { return }
        while let d = try? h.read(upToCount: 65_536), !d.isEmpty {
            let sent = d.withUnsafeBytes { raw -> Bool in
                var off = 0
                while off < raw.count {
                    let n = Glibc.send(fd, raw.baseAddress! + off, raw.count - off, 0)
                    if n <= 0 { return false }
                    off += n
                }
                return true
            }
            if !sent { return }
        }
    }

    /// What the socket carries until it closes, into a new file; `each`
    /// after every read (with the bytes so far). Returns when the first byte came.
    static func receive(_ fd: Int32, into path: String, each: (Int) -> Void = { _ in }) throws -> Date? {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var first: Date?, total = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, 65_536, 0) }
            if n <= 0 { break }
            if first == nil { first = Date() }
            try out.write(contentsOf: Data(buffer[0..<n]))
            total += n
            each(total)
        }
        try out.synchronize()
        try out.close()
        return first
    }
}
