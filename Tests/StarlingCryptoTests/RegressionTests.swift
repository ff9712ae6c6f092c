import Foundation
import Testing
import StarlingWire
@testable import StarlingCrypto

/// Inputs the noise-session fuzzer found, replayed: each is refused or handled
/// without trapping, and no forged frame opens.
@Suite struct CryptoRegressionTests {
    static func inputs() -> [String] {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("StarlingWireTests/Regressions/noise-session")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.sorted().map { dir.appendingPathComponent($0).path }
    }

    @Test func handshakeGarbageIsRefused() throws {
        var b = SessionManager(identity: Identity.generate())
        for n in [0, 1, 31, 33, 63, 64, 95, 96, 200] {
            let junk = [UInt8](repeating: 0xA5, count: n)
            _ = try? b.receiveHandshake(junk, from: PeerID(rawValue: UInt64(n)), now: 0)
        }
        #expect(b.sessionCount == 0)
    }

    @Test(arguments: inputs())
    func replay(path: String) throws {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var b = SessionManager(identity: Identity.generate())
        _ = try? b.receiveHandshake(Array(bytes.dropFirst()), from: PeerID(rawValue: 1), now: 0)
        #expect(b.sessionCount == 0)
    }
}
