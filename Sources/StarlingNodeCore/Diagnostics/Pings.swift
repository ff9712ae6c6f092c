import StarlingMesh
import StarlingWire

/// Mesh diagnostics (0x26 ping, 0x27 pong; docs/PROTOCOL.md "Ping and pong"):
/// our pings waiting for their pong (64 at most, each for 10 s), and the pings
/// answered on each link (5 in 10 s; past it they are refused).
struct Pings: Sendable {
    private var sent: [[UInt8]: (peer: PeerID, at: Millis)] = [:]
    private var answered: [LinkID: [Millis]] = [:]

    var tableSizes: [String: Int] { ["node.pings": sent.count, "node.pingTimes": answered.count] }

    /// Room for one more ping of ours: its nonce is remembered.
    mutating func send(_ nonce: [UInt8], to peer: PeerID, now: Millis) -> Bool {
        sent = sent.filter { now < $0.value.at + 10_000 }
        guard sent.count < 64 else { return false }
        sent[nonce] = (peer, now)
        return true
    }

    /// A pong for one of ours, from the peer we pinged: its round trip (once).
    mutating func pong(_ payload: [UInt8], from sender: PeerID, now: Millis) -> Millis? {
        let nonce = Array(payload.prefix(8))
        guard let ping = sent[nonce], ping.peer == sender else { return nil }
        sent[nonce] = nil
        return now >= ping.at ? now - ping.at : 0
    }

    /// Whether a ping that came on `link` is answered (5 a link in 10 s).
    mutating func answers(on link: LinkID?, now: Millis) -> Bool {
        guard let link else { return true }
        var times = (answered[link] ?? []).filter { now >= $0 && now - $0 < 10_000 }
        guard times.count < 5 else { return false }
        times.append(now)
        answered[link] = times
        return true
    }

    mutating func linkDown(_ link: LinkID) { answered[link] = nil }
}
