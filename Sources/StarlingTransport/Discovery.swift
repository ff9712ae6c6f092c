#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import StarlingWire

/// Finding other Starling processes on this machine without configuration.
///
/// A node binds the first free port of 47370–47385 on 127.0.0.1 (unless told a
/// port), and sends a hello datagram to each of those ports and to its explicit
/// peers at once, then every 16 s (every 2 s to a peer not linked yet); a hello
/// is answered at once. Whoever receives a hello links the sender's address.
/// A hello starts with "SHLO": 0x53 is no bitchat version, so a hello can never
/// be taken for a packet (see docs/PROTOCOL.md, "UDP transport").
public enum Discovery {
    public static let rendezvousPorts: ClosedRange<UInt16> = 47370...47385
    public static let magic: [UInt8] = Array("SHLO".utf8)
    public static let version: UInt8 = 1
    public static let helloInterval: UInt64 = 2_000
    /// Hellos on the rendezvous ports and to linked peers every this many intervals (16 s).
    public static let idleHelloEvery = 8

    /// "SHLO" ‖ version 0x01 ‖ peer ID (8 bytes) = 13 bytes.
    public static func hello(from peer: PeerID) -> [UInt8] {
        magic + [version] + peer.bytes
    }

    /// The peer ID in a hello, or nil when the datagram is not one.
    public static func parseHello(_ bytes: [UInt8]) -> PeerID? {
        guard bytes.count == 13, Array(bytes.prefix(4)) == magic, bytes[4] == version else { return nil }
        return PeerID(bytes: bytes[5..<13])
    }

    public static func isHello(_ bytes: [UInt8]) -> Bool { bytes.count >= 4 && Array(bytes.prefix(4)) == magic }

    /// LAN discovery (`--lan`, opt-in): the same hello, sent every 2 s to this
    /// administratively scoped multicast group; receivers link the sender's
    /// unicast address.
    public static let lanGroup = UDPAddress(host: inet_addr("239.255.73.70"), port: 47369)
}
