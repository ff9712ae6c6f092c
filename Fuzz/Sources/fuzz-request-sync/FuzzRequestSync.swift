import StarlingWire

/// libFuzzer entry point: REQUEST_SYNC TLVs and the GCS filter decoder.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestSync(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let sync = try? RequestSync(decoding: bytes) else { return 0 }
    let values = sync.filter.values()
    guard values.count <= sync.filter.data.count * 8 else { fatalError("more values than bits") }
    guard zip(values, values.dropFirst()).allSatisfy({ $0 < $1 }) else { fatalError("values not increasing") }
    _ = sync.filter.contains(PacketID(high: 1, low: 2))
    guard let again = try? sync.encoded(), (try? RequestSync(decoding: again)) == sync else {
        fatalError("request-sync does not survive a round trip")
    }
    return 0
}
