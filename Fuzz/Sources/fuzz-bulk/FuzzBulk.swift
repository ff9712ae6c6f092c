import StarlingBulk
import StarlingWire

/// libFuzzer entry point: the bulk transfer's codecs (docs/PROTOCOL.md, "Bulk
/// transfer") and its two I/O-free ends. The first byte chooses:
/// 0 a frame (round trip), 1 an offer (round trip), 2 an answer (round trip),
/// 3 frames (u16 length each) fed to a receiver and a sender of a fixed
/// offer: nothing crashes, and nothing forged is taken (no chunk opens, no
/// ack moves the sender, without the offer's key).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBulk(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let selector = bytes.first else { return 0 }
    let rest = bytes.dropFirst()
    switch selector % 4 {
    case 0:
        guard let frame = try? BulkFrame(body: rest) else { return 0 }
        guard let back = try? BulkFrame(body: frame.encoded().dropFirst(4)), back == frame else {
            fatalError("a bulk frame does not survive a round trip")
        }
    case 1:
        guard let offer = try? BulkOffer(decoding: rest) else { return 0 }
        guard let again = try? offer.encoded(), let back = try? BulkOffer(decoding: again[...]), back == offer else {
            fatalError("a bulk offer does not survive a round trip")
        }
    case 2:
        guard let answer = try? BulkAnswer(decoding: rest) else { return 0 }
        guard let again = try? answer.encoded(), let back = try? BulkAnswer(decoding: again[...]), back == answer else {
            fatalError("a bulk answer does not survive a round trip")
        }
    default:
        let offer = BulkOffer(transferID: [UInt8](repeating: 0xA5, count: 16), name: "f", size: 5_000,
                              sha256: [UInt8](repeating: 1, count: 32), mimeType: nil, key: [UInt8](repeating: 7, count: 32),
                              addresses: ["127.0.0.1:1"], chunkSize: 1_024)
        let receiving = BulkReceiving(offer: offer, from: 0, nonce: [UInt8](repeating: 2, count: 32))
        guard var sending = try? BulkSending(hello: receiving.hello, offer: offer, window: 4) else {
            fatalError("a sender refuses its receiver's own hello")
        }
        _ = try? sending.sealDue([UInt8](repeating: 0, count: 1_024)) // one chunk out: an ack for it would move the sender
        var r = rest[...]
        for _ in 0..<64 {
            guard r.count >= 2 else { break }
            let n = Int(r[r.startIndex]) << 8 | Int(r[r.startIndex + 1])
            r = r.dropFirst(2)
            let body = r.prefix(n)
            r = r.dropFirst(n)
            guard let frame = try? BulkFrame(body: body) else { continue }
            if (try? receiving.open(frame)) != nil { fatalError("a chunk forged without the key was opened") }
            if case .progress? = try? sending.receive(frame) { fatalError("an ack forged without the key moved the sender") }
            if (try? BulkSending(hello: frame, offer: offer)) != nil, frame != receiving.hello {
                fatalError("a hello forged without the key was accepted")
            }
        }
    }
    return 0
}
