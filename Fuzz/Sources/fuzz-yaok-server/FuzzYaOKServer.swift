import StarlingWire
import StarlingYaOKServerCore

/// The server core every input goes through, as one address's datagrams
/// (the input cut at 0xFF bytes), and its client twin.
nonisolated(unsafe) var server = YaOKServerCore<Int>()
nonisolated(unsafe) var client = YaOKClientCore(userID: UserID(bytes: [UInt8](repeating: 0x0A, count: 16))!,
                                                 signingKey: .init())
nonisolated(unsafe) var clock: UInt64 = 1_795_000_000_000

/// libFuzzer entry point: untrusted bytes as relay packets both ways (what
/// decodes must re-encode to the same bytes), then as datagrams to a server
/// core and a client core, which must not trap and stay within their bounds.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRelay(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for direction in [ServerPacket.Direction.toServer, .toClient] {
        if let p = try? ServerPacket.decode(bytes, direction) {
            guard p.encode() == bytes else { fatalError("a decoded relay packet did not re-encode to its bytes") }
        }
    }
    clock += 7
    for piece in bytes.split(separator: 0xFF, omittingEmptySubsequences: false).prefix(64) {
        let datagram = ServerPacket.magic + [ServerPacket.version] + Array(piece)
        _ = server.receive(datagram, from: Int(piece.first ?? 0) % 4, now: clock)
        _ = client.receive(datagram, now: clock)
    }
    _ = client.tick(now: clock)
    server.tick(now: clock)
    guard server.sessionCount <= server.configuration.maxSessions else { fatalError("sessions over their cap") }
    return 0
}
