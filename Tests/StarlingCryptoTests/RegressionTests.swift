import Foundation
import Testing
import StarlingWire
@testable import StarlingCrypto

/// Inputs the noise-session fuzzer found, replayed: each is refused or handled
/// without trapping, and no forged frame opens.
@Suite struct CryptoRegressionTests {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    /// What scripts/fuzz keeps (its finds) and the harness's seeds, one per mode.
    static let folders = ["Tests/StarlingWireTests/Regressions/noise-session", "Fuzz/seeds/noise-session"]
    static func inputs() -> [String] {
        folders.flatMap { folder in
            let dir = repo.appendingPathComponent(folder)
            return ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [])
                .filter { !$0.hasPrefix(".") && $0 != "README.md" }.sorted().map { dir.appendingPathComponent($0).path }
        }
    }

    /// An empty `arguments:` list runs no case and fails nothing: this does.
    @Test func theCorpusIsPresentAndCoversEveryMode() throws {
        let inputs = Self.inputs()
        try #require(!inputs.isEmpty, "no noise-session inputs in \(Self.folders)")
        let modes = Set(inputs.compactMap { (try? Data(contentsOf: URL(fileURLWithPath: $0)))?.first.map { $0 % 3 } })
        #expect(modes == [0, 1, 2], "modes covered: \(modes)")
    }

    @Test func handshakeGarbageIsRefused() throws {
        var b = SessionManager(identity: Identity.generate())
        for n in [0, 1, 31, 33, 63, 64, 95, 96, 200] {
            let junk = [UInt8](repeating: 0xA5, count: n)
            _ = try? b.receiveHandshake(junk, from: PeerID(rawValue: UInt64(n)), now: 0)
        }
        #expect(b.sessionCount == 0)
    }

    /// The harness's three modes (Fuzz/Sources/fuzz-noise-session): a first
    /// message, a third after a real first, a transport frame on a session.
    @Test(arguments: inputs())
    func replay(path: String) throws {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let selector = try #require(bytes.first, "empty input: \(path)")
        let body = Array(bytes.dropFirst())
        let responder = Identity.generate(), initiator = Identity.generate()
        var b = SessionManager(identity: responder)
        switch selector % 3 {
        case 0:
            _ = try? b.receiveHandshake(body, from: initiator.peerID, now: 0)
            #expect(b.sessionCount == 0)
        case 1:
            var a = SessionManager(identity: initiator)
            let m1 = try a.initiateHandshake(with: responder.peerID, now: 0)
            #expect(try b.receiveHandshake(m1, from: initiator.peerID, now: 0).reply != nil)
            _ = try? b.receiveHandshake(body, from: initiator.peerID, now: 0)
            #expect(b.sessionCount == 0) // a forged third message establishes nothing
        default:
            var a = SessionManager(identity: initiator)
            let m1 = try a.initiateHandshake(with: responder.peerID, now: 0)
            let m2 = try #require(try b.receiveHandshake(m1, from: initiator.peerID, now: 0).reply)
            let m3 = try #require(try a.receiveHandshake(m2, from: responder.peerID, now: 0).reply)
            _ = try b.receiveHandshake(m3, from: initiator.peerID, now: 0)
            #expect(b.sessionCount == 1) // the control: a real session
            if case .plaintext? = try? b.open(body, from: initiator.peerID, now: 0) { Issue.record("a forged frame opened: \(path)") }
        }
    }
}
