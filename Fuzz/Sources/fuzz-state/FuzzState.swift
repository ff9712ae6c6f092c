import StarlingCrypto
import StarlingMesh
import StarlingStately
import StarlingWire

/// libFuzzer entry point: untrusted bytes as a Stately state packet — decoded
/// (and re-encoded when it decodes), as a padded report, and through the
/// engine that receives, relays and shows states.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzState(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let p = try? StatePacket(decoding: bytes) {
        guard let again = try? p.encoded(), again == bytes else { fatalError("a decoded state packet did not re-encode to its bytes") }
    }
    _ = try? StateReport(decoding: Array(bytes.prefix(StateReport.paddedSize)))
    var engine = StatelyEngine(senderID: PeerID(rawValue: 1), configuration: .init(name: "fuzz"), seed: 1,
                               nonce: { [UInt8](repeating: 0, count: 12) })
    engine.linkUp(LinkID(1))
    engine.linkUp(LinkID(2))
    _ = engine.receive(bytes, on: LinkID(1), now: 1_767_225_600_000)
    _ = engine.tick(now: 1_767_225_601_000)
    return 0
}
