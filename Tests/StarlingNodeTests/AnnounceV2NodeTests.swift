import Crypto
import Foundation
import Testing
import StarlingCrypto
import StarlingEmbeddedNetwork
import StarlingMesh
import StarlingNodeCore
import StarlingWire

/// Issue 36: announce v2 read for what it proves, vouches taken as iOS takes them.
extension InProcessNodes {
@Suite struct AnnounceV2NodeTests {
    static func recognized(_ net: EmbeddedNetwork, _ n: Int) -> [(PeerID, String?)] {
        net.events[n].compactMap { if case let .recognized(p, _, nick, _) = $0 { (p, nick) } else { nil } }
    }

    @Test func aTagOfAKnownPeerIsRecognizedAndAStrangersIsNot() throws {
        let net = EmbeddedNetwork()
        let bob = net.addNode("bob")
        let raw = net.openRawLink(to: bob)
        let alice = Identity.generate()
        net.inject(try Announcement.make(identity: alice, nickname: "alice", timestamp: net.now).encoded(), on: raw)
        net.run(for: 100)
        let bobKey = net.nodes[bob].identity.noisePublicKey
        let epoch = PeerIDRotation.epoch(unixSeconds: net.now / 1_000)
        func v2(from who: Identity, to key: [UInt8], realTag: Bool, epoch: UInt32 = epoch) throws -> (PeerID, [UInt8]) {
            let id = PeerIDRotation.peerID(secret: PeerIDRotation.rotationSecret(noiseStaticPrivate: Array(who.noiseKey.rawRepresentation)), epoch: epoch)
            var slots = (0..<8).map { _ in (0..<8).map { _ in UInt8.random(in: 0...255) } }
            if realTag {
                let k = try #require(PeerIDRotation.recognitionKey(ours: who.noiseKey, theirs: key))
                slots[3] = PeerIDRotation.tag(key: k, epoch: epoch, from: who.noisePublicKey, to: key, peerID: id)
            }
            let packet = Packet(type: .announceV2, ttl: 7, timestamp: net.now, senderID: PeerID(bytes: id)!,
                                payload: try AnnounceV2(epoch: epoch, tagBlock: Array(slots.joined())).encoded(), compress: false)
            return (PeerID(bytes: id)!, try packet.encoded())
        }
        // A stranger's, and alice's tag made for someone else: nothing shown.
        net.inject(try v2(from: .generate(), to: bobKey, realTag: true).1, on: raw)
        net.inject(try v2(from: alice, to: Identity.generate().noisePublicKey, realTag: true).1, on: raw)
        net.run(for: 100)
        // alice's real tag for bob, but of a day ago re-wrapped in a fresh packet: not taken.
        net.inject(try v2(from: alice, to: bobKey, realTag: true, epoch: epoch - 24).1, on: raw)
        net.run(for: 100)
        #expect(Self.recognized(net, bob).isEmpty)
        // alice's tag for bob: recognized, once.
        let (rotating, bytes) = try v2(from: alice, to: bobKey, realTag: true)
        net.inject(bytes, on: raw)
        net.run(for: 100)
        net.run(for: 1_100)
        net.inject(bytes, on: raw)
        net.run(for: 100)
        let seen = Self.recognized(net, bob)
        #expect(seen.count == 1 && seen.first?.0 == rotating && seen.first?.1 == "alice", "\(seen)")
        // A flood: 10 a second are examined, the rest counted.
        net.run(for: 1_100)
        let before = net.nodes[bob].refusals.announceV2
        for _ in 0..<30 { net.inject(try v2(from: .generate(), to: bobKey, realTag: false).1, on: raw) }
        net.run(for: 100)
        #expect(net.nodes[bob].refusals.announceV2 - before == 20)
    }

    /// alice – bob – carol: bob takes alice's vouch for carol only once he has verified alice.
    @Test func aVouchCountsOnlyFromAPeerWeVerified() throws {
        let net = NodeCoreTests.line()
        net.run(for: 3_000)
        let (alice, bob, carol) = (net.nodes[0].identity.fingerprint, net.nodes[1].peerID, net.nodes[2].identity.fingerprint)
        net.on(0) { core, _ in core.setVerified(carol, true) }
        #expect(try net.on(0) { try $0.sendVouches(to: bob, now: $1) } == 1)
        net.run(for: 2_000)
        #expect(net.nodes[1].vouchers(of: carol, now: net.now).isEmpty, "bob has not verified alice")
        net.on(1) { core, _ in core.setVerified(alice, true) }
        #expect(try net.on(0) { try $0.sendVouches(to: bob, now: $1) } == 1)
        net.run(for: 2_000)
        #expect(net.nodes[1].vouchers(of: carol, now: net.now) == [alice])
        let shown = net.events[1].compactMap { if case let .vouched(f, by, name) = $0 { (f, by, name) } else { nil } }
        #expect(shown.count == 1 && shown.first?.0 == carol.hex && shown.first?.1 == alice.hex && shown.first?.2 == "alice", "\(shown)")
        // Unverifying alice voids her vouch.
        net.on(1) { core, _ in core.setVerified(alice, false) }
        #expect(net.nodes[1].vouchers(of: carol, now: net.now).isEmpty)
    }
}
}
