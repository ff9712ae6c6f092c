import Testing
import StarlingCrypto
import StarlingMesh
import StarlingMessenger
import StarlingMessengerCore
import StarlingNodeCore
import StarlingWire
import StarlingYaOK
import StarlingStore

/// The messenger's decisions, in process: each finding of issue 33 that is
/// the messenger's, on nodes linked in memory, with stores in memory, a
/// restart where the finding needs one, and a positive control beside each
/// negative check.
@Suite struct MessengerTests {
    /// alice (0), bob (1), xb (2): all linked to alice, stores open.
    static func three() -> MessengerNetwork {
        let m = MessengerNetwork()
        for name in ["alice", "bob", "xb"] { m.add(name) }
        m.net.connect(0, 1)
        m.net.connect(0, 2)
        for i in 0..<3 { m.open(i) }
        m.run(1_000)
        return m
    }

    static func talk(_ m: MessengerNetwork, _ from: Int, to: Int, _ text: String) throws -> MessageRecord {
        let made = m.messengers[from].conversation(withPeer: m.net.nodes[to].peerID, now: m.seconds)
        let c = try #require(made)
        let r = try m.messengers[from].send(text, to: c, now: m.seconds)
        m.apply(from)
        m.pump()
        return r
    }

    @Test func aBlockHoldsAcrossARestartAndNothingIsAcknowledged() throws {
        let m = Self.three()
        let xb = m.net.nodes[2].identity.fingerprint
        m.messengers[0].decide(.block, about: xb, nickname: "xb", now: m.seconds)
        m.apply(0)
        #expect(m.stores[0].trust[xb.hex]?.blocked == true)
        m.restart(0)
        let blocked = try Self.talk(m, 2, to: 0, "hello while blocked")
        let control = try Self.talk(m, 1, to: 0, "hello from bob")
        m.run(120_000)
        #expect(!m.received(0).contains("hello while blocked"))
        #expect(m.state(2, of: blocked.id).map { $0 < .delivered } == true, "\(String(describing: m.state(2, of: blocked.id)))")
        // Positive control: bob, not blocked, is shown and his message delivered.
        #expect(m.received(0).contains("hello from bob"))
        #expect(m.state(1, of: control.id) == .delivered)
    }

    /// More messages sent than the conversation keeps in memory: the receipts
    /// of the older ones still reach the store (they used to be dropped, and
    /// those messages showed "sending" for ever: found with 300 messages and a
    /// kill -9 in DaemonProcessTests).
    @Test func aReceiptForAMessageNoLongerInMemoryReachesTheStore() throws {
        let m = MessengerNetwork()
        m.add("alice") { $0.recentPerConversation = 5 }
        m.add("bob")
        m.net.connect(0, 1)
        for i in 0..<2 { m.open(i) }
        m.run(1_000)
        let bob = m.net.nodes[1].peerID
        let made = m.messengers[0].conversation(withPeer: bob, now: m.seconds)
        let c = try #require(made)
        // Twelve sent at once (handed to the node before any receipt comes).
        var sent: [MessageRecord] = []
        for i in 0..<12 { sent.append(try m.messengers[0].send("m\(i)", to: c, now: m.seconds)) }
        m.apply(0)
        m.run(5_000)
        #expect(m.received(1).count == 12)
        let states = sent.map { m.state(0, of: $0.id) }
        #expect(states.allSatisfy { $0 == .delivered }, "\(states)")
        // And read, later, for all of them.
        m.messengers[1].markSeen(m.conversation(1, with: 0), now: m.seconds)
        m.apply(1)
        m.run(2_000)
        let read = sent.map { m.state(0, of: $0.id) }
        #expect(read.allSatisfy { $0 == .read }, "\(read)")
    }

    @Test func readIsSentWhenThePersonHasSeenTheMessageNotOnArrival() throws {
        let m = Self.three()
        let sent = try Self.talk(m, 1, to: 0, "have you seen this?")
        m.run(5_000)
        #expect(m.received(0) == ["have you seen this?"])
        #expect(m.state(1, of: sent.id) == .delivered) // arrived, not read
        let c = m.conversation(0, with: 1)
        #expect(m.messengers[0].unreadCount(c) == 1)
        m.messengers[0].markSeen(c, now: m.seconds)
        m.apply(0)
        m.run(2_000)
        #expect(m.state(1, of: sent.id) == .read)
        #expect(m.messengers[0].unreadCount(c) == 0)
    }

