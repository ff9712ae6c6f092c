import Foundation
import StarlingMesh
@testable import StarlingNostr
import StarlingWire
import Testing

/// A Nostr relay in memory, as NIP-01 describes one: it stores events, answers
/// a REQ with what matches and EOSE, sends each new matching event to the
/// subscriptions, and answers EVENT with OK. Enough to run cores against.
final class MemoryRelay {
    var stored: [NostrEvent] = []
    var subscriptions: [(client: Int, id: String, filters: [NostrFilter])] = []
    /// What it sends each client.
    var outbox: [Int: [String]] = [:]
    var refuses = false

    func receive(_ text: String, from client: Int) {
        guard let array = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [Any], let type = array.first as? String else { return }
        switch type {
        case "EVENT":
            let data = try! JSONSerialization.data(withJSONObject: array[1])
            let event = try! JSONDecoder().decode(NostrEvent.self, from: data)
            guard !refuses, (try? event.verify()) != nil else {
                outbox[client, default: []].append("[\"OK\",\"\(event.id)\",false,\"blocked: not today\"]")
                return
            }
            outbox[client, default: []].append("[\"OK\",\"\(event.id)\",true,\"\"]")
            guard !stored.contains(where: { $0.id == event.id }) else { return }
            stored.append(event)
            for s in subscriptions where s.filters.contains(where: { $0.matches(event) }) {
                outbox[s.client, default: []].append("[\"EVENT\",\"\(s.id)\",\(event.json)]")
            }
        case "CLOSE":
            subscriptions.removeAll { $0.client == client && $0.id == array[1] as? String }
        case "REQ":
            let id = array[1] as! String
            let filters = array.dropFirst(2).map { f -> NostrFilter in
                let d = f as! [String: Any]
                return NostrFilter(kinds: d["kinds"] as? [Int], p: d["#p"] as? [String], g: d["#g"] as? [String], r: d["#r"] as? [String],
                                   x: d["#x"] as? [String], since: (d["since"] as? Int).map(Int64.init), limit: d["limit"] as? Int)
            }
            subscriptions.append((client, id, filters))
            for e in stored where filters.contains(where: { $0.matches(e) }) {
                outbox[client, default: []].append("[\"EVENT\",\"\(id)\",\(e.json)]")
            }
            outbox[client, default: []].append("[\"EOSE\",\"\(id)\"]")
        default:
            break
        }
    }

    func take(_ client: Int) -> [String] {
        defer { outbox[client] = [] }
        return outbox[client] ?? []
    }
}

/// Cores joined through a ``MemoryRelay`` on a clock the test moves.
struct Pair {
    var cores: [NostrClientCore]
    let relay = MemoryRelay()
    let url = "wss://relay.test"
    var now: Millis = 1_790_000_000_000
    var outputs: [[NostrClientCore.Output]] = [[], []]

    init(variant: GiftWrap.Variant = .bitchat, configuration: NostrClientCore.Configuration = .init()) throws {
        let a = Secp256k1.PrivateKey.random(), b = Secp256k1.PrivateKey.random()
        var alice = NostrClientCore(key: a, meshPeerID: PeerID(bytes: [0xA1, 1, 2, 3, 4, 5, 6, 7])!, configuration: configuration)
        var bob = NostrClientCore(key: b, meshPeerID: PeerID(bytes: [0xB0, 1, 2, 3, 4, 5, 6, 7])!, configuration: configuration)
        alice.setContact(bob.meshPeerID, publicKey: b.publicKey, variant: variant)
        bob.setContact(alice.meshPeerID, publicKey: a.publicKey, variant: variant)
        cores = [alice, bob]
    }

    /// Carries every output to the relay and every relay message back, until quiet.
    mutating func settle() {
        for _ in 0..<20 {
            var moved = false
            for i in cores.indices {
                for o in cores[i].takeOutputs() {
                    outputs[i].append(o)
                    if case let .send(text, _) = o { relay.receive(text, from: i); moved = true }
                }
                for text in relay.take(i) {
                    cores[i].receive(text, from: url, now: now)
                    moved = true
                }
            }
            if !moved { return }
        }
    }

    mutating func advance(_ ms: Millis) {
        let end = now + ms
        while let next = cores.compactMap(\.nextDeadline).min(), next <= end {
            now = max(now, next)
            for i in cores.indices { cores[i].tick(now: now) }
            settle()
        }
        now = end
    }

    func received(_ i: Int) -> [NoisePayload] {
        outputs[i].compactMap { if case let .received(p, _, _) = $0 { p } else { nil } }
    }
}

