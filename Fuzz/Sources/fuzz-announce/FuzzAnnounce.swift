import StarlingWire

/// libFuzzer entry point: announce TLV decoding and re-encoding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAnnounce(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let announce = try? Announce(decoding: bytes) else { return 0 }
    guard let again = try? announce.encoded(), let back = try? Announce(decoding: again), back == announce else {
        fatalError("announce does not survive a round trip")
    }
    return 0
}
