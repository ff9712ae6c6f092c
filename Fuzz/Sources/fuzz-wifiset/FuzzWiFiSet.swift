import StarlingWiFiSet
import StarlingWire

/// libFuzzer entry point: untrusted bytes as WiFiSet messages — decoded (and
/// re-encoded when they decode), and written in chunks into the device state
/// machine, plain and in secured mode.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWiFiSet(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let f = try? WiFiSet.Frame(decoding: bytes) {
        guard let again = try? f.encoded(), again == bytes else { fatalError("a decoded message did not re-encode to its bytes") }
    }
    for security in [WiFiSetDevice.Security.none, .required(pop: "fuzz")] {
        var config = WiFiSetDevice.Configuration()
        config.security = security
        config.mtu = 23
        var device = WiFiSetDevice(configuration: config)
        _ = device.handle(.subscribed(.wifiList), now: 0)
        // In the chunk sizes the first byte picks.
        let size = max(1, Int(bytes.first ?? 20) % 40)
        var i = 0, now: UInt64 = 0
        while i < bytes.count {
            let chunk = Array(bytes[i..<min(i + size, bytes.count)])
            i += size
            now += 10
            for output in device.handle(.written(.credentialWrite, chunk), now: now) {
                if case let .notify(_, v) = output, v.count > 20 { fatalError("a notification larger than the MTU allows") }
                if case .store = output { _ = device.handle(.stored(failure: nil), now: now) }
            }
        }
        _ = device.tick(now: now + 60_000)
    }
    return 0
}