@Suite struct NostrClientCoreTests {
    /// A bridge's subscriptions (#r for its cells, #x for drops) go to every relay and again when one
    /// comes up; a bridge event is handed on once however many copies, a drop each time it comes
    /// (one for nobody here yet is read again later).
    @Test func aBridgeFollowsItsCellsAndItsDrops() throws {
        var p = try Pair()
        p.cores[0].relayUp(p.url, now: p.now)
        p.cores[1].relayUp(p.url, now: p.now)
        p.settle()
        p.cores[0].followBridge(cells: MeshBridge.cells(around: "u4pruy"), now: p.now)
        let tag = String(repeating: "ab", count: 16)
        p.cores[0].followDrops(tags: [tag], now: p.now)
        p.settle()
        #expect(p.relay.subscriptions.contains { $0.client == 0 && $0.id == "bridge" && $0.filters.first?.r?.count == 9 })
        #expect(p.relay.subscriptions.contains { $0.client == 0 && $0.id == "drops" && $0.filters.first?.x == [tag] })
        let key = Secp256k1.PrivateKey.random()
        let message = try #require(MeshBridge.message("over the hill", nickname: "bob", cell: "u4pruz", senderIDHex: "0011223344556677",
                                                      timestampMs: p.now, key: key, now: Int64(p.now / 1_000)))
        let drop = try #require(CourierDrop.event(CourierEnvelope(recipientTag: [UInt8](repeating: 0xAB, count: 16), expiry: p.now + 3_600_000,
                                                                  ciphertext: [1, 2, 3]), now: Int64(p.now / 1_000)))
        let elsewhere = try #require(MeshBridge.message("far away", nickname: nil, cell: "9q8yyk", senderIDHex: "0011223344556677",
                                                        timestampMs: p.now, key: key, now: Int64(p.now / 1_000)))
        for e in [message, drop, elsewhere] { p.cores[1].publishSigned(e, ticket: "t", now: p.now) }
        p.settle()
        for e in [message, drop] { p.cores[0].receive("[\"EVENT\",\"\(e.kind == 1_401 ? "drops" : "bridge")\",\(e.json)]", from: "wss://other", now: p.now) }
        let out = p.cores[0].takeOutputs() + p.outputs[0]
        #expect(out.filter { if case let .bridgeEvent(e) = $0 { e.id == message.id } else { false } }.count == 1)
        #expect(out.filter { if case let .dropEvent(e) = $0 { e.id == drop.id } else { false } }.count == 2)
        #expect(!out.contains { if case let .bridgeEvent(e) = $0 { e.id == elsewhere.id } else { false } }, "the relay filters by #r")
        // A relay that comes up is asked both again.
        p.cores[0].relayUp("wss://second", now: p.now)
        let again = p.cores[0].takeOutputs().compactMap { if case let .send(t, r) = $0, r == "wss://second" { t } else { nil } }
        #expect(again.contains { $0.contains(#"["REQ","bridge""#) } && again.contains { $0.contains(#"["REQ","drops""#) })
        // No tags: the drops subscription closes.
        p.cores[0].followDrops(tags: [], now: p.now)
        #expect(p.cores[0].takeOutputs().contains { if case let .send(t, _) = $0 { t == #"["CLOSE","drops"]"# } else { false } })
    }

    @Test func aMessageAndItsReceiptsCrossTheRelayAndEachSendIsAccepted() throws {
        var pair = try Pair()
        for i in 0..<2 { pair.cores[i].relayUp(pair.url, now: pair.now) }
        pair.settle()
        let message = NoisePayload.privateMessage(PrivateMessage(messageID: "M-1", content: "the bridge is out"))
        try pair.cores[0].send(message, to: pair.cores[1].meshPeerID, ticket: "M-1", now: pair.now)
        pair.settle()
        #expect(pair.received(1) == [message])
        #expect(pair.outputs[1].contains { if case let .received(_, from, _) = $0 { from == pair.cores[0].meshPeerID } else { false } })
        #expect(pair.outputs[0].contains(.accepted(ticket: "M-1", relay: pair.url)))
        try pair.cores[1].send(.delivered(messageID: "M-1"), to: pair.cores[0].meshPeerID, ticket: "", now: pair.now)
        try pair.cores[1].send(.readReceipt(messageID: "M-1"), to: pair.cores[0].meshPeerID, ticket: "", now: pair.now)
        pair.settle()
        #expect(pair.received(0) == [.delivered(messageID: "M-1"), .readReceipt(messageID: "M-1")])
        // The wrap on the relay has the apps' shape: kind 1059, one p tag, "v2:" content, a one-time key.
        let wrap = try #require(pair.relay.stored.first)
        #expect(wrap.kind == 1059 && wrap.tags == [["p", pair.cores[1].publicKeyHex]] && wrap.content.hasPrefix("v2:"))
        #expect(wrap.pubkey != pair.cores[0].publicKeyHex)
        #expect(abs(wrap.created_at - Int64(pair.now / 1000)) <= 900)
    }

    @Test func theEmbeddedPacketIsTheAppsContainer() throws {
        // What bob's core opens is a "bitchat1:" packet: type 0x11, TTL 7, unsigned, our mesh ID as sender.
        let bob = Secp256k1.PrivateKey.random(), alice = Secp256k1.PrivateKey.random()
        var core = NostrClientCore(key: alice, meshPeerID: PeerID(bytes: [1, 2, 3, 4, 5, 6, 7, 8])!)
        let bobID = PeerID(bytes: [9, 9, 9, 9, 9, 9, 9, 9])!
        core.setContact(bobID, publicKey: bob.publicKey)
        core.relayUp("wss://r", now: 1_790_000_000_000)
        _ = core.takeOutputs()
        try core.send(.privateMessage(PrivateMessage(messageID: "X", content: "hi")), to: bobID, ticket: "X", now: 1_790_000_000_000)
        guard case let .send(text, _) = try #require(core.takeOutputs().first) else { Issue.record("no send"); return }
        #expect(text.hasPrefix("[\"EVENT\",{"))
        let wrapJSON = String(text.dropFirst("[\"EVENT\",".count).dropLast())
        let opened = try GiftWrap.open(try NostrEvent.decode(wrapJSON), with: bob)
        #expect(opened.content.hasPrefix("bitchat1:") && !opened.content.contains("="))
        let bytes = try #require(Base64.decode(String(opened.content.dropFirst(9))))
        let packet = try Packet(decoding: bytes)
        #expect(packet.type == .noiseEncrypted && packet.ttl == 7 && packet.signature == nil)
        #expect(packet.senderID == PeerID(bytes: [1, 2, 3, 4, 5, 6, 7, 8])! && packet.recipientID == bobID)
        #expect(bytes.count == 256) // padded as iOS pads it
        #expect(try NoisePayload(decoding: packet.payload) == .privateMessage(PrivateMessage(messageID: "X", content: "hi")))
    }

    @Test func strangersReplaysAndStaleWrapsAreRefused() throws {
        var pair = try Pair()
        for i in 0..<2 { pair.cores[i].relayUp(pair.url, now: pair.now) }
        pair.settle()
        // Mallory knows bob's key and writes to him: bob has no such contact.
        let mallory = Secp256k1.PrivateKey.random()
        let forged = try GiftWrap.wrap("hello", from: mallory, to: pair.cores[1].publicKeyHex, variant: .bitchat, now: Int64(pair.now / 1000))
        pair.cores[1].receive("[\"EVENT\",\"starling-dm\",\(forged.json)]", from: pair.url, now: pair.now)
        #expect(pair.cores[1].statistics.strangers == 1)
        // The same wrap again: a duplicate, not opened twice.
        pair.cores[1].receive("[\"EVENT\",\"starling-dm\",\(forged.json)]", from: pair.url, now: pair.now)
        #expect(pair.cores[1].statistics.duplicates == 1)
        // A real message from alice, stamped two days ago inside: refused as stale.
        let old = try GiftWrap.wrap("old news", from: pair.cores[0].key, to: pair.cores[1].publicKeyHex, variant: .bitchat,
                                    now: Int64(pair.now / 1000) - 2 * 86_400)
        pair.cores[1].receive("[\"EVENT\",\"starling-dm\",\(old.json)]", from: pair.url, now: pair.now)
        // A wrap with a broken signature: refused, and not remembered (the real one still counts).
        var tampered = try GiftWrap.wrap("x", from: pair.cores[0].key, to: pair.cores[1].publicKeyHex, variant: .bitchat, now: Int64(pair.now / 1000))
        tampered.sig = String(repeating: "0", count: 128)
        pair.cores[1].receive("[\"EVENT\",\"starling-dm\",\(tampered.json)]", from: pair.url, now: pair.now)
        #expect(pair.cores[1].statistics.stale >= 1 && pair.cores[1].statistics.undecryptable == 1)
        pair.settle()
        #expect(pair.received(1).isEmpty)
        // After a restart, what was taken before (handed back) is a duplicate too.
        let real = try GiftWrap.wrap("once", from: pair.cores[0].key, to: pair.cores[1].publicKeyHex, variant: .bitchat, now: Int64(pair.now / 1000))
        pair.cores[1].receive("[\"EVENT\",\"starling-dm\",\(real.json)]", from: pair.url, now: pair.now)
        let outs = pair.cores[1].takeOutputs()
        #expect(outs.last == .opened(wrapID: real.id) && outs.contains { if case .received = $0 { true } else { false } })
        var restarted = NostrClientCore(key: pair.cores[1].key, meshPeerID: pair.cores[1].meshPeerID, opened: [real.id])
        restarted.setContact(pair.cores[0].meshPeerID, publicKey: pair.cores[0].key.publicKey)
        restarted.receive("[\"EVENT\",\"starling-dm\",\(real.json)]", from: pair.url, now: pair.now)
        #expect(restarted.statistics.duplicates == 1 && !restarted.takeOutputs().contains { if case .received = $0 { true } else { false } })
    }

    /// A stranger's text (standard NIP-17, or a bitchat app's) is a request:
    /// handed on, and not kept as opened (relays bring it again after a restart
    /// until the person answers); a contact's is received and kept (the control);
    /// a stranger's text too long or too old is refused and kept as opened.
    @Test func aStrangersTextIsARequestNotKeptAsOpened() throws {
        var pair = try Pair()
        pair.cores[1].relayUp(pair.url, now: pair.now)
        _ = pair.cores[1].takeOutputs()
        let carol = Secp256k1.PrivateKey.random()
        let seconds = Int64(pair.now / 1000)
        let plain = try GiftWrap.wrap("hello from Amethyst", from: carol, to: pair.cores[1].publicKeyHex, variant: .standard, now: seconds)
        pair.cores[1].receive("[\"EVENT\",\"starling-dm\",\(plain.json)]", from: pair.url, now: pair.now)
        var outs = pair.cores[1].takeOutputs()
        #expect(outs == [.request(.init(publicKey: carol.publicKey.hexString, text: "hello from Amethyst", createdAt: outs.compactMap {
            if case let .request(m) = $0 { m.createdAt } else { nil } }.first ?? 0, wrapID: plain.id))], "\(outs)")
        #expect(!outs.contains(.opened(wrapID: plain.id)))
        #expect(pair.cores[1].statistics.strangers == 1)
        // A bitchat app's private message from a stranger: its text.
        let embedded = try EmbeddedPacket.encode(.init(senderID: PeerID(bytes: [9, 9, 9, 9, 9, 9, 9, 9])!, recipientID: pair.cores[1].meshPeerID,
                                                       timestamp: UInt64(pair.now), payload: .privateMessage(PrivateMessage(messageID: "M1", content: "from an app"))))
        let app = try GiftWrap.wrap(embedded, from: carol, to: pair.cores[1].publicKeyHex, variant: .bitchat, now: seconds)
        pair.cores[1].receive("[\"EVENT\",\"starling-dm\",\(app.json)]", from: pair.url, now: pair.now)
        outs = pair.cores[1].takeOutputs()
        #expect(outs.contains { if case let .request(m) = $0 { m.text == "from an app" && m.wrapID == app.id } else { false } }, "\(outs)")
        // Too long: refused, and kept as opened (never shown, never brought again).
        let long = try GiftWrap.wrap(String(repeating: "x", count: NostrClientCore.maxRequestText + 1), from: carol,
                                     to: pair.cores[1].publicKeyHex, variant: .standard, now: seconds)
        pair.cores[1].receive("[\"EVENT\",\"starling-dm\",\(long.json)]", from: pair.url, now: pair.now)
        outs = pair.cores[1].takeOutputs()
        #expect(outs.contains(.opened(wrapID: long.id)) && !outs.contains { if case .request = $0 { true } else { false } }, "\(outs)")
        // The control: a contact's message is received and kept as opened.
        let real = try GiftWrap.wrap("from a contact", from: pair.cores[0].key, to: pair.cores[1].publicKeyHex, variant: .bitchat, now: seconds)
        pair.cores[1].receive("[\"EVENT\",\"starling-dm\",\(real.json)]", from: pair.url, now: pair.now)
        outs = pair.cores[1].takeOutputs()
        #expect(outs.contains(.opened(wrapID: real.id)) && outs.contains { if case .received = $0 { true } else { false } }, "\(outs)")
    }

    @Test func sendsWaitForARelayThenFailWithWordsAndRefusalsFailToo() throws {
        var pair = try Pair()
        let msg = NoisePayload.privateMessage(PrivateMessage(messageID: "Q", content: "queued"))
        try pair.cores[0].send(msg, to: pair.cores[1].meshPeerID, ticket: "Q", now: pair.now)
        pair.settle()
        #expect(pair.relay.stored.isEmpty) // no relay: nothing went anywhere
        // A relay comes within the wait: it goes then.
        pair.advance(5_000)
        pair.cores[1].relayUp(pair.url, now: pair.now)
        pair.cores[0].relayUp(pair.url, now: pair.now)
        pair.settle()
        #expect(pair.received(1) == [msg])
        // None comes: after 30 s it has failed, and says why.
        var lonely = try Pair()
        try lonely.cores[0].send(msg, to: lonely.cores[1].meshPeerID, ticket: "Q", now: lonely.now)
        lonely.advance(31_000)
        #expect(lonely.outputs[0].contains { if case let .failed("Q", why) = $0 { why.contains("no relay reachable") } else { false } })
        // Every relay refuses: failed at once.
        var refused = try Pair()
        refused.relay.refuses = true
        refused.cores[0].relayUp(refused.url, now: refused.now)
        refused.settle()
        try refused.cores[0].send(msg, to: refused.cores[1].meshPeerID, ticket: "R", now: refused.now)
        refused.settle()
        #expect(refused.outputs[0].contains { if case let .failed("R", why) = $0 { why.contains("not today") } else { false } })
        // Not a contact: refused before anything is made.
        #expect(throws: NostrClientCore.SendError.self) {
            try refused.cores[0].send(msg, to: PeerID(bytes: [7, 7, 7, 7, 7, 7, 7, 7])!, ticket: "S", now: refused.now)
        }
    }

    /// The connection drops after the EVENT went out and before its OK: the
    /// same event goes again when a relay is up (no new wrap), within the wait
    /// for a relay; the reader opens it once even if both copies were stored.
    @Test func anEventSentAsTheRelayDroppedGoesAgainWhenARelayIsUp() throws {
        var pair = try Pair()
        for i in 0..<2 { pair.cores[i].relayUp(pair.url, now: pair.now) }
        pair.settle()
        let msg = NoisePayload.privateMessage(PrivateMessage(messageID: "D", content: "as it fell"))
        try pair.cores[0].send(msg, to: pair.cores[1].meshPeerID, ticket: "D", now: pair.now)
        // The EVENT is out on the connection, which drops before the relay reads it.
        let lost = pair.cores[0].takeOutputs().compactMap { if case let .send(text, _) = $0 { text } else { nil } }
        #expect(lost.count == 1 && lost[0].hasPrefix("[\"EVENT\""))
        pair.cores[0].relayDown(pair.url, now: pair.now)
        pair.settle()
        #expect(pair.relay.stored.isEmpty && pair.received(1).isEmpty)
        // 10 s later (past the accept timeout) nothing has failed: it waits for a relay.
        pair.advance(10_000)
        #expect(!pair.outputs[0].contains { if case .failed = $0 { true } else { false } })
        pair.cores[0].relayUp(pair.url, now: pair.now)
        pair.settle()
        #expect(pair.received(1) == [msg])
        #expect(pair.outputs[0].contains(.accepted(ticket: "D", relay: pair.url)))
        #expect(pair.relay.stored.count == 1 && lost[0].contains("\"id\":\"\(pair.relay.stored[0].id)\""), "the same event")
        #expect(pair.cores[0].statistics.requeued == 1)
        // Had the relay stored the first copy: the second is a duplicate, opened once.
        pair.relay.receive(lost[0], from: 0)
        pair.settle()
        #expect(pair.received(1) == [msg])
        // With no relay back within 30 s, it fails in words, as any send does.
        var lonely = try Pair()
        lonely.cores[0].relayUp(lonely.url, now: lonely.now)
        try lonely.cores[0].send(msg, to: lonely.cores[1].meshPeerID, ticket: "L", now: lonely.now)
        _ = lonely.cores[0].takeOutputs()
        lonely.cores[0].relayDown(lonely.url, now: lonely.now)
        lonely.advance(31_000)
        #expect(lonely.outputs[0].contains { if case let .failed("L", why) = $0 { why.contains("no relay reachable") } else { false } })
    }

    /// Timers run on `now`; the wrap's `created_at` and the embedded packet's
    /// stamp follow the wall clock (`now` plus the offset).
    @Test func stampsFollowTheWallClockOffset() throws {
        var pair = try Pair()
        pair.cores[0].wallClockOffset = -3_600_000
        for i in 0..<2 { pair.cores[i].relayUp(pair.url, now: pair.now) }
        pair.settle()
        try pair.cores[0].send(.privateMessage(PrivateMessage(messageID: "W", content: "an hour back")), to: pair.cores[1].meshPeerID,
                               ticket: "W", now: pair.now)
        pair.settle()
        let wrap = try #require(pair.relay.stored.first)
        // The apps' envelope spreads created_at by ±15 minutes around the wall clock.
        #expect(abs(wrap.created_at - (Int64(pair.now / 1000) - 3_600)) <= 900, "\(wrap.created_at) for \(pair.now / 1000)")
    }

    @Test func readReceiptsArePacedAtAboutThreeASecond() throws {
        var pair = try Pair()
        for i in 0..<2 { pair.cores[i].relayUp(pair.url, now: pair.now) }
        pair.settle()
        let start = pair.now
        for n in 0..<4 { try pair.cores[1].send(.readReceipt(messageID: "R\(n)"), to: pair.cores[0].meshPeerID, ticket: "", now: pair.now) }
        pair.settle()
        #expect(pair.received(0).count == 1)
        pair.advance(1_100)
        #expect(pair.received(0) == (0..<4).map { .readReceipt(messageID: "R\($0)") })
        #expect(pair.now - start >= 3 * 350)
    }

    @Test func aFloodOfWrapsCostsBoundedWork() throws {
        var config = NostrClientCore.Configuration()
        config.opensPerMinute = 600
        config.dedupCapacity = 1_000
        var pair = try Pair(configuration: config)
        pair.cores[1].relayUp(pair.url, now: pair.now)
        _ = pair.cores[1].takeOutputs()
        // 2,000 distinct wraps from strangers in one second: 600 opened, the rest dropped unopened.
        let junk = Secp256k1.PrivateKey.random()
        let wrap = try GiftWrap.wrap("spam", from: junk, to: pair.cores[1].publicKeyHex, variant: .bitchat, now: Int64(pair.now / 1000))
        for n in 0..<2_000 {
            var w = wrap
            w.id = String(format: "%064x", n) // distinct IDs: each must be looked at, none verifies
            pair.cores[1].receive("[\"EVENT\",\"starling-dm\",\(w.json)]", from: pair.url, now: pair.now)
        }
        let s = pair.cores[1].statistics
        #expect(s.received == 2_000)
        #expect(s.overBudget == 2_000 - 600 && s.undecryptable == 600)
        _ = pair.cores[1].takeOutputs()
        // Junk text and oversized frames are refused before any JSON work beyond the size check.
        pair.cores[1].receive(String(repeating: "[", count: NostrRelayMessage.maxBytes + 1), from: pair.url, now: pair.now)
        pair.cores[1].receive("not json", from: pair.url, now: pair.now)
        #expect(pair.cores[1].statistics.malformed == 2)
    }

    @Test func standardNIP17PeersGetPlainTextAndNoReceipts() throws {
        var pair = try Pair(variant: .standard)
        for i in 0..<2 { pair.cores[i].relayUp(pair.url, now: pair.now) }
        pair.settle()
        try pair.cores[0].send(.privateMessage(PrivateMessage(messageID: "N", content: "plain")), to: pair.cores[1].meshPeerID,
                               ticket: "N", now: pair.now)
        try pair.cores[0].send(.delivered(messageID: "x"), to: pair.cores[1].meshPeerID, ticket: "", now: pair.now)
        pair.settle()
        #expect(pair.relay.stored.count == 1)
        let got = pair.received(1)
        guard case let .privateMessage(m) = try #require(got.first) else { Issue.record("not a message"); return }
        #expect(m.content == "plain" && m.messageID == pair.relay.stored[0].id) // named by its wrap
    }
}

