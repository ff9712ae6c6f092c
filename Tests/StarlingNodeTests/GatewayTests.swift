import StarlingCrypto
import StarlingEmbeddedNetwork
import StarlingMesh
import StarlingNodeCore
import StarlingNostr
import StarlingTestSupport
import StarlingWire
import Testing

/// Issue 41: the Nostr carrier (0x28) as iOS writes it, and the gateway's
/// rules (GatewayCore), each refusal beside its control, every table flooded.
@Suite struct GatewayTests {
    static let geohash = "u4pruy"
    static let t0: UInt64 = 1_750_000_000_000

    /// A kind-20000 event for `geohash`, signed (BIP-340 auxiliary bytes 00×32 when `fixed`).
    static func event(_ text: String, key: Secp256k1.PrivateKey, at: UInt64 = t0, kind: Int = 20_000, geohash: String = geohash,
                      fixed: Bool = false) throws -> NostrEvent {
        var e = NostrEvent(pubkey: "", createdAt: Int64(at / 1_000), kind: kind, tags: [["g", geohash], ["n", "tester"]], content: text)
        try sign(&e, key: key, fixed: fixed)
        return e
    }

    /// Signs `e` with `key`: BIP-340 auxiliary bytes 00×32 when `fixed` (reproducible), else random.
    static func sign(_ e: inout NostrEvent, key: Secp256k1.PrivateKey, fixed: Bool) throws {
        guard fixed else { return try e.sign(with: key) }
        e.pubkey = key.publicKey.hexString
        e.id = e.computedID
        e.sig = try key.sign(try [UInt8](hex: e.id), auxiliary: [UInt8](repeating: 0, count: 32)).hexString
    }

    static func carrier(_ e: NostrEvent, _ d: NostrCarrier.Direction = .toGateway, geohash: String = geohash) throws -> NostrCarrier {
        try NostrCarrier(direction: d, geohash: geohash, eventJSON: Array(e.json.utf8))
    }

    // MARK: The carrier

    @Test func theDocumentsExamplesAreWhatStarlingBuildsAndReads() throws {
        let key = try Secp256k1.PrivateKey(bytes: [UInt8](repeating: 1, count: 32))
        let e = try Self.event("hello mesh", key: key, fixed: true)
        #expect(e.id == "4d92075ac7bde5f790ad44c896577f56b0a70d61d17e6736337ccd247c9d9bc5")
        let built = try Self.carrier(e).encoded()
        #expect(built == (try ProtocolDocument.example("nostr-carrier")))
        #expect(built.count == 401)
        let read = try NostrCarrier(decoding: built[...])
        #expect(read.direction == .toGateway && read.geohash == "u4pruy")
        #expect(try NostrEvent.decode(String(decoding: read.eventJSON, as: UTF8.self)) == e)
        // Android PR #770's fixture of iOS bytes.
        let bridge = try ProtocolDocument.example("nostr-carrier-bridge")
        #expect(try NostrCarrier(direction: .toBridge, geohash: "u4pruy", eventJSON: Array("{}".utf8)).encoded() == bridge)
        #expect(try NostrCarrier(decoding: bridge[...]).direction == .toBridge)
    }

