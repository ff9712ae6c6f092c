import StarlingWire

/// libFuzzer entry point: any bytes as a public message's payload (v1 and v2).
/// The packet we would sign must survive an iPhone's check: decoded, then
/// encoded again under the iOS compression rule, it signs the same bytes
/// (docs/PROTOCOL.md, "Compression"). See `IOSCompressionTests` for the model
/// of the iOS encoder written from its source.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIOSReencode(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let payload = Array(UnsafeBufferPointer(start: data, count: min(size, 4_096)))
    guard !payload.isEmpty else { return 0 }
    checkIOSReencoding(payload)
    return 0
}

func checkIOSReencoding(_ payload: [UInt8]) {
    for version: UInt8 in [1, 2] {
        let sent = Packet(version: version, type: .message, ttl: 7, timestamp: 1_763_800_000_000,
                          senderID: PeerID(hex: "a1b2c3d4e5f60718")!, payload: payload)
        guard let wire = try? sent.encoded(), let received = try? Packet(decoding: wire) else {
            fatalError("a packet we built does not decode")
        }
        guard received.payload == payload else { fatalError("the payload changed on the way") }
        // What iOS does: the inflated payload, encoded again (compressed or not by the rule).
        let reencoded = Packet(version: version, type: received.type, ttl: received.ttl, timestamp: received.timestamp,
                               senderID: received.senderID, recipientID: received.recipientID, payload: received.payload)
        guard (try? sent.signingPreimage()) == (try? reencoded.signingPreimage()) else {
            fatalError("the iPhone would re-encode \(payload.count) bytes differently from what we signed")
        }
        // The rule itself: compressed exactly when DEFLATE (level 5) is shorter and the payload is worth trying.
        let shorter = Compression.isWorthTrying(payload) && (Compression.deflate(payload, level: 5).map { $0.count < payload.count } ?? false)
        guard (sent.compressedPayload != nil) == shorter else { fatalError("compressed against the iOS rule") }
    }
}
