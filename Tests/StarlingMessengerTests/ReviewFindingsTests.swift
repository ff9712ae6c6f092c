import Foundation
import StarlingAPIContract
import Testing
import StarlingCrypto
import StarlingMessenger
import StarlingMessengerCore
import StarlingMessengerAPI
import StarlingNode
import StarlingNodeCore
import StarlingNostr
import StarlingWire
import StarlingYaOK
import StarlingStore

/// What a review of the messenger and its API found, each held by a test
/// that failed before its fix, with its control.
@Suite struct ReviewFindingsTests {
    static func open(_ core: inout MessengerCore, _ contents: MessengerCore.StoreContents = .init()) {
        core.storeOpened(contents, peers: [:], now: 1_000)
        _ = core.takeEffects()
    }

    @Test func theEventLogSaysAGapAndNeverSkipsInSilence() async throws {
        let log = EventLog(capacity: 5)
        for i in 0..<12 { await log.append(.notice(.init(text: "e\(i)"))) }
        let stream = try #require(await log.follow(after: 0))
        var seqs: [String] = []
        for await e in stream {
            let o = try #require(try JSONSerialization.jsonObject(with: e.json) as? [String: Any])
            seqs.append("\(o["event"] as? String == "gap" ? "gap" : "e")\(o["seq"] as? Int ?? -1)")
            if seqs.count == 6 { break }
        }
        #expect(seqs == ["gap7", "e8", "e9", "e10", "e11", "e12"])
        // A number from before a restart (past the last one): everything kept, from the start.
        let (missed, entries) = await log.after(10_000)
        #expect(missed == 7 && entries.map(\.seq) == [8, 9, 10, 11, 12])
        // A follower that falls a whole ring behind is ended, not skipped.
        let slow = try #require(await log.follow(after: 12))
        for i in 0..<7 { await log.append(.notice(.init(text: "late \(i)"))) }
        var got = 0
        for await _ in slow { got += 1 }
        #expect(got == 6) // the ring's room, then the end: it reconnects and hears of the gap
        #expect(await log.subscriberCount == 0)
    }

    @Test func decisionsMadeWhileLockedSurviveTheUnlock() throws {
        var core = MessengerCore(identity: Identity.generate())
        let carol = Fingerprint(noiseStaticKey: [7])
        Self.open(&core)
        core.storeClosed()
        core.decide(.block, about: carol, nickname: "carol", now: 1_001)
        _ = core.takeEffects()
        // The store opens with what it held before the lock (carol not blocked).
        core.storeOpened(.init(), peers: [:], now: 1_002)
        let effects = core.takeEffects()
        #expect(core.isBlocked(carol))
        #expect(effects.contains { if case .node(.block(carol)) = $0 { true } else { false } })
        #expect(effects.contains { if case let .store(.trust(t)) = $0 { t.blocked && t.fingerprint == carol.hex } else { false } })
    }

    @Test func aReplyCannotNameOneOfOurMessages() throws {
        let me = Identity.generate(), bob = Identity.generate()
        var core = MessengerCore(identity: me)
        Self.open(&core)
        let peer = bob.peerID
        core.handle(.sessionEstablished(peer, fingerprint: bob.fingerprint.hex), peers: [:], now: 1_001)
        let made = core.conversation(withPeer: peer, now: 1_001)
        let c = try #require(made)
        let ours = try core.send("ours", to: c, now: 1_002)
        _ = core.takeEffects()
        // Bob answers under our message's own transport ID.
        let ourID = try #require(ours.transportID)
        core.handle(.privateMessage(from: peer, nickname: "bob", text: "rewritten", messageID: ourID, hops: 1), peers: [:], now: 1_003)
        let kept = core.recent[c] ?? []
        #expect(kept.first { $0.id == ours.id }?.text == "ours")
        #expect(kept.contains { !$0.outgoing && $0.text == "rewritten" }) // his message is kept too, as his
    }

    @Test func strangersNoticesAreBoundedAndDecisionsStay() throws {
        var core = MessengerCore(identity: Identity.generate())
        Self.open(&core)
        let friend = Identity.generate()
        core.decide(.favourite, about: friend.fingerprint, nickname: "friend", now: 1_000)
        for i in 0..<300 {
            let stranger = Identity.generate()
            core.handle(.sessionEstablished(stranger.peerID, fingerprint: stranger.fingerprint.hex), peers: [:], now: 1_001 + Double(i))
            core.handle(.favorited(by: stranger.peerID, nickname: "s\(i)", on: true,
                                   npub: Bech32.npub(Secp256k1.PrivateKey.random().publicKey)), peers: [:], now: 1_001 + Double(i))
        }
        let noticed = core.trust.values.filter { !$0.favorite && !$0.blocked && !$0.verified && $0.npub != nil }
        #expect(noticed.count == MessengerCore.maxNoticedOnly)
        #expect(core.trust[friend.fingerprint]?.favorite == true) // our decision stays
        #expect(core.contactList.map(\.name) == ["friend"]) // strangers are not contacts
    }
    /// A blocked person's offer of a large file (one the node let through) is
    /// declined by the messenger at once, never shown; the control, an
    /// unblocked person's, is shown and left for the person to answer.
    @Test func aBlockedPersonsFileOfferIsDeclinedNeverShown() throws {
        var core = MessengerCore(identity: Identity.generate())
        Self.open(&core)
        let carol = Identity.generate(), dave = Identity.generate()
        for p in [carol, dave] { core.handle(.sessionEstablished(p.peerID, fingerprint: p.fingerprint.hex), peers: [:], now: 1_001) }
        core.decide(.block, about: carol.fingerprint, nickname: "carol", now: 1_002)
        _ = core.takeEffects()
        core.handle(.fileOffered(from: carol.peerID, transferID: "c0ffee", name: "x.bin", size: 40 << 20, mimeType: nil), peers: [:], now: 1_003)
        let blocked = core.takeEffects()
        #expect(blocked.contains { if case .node(.declineFileOffer("c0ffee")) = $0 { true } else { false } }, "\(blocked)")
        #expect(!blocked.contains { if case .event = $0 { true } else { false } }, "nothing shown: \(blocked)")
        core.handle(.fileOffered(from: dave.peerID, transferID: "da7e", name: "y.bin", size: 40 << 20, mimeType: nil), peers: [:], now: 1_004)
        let allowed = core.takeEffects()
        #expect(!allowed.contains { if case .node(.declineFileOffer) = $0 { true } else { false } }, "\(allowed)")
        #expect(allowed.contains { if case .event(.node(.fileOffered(_, "da7e", _, _, _))) = $0 { true } else { false } }, "\(allowed)")
    }

