import StarlingWire

/// libFuzzer entry point: fragment payload decoding and round trip.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFragment(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let fragment = try? Fragment(decoding: bytes) else { return 0 }
    guard fragment.encoded() == bytes else { fatalError("fragment does not survive a round trip") }
    return 0
}
