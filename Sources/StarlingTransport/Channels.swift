import StarlingWire

/// The services that share a UDP socket, told apart by a datagram's first
/// bytes: a bitchat packet starts with its version (1 or 2), a hello with
/// "SHLO", a Stately state packet is carried after "STAT" (0x53 is no bitchat
/// version, so neither is ever taken for a packet).
public enum Channel: Hashable, Sendable {
    case bitchat
    case hello
    case stately

    public static let statelyTag: [UInt8] = Array("STAT".utf8)

    public static func of(_ datagram: [UInt8]) -> Channel {
        if Discovery.isHello(datagram) { return .hello }
        if datagram.count >= 4, datagram[0] == 0x53, datagram[1] == 0x54, datagram[2] == 0x41, datagram[3] == 0x54 { return .stately }
        return .bitchat
    }

    /// A Stately packet as a datagram.
    public static func stately(_ packet: [UInt8]) -> [UInt8] { statelyTag + packet }

    /// The Stately packet in a datagram of that channel.
    public static func statelyPacket(_ datagram: [UInt8]) -> [UInt8] { Array(datagram.dropFirst(4)) }
}
