import Foundation
import StarlingTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif


@Suite(.usesProcesses) struct InspectCommandTests {
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