    /// A private voice note stays in the sender's conversation as a file that
    /// came (audio/aac, its length), under the record ID the API finds it by
    /// after a restart; a public one is shown, not kept; a blocked person's is
    /// neither (it was shown before: voice was not among what a block hides).
    @Test func aPrivateVoiceNoteIsKeptInHistoryAndABlockHidesVoice() throws {
        var core = MessengerCore(identity: Identity.generate())
        Self.open(&core)
        let carol = Identity.generate(), dave = Identity.generate()
        for p in [carol, dave] { core.handle(.sessionEstablished(p.peerID, fingerprint: p.fingerprint.hex), peers: [:], now: 1_001) }
        _ = core.takeEffects()
        core.handle(.voiceNote(from: dave.peerID, path: "/d/voice_01_dm.aac", durationMillis: 2_112, isPrivate: true, id: "voice_01_dm", size: 4_321),
                    peers: [:], now: 1_002)
        let kept = core.takeEffects().compactMap { if case let .store(.insertMessage(r)) = $0 { r } else { nil } }
        let record = try #require(kept.first, "the private note is stored")
        #expect(record.file == {
            var f = FileAttachment(name: "voice_01_dm.aac", size: 4_321, mimeType: "audio/aac", transferID: "voice_01_dm", path: "/d/voice_01_dm.aac")
            f.durationMillis = 2_112
            return f
        }())
        #expect(record.id == MessengerCore.incomingFileID("voice_01_dm", from: dave.fingerprint) && !record.outgoing)
        #expect(record.contact == core.conversation(for: dave.fingerprint))
        core.handle(.voiceNote(from: dave.peerID, path: "/d/voice_02_mesh.aac", durationMillis: 900, isPrivate: false, id: "voice_02_mesh", size: 99),
                    peers: [:], now: 1_003)
        let public_ = core.takeEffects()
        #expect(!public_.contains { if case .store(.insertMessage) = $0 { true } else { false } }, "a public note is not stored: \(public_)")
        #expect(public_.contains { if case .event(.node(.voiceNote(_, _, _, false, "voice_02_mesh", _))) = $0 { true } else { false } }, "but shown")
        core.decide(.block, about: carol.fingerprint, nickname: "carol", now: 1_004)
        _ = core.takeEffects()
        core.handle(.voiceNote(from: carol.peerID, path: "/d/voice_03_dm.aac", durationMillis: 900, isPrivate: true, id: "voice_03_dm", size: 99),
                    peers: [:], now: 1_005)
        #expect(core.takeEffects().isEmpty, "a blocked person's voice note is neither kept nor shown")
    }

    /// `/accept 5f0c` and the like: the messenger chooses the offer for every face.
    @Test func aFileOfferIsChosenByIDPrefixNameOrTheNewest() throws {
        let p = Identity.generate().peerID
        let offers = [MeshNode.FileOffer(from: p, transferID: "5f0c2a1b", name: "atlas.pdf", size: 1, mimeType: nil),
                      MeshNode.FileOffer(from: p, transferID: "5f0d9e00", name: "song.mp3", size: 1, mimeType: nil),
                      MeshNode.FileOffer(from: p, transferID: "77aa0000", name: "map.bin", size: 1, mimeType: nil)]
        #expect(try FileOfferChoice.choose(nil, among: offers).transferID == "77aa0000") // the newest
        #expect(try FileOfferChoice.choose("5F0C", among: offers).name == "atlas.pdf") // a prefix, any case
        #expect(try FileOfferChoice.choose("song.mp3", among: offers).transferID == "5f0d9e00")
        #expect(try FileOfferChoice.choose("5f0d9e00", among: offers).name == "song.mp3")
        #expect(throws: MessengerClientError(.conflict, "2 offers match 5f0: give more of the ID (5f0c2a1b, 5f0d9e00)")) {
            try FileOfferChoice.choose("5f0", among: offers)
        }
        #expect { try FileOfferChoice.choose("nothing", among: offers) } throws: { ($0 as? MessengerClientError)?.kind == .notFound }
        #expect(throws: MessengerClientError(.notFound, "no file offer waits for an answer")) { try FileOfferChoice.choose(nil, among: []) }
    }
}