    /// iOS's own decoder tests (NostrCarrierPacketTests.swift): each refusal with its control.
    @Test func whatIOSRefusesIsRefused() throws {
        let head: [UInt8] = [0x01, 0x00, 0x01, 0x01, 0x02, 0x00, 0x06] + Array("u4pruy".utf8)
        func withEvent(_ n: Int) -> [UInt8] { head + [0x03, UInt8(n >> 8), UInt8(n & 0xFF)] + [UInt8](repeating: 0x7B, count: n) }
        #expect(throws: WireError.self) { try NostrCarrier(decoding: withEvent(16_385)[...]) }
        #expect(try NostrCarrier(decoding: withEvent(16_384)[...]).eventJSON.count == 16_384)
        // An unknown TLV is skipped; 1–2 trailing bytes refuse.
        let ok = withEvent(2)
        #expect(try NostrCarrier(decoding: (ok + [0x7F, 0x00, 0x02, 0xDE, 0xAD])[...]) == (try NostrCarrier(decoding: ok[...])))
        #expect(throws: WireError.self) { try NostrCarrier(decoding: (ok + [0x7F])[...]) }
        #expect(throws: WireError.self) { try NostrCarrier(decoding: (ok + [0x7F, 0x00])[...]) }
        // The direction alone; an unknown direction; one of two bytes.
        #expect(throws: WireError.self) { try NostrCarrier(decoding: [0x01, 0x00, 0x01, 0x01][...]) }
        #expect(throws: WireError.self) { try NostrCarrier(decoding: ([0x01, 0x00, 0x01, 0x77] + Array(ok.dropFirst(4)))[...]) }
        #expect(throws: WireError.self) { try NostrCarrier(decoding: ([0x01, 0x00, 0x02, 0x01, 0x01] + Array(ok.dropFirst(4)))[...]) }
        // Geohash: 12 bytes taken, 13 refused (both ways).
        #expect(throws: EncodingError.self) { try NostrCarrier(direction: .toGateway, geohash: String(repeating: "u", count: 13), eventJSON: [0x7B]) }
        #expect(try NostrCarrier(direction: .toGateway, geohash: String(repeating: "u", count: 12), eventJSON: [0x7B]).geohash.count == 12)
        #expect(!NostrCarrier.isValidGeohash("u4prA") && !NostrCarrier.isValidGeohash("u4pri") && NostrCarrier.isValidGeohash("u4pruy"))
    }

    // MARK: The gateway

