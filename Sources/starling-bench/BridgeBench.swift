import StarlingCrypto
import StarlingNodeCore
import StarlingNostr
import StarlingWire

/// `starling-bench bridge`: what the mesh bridge (issue 41) costs, each
/// against the signature check it cannot avoid, in one run.
/// - Every node now computes a stable ID (SHA-256) for each public message
///   it shows, so that a bridged copy of it is not shown again: set against
///   the Ed25519 check that message already costs.
/// - A bridge takes each event from its relays (parse of the relay's JSON is
///   the client's; here the bridge's checks, tables and the BIP-340 check);
///   a node reads each `fromBridge` carrier (TLVs, the event's JSON, checks,
///   BIP-340): set against the bare BIP-340 check of the same event.
enum BridgeBench {
    static func run() {
        print("starling-bench bridge (release build; one core; median of 5 rounds)")
        let key = Secp256k1.PrivateKey.random()
        let now: UInt64 = 1_750_000_000_000
        let text = "the north road is open again after the storm"
        let events = (0..<4_096).map { i in
            MeshBridge.message(text + " \(i)", nickname: "alice", cell: "u4pruy", senderIDHex: "0011223344556677",
                               timestampMs: now + UInt64(i), key: key, now: Int64(now / 1_000))!
        }
        let carriers = events.map { try! NostrCarrier(direction: .fromBridge, geohash: "u4pruy", eventJSON: Array($0.json.utf8)).encoded() }

        // A public message as every node takes it: its Ed25519 check; and the stable ID added to it.
        let alice = Identity.generate()
        var packet = Packet(type: .message, ttl: 7, timestamp: now, senderID: alice.peerID, payload: Array(text.utf8))
        try! PacketSigning.sign(&packet, with: alice.signingKey)
        let ed25519 = Timer.measure("public message: Ed25519 check") { blackHole(PacketSigning.isValid(packet, publicKey: alice.signingPublicKey)) }
        let stable = Timer.measure("public message: its stable ID (SHA-256)") {
            blackHole(MeshBridge.stableID(senderIDHex: alice.peerID.description, timestampMs: now, content: text))
        }

        var next = 0
        let schnorr = Timer.measure("bridge event: BIP-340 check alone") {
            blackHole((try? events[next & 4_095].verify()) != nil)
            next += 1
        }
        // Each event a minute after the last (the monotonic clock), so that no budget refuses it and every
        // minute window holds one: the path as a bridge under its limits takes it, whole.
        var limits = BridgeCore.Limits()
        limits.trackedIDs = 8_192
        func fresh() -> BridgeCore { BridgeCore(cell: "u4pruz", key: Secp256k1.PrivateKey.random(), limits: limits) }
        var core = fresh()
        next = 0
        var clock: UInt64 = 0
        // What is timed is the whole path: both show what they take (checked once here, untimed).
        var probe = fresh(), probeListener = BridgeCore(cell: nil, key: nil, limits: limits)
        precondition(probe.fromRelay(events[1], now: 60_001, wall: now, jitter: 0) != nil
                     && probe.fromRelay(events[2], now: 120_002, wall: now, jitter: 0) != nil, "a bridge shows an event from its relays")
        precondition(probeListener.heard(try! NostrCarrier(decoding: carriers[1][...]), hops: 1, now: 60_001, wall: now) != nil
                     && probeListener.heard(try! NostrCarrier(decoding: carriers[2][...]), hops: 1, now: 120_002, wall: now) != nil,
                     "a node shows a carrier")
        let fromRelay = Timer.measure("bridge: an event from its relays") {
            if next == events.count { core = fresh(); next = 0 } // each event once a core
            clock += 60_001
            blackHole(core.fromRelay(events[next], now: clock, wall: now, jitter: 0))
            next += 1
        }
        var listener = BridgeCore(cell: nil, key: nil, limits: limits)
        next = 0
        let heard = Timer.measure("any node: a fromBridge carrier") {
            if next == carriers.count { listener = BridgeCore(cell: nil, key: nil, limits: limits); next = 0 }
            clock += 60_001
            let c = try! NostrCarrier(decoding: carriers[next][...])
            blackHole(listener.heard(c, hops: 1, now: clock, wall: now))
            next += 1
        }
        for m in [ed25519, stable, schnorr, fromRelay, heard] { Timer.report(m) }
        Timer.ratio("stable ID / Ed25519 check", baseline: stable, ours: ed25519)
        Timer.ratio("bridge's relay event / BIP-340", baseline: fromRelay, ours: schnorr)
        Timer.ratio("carrier at a node / BIP-340", baseline: heard, ours: schnorr)
    }
}