    @Test func whileTrustIsUnknownNothingABlockCouldHideIsShown() throws {
        let m = Self.three()
        let xb = m.net.nodes[2].identity.fingerprint
        m.messengers[0].decide(.block, about: xb, nickname: "xb", now: m.seconds)
        m.apply(0)
        m.restart(0, open: false) // a wrong PIN at start: the store stays shut
        _ = try Self.talk(m, 2, to: 0, "from xb, blocked")
        let fromBob = try Self.talk(m, 1, to: 0, "from bob")
        try m.net.on(2) { try $0.sendPublic("xb in public", now: $1) }
        m.run(5_000)
        #expect(m.received(0).isEmpty)
        #expect(!m.events[0].contains { if case .node(.message) = $0 { true } else { false } })
        #expect(m.state(1, of: fromBob.id) != .delivered) // not acknowledged while trust is unknown
        m.open(0)
        m.run(30_000)
        #expect(m.received(0) == ["from bob"])
        #expect(m.state(1, of: fromBob.id) == .delivered)
        #expect(!m.events[0].contains { if case let .node(.message(_, _, text, _, _, _)) = $0 { text == "xb in public" } else { false } })
    }

    @Test func privateConversationsWithPeersWhoAreNotContactsOutliveARestart() throws {
        let m = Self.three()
        _ = try Self.talk(m, 1, to: 0, "one")
        m.run(1_000)
        _ = try Self.talk(m, 0, to: 1, "two")
        m.run(1_000)
        _ = try Self.talk(m, 1, to: 0, "three")
        m.run(5_000)
        m.restart(0)
        let c = m.conversation(0, with: 1)
        let history = (m.messengers[0].recent[c] ?? []).map(\.text)
        #expect(history == ["one", "two", "three"]) // oldest first
        #expect(m.messengers[0].name(of: c) == "bob")
        #expect(m.messengers[0].peerConversations[c] != nil)
    }

    /// Issue 52, item 4: one person, one conversation. Alice and bob talked
    /// on the mesh; then alice adds bob's card. The earlier lines move into
    /// the card's conversation (in memory and in the store), the peer's own
    /// conversation goes, and what comes next lands there too — also after a
    /// restart, and for a store an earlier version left with both.
    @Test func aPersonKnownOnTheMeshAndByCardIsOneConversation() throws {
        let m = Self.three()
        _ = try Self.talk(m, 0, to: 1, "before the card")
        m.run(2_000)
        _ = try Self.talk(m, 1, to: 0, "reply before the card")
        m.run(2_000)
        let meshConversation = m.conversation(0, with: 1)
        #expect((m.stores[0].messages[meshConversation] ?? []).count == 2, "the control: kept under the peer's conversation")
        let bobCard = try ContactCard(identity: m.net.nodes[1].identity, userID: .random(), displayName: "bob")
        m.messengers[0].contactAdded(ContactRecord(card: bobCard, addedAt: m.seconds), now: m.seconds)
        m.stores[0].contacts[bobCard.userID] = ContactRecord(card: bobCard, addedAt: m.seconds)
        m.apply(0)
        #expect(m.messengers[0].peerConversations[meshConversation] == nil)
        #expect((m.messengers[0].recent[bobCard.userID] ?? []).map(\.text) == ["before the card", "reply before the card"])
        #expect(m.stores[0].messages[meshConversation] == nil && m.stores[0].conversations[meshConversation] == nil)
        #expect((m.stores[0].messages[bobCard.userID] ?? []).count == 2)
        _ = try Self.talk(m, 1, to: 0, "after the card")
        m.run(2_000)
        #expect(m.messengers[0].conversation(withPeer: m.net.nodes[1].peerID, now: m.seconds) == bobCard.userID)
        #expect((m.messengers[0].recent[bobCard.userID] ?? []).map(\.text).last == "after the card")
        m.restart(0)
        #expect((m.messengers[0].recent[bobCard.userID] ?? []).map(\.text) == ["before the card", "reply before the card", "after the card"])
        #expect(m.messengers[0].contacts.count == 1 && m.messengers[0].peerConversations[meshConversation] == nil)
        // A store an earlier version left with both: merged when it opens.
        m.stores[0].messages[meshConversation] = [MessageRecord(id: .random(), contact: meshConversation, outgoing: false, text: "left apart",
                                                                timestamp: 1, recordedAt: 1, transport: "mesh")]
        m.stores[0].conversations[meshConversation] = ConversationRecord(id: meshConversation, fingerprint: m.net.nodes[1].identity.fingerprint.hex,
                                                                         nickname: "bob", updatedAt: 1)
        m.restart(0)
        m.apply(0)
        #expect(m.stores[0].messages[meshConversation] == nil, "merged at open")
        #expect((m.stores[0].messages[bobCard.userID] ?? []).contains { $0.text == "left apart" })
    }

