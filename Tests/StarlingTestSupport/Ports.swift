import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Ports on 127.0.0.1 that were free a moment ago (the kernel's choice):
/// for a server a test starts on a port it names, or for a port where
/// nothing listens.
public enum LoopbackPorts {
    public static func free(_ kind: __socket_type) throws -> UInt16 {
        let fd = socket(AF_INET, Int32(kind.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        try #require(bound, "no free port on 127.0.0.1")
        return UInt16(bigEndian: address.sin_port)
    }

    public static func freeTCP() throws -> UInt16 { try free(SOCK_STREAM) }
    public static func freeUDP() throws -> UInt16 { try free(SOCK_DGRAM) }
}
