/// The type byte of a bitchat packet header.
///
/// Codes are those of the deployed apps (see docs/PROTOCOL.md, "Message types");
/// an unknown code is kept as it is, so that a relay can forward packet types it
/// does not understand.
public struct MessageType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let announce = MessageType(rawValue: 0x01)
    /// Public chat message; the payload is plain UTF-8 text.
    public static let message = MessageType(rawValue: 0x02)
    public static let leave = MessageType(rawValue: 0x03)
    /// All three Noise XX handshake messages.
    public static let noiseHandshake = MessageType(rawValue: 0x10)
    /// A Noise transport frame carrying an inner payload (``NoisePayload``).
    public static let noiseEncrypted = MessageType(rawValue: 0x11)
    public static let fragment = MessageType(rawValue: 0x20)
    public static let requestSync = MessageType(rawValue: 0x21)
    public static let fileTransfer = MessageType(rawValue: 0x22)
    /// Starling extension: protocol version negotiation (seed §7.1, §18).
    public static let versionHello = MessageType(rawValue: 0x2D)
    /// Starling extension: the agreed protocol version.
    public static let versionAck = MessageType(rawValue: 0x2E)

    public static let known: [MessageType] = [
        .announce, .message, .leave, .noiseHandshake, .noiseEncrypted,
        .fragment, .requestSync, .fileTransfer, .versionHello, .versionAck,
    ]

    public var name: String? {
        switch self {
        case .announce: "announce"
        case .message: "message"
        case .leave: "leave"
        case .noiseHandshake: "noiseHandshake"
        case .noiseEncrypted: "noiseEncrypted"
        case .fragment: "fragment"
        case .requestSync: "requestSync"
        case .fileTransfer: "fileTransfer"
        case .versionHello: "versionHello"
        case .versionAck: "versionAck"
        default: nil
        }
    }

    /// Whether the deployed apps sign packets of this type (decisions: "Signatures").
    public var isSigned: Bool {
        switch self {
        case .announce, .message, .leave, .requestSync, .fileTransfer: true
        default: false
        }
    }

    public var description: String {
        let hex = "0x" + (rawValue < 16 ? "0" : "") + String(rawValue, radix: 16, uppercase: true)
        return name.map { "\($0) (\(hex))" } ?? "unknown (\(hex))"
    }
}
