import Foundation
import StarlingTestSupport
import Testing
import StarlingCrypto
import StarlingMessenger
import StarlingNodeCore
import StarlingWire
import StarlingYaOK
import StarlingStore

/// The tables the messenger grew last (docs/MESSENGER.md, "Bounds"), each
/// flooded past its cap: what stays and what goes (issue 52: no flood test yet
/// for peers' last nicknames, early receipts and merged conversation IDs).
@Suite struct MessengerBoundsTests {
    /// 5,000 peers announce and leave: the newest 4,096 are still named, the oldest are their IDs.
    @Test func peersLastNicknamesKeepTheNewest4096() {
        let m = MessengerTests.three()
        let peers = (0..<5_000).map { i in PeerID(bytes: (0..<8).map { UInt8(truncatingIfNeeded: (i >> ($0 * 8)) ^ 0x5A) })! }
        for (i, p) in peers.enumerated() {
            m.messengers[0].handle(.peer(p, nickname: "n\(i)", hops: 2), peers: [:], now: m.seconds)
            m.messengers[0].handle(.left(p), peers: [:], now: m.seconds)
        }
        _ = m.messengers[0].takeEffects()
        #expect(m.messengers[0].displayName(peers[4_999]) == "n4999")
        #expect(m.messengers[0].displayName(peers[904]) == "n904")          // the 4,096th newest
        #expect(m.messengers[0].displayName(peers[903]) == peers[903].description) // one older: forgotten
        #expect(m.messengers[0].displayName(peers[0]) == peers[0].description)
    }

    /// 1,000 receipts for transfers no record holds: the newest 256 are kept for
    /// the file its face records later; an older one is gone (the file stays "sending").
    @Test func earlyReceiptsKeepTheNewest256() {
        let m = MessengerTests.three()
        let bob = m.net.nodes[1].peerID
        for i in 0..<1_000 { m.messengers[0].handle(.delivered(messageID: "t\(i)", by: bob), peers: m.net.nodes[0].peers, now: m.seconds) }
        _ = m.messengers[0].takeEffects()
        func state(_ id: String) -> MessageState? {
            m.messengers[0].fileSent(FileAttachment(name: "\(id).bin", size: 1, transferID: id), to: bob, now: m.seconds)?.progress?.state
        }
        #expect(state("t999") == .delivered)
        #expect(state("t744") == .delivered)  // the 256th newest
        #expect(state("t743") == .sending)    // one older: forgotten
        #expect(state("t0") == .sending)
    }

    /// 1,100 people met on the mesh, then added by card: each conversation merges
    /// into the contact's; the old IDs a face may still name are kept for 1,024.
    /// (Seconds of CPU: on a thread of its own, not one of the suite's two
    /// cooperative threads, which the timing tests beside it need.)
    @Test(.computesHeavily) func mergedConversationIDsAreKeptFor1024() async throws {
        let (first, followed): (Bool, Int) = try await withCheckedThrowingContinuation { c in
            Thread { c.resume(with: Result { try Self.mergeMany(1_100) }) }.start()
        }
        #expect(first, "the control: a merge names the contact's conversation")
        #expect(followed == 1_024, "\(followed) old IDs still lead to their contact")
    }

    /// Whether the first merge led to the contact's conversation, and how many old IDs still do.
    static func mergeMany(_ count: Int) throws -> (Bool, Int) {
        let m = MessengerTests.three()
        var old: [UserID] = [], first = false
        for i in 0..<count {
            let person = Identity.generate()
            let c = m.messengers[0].conversation(withKey: person.fingerprint, nickname: "p\(i)", now: m.seconds)
            old.append(c)
            let card = try ContactCard(identity: person, userID: .random(), displayName: "p\(i)")
            m.messengers[0].contactAdded(ContactRecord(card: card, addedAt: m.seconds), now: m.seconds)
            if i == 0 { first = m.messengers[0].current(c) == card.userID }
        }
        _ = m.messengers[0].takeEffects()
        return (first, old.filter { m.messengers[0].current($0) != $0 }.count)
    }
}
