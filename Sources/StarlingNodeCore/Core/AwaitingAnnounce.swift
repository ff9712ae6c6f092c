import StarlingMesh
import StarlingWire

/// Signed public packets (and deposits) from senders whose announce has not
/// come yet: a relay's jitter can put a message before its announce. Each is
/// held 2 s, 64 in all and 8 a link, each packet once; then it counts as
/// ``NodeCore/Refusals/unverifiable``.
struct AwaitingAnnounce: Sendable {
    struct Held: Sendable {
        var packet: Packet
        var bytes: [UInt8]
        var link: LinkID
        var at: Millis
    }

    static let holdFor: Millis = 2_000
    private var held: [Held] = []

    var count: Int { held.count }
    var isEmpty: Bool { held.isEmpty }

    /// Holds the packet if there is room for it: 64 in all, 8 a link, each packet once.
    mutating func hold(_ packet: Packet, bytes: [UInt8], on link: LinkID, now: Millis) -> Bool {
        guard held.count < 64, held.filter({ $0.link == link }).count < 8 else { return false }
        let id = PacketID(packet)
        guard !held.contains(where: { PacketID($0.packet) == id }) else { return false }
        held.append(Held(packet: packet, bytes: bytes, link: link, at: now))
        return true
    }

    /// What `sender` sent before its announce (taken out).
    mutating func take(from sender: PeerID) -> [Held] {
        guard held.contains(where: { $0.packet.senderID == sender }) else { return [] }
        let waiting = held.filter { $0.packet.senderID == sender }
        held.removeAll { $0.packet.senderID == sender }
        return waiting
    }

    /// Those held past their time (taken out): how many.
    mutating func expire(now: Millis) -> Int {
        let before = held.count
        held.removeAll { now >= $0.at + Self.holdFor }
        return before - held.count
    }
}