@Suite struct NostrWireTests {
    @Test func bech32NpubsMatchTheVectors() throws {
        #expect(Bech32.npub([UInt8](repeating: 0, count: 32)) == "npub1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqzqujme")
        #expect(Bech32.npub(Array(1...32)) == "npub1qypqxpq9qcrsszg2pvxq6rs0zqg3yyc5z5tpwxqergd3c8g7rusqdknev3")
        let sender = try [UInt8](hex: "2e3d79df7047204f02b726c574e256f8de1dd80510f7dcb8b0d12df13acb87e6")
        #expect(Bech32.npub(sender) == "npub19c7hnhmsgusy7q4hymzhfcjklr0pmkq9zrmaew9s6yklzwktslnqaxf6zj")
        #expect(try Bech32.publicKey(npub: "npub19c7hnhmsgusy7q4hymzhfcjklr0pmkq9zrmaew9s6yklzwktslnqaxf6zj") == sender)
        #expect(try Bech32.publicKey(npub: "NPUB19C7HNHMSGUSY7Q4HYMZHFCJKLR0PMKQ9ZRMAEW9S6YKLZWKTSLNQAXF6ZJ") == sender)
        #expect(throws: Bech32.Error.mixedCase) { try Bech32.decode("npub19C7hnhmsgusy7q4hymzhfcjklr0pmkq9zrmaew9s6yklzwktslnqaxf6zj") }
        #expect(throws: Bech32.Error.badPadding) { try Bech32.decode("npub1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqplkg8xt") }
        #expect(throws: Bech32.Error.badChecksum) { try Bech32.decode("npub19c7hnhmsgusy7q4hymzhfcjklr0pmkq9zrmaew9s6yklzwktslnqaxf6zq") }
        #expect(throws: Bech32.Error.self) { try Bech32.decode("10a06t8") }
        #expect(throws: Bech32.Error.self) { try Bech32.decode("test1q6j8x73") }
        #expect(throws: Bech32.Error.wrongPrefix(expected: "npub", got: "nsec")) {
            try Bech32.publicKey(npub: Bech32.encode(hrp: "nsec", data: sender))
        }
        // BIP-173's valid strings.
        for valid in ["A12UEL5L", "an83characterlonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1tt5tgs",
                      "abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw", "split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w"] {
            #expect((try? Bech32.decode(valid)) != nil, "\(valid)")
        }
    }

    @Test func relayMessagesDecodeAndClientMessagesHaveTheirShape() throws {
        #expect(try NostrRelayMessage.decode("[\"OK\",\"ab\",true,\"\"]") == .ok(eventID: "ab", accepted: true, message: ""))
        #expect(try NostrRelayMessage.decode("[\"OK\",\"ab\",false,\"blocked: spam\"]") == .ok(eventID: "ab", accepted: false, message: "blocked: spam"))
        #expect(try NostrRelayMessage.decode("[\"EOSE\",\"s\"]") == .endOfStoredEvents(subscription: "s"))
        #expect(try NostrRelayMessage.decode("[\"NOTICE\",\"slow down\"]") == .notice("slow down"))
        #expect(try NostrRelayMessage.decode("[\"CLOSED\",\"s\",\"auth-required: no\"]") == .closed(subscription: "s", message: "auth-required: no"))
        let e = NostrEvent(pubkey: "aa", createdAt: 1, kind: 1059, tags: [["p", "bb"]], content: "c")
        #expect(try NostrRelayMessage.decode("[\"EVENT\",\"s\",\(e.json)]") == .event(subscription: "s", e))
        for bad in ["", "{}", "[]", "[\"WHAT\"]", "[\"OK\",1,true]", "[\"EVENT\",\"s\",{\"id\":1}]"] {
            #expect(throws: NostrRelayMessage.Error.self) { try NostrRelayMessage.decode(bad) }
        }
        let req = NostrClientMessage.request(subscription: "dm", filters: [.giftWraps(for: "bb", since: 1_699_739_900)])
        #expect(req.json == "[\"REQ\",\"dm\",{\"#p\":[\"bb\"],\"kinds\":[1059],\"limit\":100,\"since\":1699739900}]")
        #expect(NostrClientMessage.close(subscription: "dm").json == "[\"CLOSE\",\"dm\"]")
    }

    /// docs/PROTOCOL.md, "Nostr": the embedded packet example, byte for byte.
    @Test func theDocumentedEmbeddedPacketExample() throws {
        let contents = EmbeddedPacket.Contents(senderID: PeerID(bytes: [0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0x07, 0x18])!,
                                               recipientID: PeerID(bytes: [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88])!,
                                               timestamp: 1_790_000_000_000,
                                               payload: .privateMessage(PrivateMessage(messageID: "M1", content: "hi")))
        let text = try EmbeddedPacket.encode(contents)
        let doc = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
        #expect(doc.contains(text), "PROTOCOL.md should show \(text)")
        #expect(try EmbeddedPacket.decode(text) == contents)
        #expect(try EmbeddedPacket.decode("just text") == nil)
        #expect(throws: WireError.self) { try EmbeddedPacket.decode("bitchat1:!!!") }
        // Another packet type inside: refused.
        let announce = Packet(type: .announce, ttl: 7, timestamp: 1, senderID: contents.senderID, payload: [1, 2])
        #expect(throws: WireError.self) {
            try EmbeddedPacket.decode("bitchat1:" + Base64.encode(try announce.encoded(), url: true, padded: false))
        }
    }
}

