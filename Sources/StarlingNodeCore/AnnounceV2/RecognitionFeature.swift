import StarlingCrypto
import StarlingMesh
import StarlingWire

/// Announce v2 (0x2C) as a part of the node (docs/PROTOCOL.md, "Announce v2"):
/// a rotating peer ID's tags matched against the Noise keys verified announces
/// gave us, each ID recognized shown once (1,024), at most 10 packets
/// examined a second; the recognition key of each Noise key computed once.
struct RecognitionFeature: NodeFeature {
    private var recognized: [PeerID] = []
    private var times: [Millis] = []
    /// Each Noise key's recognition key (empty: none), computed on first use;
    /// forgotten with the key (``forget(_:)``).
    private var keys: [Fingerprint: [UInt8]] = [:]

    var tableSizes: [String: Int] { ["node.recognizedIDs": recognized.count, "node.announceV2Times": times.count] }

    /// A Noise key changed or left the node's table.
    mutating func forget(_ f: Fingerprint) { keys[f] = nil }

    /// An announce v2 (0x2C): unsigned, so it proves nothing by itself (iOS
    /// reads none yet). Its tags are matched against the peers whose verified
    /// announce gave us their Noise key: a match proves that peer (or we) made
    /// the tag for this rotating ID within the hour either side, not that they
    /// are here now. Shown once per ID as that, no more; relayed as iOS relays it.
    mutating func take(_ packet: Packet, newestFirst: [Fingerprint], context: inout NodeContext) {
        guard let v2 = try? AnnounceV2(decoding: packet.payload[...]) else {
            context.refuse(\.announceV2)
            return
        }
        let now = context.now
        times.removeAll { now >= $0 + 1_000 }
        guard times.count < 10 else {
            context.refuse(\.announceV2)
            return
        }
        times.append(now)
        // Its hour, or the hour either side of ours: an old tag re-wrapped in a fresh packet is not taken.
        let hour = PeerIDRotation.epoch(unixSeconds: context.wall / 1_000)
        guard v2.epoch &+ 1 >= hour, v2.epoch <= hour &+ 1 else { return }
        guard !recognized.contains(packet.senderID) else { return }
        let me = context.identity.noisePublicKey, id = packet.senderID.bytes
        for f in newestFirst {
            guard let theirs = context.noiseKeys[f] else { continue }
            if keys[f] == nil { keys[f] = PeerIDRotation.recognitionKey(ours: context.identity.noiseKey, theirs: theirs) ?? [] }
            guard let key = keys[f], !key.isEmpty, PeerIDRotation.recognizes(v2, peerID: id, key: key, sender: theirs, me: me) else { continue }
            recognized.append(packet.senderID)
            if recognized.count > 1_024 { recognized.removeFirst() }
            let name = context.peer(with: f).flatMap { context.card($0)?.nickname }
            context.emit(.recognized(packet.senderID, fingerprint: f.hex, nickname: name, epoch: v2.epoch))
            return
        }
    }
}
