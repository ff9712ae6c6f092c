import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Runs the real `starling` binary, built next to this test bundle.
struct StarlingProcess {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static var executable: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("starling")
    }

    /// Runs `starling` to the end. Async: waiting never holds a thread of the
    /// shared pool that in-process async tests need.
    static func run(executable program: URL? = nil, _ arguments: [String], stdin: Data? = nil,
                    environment: [String: String] = [:]) async throws -> Result {
        let process = Process()
        process.executableURL = program ?? executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try input.fileHandleForWriting.close()
        // The pipes are read without blocking while the child runs (a full pipe
        // would stall it) and drained once it has exited: what it wrote is in
        // the pipe then. Not read to end-of-file: that waits forever when
        // another child holds a pipe.
        var stdout = Data(), stderr = Data()
        let outFD = out.fileHandleForReading.fileDescriptor, errFD = err.fileHandleForReading.fileDescriptor
        for fd in [outFD, errFD] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        func drain() {
            read(outFD, into: &stdout)
            read(errFD, into: &stderr)
        }
        var status: Int32?
        let deadline = Date().addingTimeInterval(60)
        while status == nil, Date() < deadline {
            drain()
            status = waitForExit(process, seconds: 0)
            if status == nil { try? await Task.sleep(for: .milliseconds(10)) }
        }
        if status == nil {
            kill(process.processIdentifier, SIGKILL)
            status = -1
        }
        drain()
        return Result(status: status ?? -1, stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// Appends what a non-blocking descriptor holds now.
    static func read(_ fd: Int32, into data: inout Data) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { return }
            data.append(contentsOf: buffer[0..<n])
        }
    }

    /// Waits for a child to exit, for at most `seconds`, and returns its exit
    /// status (nil on timeout). Polls waitpid instead of Foundation's
    /// waitUntilExit, which can miss a child's exit and wait forever; when
    /// Foundation reaped the child first, asks it for the status only once it
    /// knows (asking earlier traps).
    static func waitForExit(_ process: Process, seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        let pid = process.processIdentifier
        var first = true // checked at least once, even with 0 seconds
        while first || Date() < deadline {
            first = false
            var raw: Int32 = 0
            let r = waitpid(pid, &raw, WNOHANG)
            if r == pid { return (raw & 0x7F) == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F) }
            if r == -1 && errno == ECHILD {
                let known = Date().addingTimeInterval(2)
                while process.isRunning, Date() < known { Thread.sleep(forTimeInterval: 0.01) }
                return process.isRunning ? nil : process.terminationStatus
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return nil
    }
}

@Suite struct InspectCommandTests {
    static let hello = "01 02 07 0000019aaaac2600 00 0005 a1b2c3d4e5f60718 68656c6c6f"
    static let helloHex = hello.replacingOccurrences(of: " ", with: "")

    @Test func textOutputShowsEveryField() async throws {
        let r = try await StarlingProcess.run(["inspect", Self.helloHex])
        #expect(r.status == 0)
        #expect(r.stdout.contains("type: 2 (message)"))
        #expect(r.stdout.contains("timestamp: 1763800000000 (2025-11-22T08:26:40.000Z)"))
        #expect(r.stdout.contains("senderID: \"a1b2c3d4e5f60718\""))
        #expect(r.stdout.contains("message: \"hello\""))
        #expect(r.stdout.contains("packetID: \"edc627a8bb30fbc405e2f403f7b946ce\""))
    }

    @Test func jsonOutputParses() async throws {
        let r = try await StarlingProcess.run(["inspect", "--json", Self.helloHex])
        #expect(r.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        let packet = try #require(object?["packet"] as? [String: Any])
        #expect(packet["message"] as? String == "hello")
        #expect(packet["ttl"] as? Int == 7)
        #expect((packet["type"] as? [String: Any])?["note"] as? String == "message")
    }

    @Test func readsStandardInputAndFiles() async throws {
        let viaStdin = try await StarlingProcess.run(["inspect"], stdin: Data((Self.hello + "\n").utf8))
        #expect(viaStdin.status == 0)
        #expect(viaStdin.stdout.contains("message: \"hello\""))

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("starling-inspect-\(getpid()).bin")
        var raw = [UInt8]()
        var s = Self.helloHex[...]
        while !s.isEmpty { raw.append(UInt8(s.prefix(2), radix: 16)!); s = s.dropFirst(2) }
        try Data(raw).write(to: path)
        defer { try? FileManager.default.removeItem(at: path) }
        let viaFile = try await StarlingProcess.run(["inspect", "--binary", "--file", path.path])
        #expect(viaFile.status == 0)
        #expect(viaFile.stdout.contains("message: \"hello\""))
    }

    @Test func malformedInputNamesFieldAndOffset() async throws {
        let r = try await StarlingProcess.run(["inspect", String(Self.helloHex.prefix(40))])
        #expect(r.status == 1)
        #expect(r.stderr.contains("senderID at byte 14: truncated: needs 8 bytes, 6 available"))
        #expect(r.stdout.isEmpty)

        let badVersion = try await StarlingProcess.run(["inspect", "09" + Self.helloHex.dropFirst(2)])
        #expect(badVersion.status == 1)
        #expect(badVersion.stderr.contains("version at byte 0: unsupported version 9"))

        let notHex = try await StarlingProcess.run(["inspect", "01zz"])
        #expect(notHex.status != 0)
        #expect(notHex.stderr.contains("not hexadecimal"))
    }

    @Test func noisePlaintext() async throws {
        let r = try await StarlingProcess.run(["inspect", "--noise-plaintext", "--json", "0100046d2d303101026869"])
        #expect(r.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        let payload = try #require(object?["noisePayload"] as? [String: Any])
        #expect(payload["messageID"] as? String == "m-01")
        #expect(payload["content"] as? String == "hi")
    }
}