    @Test func aDepositIsPublishedAsItCameOnceAndOnlyWhenItsOwn() throws {
        var g = GatewayCore()
        func deposit(_ c: NostrCarrier, from p: PeerID, relaysUp: Bool, now: UInt64) -> GatewayCore.Outcome { g.deposit(c, from: p, relaysUp: relaysUp, now: now) }
        func fromRelay(_ e: NostrEvent, geohash: String, now: UInt64) -> Bool { g.fromRelay(e, geohash: geohash, now: now) }
        func due(now: UInt64) -> [NostrCarrier] { g.due(now: now) }
        func relaysUp() -> [GatewayCore.Upload] { g.relaysUp() }
        let key = Secp256k1.PrivateKey.random(), alice = PeerID(rawValue: 0xA1)
        let e = try Self.event("water at the gate", key: key)
        guard case let .publish(u) = g.deposit(try Self.carrier(e), from: alice, relaysUp: true, now: Self.t0) else {
            Issue.record("the control: a good deposit is published")
            return
        }
        #expect(u.event == e && u.geohash == Self.geohash && u.event.json == e.json, "published as it came")
        #expect(deposit(try Self.carrier(e), from: alice, relaysUp: true, now: Self.t0) == .refused(.seen))
        // Each refusal.
        var forged = try Self.event("forged", key: key)
        forged.content = "changed after signing"
        #expect(deposit(try Self.carrier(forged), from: alice, relaysUp: true, now: Self.t0) == .refused(.badSignature))
        var otherSig = try Self.event("not mine", key: key)
        otherSig.sig = try Self.event("another", key: Secp256k1.PrivateKey.random()).sig
        #expect(deposit(try Self.carrier(otherSig), from: alice, relaysUp: true, now: Self.t0) == .refused(.badSignature))
        #expect(deposit(try Self.carrier(try Self.event("presence", key: key, kind: 20_001)), from: alice, relaysUp: true, now: Self.t0)
                == .refused(.wrongKind))
        #expect(deposit(try Self.carrier(try Self.event("elsewhere", key: key, geohash: "u4pruz")), from: alice, relaysUp: true, now: Self.t0)
                == .refused(.wrongGeohash))
        #expect(deposit(try Self.carrier(try Self.event("old", key: key, at: Self.t0 - 901_000)), from: alice, relaysUp: true, now: Self.t0)
                == .refused(.stale))
        #expect(deposit(try Self.carrier(try Self.event("ahead", key: key, at: Self.t0 + 901_000)), from: alice, relaysUp: true, now: Self.t0)
                == .refused(.stale))
        #expect(deposit(try NostrCarrier(direction: .toGateway, geohash: Self.geohash, eventJSON: Array("{\"kind\":1}".utf8)), from: alice,
                          relaysUp: true, now: Self.t0) == .refused(.notAnEvent))
        // The edges taken: 900 s either side.
        if case .publish = g.deposit(try Self.carrier(try Self.event("just fresh", key: key, at: Self.t0 - 900_000)), from: alice, relaysUp: true,
                                     now: Self.t0) {} else { Issue.record("900 s old is taken") }
    }

    /// 100 depositors, 12 deposits each within a minute, relays down: 10 a
    /// depositor are checked, 5 a depositor queued, 20 in all (the oldest
    /// out); relays up: the 20 go, once. Depositors past 512 are pruned.
    @Test func aFloodOfDepositsStaysWithinItsQuotas() throws {
        var g = GatewayCore()
        func deposit(_ c: NostrCarrier, from p: PeerID, relaysUp: Bool, now: UInt64) -> GatewayCore.Outcome { g.deposit(c, from: p, relaysUp: relaysUp, now: now) }
        func fromRelay(_ e: NostrEvent, geohash: String, now: UInt64) -> Bool { g.fromRelay(e, geohash: geohash, now: now) }
        func due(now: UInt64) -> [NostrCarrier] { g.due(now: now) }
        func relaysUp() -> [GatewayCore.Upload] { g.relaysUp() }
        let key = Secp256k1.PrivateKey.random()
        var queued = 0, limited = 0, full = 0
        for d in 0..<100 {
            for i in 0..<12 {
                switch g.deposit(try Self.carrier(try Self.event("d\(d) #\(i)", key: key)), from: PeerID(rawValue: UInt64(d + 1)), relaysUp: false,
                                 now: Self.t0 + UInt64(i)) {
                case .queued: queued += 1
                case .refused(.rateLimited): limited += 1
                case .refused(.depositorQueueFull): full += 1
                default: Issue.record("unexpected")
                }
                #expect(g.queue.count <= 20)
            }
        }
        #expect(queued == 500 && full == 500 && limited == 200, "\(queued) \(full) \(limited)")
        #expect(g.queue.count == 20 && Set(g.queue.map(\.depositor)).count == 4, "the newest 20: the last four depositors' five")
        let sent = g.relaysUp()
        #expect(sent.count == 20 && g.queue.isEmpty && relaysUp().isEmpty)
        #expect(deposit(try Self.carrier(sent[0].event), from: PeerID(rawValue: 999), relaysUp: true, now: Self.t0) == .refused(.seen))
        // A minute later the same depositor may deposit again (the control of the window).
        if case .publish = g.deposit(try Self.carrier(try Self.event("a minute on", key: key, at: Self.t0 + 61_000)), from: PeerID(rawValue: 1),
                                     relaysUp: true, now: Self.t0 + 61_000) {} else { Issue.record("the window slides") }
        // 600 depositors: the tracker stays at 512.
        for d in 0..<600 {
            _ = g.deposit(try Self.carrier(try Self.event("many \(d)", key: key, at: Self.t0 + 120_000)), from: PeerID(rawValue: UInt64(10_000 + d)),
                          relaysUp: true, now: Self.t0 + 120_000)
        }
        #expect((g.sizes["gateway.depositors"] ?? 0) <= 512 && (g.sizes["gateway.publishedIDs"] ?? 0) <= 512, "\(g.sizes)")
    }

    /// The rate windows follow the monotonic clock, freshness the wall clock:
    /// a wall clock stepped back an hour neither fills nor empties a window.
    /// A created_at near Int64.max is stale, not wrapped into range.
    @Test func windowsKeepTheirOwnClockAndNoTimeWraps() throws {
        var g = GatewayCore()
        let key = Secp256k1.PrivateKey.random(), d = PeerID(rawValue: 7)
        func deposit(_ e: NostrEvent, now: UInt64, wall: UInt64) -> GatewayCore.Outcome { g.deposit(try! Self.carrier(e), from: d, relaysUp: true, now: now, wall: wall) }
        for i in 0..<10 { _ = deposit(try Self.event("n\(i)", key: key), now: 1_000 + UInt64(i), wall: Self.t0) }
        let back = Self.t0 - 3_600_000
        #expect(deposit(try Self.event("eleventh", key: key, at: back), now: 2_000, wall: back) == .refused(.rateLimited))
        if case .publish = deposit(try Self.event("a minute on", key: key, at: back), now: 61_100, wall: back) {} else {
            Issue.record("a monotonic minute frees the window whatever the wall clock did")
        }
        var huge = try Self.event("far", key: key)
        huge.created_at = Int64.max / 1_000 * 1_000 + 5
        #expect(deposit(huge, now: 70_000, wall: Self.t0) == .refused(.stale))
        var wrapped = try Self.event("wrap", key: key)
        wrapped.created_at = 18_446_745_823_709_551 // × 1000 wraps (mod 2^64) to 616 ms before t0: the old check took it
        #expect(deposit(wrapped, now: 70_001, wall: Self.t0) == .refused(.stale))
    }

    /// A listener in radio range of a forger: 60 events a minute shown in all,
    /// 10 of one key; names cut to 64 bytes; a minute later more are shown.
    @Test func whatAListenerShowsIsBudgeted() throws {
        var listener = GatewayCore()
        func hear(_ c: NostrCarrier, now: UInt64) -> NostrEvent? { listener.heard(c, now: now, wall: Self.t0) }
        let one = Secp256k1.PrivateKey.random()
        var shown = 0
        for i in 0..<30 where hear(try Self.carrier(try Self.event("same key \(i)", key: one), .fromGateway), now: 0) != nil { shown += 1 }
        #expect(shown == 10)
        for i in 0..<100 where hear(try Self.carrier(try Self.event("many keys \(i)", key: .random()), .fromGateway), now: 1) != nil { shown += 1 }
        #expect(shown == 60 && (listener.sizes["gateway.shown"] ?? 0) == 60)
        var long = NostrEvent(pubkey: "", createdAt: Int64(Self.t0 / 1_000), kind: 20_000,
                              tags: [["g", Self.geohash], ["n", String(repeating: "é", count: 300)]], content: "long name")
        try long.sign(with: .random())
        let later = hear(try Self.carrier(long, .fromGateway), now: 60_001)
        #expect(later?.content == "long name" && (later?.tags[1][1].unicodeScalars.count ?? 0) == 64, "a minute later, shown, its name cut")
    }

    /// Down: events of the channel, at most 30 a minute into the mesh, 30
    /// waiting (the oldest out), each once; other kinds, channels, stale or
    /// forged ones never. Heard: shown once, a forgery never, and a forgery
    /// that names a real ID first does not keep the real one out.
    @Test func theDownlinkKeepsItsBudgetAndListenersShowEachEventOnce() throws {
        var g = GatewayCore()
        func deposit(_ c: NostrCarrier, from p: PeerID, relaysUp: Bool, now: UInt64) -> GatewayCore.Outcome { g.deposit(c, from: p, relaysUp: relaysUp, now: now) }
        func fromRelay(_ e: NostrEvent, geohash: String, now: UInt64) -> Bool { g.fromRelay(e, geohash: geohash, now: now) }
        func due(now: UInt64) -> [NostrCarrier] { g.due(now: now) }
        func relaysUp() -> [GatewayCore.Upload] { g.relaysUp() }
        let key = Secp256k1.PrivateKey.random()
        var events: [NostrEvent] = []
        for i in 0..<50 { events.append(try Self.event("down \(i)", key: key)) }
        for e in events { g.fromRelay(e, geohash: Self.geohash, now: Self.t0) }
        #expect(g.pending.count == 30 && g.pending.first?.event == events[20], "the newest 30")
        #expect(!fromRelay(try Self.event("presence", key: key, kind: 20_001), geohash: Self.geohash, now: Self.t0))
        #expect(!fromRelay(try Self.event("other cell", key: key, geohash: "u4pruz"), geohash: Self.geohash, now: Self.t0))
        var forged = try Self.event("forged", key: key)
        forged.content = "changed"
        #expect(!fromRelay(forged, geohash: Self.geohash, now: Self.t0))
        #expect(!fromRelay(events[49], geohash: Self.geohash, now: Self.t0), "waiting already")
        let first = g.due(now: Self.t0)
        #expect(first.count == 30 && first.allSatisfy { $0.direction == .fromGateway } && due(now: Self.t0 + 1_000).isEmpty)
        g.fromRelay(try Self.event("later", key: key), geohash: Self.geohash, now: Self.t0 + 1_000)
        #expect(g.nextDeadline == Self.t0 + 60_000 && due(now: Self.t0 + 59_999).isEmpty && due(now: Self.t0 + 60_000).count == 1)
        #expect(!fromRelay(events[49], geohash: Self.geohash, now: Self.t0 + 60_000), "sent already")

        // A listener: each carrier's event once; a forgery naming a real ID first keeps nothing out.
        var generous = GatewayCore.Limits()
        generous.heardPerKey = 100 // one key here; the budget has its own test
        var listener = GatewayCore(limits: generous)
        func hear(_ c: NostrCarrier, now: UInt64) -> NostrEvent? { listener.heard(c, now: now) }
        var fake = events[0]
        fake.content = "a forgery under a real ID"
        #expect(hear(try Self.carrier(fake, .fromGateway), now: Self.t0) == nil)
        #expect(hear(try Self.carrier(events[0], .fromGateway), now: Self.t0) == events[0])
        #expect(hear(try Self.carrier(events[0], .fromGateway), now: Self.t0) == nil, "once")
        #expect(hear(try Self.carrier(events[1], .toGateway), now: Self.t0) == nil, "a deposit is not a broadcast")
        for e in events.dropFirst(2) { _ = listener.heard(try Self.carrier(e, .fromGateway), now: Self.t0) }
        #expect((listener.sizes["gateway.heardIDs"] ?? 0) == 49)
    }
}

