import Foundation
import StarlingTestSupport
import Testing
@testable import StarlingCrypto
#if canImport(Glibc)
import Glibc
#endif

/// XX handshakes and transport messages between Starling and the Python
/// `noiseprotocol` package (an independent implementation), over TCP on
/// 127.0.0.1, with Starling as initiator and as responder.
@Suite(.serialized, .usesProcesses) struct PythonNoiseInteropTests {
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// A blocking loopback TCP connection with u16-length frames and 20 s timeouts.
    final class Connection {
        let fd: Int32

        init(port: UInt16) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard rc == 0 else { throw POSIXError(.ECONNREFUSED) }
        }

        deinit { close(fd) }

        func send(_ bytes: [UInt8]) throws {
            let frame = [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
            var sent = 0
            while sent < frame.count {
                let n = frame[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { throw POSIXError(.EPIPE) }
                sent += n
            }
        }

        func receive() throws -> [UInt8] {
            let header = try readExact(2)
            return try readExact(Int(header[0]) << 8 | Int(header[1]))
        }

        private func readExact(_ count: Int) throws -> [UInt8] {
            var out = [UInt8](repeating: 0, count: count)
            var got = 0
            while got < count {
                let n = out[got...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { throw POSIXError(.ETIMEDOUT) }
                got += n
            }
            return out
        }
    }

    /// Starts the Python peer and returns it with the port it listens on.
    static func startPeer(role: String, messages: Int) throws -> (Process, UInt16) {
        let python = try PythonEnvironment.require()
        let process = Process()
        process.executableURL = python
        process.arguments = [repoRoot.appendingPathComponent("Tests/interop/noise_peer.py").path, role, String(messages)]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        var line = [UInt8]()
        while let byte = try out.fileHandleForReading.read(upToCount: 1)?.first, byte != 0x0A, line.count < 16 {
            line.append(byte)
        }
        let port = try #require(UInt16(String(decoding: line, as: UTF8.self)))
        return (process, port)
    }

    @Test(arguments: [true, false])
    func xxWithNoiseprotocol(starlingIsInitiator: Bool) throws {
        let messages = 24
        let (process, port) = try Self.startPeer(role: starlingIsInitiator ? "responder" : "initiator", messages: messages)
        defer { process.waitUntilExit() }
        let connection = try Connection(port: port)
        let identity = Identity.generate()
        var hs = try HandshakeState(protocol: .bitchat, initiator: starlingIsInitiator, localStatic: identity.noiseKey)
        while !hs.isComplete {
            if hs.isMyTurn { try connection.send(try hs.writeMessage()) } else { _ = try hs.readMessage(try connection.receive()) }
        }
        // Both sides derived the same handshake hash, and we learnt Python's static key.
        #expect(try connection.receive() == hs.handshakeHash)
        #expect(try connection.receive() == hs.remoteStatic)
        let (i2r, r2i) = try hs.split()
        var (sender, receiver) = starlingIsInitiator ? (i2r, r2i) : (r2i, i2r)
        var rng = SystemRandomNumberGenerator()
        for i in 0..<messages {
            let size = [0, 1, 15, 16, 255, 469, 1024, 60_000][i % 8]
            let plaintext = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
            try connection.send(try sender.encrypt(ad: [], plaintext: plaintext))
            #expect(try receiver.decrypt(ad: [], ciphertext: try connection.receive()) == Array("echo:".utf8) + plaintext)
        }
        for i in 0..<3 {
            #expect(try receiver.decrypt(ad: [], ciphertext: try connection.receive()) == Array("from python \(i)".utf8))
        }
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
