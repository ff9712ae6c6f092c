import StarlingSim

/// libFuzzer entry point: a script of receptions, ticks, originations, links
/// coming and going and neighbour lists, decoded from the input and run against
/// one router (``HostileInput``). A broken promise traps, so libFuzzer keeps the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRouter(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let violation = HostileInput.run(bytes) { fatalError("router: \(violation)") }
    return 0
}
