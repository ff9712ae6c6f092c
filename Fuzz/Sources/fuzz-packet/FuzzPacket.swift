import StarlingWire

/// libFuzzer entry point: Packet decoding, then re-encoding what decoded.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPacket(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let packet = try? Packet(decoding: bytes) else { return 0 }
    // Whatever decodes must encode again, to the same bytes less padding,
    // and dissect without trapping.
    guard let again = try? packet.encoded() else { fatalError("decoded packet does not encode") }
    guard again == Array(bytes.prefix(again.count)) else { fatalError("re-encoding changed the bytes") }
    _ = try? packet.signingPreimage()
    _ = try? Dissector.packet(bytes)
    _ = PacketID(packet)
    return 0
}
