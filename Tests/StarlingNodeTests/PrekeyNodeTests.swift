import Crypto
import Testing
import StarlingCrypto
import StarlingEmbeddedNetwork
import StarlingMesh
import StarlingNodeCore
import StarlingWire

/// Issue 36: others' prekey bundles (0x24) verified against their owners'
/// announced keys, kept (200 owners, the newest each), relayed only when they
/// hold, and handed to newcomers by their own sync round (type bit 9).
extension InProcessNodes {
@Suite struct PrekeyNodeTests {
    static func packet(_ owner: Identity, signer: Curve25519.Signing.PrivateKey? = nil, generated: UInt64, at: UInt64,
                       sender: PeerID? = nil) throws -> Packet {
        var b = PrekeyBundle(noiseStaticKey: owner.noisePublicKey,
                             prekeys: (1...3).map { .init(id: UInt32($0), key: Array(Curve25519.KeyAgreement.PrivateKey().publicKey.rawRepresentation)) },
                             generatedAt: generated)
        try PrekeySigning.sign(&b, with: signer ?? owner.signingKey)
        var p = Packet(type: .prekeyBundle, ttl: 7, timestamp: at, senderID: sender ?? owner.peerID, payload: b.encoded(), compress: false)
        try PacketSigning.sign(&p, with: signer ?? owner.signingKey)
        return p
    }

    @Test func bundlesAreKeptOnlyFromTheirOwnersAndSyncedToNewcomers() throws {
        let net = EmbeddedNetwork()
        let victim = net.addNode("victim")
        let raw = net.openRawLink(to: victim), watcher = net.openRawLink(to: victim)
        let owner = Identity.generate(), other = Identity.generate()
        for (who, link) in [(owner, raw), (other, raw), (Identity.generate(), watcher)] {
            net.inject(try Announcement.make(identity: who, nickname: "x", timestamp: net.now).encoded(), on: link)
        }
        net.run(for: 100)
        func relayed(_ p: Packet) -> Bool {
            (net.rawReceived[watcher] ?? []).contains { (try? Packet(decoding: $0)).map { PacketID($0) == PacketID(p) } ?? false }
        }
        let good = try Self.packet(owner, generated: net.now, at: net.now)
        let signedByAnother = try Self.packet(owner, signer: other.signingKey, generated: net.now, at: net.now, sender: owner.peerID)
        let notTheirs = try Self.packet(owner, signer: other.signingKey, generated: net.now + 1, at: net.now, sender: other.peerID)
        for p in [signedByAnother, notTheirs, good] { net.inject(try p.encoded(), on: raw) }
        net.run(for: 1_000)
        #expect(relayed(good), "the control: the owner's own bundle is relayed")
        #expect(!relayed(signedByAnother) && !relayed(notTheirs))
        #expect(net.nodes[victim].prekeys.count == 1 && net.nodes[victim].refusals.prekeys == 2)
        let kept = try #require(net.nodes[victim].prekeys.bundle(of: owner.fingerprint))
        // An older bundle does not replace it; a newer one does.
        net.inject(try Self.packet(owner, generated: net.now - 10_000, at: net.now).encoded(), on: raw)
        net.run(for: 100)
        #expect(net.nodes[victim].prekeys.bundle(of: owner.fingerprint) == kept)
        let generated = net.now + 5
        net.inject(try Self.packet(owner, generated: generated, at: net.now).encoded(), on: raw)
        net.run(for: 100)
        #expect(net.nodes[victim].prekeys.bundle(of: owner.fingerprint)?.generatedAt == generated)

        // A newcomer that once verified the owner's announce asks by the prekey
        // round (bit 9), minutes later, the owner away: it gets the bundle. One
        // that never did cannot check it (the control), and keeps nothing.
        let late = net.addNode("late"), stranger = net.addNode("stranger")
        let lateRaw = net.openRawLink(to: late)
        net.inject(try Announcement.make(identity: owner, nickname: "owner", timestamp: net.now).encoded(), on: lateRaw)
        net.run(for: 5 * 60_000)
        net.connect(victim, late)
        net.connect(victim, stranger)
        net.run(for: 70_000)
        #expect(net.nodes[late].prekeys.bundle(of: owner.fingerprint)?.generatedAt == generated)
        #expect(net.nodes[stranger].prekeys.count == 0, "stranger pinned: \(net.nodes[stranger].pinnedSigningKey(for: owner.fingerprint) != nil), late: \(net.nodes[late].pinnedSigningKey(for: owner.fingerprint) != nil), peers \(net.nodes[stranger].peers.values.map(\.nickname))")
    }

    @Test func aFloodOfOwnersStaysWithinTwoHundred() throws {
        let net = EmbeddedNetwork()
        let victim = net.addNode("victim")
        let raw = net.openRawLink(to: victim)
        for i in 0..<250 {
            let who = Identity.generate()
            net.inject(try Announcement.make(identity: who, nickname: "f", timestamp: net.now).encoded(), on: raw)
            net.inject(try Self.packet(who, generated: net.now, at: net.now).encoded(), on: raw)
            if i % 25 == 0 { net.run(for: 10) }
        }
        net.run(for: 1_000)
        #expect(net.nodes[victim].prekeys.count == 200)
        #expect(net.nodes[victim].tableSizes["node.prekeyBundles"] == 200)
    }
}
}
