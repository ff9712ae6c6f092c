import Foundation
import StarlingTestSupport
import Testing

@Suite(.usesProcesses) struct IdCommandTests {
    static func temporaryDirectory() -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("starling-id-\(UUID().uuidString)")
        return url.path
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func createsOnceKeepsAcrossRunsWith0600() async throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try await StarlingProcess.run(["id", "--data-dir", dir, "--name", "alice", "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        let a = try Self.json(first.stdout)
        #expect(a["created"] as? Bool == true)
        #expect(a["nickname"] as? String == "alice")
        let fingerprint = try #require(a["fingerprint"] as? String)
        #expect(fingerprint.count == 64)
        #expect((a["peerID"] as? String) == String(fingerprint.prefix(16)))
        let mode = try FileManager.default.attributesOfItem(atPath: dir + "/identity.key")[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let second = try Self.json(try await StarlingProcess.run(["id", "--data-dir", dir, "--json"]).stdout)
        #expect(second["created"] as? Bool == false)
        #expect(second["fingerprint"] as? String == fingerprint)

        let text = try await StarlingProcess.run(["id", "--data-dir", dir])
        #expect(text.stdout.contains("nickname:    alice"))
        #expect(text.stdout.contains("fingerprint: \(fingerprint.prefix(4)) "))
        // The Ya OK card's fingerprint, named apart and shown beside the mesh's; `contact qr` names it so too.
        let qr = try await StarlingProcess.run(["contact", "qr", "--data-dir", dir])
        let cardLine = try #require(qr.stdout.split(separator: "\n").first { $0.hasPrefix("card fingerprint: ") }, "\(qr.stdout)")
        let cardFirst = cardLine.dropFirst("card fingerprint: ".count).prefix(9)
        #expect(text.stdout.contains("card:        \(cardFirst)"), "\(text.stdout)\n\(qr.stdout)")
        #expect(!cardFirst.isEmpty && !fingerprint.hasPrefix(cardFirst.replacingOccurrences(of: " ", with: "")))

        // A nickname an announce cannot carry is refused, and the old one kept.
        let long = try await StarlingProcess.run(["id", "--data-dir", dir, "--name", String(repeating: "n", count: 256)])
        #expect(long.status != 0 && long.stderr.contains("1 to 255 bytes"))
        #expect(try Self.json(try await StarlingProcess.run(["id", "--data-dir", dir, "--json"]).stdout)["nickname"] as? String == "alice")

        // Readable by others: refused.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: dir + "/identity.key")
        let loose = try await StarlingProcess.run(["id", "--data-dir", dir])
        #expect(loose.status != 0)
        #expect(loose.stderr.contains("chmod 600"))
    }

    @Test func sealedKeyFileNeedsItsPassphrase() async throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let created = try await StarlingProcess.run(["id", "--data-dir", dir, "--seal", "--json"],
                                              environment: ["STARLING_PASSPHRASE": "river stone"])
        let a = try Self.json(created.stdout)
        #expect(a["sealed"] as? Bool == true)
        let again = try await StarlingProcess.run(["id", "--data-dir", dir, "--json"], environment: ["STARLING_PASSPHRASE": "river stone"])
        #expect(try Self.json(again.stdout)["fingerprint"] as? String == a["fingerprint"] as? String)
        let wrong = try await StarlingProcess.run(["id", "--data-dir", dir], environment: ["STARLING_PASSPHRASE": "wrong"])
        #expect(wrong.status != 0)
        #expect(wrong.stderr.contains("wrong passphrase"))
        let key = try Data(contentsOf: URL(fileURLWithPath: dir + "/identity.key"))
        #expect(key.prefix(6) == Data([0x53, 0x4B, 0x45, 0x59, 0x01, 0x01]))
    }
}
