import StarlingWire

/// libFuzzer entry point: file-transfer TLV decoding and round trip.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFileTransfer(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let file = try? FileTransfer(decoding: bytes) else { return 0 }
    guard let again = try? file.encoded(), let back = try? FileTransfer(decoding: again), back == file else {
        fatalError("file transfer does not survive a round trip")
    }
    return 0
}
