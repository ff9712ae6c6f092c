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
    // The apps' 2026 types (docs/PROTOCOL.md, "The 2026 packet types"): named,
    // dissected where their layout is documented, relayed by the same rules.
    /// A message deposited with a trusted courier for a peer out of reach (TLV-16).
    public static let courierEnvelope = MessageType(rawValue: 0x04)
    public static let boardPost = MessageType(rawValue: 0x23)
    public static let prekeyBundle = MessageType(rawValue: 0x24)
    public static let groupMessage = MessageType(rawValue: 0x25)
    /// Mesh diagnostics: nonce (8) ‖ origin TTL (1); answered with a pong carrying the same payload.
    public static let ping = MessageType(rawValue: 0x26)
    public static let pong = MessageType(rawValue: 0x27)
    public static let nostrCarrier = MessageType(rawValue: 0x28)
    public static let voiceFrame = MessageType(rawValue: 0x29)
    /// Defined by the apps, not yet sent; local only.
    public static let announceV2 = MessageType(rawValue: 0x2C)
    /// Starling extension: protocol version negotiation (seed §7.1, §18).
    public static let versionHello = MessageType(rawValue: 0x2D)
    /// Starling extension: the agreed protocol version.
    public static let versionAck = MessageType(rawValue: 0x2E)

    public static let known: [MessageType] = [
        .announce, .message, .leave, .noiseHandshake, .noiseEncrypted,
        .fragment, .requestSync, .fileTransfer, .versionHello, .versionAck,
        .courierEnvelope, .boardPost, .prekeyBundle, .groupMessage, .ping, .pong, .nostrCarrier, .voiceFrame, .announceV2,
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
        case .courierEnvelope: "courierEnvelope"
        case .boardPost: "boardPost"
        case .prekeyBundle: "prekeyBundle"
        case .groupMessage: "groupMessage"
        case .ping: "ping"
        case .pong: "pong"
        case .nostrCarrier: "nostrCarrier"
        case .voiceFrame: "voiceFrame"
        case .announceV2: "announceV2"
        default: nil
        }
    }

    /// Whether the deployed apps sign packets of this type (decisions: "Signatures").
    public var isSigned: Bool {
        switch self {
        case .announce, .message, .leave, .requestSync, .fileTransfer, .courierEnvelope: true
        default: false
        }
    }

    public var description: String {
        let hex = "0x" + (rawValue < 16 ? "0" : "") + String(rawValue, radix: 16, uppercase: true)
        return name.map { "\($0) (\(hex))" } ?? "unknown (\(hex))"
    }
}

extension MessageType {
    /// The largest payload (inflated) a packet of this type may carry; a
    /// larger one is refused while decoding, before any inflating. These are
    /// the deployed iOS app's limits (docs/PROTOCOL.md, "Payload limits"), so a
    /// compressed public message cannot inflate to a megabyte.
    public var maxPayloadBytes: Int {
        switch self {
        case .announce, .leave, .noiseHandshake, .versionHello, .versionAck: 4_096
        case .requestSync: 8_192
        // iOS takes 1,280; Starling's own fragments are at most 482 bytes.
        case .fragment: 4_096
        // A file of up to 1 MiB with its TLV and Noise overhead (iOS: 1,179,760).
        case .noiseEncrypted, .fileTransfer: 1_179_760
        default: 131_072 // public messages, and types we do not know
        }
    }
}