    @Test func aContactAwayIsQueuedAndSentWhenTheyAppear() throws {
        let m = MessengerNetwork()
        m.add("alice")
        m.add("bob")
        m.open(0)
        m.open(1)
        let bobCard = try ContactCard(identity: m.net.nodes[1].identity, userID: .random(), displayName: "bob")
        let record = ContactRecord(card: bobCard, addedAt: m.seconds)
        m.messengers[0].contactAdded(record, now: m.seconds)
        m.apply(0)
        let sent = try m.messengers[0].send("are you there?", to: bobCard.userID, now: m.seconds)
        m.apply(0)
        #expect(sent.transport == nil) // no route: queued
        #expect(m.state(0, of: sent.id) == .routing)
        m.run(10_000)
        #expect(m.received(1).isEmpty)
        m.net.connect(0, 1)
        m.run(10_000)
        #expect(m.received(1) == ["are you there?"])
        #expect(m.state(0, of: sent.id) == .delivered)
    }

    /// Issue 36, courier drops from the messenger: bob talked with alice and
    /// left. Her message for him waits (alone, nothing is dropped: the
    /// control), goes as a drop with carol when carol is here, reaches bob
    /// through carol an hour later (read as from alice, whose key the seal
    /// proves), and goes once directly too when alice meets bob: bob shows it
    /// once, and alice reads "delivered". Bob's key outlives alice's restart.
    @Test func aMessageForSomeoneAwayGoesWithACourierAndIsShownOnce() throws {
        let m = MessengerNetwork()
        for name in ["alice", "carol", "bob"] { m.add(name) }
        m.net.connect(0, 2)
        for i in 0..<3 { m.open(i) }
        m.run(2_000)
        _ = try Self.talk(m, 2, to: 0, "hello alice")
        m.run(5_000)
        let c = m.conversation(0, with: 2), bobKey = m.net.nodes[2].identity.noisePublicKey
        #expect(m.messengers[0].noiseKey(of: c) == bobKey)
        #expect(m.stores[0].conversations[c]?.noiseKey == bobKey)
        m.net.disconnect(0, 2)
        m.net.disconnect(2, 0)
        m.run(60_000)
        m.restart(0)
        #expect(m.messengers[0].noiseKey(of: c) == bobKey, "the key is the store's")
        #expect(!m.net.nodes[0].peers.values.contains { $0.fingerprint == m.net.nodes[2].identity.fingerprint })

        // Alone: queued, nothing to drop with.
        let sent = try m.messengers[0].send("for later", to: c, now: m.seconds)
        m.apply(0)
        m.run(5_000)
        let drops = { (m.commands.first ?? []).filter { if case .sendDrop = $0 { true } else { false } }.count }
        #expect(drops() == 0)
        #expect(m.state(0, of: sent.id) == .routing)
        // Carol comes: the drop goes with her, once.
        m.net.connect(0, 1)
        m.run(10_000)
        #expect(drops() == 1)
        let carried = m.events[0].compactMap { if case let .dropDeposited(_, r, n) = $0 { (r.id, n) } else { nil } }
        #expect(carried.count == 1 && carried.first?.0 == sent.id && carried.first?.1 == 1, "\(carried)")
        #expect(m.state(0, of: sent.id) == .routing, "still queued: it goes directly too")
        m.run(30_000)
        #expect(drops() == 1, "not again while the messenger runs")
        m.restart(0)
        m.run(10_000)
        #expect(drops() == 1, "nor after a restart: its record says a courier took it")
        #expect(m.state(0, of: sent.id) == .routing, "still queued after the restart")
        // Carol leaves alice and meets bob an hour later.
        m.net.disconnect(0, 1)
        m.net.disconnect(1, 0)
        m.run(3_600_000)
        #expect(m.received(2).isEmpty, "bob has nothing from alice yet")
        m.net.connect(1, 2)
        m.run(20_000)
        #expect(m.received(2) == ["for later"])
        let got = m.events[2].compactMap { if case let .privateMessage(conv, _, _, name, _, via, _) = $0 { (conv, name, via) } else { nil } }
        #expect(got.first?.0 == m.conversation(2, with: 0) && got.first?.1 == "alice" && got.first?.2 == "courier", "\(got)")
        // Alice meets bob: sent directly, shown once, delivered.
        m.net.connect(0, 2)
        m.run(20_000)
        #expect(m.received(2) == ["for later"])
        #expect(m.state(0, of: sent.id) == .delivered)
    }

