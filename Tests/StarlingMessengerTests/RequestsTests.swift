import Testing
import StarlingCrypto
import StarlingMessenger
import StarlingMessengerCore
import StarlingNostr
import StarlingWire
import StarlingStore
import StarlingYaOK

/// Strangers' messages over Nostr as requests (issue 52 item 7: opened and
/// dropped without a trace): shown as a request, accepted into a contact's
/// conversation, or blocked for good; the table bounded and flooded.
@Suite struct RequestsTests {
    static func message(_ key: Secp256k1.PrivateKey, _ text: String, at: Int64 = 1_790_000_000, id: String? = nil) -> NostrClientCore.StrangerMessage {
        NostrClientCore.StrangerMessage(publicKey: key.publicKey.hexString, text: text, createdAt: at, wrapID: id ?? String(format: "%016llx%016llx", UInt64.random(in: 0...UInt64.max), UInt64.random(in: 0...UInt64.max)))
    }

    static func requests(_ m: MessengerNetwork, _ i: Int) -> [StrangerRequest] {
        m.events[i].compactMap { if case let .request(r) = $0 { r } else { nil } }
    }

    @Test func aStrangersMessageIsARequestAcceptedIntoAConversation() throws {
        let m = MessengerTests.three()
        let carol = Secp256k1.PrivateKey.random()
        let first = Self.message(carol, "are you at the school?", at: 1), second = Self.message(carol, "we have water", at: 2)
        m.messengers[0].strangerWrote(first, now: m.seconds)
        m.messengers[0].strangerWrote(second, now: m.seconds)
        m.messengers[0].strangerWrote(second, now: m.seconds) // a relay's copy: once
        m.apply(0)
        let shown = Self.requests(m, 0)
        #expect(shown.count == 2 && shown.last?.messages.map(\.text) == ["are you at the school?", "we have water"], "\(shown)")
        #expect(m.received(0).isEmpty) // not a conversation yet
        // Accepted as "carol": a contact known by npub, the two messages in her conversation.
        let npub = Bech32.npub(carol.publicKey)
        let record = try NostrContacts.record(npub: npub, name: "carol", now: m.seconds)
        m.messengers[0].trustRecordAdded(record)
        let taken = m.messengers[0].acceptRequest(carol.publicKey.hexString, name: "carol", now: m.seconds)
        m.apply(0)
        #expect(taken?.messages.count == 2)
        #expect(m.received(0) == ["are you at the school?", "we have water"])
        let conversation = try #require(m.events[0].compactMap { if case let .privateMessage(c, _, _, name, _, via, _) = $0, name == "carol", via == "nostr" { c } else { nil } }.first)
        #expect(m.messengers[0].fingerprint(of: conversation) == (try NostrContacts.key(npub: npub)))
        #expect(m.nostrOpened[0] == [first.wrapID, second.wrapID]) // kept as opened: not shown again after a restart
        #expect(m.messengers[0].requests.all.isEmpty)
    }

    @Test func aBlockedStrangerIsNeverShownAgain() throws {
        let m = MessengerTests.three()
        let mallory = Secp256k1.PrivateKey.random(), dave = Secp256k1.PrivateKey.random()
        let spam = Self.message(mallory, "click here")
        m.messengers[0].strangerWrote(spam, now: m.seconds)
        let npub = Bech32.npub(mallory.publicKey)
        let blocked = TrustRecord(fingerprint: try NostrContacts.key(npub: npub).hex, blocked: true, updatedAt: m.seconds, npub: npub)
        m.messengers[0].trustRecordAdded(blocked)
        m.messengers[0].dropRequest(mallory.publicKey.hexString)
        let again = Self.message(mallory, "click here, again")
        m.messengers[0].strangerWrote(again, now: m.seconds)
        // The control: someone else still comes as a request.
        m.messengers[0].strangerWrote(Self.message(dave, "hi, dave here"), now: m.seconds)
        m.apply(0)
        let shown = Self.requests(m, 0).flatMap { $0.messages.map(\.text) }
        #expect(shown == ["click here", "hi, dave here"], "\(shown)")
        #expect(m.nostrOpened[0] == [spam.wrapID, again.wrapID])
        #expect(m.messengers[0].requests.all.map(\.npub) == [Bech32.npub(dave.publicKey)])
    }

    /// The table's bounds (docs/NOSTR.md, "Requests"): 64 senders (the one heard
    /// from least recently goes), 16 messages each (the oldest goes), 48 hours.
    @Test func aFloodOfStrangersIsBounded() {
        var table = StrangerRequests()
        let keys = (0..<100).map { _ in Secp256k1.PrivateKey.random() }
        for (n, k) in keys.enumerated() { _ = table.add(RequestsTests.message(k, "sender \(n)"), now: Double(n)) }
        #expect(table.bySender.count == StrangerRequests.maxSenders)
        #expect(Set(table.all.map(\.publicKey)) == Set(keys.suffix(64).map { $0.publicKey.hexString }))
        // One sender, 40 more messages, written before their first: the newest 16 by their time.
        let loud = keys[99]
        for n in 0..<40 { _ = table.add(RequestsTests.message(loud, "m\(n)", at: Int64(n)), now: 200) }
        #expect(table.find(loud.publicKey.hexString)?.messages.map(\.text) == (25..<40).map { "m\($0)" } + ["sender 99"])
        #expect(table.find(Bech32.npub(loud.publicKey))?.publicKey == loud.publicKey.hexString) // by npub too
        // 48 hours without a word: forgotten (the loud one spoke last at 200).
        table.expire(now: 99 + StrangerRequests.lifetime)
        #expect(table.all.map(\.publicKey) == [loud.publicKey.hexString])
    }
}
