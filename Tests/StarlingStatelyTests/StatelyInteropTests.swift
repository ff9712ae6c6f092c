import Foundation
import StarlingTestSupport
import Testing
import StarlingCrypto
import StarlingWire
@testable import StarlingStately
#if canImport(Glibc)
import Glibc
#endif

/// State packets against an independent implementation (Python's
/// `cryptography`: HKDF, scrypt, AES-GCM, and its own JSON), and the worked
/// example of docs/PROTOCOL.md.
@Suite(.usesProcesses) struct StatelyInteropTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs Tests/interop/stately_reference.py with `arguments`; its one line of output.
    static func python(_ arguments: [String]) throws -> String {
        let python = try PythonEnvironment.require()
        let p = Process()
        p.executableURL = python
        p.arguments = [root.appendingPathComponent("Tests/interop/stately_reference.py").path] + arguments
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile() // EOF: the child closed its output
        let deadline = Date().addingTimeInterval(20)
        var status: Int32 = 0
        while waitpid(p.processIdentifier, &status, WNOHANG) == 0, Date() < deadline { usleep(10_000) }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func packet(name: String, state: StateKind, timestamp: UInt64, sender: UInt64, nonce: [UInt8], ttl: UInt8,
                       key: StateKey) throws -> [UInt8] {
        let box = try key.seal(try StateReport(name: name, state: state, timestamp: timestamp).encoded(), nonce: nonce)
        return try StatePacket(ttl: ttl, timestamp: timestamp, senderID: PeerID(rawValue: sender), box: box).encoded()
    }

    static let nonce = (0..<12).map { UInt8($0) }

    @Test func theDocumentedExampleIsWhatBothImplementationsBuild() throws {
        let ours = try Self.packet(name: "alice", state: .working, timestamp: 1_767_225_600_000, sender: 0x0123_4567_89AB_CDEF,
                                   nonce: Self.nonce, ttl: 3, key: .broadcast)
        #expect(ours.count == 241)
        #expect(ours.hexString == (try Self.python([])))
        let doc = try String(contentsOf: Self.root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
        let marker = try #require(doc.range(of: "<!-- example: stately-state -->"))
        let open = try #require(doc[marker.upperBound...].range(of: "```hex\n"))
        let close = try #require(doc[open.upperBound...].range(of: "```"))
        #expect(try [UInt8](hex: doc[open.upperBound..<close.lowerBound]) == ours)
    }

    @Test func groupPacketsAndNonASCIINamesAgreeBothWays() throws {
        let group = try StateKey.group(passphrase: "family")
        let ours = try Self.packet(name: "Zoë", state: .sos, timestamp: 1_767_225_600_000, sender: 0x0123_4567_89AB_CDEF,
                                   nonce: Self.nonce, ttl: 7, key: group)
        let theirs = try Self.python(["--group", "family", "--state", "sos", "--ttl", "7", "--name", "Zoë"])
        #expect(ours.hexString == theirs)
        // Python opens what we sealed, and we open what it sealed.
        let mine = try Self.packet(name: "bob", state: .eating, timestamp: 42, sender: 7, nonce: [UInt8](repeating: 9, count: 12),
                                   ttl: 2, key: group)
        #expect(try Self.python(["--open", mine.hexString, "--group", "family"]) == #"{"name":"bob","state":"eating","timestamp":42}"#)
        let packet = try StatePacket(decoding: try [UInt8](hex: theirs))
        #expect(try StateReport(decoding: try group.open(packet.box)) == StateReport(name: "Zoë", state: .sos, timestamp: 1_767_225_600_000))
    }
}