    /// A drop whose claimed fingerprint is not its key's, or from a blocked
    /// key, is not shown; the control, the same drop as the node words it, is.
    @Test func anOpenedDropIsShownOnlyUnderTheKeyTheSealProved() throws {
        let m = MessengerNetwork()
        m.add("alice")
        m.add("mallory")
        m.open(0)
        let key = m.net.nodes[1].identity.noisePublicKey, f = m.net.nodes[1].identity.fingerprint
        let other = Identity.generate().fingerprint
        func drop(_ hex: String, _ id: String) -> NodeEvent {
            .dropOpened(from: f.peerID, fingerprint: hex, noiseKey: key, nickname: nil, text: "drop " + id, messageID: id, hops: 1)
        }
        m.messengers[0].handle(drop(other.hex, "A"), peers: [:], now: m.seconds)
        m.apply(0)
        #expect(m.received(0).isEmpty)
        m.messengers[0].handle(drop(f.hex, "B"), peers: [:], now: m.seconds)
        m.apply(0)
        #expect(m.received(0) == ["drop B"])
        #expect(m.stores[0].conversations[m.conversation(0, with: 1)]?.noiseKey == key, "a reply can be dropped to them")
        m.messengers[0].decide(.block, about: f, nickname: nil, now: m.seconds)
        m.apply(0)
        m.messengers[0].handle(drop(f.hex, "C"), peers: [:], now: m.seconds)
        m.apply(0)
        #expect(m.received(0) == ["drop B"])
    }

    /// Channel lines a gateway carried are shown only for a channel the person
    /// joined, each event once (a relay's copy included); not after leaving.
    @Test func gatewayLinesAreShownOnlyInChannelsJoinedAndOnce() {
        var core = MessengerCore(identity: Identity.generate(), configuration: .init())
        core.storeOpened(.init(), peers: [:], now: 1)
        func line(_ id: String, _ g: String = "u4pruy") -> NodeEvent {
            .gatewayMessage(GatewayMessage(geohash: g, eventID: id, pubkey: "ab", nickname: "ann", text: "t" + id, createdAt: 1, hops: 1))
        }
        func shown() -> [String] {
            core.takeEffects().compactMap { if case let .event(.node(.gatewayMessage(m))) = $0 { m.eventID } else { nil } }
        }
        core.handle(line("1"), peers: [:], now: 2)
        #expect(shown().isEmpty, "not joined")
        core.joinedChannel("U4PRUY")
        core.handle(line("2"), peers: [:], now: 2)
        core.handle(line("2"), peers: [:], now: 2)
        core.handle(line("3", "u4pruz"), peers: [:], now: 2)
        #expect(shown() == ["2"], "joined: once, and only its own channel")
        #expect(!core.channelEventShown("2") && core.channelEventShown("4"), "a relay's copy of a shown event is not shown again")
        core.handle(line("4"), peers: [:], now: 2)
        #expect(shown().isEmpty)
        core.leftChannel("u4pruy")
        core.handle(line("5"), peers: [:], now: 2)
        #expect(shown().isEmpty, "left")
    }

    @Test func nostrCarriesAContactsMessagesWhenBothAreFavouritesAndNotOnTheMesh() throws {
        let m = MessengerNetwork()
        for name in ["alice", "bob"] { m.add(name) { $0.nostr = true; $0.npub = "npub1" + name } }
        m.open(0)
        m.open(1)
        m.net.connect(0, 1)
        m.run(2_000)
        let bobCard = try ContactCard(identity: m.net.nodes[1].identity, userID: .random(), displayName: "bob")
        m.messengers[0].contactAdded(ContactRecord(card: bobCard, addedAt: m.seconds), now: m.seconds)
        m.apply(0)
        let alice = m.net.nodes[0].identity.fingerprint, bob = m.net.nodes[1].identity.fingerprint
        // Control: not favourites yet; bob away: the message waits.
        m.net.disconnect(0, 1)
        m.run(65_000)
        let waits = try m.messengers[0].send("before", to: bobCard.userID, now: m.seconds)
        m.apply(0)
        #expect(waits.transport == nil)
        // Both make each other favourites while on the mesh (the notices carry the npubs).
        m.net.connect(0, 1)
        m.run(3_000)
        m.messengers[0].decide(.favourite, about: bob, nickname: "bob", now: m.seconds)
        m.apply(0)
        m.messengers[1].decide(.favourite, about: alice, nickname: "alice", now: m.seconds)
        m.apply(1)
        m.run(5_000)
        #expect(m.stores[0].trust[bob.hex]?.npub == "npub1bob")
        #expect(m.received(1).contains("before")) // it went when bob came back
        m.net.disconnect(0, 1)
        m.run(65_000)
        let over = try m.messengers[0].send("across the city", to: bobCard.userID, now: m.seconds)
        m.apply(0)
        #expect(over.transport == "nostr")
        m.run(5_000)
        #expect(m.received(1).contains("across the city"))
        #expect(m.state(0, of: over.id) == .delivered)
    }