/// The bridge's stable ID, as iOS's own test pins it (BridgeWireFormatTests.swift).
@Suite struct MeshBridgeTests {
    @Test func theStableIDIsIOSs() {
        #expect(MeshBridge.stableID(senderIDHex: "0011223344556677", timestampMs: 1_750_000_000_123, content: "hello mesh")
                == "b83f94d81dcdd1b0c0048f6645995dd4")
        // The sender's case and the content's surrounding whitespace do not count; any coordinate does.
        #expect(MeshBridge.stableID(senderIDHex: "AABBCCDD00112233", timestampMs: 1, content: "x")
                == MeshBridge.stableID(senderIDHex: "aabbccdd00112233", timestampMs: 1, content: "x"))
        #expect(MeshBridge.stableID(senderIDHex: "0011223344556677", timestampMs: 1_750_000_000_123, content: "  hello mesh \n")
                == "b83f94d81dcdd1b0c0048f6645995dd4")
        #expect(MeshBridge.stableID(senderIDHex: "0011223344556677", timestampMs: 1_750_000_000_124, content: "hello mesh")
                != "b83f94d81dcdd1b0c0048f6645995dd4")
    }
}

/// Issue 41 on nodes in one process: alice – bob – gate, the gateway two
/// hops from alice. Her location-channel event reaches gate's relays as it
/// was (through bob, who only relays it); a deposit signed by another key
/// than its sender's announce carries is refused (the control is hers);
/// events of the channel come down and are shown once at alice and bob.
extension InProcessNodes {
@Suite struct GatewayNodeTests {
    static func messages(_ net: EmbeddedNetwork, _ n: Int) -> [GatewayMessage] {
        net.events[n].compactMap { if case let .gatewayMessage(m) = $0 { m } else { nil } }
    }

