import Testing
import StarlingCrypto
import StarlingWire
@testable import StarlingNode

/// A file whose packet would need more fragments than receivers accept is
/// refused when it is sent, with the largest that fits, not lost later.
@Suite struct FileSizeTests {
    @Test func aFileTooLargeForTheLinksIsRefusedAtOnce() async throws {
        var options = MeshNode.Options(nickname: "sender")
        options.udp = nil
        let node = try MeshNode(identity: Identity.generate(), options: options)
        let bob = PeerID(rawValue: 42)
        func send(_ count: Int) async throws {
            _ = try await node.sendFile(name: "photo.jpg", mimeType: nil, content: [UInt8](repeating: 7, count: count), to: bob)
        }
        let error = try #require(await #expect(throws: MeshNode.FileTooLarge.self) { try await send(200_000) })
        #expect(error.bytes == 200_000)
        // 256 fragments of 469 bytes on 512-byte frames, less the headers around the file.
        #expect(error.limit > 119_900 && error.limit < 256 * 469)
        #expect(error.description == "file too large: 200000 bytes; at most \(error.limit) over these links")
        try await send(error.limit)
        await #expect(throws: MeshNode.FileTooLarge.self) { try await send(error.limit + 1) }
    }
}
