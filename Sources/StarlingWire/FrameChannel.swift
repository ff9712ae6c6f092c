/// Which of a link's two channels a frame travels on: bitchat packets, or
/// Stately state packets (their own BLE characteristic; over UDP, the "STAT"
/// tag). See docs/PROTOCOL.md, "Stately over the links".
public enum FrameChannel: String, Hashable, Sendable, Codable {
    case mesh
    case stately
}
