import StarlingWire

/// libFuzzer entry point: a stream of fragments fed to the reassembler.
/// Input: records of [u8 length][fragment payload bytes], with time advancing.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReassembler(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var limits = Reassembler.Limits()
    limits.maxInProgress = 4
    limits.maxMessageBytes = 4096
    limits.maxFragmentsPerMessage = 16
    var reassembler = Reassembler(limits: limits)
    var i = 0
    var now: UInt64 = 0
    while i < bytes.count {
        let n = Int(bytes[i]); i += 1
        let record = Array(bytes[i..<min(i + n, bytes.count)]); i += n
        now += UInt64(n) * 100
        guard let fragment = try? Fragment(decoding: record) else { continue }
        if case let .complete(whole)? = try? reassembler.receive(fragment, from: PeerID(rawValue: 7), now: now) {
            guard whole.count <= limits.maxMessageBytes else { fatalError("limit exceeded") }
            _ = try? Packet(decoding: whole)
        }
        guard reassembler.inProgressCount <= limits.maxInProgress else { fatalError("too many in progress") }
    }
    return 0
}