@Suite struct LocationChannelTests {
    static let seed = [UInt8](0..<32)

    @Test func identitiesAreDerivedAsTheAppsDeriveThemOnePerPlace() throws {
        // HMAC-SHA256(seed, geohash ‖ u32 BE 0), checked with Python's hmac.
        #expect(LocationChannel.identity(seed: Self.seed, geohash: "u4pruyd").bytes.hexString
            == "cf5ac3b3b7c4374def478bcb8d927209a210726928e0a6f4d9cc148f33f8077d")
        #expect(LocationChannel.identity(seed: Self.seed, geohash: "9q8yy").bytes.hexString
            == "acc10d6d715537e9b172fa3528d1bd855819c870f61012e194d221d4cb81cc9d")
        #expect(try LocationChannel.geohash("U4PRUYD") == "u4pruyd")
        for bad in ["", "u4pruydu4pruyd", "abc", "ilo", "u4 pr"] {
            #expect(throws: LocationChannel.Error.self) { try LocationChannel.geohash(bad) }
        }
        let message = try LocationChannel.message("hi", nickname: "ann", geohash: "u4pruyd", key: .random(), now: 1_790_000_000)
        #expect(message.kind == 20_000 && message.tags == [["g", "u4pruyd"], ["n", "ann"]])
        try message.verify()
        let presence = try LocationChannel.presence(geohash: "u4pruyd", key: .random(), now: 1_790_000_000)
        #expect(presence.kind == 20_001 && presence.tags == [["g", "u4pruyd"]] && presence.content.isEmpty)
        #expect(NostrClientMessage.request(subscription: "geo-u4pruyd", filters: [LocationChannel.filter(geohash: "u4pruyd", now: 1_790_003_600)]).json
            == "[\"REQ\",\"geo-u4pruyd\",{\"#g\":[\"u4pruyd\"],\"kinds\":[20000,20001],\"limit\":1000,\"since\":1790000000}]")
    }

    @Test func twoPeopleInAChannelHearEachOtherAndNothingElse() throws {
        var pair = try Pair()
        for i in 0..<2 { pair.cores[i].relayUp(pair.url, now: pair.now) }
        let ka = LocationChannel.identity(seed: Self.seed, geohash: "u4pruyd"), kb = LocationChannel.identity(seed: [UInt8](repeating: 7, count: 32), geohash: "u4pruyd")
        try pair.cores[0].join("u4pruyd", key: ka, now: pair.now)
        try pair.cores[1].join("U4PRUYD", key: kb, now: pair.now)
        pair.settle()
        try pair.cores[0].sendChannel("the well by the mill is clean", nickname: "ann", geohash: "u4pruyd", ticket: "g", now: pair.now)
        pair.settle()
        let heard = pair.outputs[1].compactMap { if case let .channelMessage(m) = $0 { m } else { nil } }
        #expect(heard.map(\.text) == ["the well by the mill is clean"] && heard.first?.nickname == "ann")
        #expect(heard.first?.publicKey == ka.publicKey.hexString)
        #expect(pair.outputs[1].contains(.presence(geohash: "u4pruyd", publicKey: ka.publicKey.hexString)))
        // Our own line is not shown back to us.
        #expect(!pair.outputs[0].contains { if case .channelMessage = $0 { true } else { false } })
        // A forged event, one for another place, one too old: none shown.
        var forged = try LocationChannel.message("fake", nickname: nil, geohash: "u4pruyd", key: .random(), now: Int64(pair.now / 1000))
        forged.content = "changed after signing"
        let elsewhere = try LocationChannel.message("elsewhere", nickname: nil, geohash: "9q8yy", key: .random(), now: Int64(pair.now / 1000))
        let old = try LocationChannel.message("old", nickname: nil, geohash: "u4pruyd", key: .random(), now: Int64(pair.now / 1000) - 7_200)
        for e in [forged, elsewhere, old] {
            pair.cores[1].receive("[\"EVENT\",\"geo-u4pruyd\",\(e.json)]", from: pair.url, now: pair.now)
        }
        #expect(!pair.cores[1].takeOutputs().contains { if case .channelMessage = $0 { true } else { false } })
        // After /part, the channel's events are not ours to read.
        pair.cores[1].leave("u4pruyd")
        pair.settle()
        try pair.cores[0].sendChannel("anyone?", nickname: "ann", geohash: "u4pruyd", ticket: "g", now: pair.now)
        pair.settle()
        #expect(pair.outputs[1].compactMap { if case let .channelMessage(m) = $0 { m.text } else { nil } } == ["the well by the mill is clean"])
        // At most 8 channels; a message for a channel not joined is refused.
        for g in ["b", "c", "d", "e", "f", "g", "h"] { try pair.cores[0].join(g, key: .random(), now: pair.now) }
        #expect(throws: NostrClientCore.ChannelError.tooMany(8)) { try pair.cores[0].join("j", key: .random(), now: pair.now) }
        #expect(throws: NostrClientCore.ChannelError.notJoined("k")) {
            try pair.cores[0].sendChannel("x", nickname: nil, geohash: "k", ticket: "", now: pair.now)
        }
    }

    /// Issue 41: a gateway publishes an event its author signed, as it is; a
    /// listener in the channel gets it with the signed event itself (what its
    /// own gateway would carry down), and the gateway is not shown it back.
    @Test func aGatewayPublishesAnotherssEventAsItIs() throws {
        var pair = try Pair()
        for i in 0..<2 { pair.cores[i].relayUp(pair.url, now: pair.now) }
        try pair.cores[0].join("u4pruyd", key: .random(), now: pair.now)
        try pair.cores[1].join("u4pruyd", key: .random(), now: pair.now)
        pair.settle()
        let author = Secp256k1.PrivateKey.random()
        let deposit = try LocationChannel.message("from the mesh", nickname: "ann", geohash: "u4pruyd", key: author, now: Int64(pair.now / 1000))
        pair.cores[0].publishSigned(deposit, ticket: "gateway:" + deposit.id, now: pair.now)
        pair.settle()
        let heard = pair.outputs[1].compactMap { if case let .channelMessage(m) = $0 { m } else { nil } }
        #expect(heard.map(\.text) == ["from the mesh"] && heard.first?.event == deposit && heard.first?.publicKey == author.publicKey.hexString)
        #expect(!pair.outputs[0].contains { if case .channelMessage = $0 { true } else { false } }, "not shown back to the gateway")
        #expect(pair.outputs[0].contains(.accepted(ticket: "gateway:" + deposit.id, relay: pair.url)))
    }
}