    @Test func internalsOfALostSessionAreNotShownToAPerson() throws {
        let m = Self.three()
        _ = try Self.talk(m, 1, to: 0, "before")
        m.run(3_000)
        m.restart(0) // alice forgets the session; bob's next frame cannot be opened
        _ = try Self.talk(m, 1, to: 0, "after")
        m.run(30_000)
        let warnings = m.events[0].compactMap { e -> String? in
            switch e {
            case let .warning(w): w
            case let .node(.rejected(r)): r.detail
            default: nil
            }
        }
        #expect(!warnings.contains { $0.contains("no Noise session") || $0.contains("frame from") }, "\(warnings)")
        #expect(m.events[0].contains { if case let .diagnostic(r) = $0 { r.kind == .undecryptable } else { false } })
        #expect(m.received(0).contains("after")) // recovered by a fresh handshake
    }

    @Test func aMessageTheStoreDidNotTakeIsSaidNotDropped() throws {
        let m = Self.three()
        m.stores[0].failing = true
        _ = try Self.talk(m, 0, to: 1, "unsaved")
        let said = m.events[0].compactMap { if case let .notSaved(s) = $0 { s } else { nil } }
        #expect(said.contains { $0.contains("your message to bob was not stored") }, "\(said)")
        // Control: with the store working, nothing is said.
        m.stores[0].failing = false
        let before = m.events[0].count
        _ = try Self.talk(m, 0, to: 1, "saved")
        #expect(!m.events[0][before...].contains { if case .notSaved = $0 { true } else { false } })
    }

    /// A sync replays public history newest first (as a neighbour's store
    /// holds it): every face gets it as one block, oldest first, once quiet,
    /// without what was shown live; a live message goes at once (the control).
    @Test func historyIsOneBlockOldestFirstForEveryFace() throws {
        var core = MessengerCore(identity: Identity.generate())
        core.storeOpened(.init(), peers: [:], now: 1_000)
        _ = core.takeEffects()
        let bob = PeerID(rawValue: 7)
        core.handle(.message(from: bob, nickname: "bob", text: "live", hops: 1, timestamp: 1_000_500), peers: [:], now: 1_000.5)
        let live = core.takeEffects().compactMap { e -> String? in
            if case let .event(.node(.message(_, _, text, _, _, _))) = e { text } else { nil }
        }
        #expect(live == ["live"])
        for (text, t) in [("third", 999_300), ("live", 1_000_500), ("first", 999_100), ("second", 999_200)] as [(String, UInt64)] {
            core.handle(.message(from: bob, nickname: "bob", text: text, hops: 1, timestamp: t, history: true), peers: [:], now: 1_001)
        }
        #expect(core.takeEffects().isEmpty) // gathered, not shown one by one
        core.tick(now: 1_001.3)
        #expect(core.takeEffects().isEmpty) // not quiet yet
        core.tick(now: 1_002)
        let blocks = core.takeEffects().compactMap { e -> [String]? in
            guard case let .event(.publicHistory(burst)) = e else { return nil }
            return burst.compactMap { if case let .message(_, _, text, _, _, true) = $0 { text } else { nil } }
        }
        #expect(blocks == [["first", "second", "third"]])
    }

    @Test func writesWhileLockedAreKeptAndMadeAtUnlock() throws {
        let m = Self.three()
        m.lock(0)
        _ = try Self.talk(m, 1, to: 0, "while locked")
        m.run(3_000)
        #expect(m.received(0) == ["while locked"]) // trust is known: shown
        let c = m.conversation(0, with: 1)
        #expect(m.stores[0].messages[c] == nil)
        #expect(m.messengers[0].heldWriteCount > 0)
        m.open(0)
        #expect(m.stores[0].messages[c]?.map(\.text) == ["while locked"])
    }
}
