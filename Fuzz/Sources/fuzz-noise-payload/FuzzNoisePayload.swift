import StarlingWire

/// libFuzzer entry point: inner Noise payloads (private message TLV, receipts, private file).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNoisePayload(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let payload = try? NoisePayload(decoding: bytes) else { return 0 }
    _ = try? Dissector.noisePlaintext(bytes)
    guard let again = try? payload.encoded(), let back = try? NoisePayload(decoding: again), back == payload else {
        fatalError("Noise payload does not survive a round trip")
    }
    return 0
}
