import StarlingCrypto
import StarlingMesh
import StarlingWire

/// Vouches as a part of the node (docs/PROTOCOL.md, "Vouches (Noise 0x12)"):
/// peers we verified tell us whom they verified, each attestation signed by
/// their announce key; we keep who vouches for whom (8 a vouchee, the newest;
/// 1,024 vouchees, the first vouched going first) and send ours when asked.
struct VouchesFeature: NodeFeature {
    private var records: [Fingerprint: [(voucher: Fingerprint, at: UInt64)]] = [:]
    private var order: [Fingerprint] = []

    var tableSizes: [String: Int] { ["node.vouchees": records.count] }

    /// A batch of vouches (Noise 0x12) from a peer we verified, as iOS takes
    /// them: each signed by that peer's announce key, at most 30 days old and
    /// 1 hour ahead, for someone else we have not verified ourselves.
    mutating func take(_ body: [UInt8], from sender: PeerID, context: inout NodeContext) {
        guard let voucher = context.sessions.fingerprint(of: sender), context.verified.contains(voucher) else { return }
        let card = context.card(sender)
        guard let key = card.flatMap({ $0.fingerprint == voucher ? $0.signingKey : nil }) ?? context.pins[voucher] else { return }
        let wallNow = context.wall
        for a in VouchAttestation.decodeBatch(body) {
            guard VouchSigning.isValid(a, voucherKey: key) else {
                context.refuse(\.vouches)
                continue
            }
            guard a.timestamp <= wallNow + 3_600_000, wallNow <= a.timestamp || wallNow - a.timestamp <= 30 * 86_400_000,
                  let vouchee = Fingerprint(bytes: a.voucheeFingerprint), vouchee != voucher, !context.verified.contains(vouchee)
            else { continue }
            var list = records[vouchee] ?? []
            let known = list.contains { $0.voucher == voucher }
            list.removeAll { $0.voucher == voucher }
            list.append((voucher, a.timestamp))
            list.sort { $0.at > $1.at }
            if records[vouchee] == nil { order.append(vouchee) }
            records[vouchee] = Array(list.prefix(8))
            while order.count > 1_024 { records[order.removeFirst()] = nil }
            if !known { context.emit(.vouched(vouchee.hex, by: voucher.hex, voucherName: card?.nickname)) }
        }
    }

    /// Our vouches for up to 16 of the peers we verified whose signing key we
    /// hold (the pinned one), for `recipient` (never its own).
    static func batch(for recipient: Fingerprint?, verified: Set<Fingerprint>, pins: [Fingerprint: [UInt8]],
                      identity: Identity, wall: Millis) throws -> [VouchAttestation] {
        var list: [VouchAttestation] = []
        for f in verified.sorted() where f != recipient && f != identity.fingerprint && list.count < VouchAttestation.maxBatch {
            guard let key = pins[f] else { continue }
            var a = VouchAttestation(voucheeFingerprint: f.bytes, voucheeSigningKey: key, timestamp: wall)
            try VouchSigning.sign(&a, with: identity.signingKey)
            list.append(a)
        }
        return list
    }

    /// Who vouches for a peer now: peers we still verify, within 30 days.
    func vouchers(of f: Fingerprint, verified: Set<Fingerprint>, wall: Millis) -> [Fingerprint] {
        (records[f] ?? []).filter { verified.contains($0.voucher) && (wall <= $0.at || wall - $0.at <= 30 * 86_400_000) }.map(\.voucher)
    }
}