    @Test func aDepositReachesTheRelaysAndTheChannelComesBackOnce() throws {
        let net = EmbeddedNetwork()
        let (alice, bob) = (net.addNode("alice"), net.addNode("bob"))
        let gate = net.addNode("gate") { $0.gateway = true }
        net.connect(alice, bob)
        net.connect(bob, gate)
        net.run(for: 3_000)
        #expect(net.nodes[alice].peers[net.nodes[gate].peerID]?.capabilities?.contains(.gateway) == true)
        #expect(net.nodes[alice].peers[net.nodes[bob].peerID]?.capabilities?.contains(.gateway) == false)
        net.on(gate) { $0.nostrRelays(up: true, now: $1) }

        let key = Secp256k1.PrivateKey.random()
        let e = try GatewayTests.event("water at the gate", key: key, at: net.now)
        let via = try net.on(alice) { try $0.sendViaGateway(e, geohash: GatewayTests.geohash, now: $1) }
        #expect(via == net.nodes[gate].peerID)
        net.run(for: 1_000)
        #expect(net.published[gate].map(\.event) == [e] && net.published[gate].first?.event.json == e.json, "published as it came")
        #expect(net.published[bob].isEmpty, "bob only relays")
        // A blocked gateway is never handed our lines (the control: gate took the one above).
        let gateKey = net.nodes[gate].identity.fingerprint
        net.on(alice) { c, _ in c.block(gateKey) }
        #expect(try net.on(alice) { try $0.sendViaGateway(e, geohash: GatewayTests.geohash, now: $1) } == nil)
        net.on(alice) { c, _ in c.unblock(gateKey) }

        // A deposit signed by mallory's key under alice's ID: refused as forged (before the gateway sees it); counted.
        let before = net.nodes[gate].refusals.forged
        let forged = try GatewayTests.event("forged deposit", key: key, at: net.now)
        var p = Packet(type: .nostrCarrier, ttl: 7, timestamp: net.now, senderID: net.nodes[alice].peerID, recipientID: net.nodes[gate].peerID,
                       payload: try GatewayTests.carrier(forged).encoded())
        try PacketSigning.sign(&p, with: Identity.generate().signingKey)
        let raw = net.openRawLink(to: gate)
        net.inject(try p.encoded(), on: raw)
        net.run(for: 500)
        #expect(net.nodes[gate].refusals.forged == before + 1)
        #expect(!net.published[gate].contains { $0.event == forged })

        // Down: two events of the channel (one sent twice), another channel's never.
        let down = [try GatewayTests.event("from the relays", key: Secp256k1.PrivateKey.random(), at: net.now),
                    try GatewayTests.event("and again", key: Secp256k1.PrivateKey.random(), at: net.now)]
        for d in down + [down[0]] { _ = net.on(gate) { $0.gatewayDownlink(d, geohash: GatewayTests.geohash, now: $1) } }
        let elsewhere = try GatewayTests.event("elsewhere", key: key, at: net.now, geohash: "u4pruz")
        #expect(net.on(gate) { $0.gatewayDownlink(elsewhere, geohash: GatewayTests.geohash, now: $1) } == false)
        net.run(for: 2_000)
        for n in [alice, bob] {
            #expect(Self.messages(net, n).map(\.text).sorted() == ["and again", "from the relays"], "\(Self.messages(net, n))")
            #expect(Self.messages(net, n).allSatisfy { $0.geohash == GatewayTests.geohash && $0.nickname == "tester" })
        }
        #expect(Self.messages(net, alice).first { $0.text == "from the relays" }?.hops == 2)
        // A node that is no gateway takes no deposit, though signed by its sender (the control: gate took alice's).
        let bobBefore = net.nodes[bob].refusals.carriers
        var q = Packet(type: .nostrCarrier, ttl: 7, timestamp: net.now, senderID: net.nodes[alice].peerID, recipientID: net.nodes[bob].peerID,
                       payload: try GatewayTests.carrier(try GatewayTests.event("to bob", key: key, at: net.now)).encoded())
        try PacketSigning.sign(&q, with: net.nodes[alice].identity.signingKey)
        net.inject(try q.encoded(), on: net.openRawLink(to: bob))
        net.run(for: 500)
        #expect(net.nodes[bob].refusals.carriers == bobBefore + 1 && net.published[bob].isEmpty)
    }
}
}
