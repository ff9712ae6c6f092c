import Foundation
import Crypto
import StarlingCrypto
import StarlingEmbeddedNetwork
import StarlingMesh
import StarlingNodeCore
import StarlingNostr
import StarlingTestSupport
import StarlingWire
import Testing

/// Issue 41: the mesh bridge as iOS 1.7.1 runs it (BridgeService.swift):
/// its event, its cells, and BridgeCore's rules, each refusal beside its
/// control, every table flooded.
@Suite struct BridgeTests {
    static let cell = "u4pruy"
    static let t0: UInt64 = 1_750_000_000_000

    /// A bridged message from another mesh, signed by `key` (BIP-340 aux 00×32 when `fixed`).
    static func event(_ text: String, key: Secp256k1.PrivateKey, at: UInt64 = t0, cell: String = cell, kind: Int = 20_000,
                      sender: String = "0011223344556677", ms: UInt64 = 1_750_000_000_123, nickname: String = "tester",
                      fixed: Bool = false) throws -> NostrEvent {
        var tags = [["r", cell]]
        if !nickname.isEmpty { tags.append(["n", nickname]) }
        if kind == 20_000 { tags.append(["m", MeshBridge.stableID(senderIDHex: sender, timestampMs: ms, content: text), sender, String(ms)]) }
        var e = NostrEvent(pubkey: "", createdAt: Int64(at / 1_000), kind: kind, tags: tags, content: text)
        try GatewayTests.sign(&e, key: key, fixed: fixed)
        return e
    }

    static func carrier(_ e: NostrEvent, _ d: NostrCarrier.Direction = .fromBridge, cell: String = cell) throws -> NostrCarrier {
        try NostrCarrier(direction: d, geohash: cell, eventJSON: Array(e.json.utf8))
    }

    /// Puts every due board entry on a board that takes them all, spacing 0; how many.
    static func drain(_ b: inout BridgeCore, now: UInt64) -> Int {
        var n = 0
        while let e = b.nextBoard(now: now) {
            b.boardTaken(e, now: now, spacing: 0)
            n += 1
        }
        return n
    }

    /// A signed board post that may cross, by `author` (a new key when nil), for `cell`, published with `key`.
    static func boardEvent(_ text: String, author: Curve25519.Signing.PrivateKey = .init(), key: Secp256k1.PrivateKey, at: UInt64 = t0,
                           flags: UInt8 = BoardPacket.mayCrossFlag, tamper: Bool = false) throws -> NostrEvent {
        var post = BoardPost(postID: (0..<16).map { _ in UInt8.random(in: 0...255) }, geohash: "", content: text, authorKey: [], nickname: "x",
                             createdAt: at, expiresAt: at + 3_600_000, flags: flags)
        try BoardSigning.sign(&post, with: author)
        if tamper { post.content += "!" }
        return try #require(MeshBridge.board(.post(post), cell: cell, key: key, now: Int64(at / 1_000)))
    }

    static func bridge(_ limits: BridgeCore.Limits = .init()) -> BridgeCore {
        BridgeCore(cell: cell, key: MeshBridge.identity(seed: [UInt8](repeating: 7, count: 32), cell: cell), limits: limits)
    }

    // MARK: The event and the cells

    @Test func theBridgeEventIsIOSs() throws {
        // The research note's vector B: key 01×32, aux 00×32.
        let key = try Secp256k1.PrivateKey(bytes: [UInt8](repeating: 1, count: 32))
        let b = try Self.event("hello mesh", key: key, fixed: true)
        #expect(b.id == "9e2c4948a239520e66f59c1db52d344740a82ee5898979d76f9f0894886c5238")
        #expect(b.sig == "1a97596c0812fcbabacdab498f923dbd7deaa78fc83ba1c31b53f3dad30a30519eaf91b39c44787712560f81f4f338ade62617708ebf4a49f88cb1e00a0a3fa8")
        #expect(MeshBridge.radioHint(of: b) == "b83f94d81dcdd1b0c0048f6645995dd4")
        let toBridge = try Self.carrier(b, .toBridge).encoded()
        #expect(toBridge == (try ProtocolDocument.example("bridge-deposit")))
        #expect(try NostrEvent.decode(String(decoding: try NostrCarrier(decoding: toBridge[...]).eventJSON, as: UTF8.self)) == b)
        #expect(toBridge.count == 477 && Array(toBridge.prefix(16)) == [0x01, 0x00, 0x01, 0x03, 0x02, 0x00, 0x06] + Array("u4pruy".utf8) + [0x03, 0x01, 0xCD])
        // Android PR #770's fixture of iOS's tags.
        let made = try #require(MeshBridge.message("  hello mesh\n", nickname: "alice", cell: "u4pruy", senderIDHex: "0011223344556677",
                                                   timestampMs: 1_750_000_000_123, key: key, now: 1_750_000_000))
        #expect(made.tags == [["r", "u4pruy"], ["n", "alice"], ["m", "b83f94d81dcdd1b0c0048f6645995dd4", "0011223344556677", "1750000000123"]])
        #expect(made.content == "hello mesh" && made.kind == 20_000 && (try? made.verify()) != nil)
        // Nothing crosses empty or past 16,000 bytes (the control: 16,000 does).
        #expect(MeshBridge.message(" \n", nickname: nil, cell: "u4pruy", senderIDHex: "0011223344556677", timestampMs: 1, key: key, now: 1) == nil)
        #expect(MeshBridge.message(String(repeating: "a", count: 16_001), nickname: nil, cell: "u4pruy", senderIDHex: "0011223344556677",
                                   timestampMs: 1, key: key, now: 1) == nil)
        #expect(MeshBridge.message(String(repeating: "a", count: 16_000), nickname: nil, cell: "u4pruy", senderIDHex: "0011223344556677",
                                   timestampMs: 1, key: key, now: 1) != nil)
        // Presence: tags exactly [["r", cell]].
        #expect(MeshBridge.presence(cell: "u4pruy", key: key, now: 1)?.tags == [["r", "u4pruy"]])
        // The `m` hint is recomputed, never taken: a wrong m[1] changes nothing; a short m or bad sender gives none.
        var lying = b
        lying.tags[2][1] = "ffffffffffffffffffffffffffffffff"
        #expect(MeshBridge.radioHint(of: lying) == "b83f94d81dcdd1b0c0048f6645995dd4")
        lying.tags[2] = ["m", "b83f94d81dcdd1b0c0048f6645995dd4"]
        #expect(MeshBridge.radioHint(of: lying) == nil)
        lying.tags[2] = ["m", "x", "00112233445566", "1"]
        #expect(MeshBridge.radioHint(of: lying) == nil)
        // The bridge key is the seed's for "bridge|" + cell: not the channel key of the same cell.
        let seed = [UInt8](repeating: 9, count: 32)
        #expect(MeshBridge.identity(seed: seed, cell: "u4pruy").publicKey != LocationChannel.identity(seed: seed, geohash: "u4pruy").publicKey)
        #expect(MeshBridge.identity(seed: seed, cell: "u4pruy").publicKey == MeshBridge.identity(seed: seed, cell: "u4pruy").publicKey)
    }

    @Test func aCellsRingIsTheEightCellsAroundIt() throws {
        for cell in ["u4pruy", "9q8yyk", "dqcjqc", "zzzzzz", "000000", "pbpbpb", "7zzzzz"] {
            let ring = Geohash.neighbours(of: cell)
            let box = try #require(Geohash.box(cell))
            // Each touches the cell's box (a side or a corner), has its size, and has the cell in its own ring.
            for n in ring {
                let b = try #require(Geohash.box(n))
                #expect(n.count == cell.count && n != cell)
                #expect(abs((b.north - b.south) - (box.north - box.south)) < 1e-9)
                let lonTouch = abs(b.west - box.east) < 1e-9 || abs(b.east - box.west) < 1e-9 || abs(b.west - box.west) < 1e-9
                    || abs(abs(b.west - box.east) - 360) < 1e-9 || abs(abs(b.east - box.west) - 360) < 1e-9
                let latTouch = abs(b.south - box.north) < 1e-9 || abs(b.north - box.south) < 1e-9 || abs(b.south - box.south) < 1e-9
                #expect(lonTouch && latTouch, "\(n) does not touch \(cell)")
                #expect(Geohash.neighbours(of: n).contains(cell), "\(cell) ∉ ring(\(n))")
            }
            let atPole = box.north >= 90 || box.south <= -90
            #expect(ring.count == (atPole ? 5 : 8), "\(cell): \(ring)")
            #expect(Set(ring).count == ring.count)
        }
        // The box round-trips through its centre; an invalid geohash has neither box nor ring.
        let b = try #require(Geohash.box("u4pruy"))
        #expect(Geohash.encode(latitude: (b.north + b.south) / 2, longitude: (b.east + b.west) / 2, length: 6) == "u4pruy")
        #expect(Geohash.box("u4prua") == nil && Geohash.neighbours(of: "") == [])
        // The antimeridian wraps: the cell east of the last column is the first.
        let east = Geohash.encode(latitude: 10, longitude: 179.9, length: 3)
        #expect(Geohash.neighbours(of: east).contains(Geohash.encode(latitude: 10, longitude: -179.9, length: 3)))
        #expect(MeshBridge.cells(around: "u4pruy").count == 9 && MeshBridge.cells(around: "u4pruy").first == "u4pruy")
    }

    // MARK: From the relays

    @Test func aRemoteMessageIsShownOnceAndCarriedDownAfterItsHoldOff() throws {
        var b = Self.bridge()
        let e = try Self.event("hello hill", key: .random())
        let shown = b.fromRelay(e, now: 0, wall: Self.t0, jitter: 500)
        let m = try #require(shown)
        #expect(m.text == "hello hill" && m.nickname == "tester" && m.hops == 0)
        #expect(m.radioID == MeshBridge.stableID(senderIDHex: "0011223344556677", timestampMs: 1_750_000_000_123, content: "hello hill"))
        #expect(b.fromRelay(e, now: 10, wall: Self.t0, jitter: 500) == nil, "once")
        #expect(b.due(now: 499, wall: Self.t0).isEmpty, "held off")
        let down = b.due(now: 500, wall: Self.t0)
        #expect(down.count == 1 && down[0].direction == .fromBridge && down[0].geohash == Self.cell)
        #expect(b.due(now: 600, wall: Self.t0).isEmpty)
        // A neighbour cell's message is taken (and goes down under its own cell); one outside the ring is not.
        let next = try #require(Geohash.neighbours(of: Self.cell).first)
        #expect(b.fromRelay(try Self.event("next door", key: .random(), cell: next), now: 1_000, wall: Self.t0, jitter: 0) != nil)
        #expect(b.due(now: 1_000, wall: Self.t0).first?.geohash == next)
        #expect(b.fromRelay(try Self.event("far away", key: .random(), cell: "9q8yyk"), now: 1_000, wall: Self.t0, jitter: 0) == nil)
        #expect(b.refusals[.wrongCell] == 1)
        // Stale (16 minutes old) is refused; 14 minutes is not.
        #expect(b.fromRelay(try Self.event("old", key: .random(), at: Self.t0 - 960_000), now: 1_000, wall: Self.t0, jitter: 0) == nil)
        #expect(b.fromRelay(try Self.event("recent", key: .random(), at: Self.t0 - 840_000), now: 1_000, wall: Self.t0, jitter: 0) != nil)
        #expect(b.refusals[.stale] == 1)
        // Presence counts a participant, shows nothing.
        #expect(b.fromRelay(try Self.event("", key: .random(), kind: 20_001, nickname: ""), now: 1_000, wall: Self.t0, jitter: 0) == nil)
        #expect(b.participants(now: 1_000) == 4)
    }

    @Test func ourOwnEventsNeverComeBack() throws {
        let seed = [UInt8](repeating: 7, count: 32)
        var b = Self.bridge()
        // Ours from before a restart: recognized by our key alone.
        let mine = try #require(MeshBridge.message("before the restart", nickname: "me", cell: Self.cell, senderIDHex: "0102030405060708",
                                                   timestampMs: Self.t0, key: MeshBridge.identity(seed: seed, cell: Self.cell), now: Int64(Self.t0 / 1_000)))
        #expect(b.fromRelay(mine, now: 0, wall: Self.t0, jitter: 0) == nil)
        #expect(b.heard(try Self.carrier(mine), hops: 1, now: 0, wall: Self.t0) == nil)
        // One we published (a deposit, or our own message as a mesh peer): the same.
        let other = try Self.event("deposited", key: .random())
        b.published(other)
        #expect(b.fromRelay(other, now: 0, wall: Self.t0, jitter: 0) == nil)
        #expect(b.due(now: 5_000, wall: Self.t0).isEmpty)
        #expect(b.refusals[.ours] == 3)
        // The control: someone else's is shown.
        #expect(b.fromRelay(try Self.event("theirs", key: .random()), now: 0, wall: Self.t0, jitter: 0) != nil)
    }

    @Test func theRadioCopyWins() throws {
        var b = Self.bridge()
        let e = try Self.event("heard it already", key: .random(), sender: "aabbccdd00112233", ms: Self.t0)
        b.heardOnRadio(MeshBridge.stableID(senderIDHex: "aabbccdd00112233", timestampMs: Self.t0, content: "heard it already"))
        #expect(b.fromRelay(e, now: 0, wall: Self.t0, jitter: 0) == nil && b.refusals[.heardOnRadio] == 1)
        #expect(b.due(now: 0, wall: Self.t0).isEmpty)
        // Heard on the radio while its downlink waited: it does not go down.
        let later = try Self.event("radio after", key: .random(), sender: "aabbccdd00112233", ms: Self.t0 + 1)
        #expect(b.fromRelay(later, now: 0, wall: Self.t0, jitter: 1_000) != nil)
        b.heardOnRadio(MeshBridge.stableID(senderIDHex: "aabbccdd00112233", timestampMs: Self.t0 + 1, content: "radio after"))
        #expect(b.due(now: 2_000, wall: Self.t0).isEmpty && b.pending == 0)
        // A mesh-only node too: a fromBridge copy of what it heard is not shown (the control: another is).
        var listener = BridgeCore(cell: nil, key: nil)
        listener.heardOnRadio(MeshBridge.stableID(senderIDHex: "aabbccdd00112233", timestampMs: Self.t0, content: "heard it already"))
        #expect(listener.heard(try Self.carrier(e), hops: 2, now: 0, wall: Self.t0) == nil)
        #expect(listener.heard(try Self.carrier(later), hops: 2, now: 0, wall: Self.t0)?.text == "radio after")
    }

    @Test func aCarrierFromAnotherBridgeIsShownOnceAndNeverCarriedAgain() throws {
        var b = Self.bridge()
        let e = try Self.event("over the hill", key: .random())
        // Forgeries first: the content changed, the author swapped, the ID of a real one.
        var tampered = e
        tampered.content += " (tampered)"
        var otherAuthor = e
        otherAuthor.pubkey = Secp256k1.PrivateKey.random().publicKey.hexString
        var named = try Self.event("forged under its ID", key: .random())
        named.id = e.id
        for f in [tampered, otherAuthor, named] { #expect(b.heard(try Self.carrier(f), hops: 1, now: 0, wall: Self.t0) == nil) }
        #expect(b.refusals[.badSignature] == 3)
        // The real one (the control) is shown, with its hops, once over any path.
        #expect(b.heard(try Self.carrier(e), hops: 3, now: 0, wall: Self.t0)?.hops == 3)
        #expect(b.heard(try Self.carrier(e), hops: 1, now: 0, wall: Self.t0) == nil)
        // Our subscription brings it later: not shown again, never carried (another bridge served this mesh).
        #expect(b.fromRelay(e, now: 0, wall: Self.t0, jitter: 0) == nil)
        #expect(b.due(now: 5_000, wall: Self.t0).isEmpty)
        // Waiting for our hold-off when another bridge's copy comes: ours yields.
        let f = try Self.event("two bridges", key: .random())
        #expect(b.fromRelay(f, now: 0, wall: Self.t0, jitter: 1_000) != nil)
        #expect(b.heard(try Self.carrier(f), hops: 1, now: 500, wall: Self.t0) == nil, "shown already")
        #expect(b.due(now: 2_000, wall: Self.t0).isEmpty)
        // A forged copy does not silence ours (the control for the yield above).
        let g = try Self.event("not silenced", key: .random())
        var forgedG = g
        forgedG.content = "silence!"
        #expect(b.fromRelay(g, now: 2_000, wall: Self.t0, jitter: 1_000) != nil)
        #expect(b.heard(try Self.carrier(forgedG), hops: 1, now: 2_500, wall: Self.t0) == nil)
        #expect(b.due(now: 3_000, wall: Self.t0).count == 1)
        // A carrier's direction is checked: a gateway's, or a deposit broadcast, is not a bridge's.
        #expect(b.heard(try Self.carrier(try Self.event("x", key: .random()), .fromGateway), hops: 1, now: 0, wall: Self.t0) == nil)
    }

    @Test func forgeriesAndFloodsNeverMarkARealEventSeen() throws {
        var b = Self.bridge()
        let e = try Self.event("the real one", key: .random())
        // An event under our own key with a real event's ID and a junk signature: refused, and nothing recorded.
        var ours = e
        ours.pubkey = MeshBridge.identity(seed: [UInt8](repeating: 7, count: 32), cell: Self.cell).publicKey.hexString
        ours.sig = String(repeating: "0", count: 128)
        #expect(b.fromRelay(ours, now: 0, wall: Self.t0, jitter: 0) == nil && b.refusals[.ours] == 1)
        // One key spelled in capitals is not another signer: refused.
        var shouting = try Self.event("in capitals", key: .random())
        shouting.pubkey = shouting.pubkey.uppercased()
        shouting.id = shouting.computedID
        #expect(b.fromRelay(shouting, now: 0, wall: Self.t0, jitter: 0) == nil && b.refusals[.badSignature] == 1)
        #expect(b.fromRelay(e, now: 0, wall: Self.t0, jitter: 0)?.text == "the real one", "the control")
        // Past a signer's 120 a minute: refused and not marked seen, so it is taken when the minute is over.
        var limits = BridgeCore.Limits()
        limits.inboundPerSigner = 1
        var c = Self.bridge(limits)
        let key = Secp256k1.PrivateKey.random()
        #expect(c.fromRelay(try Self.event("first", key: key), now: 0, wall: Self.t0, jitter: 0) != nil)
        let second = try Self.event("second", key: key)
        #expect(c.fromRelay(second, now: 1, wall: Self.t0, jitter: 0) == nil && c.refusals[.rateLimited] == 1)
        #expect(c.fromRelay(second, now: 60_001, wall: Self.t0, jitter: 0)?.text == "second")
        // A node shows 60 carriers' messages a minute, 10 of one key.
        var listener = BridgeCore(cell: nil, key: nil)
        let loud = Secp256k1.PrivateKey.random()
        var shown = 0
        for i in 0..<15 where listener.heard(try Self.carrier(try Self.event("loud \(i)", key: loud)), hops: 1, now: 0, wall: Self.t0) != nil { shown += 1 }
        for i in 0..<80 where listener.heard(try Self.carrier(try Self.event("many \(i)", key: .random())), hops: 1, now: 0, wall: Self.t0) != nil { shown += 1 }
        #expect(shown == 60 && listener.sizes["bridge.shownFromRadio"] == 60)
        // What the relays brought is never published again, though a peer deposits it (the control: a new one is).
        var d = Self.bridge()
        let relayed = try Self.event("from the relays", key: .random())
        _ = d.fromRelay(relayed, now: 0, wall: Self.t0, jitter: 0)
        #expect(d.deposit(try Self.carrier(relayed, .toBridge), from: PeerID(rawValue: 5), relaysUp: true, now: 0, wall: Self.t0) == .refused(.seen))
        let fresh = try Self.event("new", key: .random())
        #expect(d.deposit(try Self.carrier(fresh, .toBridge), from: PeerID(rawValue: 5), relaysUp: true, now: 0, wall: Self.t0) != .refused(.seen))
    }

    // MARK: Deposits

    @Test func depositsArePublishedAsSignedOrQueuedWithinTheirBudget() throws {
        var b = Self.bridge()
        let alice = PeerID(rawValue: 0xA11CE)
        let e = try Self.event("no internet here", key: .random())
        guard case let .publish(u) = b.deposit(try Self.carrier(e, .toBridge), from: alice, relaysUp: true, now: 0, wall: Self.t0) else {
            Issue.record("not published")
            return
        }
        #expect(u.event.json == e.json && u.geohash == Self.cell && u.depositor == alice)
        #expect(b.deposit(try Self.carrier(e, .toBridge), from: alice, relaysUp: true, now: 0, wall: Self.t0) == .refused(.seen))
        // Never carried back down when the relays send it to us.
        #expect(b.fromRelay(e, now: 0, wall: Self.t0, jitter: 0) == nil && b.due(now: 5_000, wall: Self.t0).isEmpty)
        // Presence is taken too; another kind, or a cell not the carrier's, is not.
        #expect(b.deposit(try Self.carrier(try Self.event("", key: .random(), kind: 20_001, nickname: ""), .toBridge), from: alice,
                          relaysUp: true, now: 0, wall: Self.t0) != .refused(.wrongKind))
        #expect(b.deposit(try Self.carrier(try Self.event("k1", key: .random(), kind: 1), .toBridge), from: alice, relaysUp: true, now: 0,
                          wall: Self.t0) == .refused(.wrongKind))
        #expect(b.deposit(try Self.carrier(try Self.event("elsewhere", key: .random(), cell: "u4pruz"), .toBridge), from: alice, relaysUp: true,
                          now: 0, wall: Self.t0) == .refused(.wrongCell))
        // A bad signature is refused after the budget is charged.
        var forged = try Self.event("forged", key: .random())
        forged.content = "changed"
        #expect(b.deposit(try Self.carrier(forged, .toBridge), from: alice, relaysUp: true, now: 0, wall: Self.t0) == .refused(.badSignature))
        // Ten a minute a depositor: three spent; seven more, then refused; another depositor is not.
        for i in 0..<7 {
            #expect(b.deposit(try Self.carrier(try Self.event("m\(i)", key: .random()), .toBridge), from: alice, relaysUp: true, now: 1,
                              wall: Self.t0) != .refused(.rateLimited))
        }
        #expect(b.deposit(try Self.carrier(try Self.event("over", key: .random()), .toBridge), from: alice, relaysUp: true, now: 2,
                          wall: Self.t0) == .refused(.rateLimited))
        #expect(b.deposit(try Self.carrier(try Self.event("over", key: .random()), .toBridge), from: alice, relaysUp: true, now: 60_002,
                          wall: Self.t0) != .refused(.rateLimited), "a minute later")
        // Relays down: queued (5 a depositor, 20 in all), published in order when one is up.
        var q = Self.bridge()
        var kept: [String] = []
        for d in 0..<5 {
            for i in 0..<6 {
                let ev = try Self.event("q\(d).\(i)", key: .random())
                let outcome = q.deposit(try Self.carrier(ev, .toBridge), from: PeerID(rawValue: UInt64(d + 1)), relaysUp: false, now: 0, wall: Self.t0)
                if i < 5 { #expect(outcome == .queued); kept.append(ev.id) } else { #expect(outcome == .refused(.depositorQueueFull)) }
            }
        }
        #expect(q.queue.count == 20)
        #expect(q.relaysUp().map(\.event.id) == Array(kept.suffix(20)))
        #expect(q.queue.isEmpty && q.relaysUp().isEmpty)
        // A node that is no bridge takes no deposit.
        var listener = BridgeCore(cell: nil, key: nil)
        #expect(listener.deposit(try Self.carrier(try Self.event("to me?", key: .random()), .toBridge), from: alice, relaysUp: true, now: 0,
                                 wall: Self.t0) == .refused(.wrongCell))
    }

    // MARK: Budgets and bounds

    /// A bridge that restarts with its memory neither shows nor carries down
    /// again what it took, nor what its radio heard; one without it would (the control).
    @Test func aBridgeRemembersAcrossARestart() throws {
        var before = Self.bridge()
        let far = try Self.event("from far away", key: .random())
        let ours = try Self.event("heard on our radio", key: .random(), sender: "8899aabbccddeeff", ms: 1_750_000_000_500)
        #expect(before.fromRelay(far, now: 0, wall: Self.t0, jitter: 0) != nil)
        #expect(before.due(now: 1, wall: Self.t0).count == 1)
        before.heardOnRadio(MeshBridge.stableID(senderIDHex: "8899aabbccddeeff", timestampMs: 1_750_000_000_500, content: "heard on our radio"))
        let memory = try JSONDecoder().decode(BridgeCore.Memory.self, from: JSONEncoder().encode(before.memory()))
        #expect(memory.taken == [far.id] && memory.carriedDown == [far.id] && memory.heardOnRadio.count == 1)
        var after = Self.bridge()
        var junk = memory
        junk.taken += ["NOT HEX", String(repeating: "a", count: 65), ""]
        after.remember(junk)
        #expect(after.sizes["bridge.receivedIDs"] == 1, "junk is not taken back")
        #expect(after.fromRelay(far, now: 100, wall: Self.t0, jitter: 0) == nil && after.refusals[.seen] == 1)
        #expect(after.fromRelay(ours, now: 100, wall: Self.t0, jitter: 0) == nil && after.refusals[.heardOnRadio] == 1)
        #expect(after.due(now: 5_000, wall: Self.t0).isEmpty)
        // The control: a bridge that forgot shows and carries both again.
        var forgot = Self.bridge()
        #expect(forgot.fromRelay(far, now: 100, wall: Self.t0, jitter: 0) != nil && forgot.fromRelay(ours, now: 100, wall: Self.t0, jitter: 0) != nil)
        #expect(forgot.due(now: 5_000, wall: Self.t0).count == 2)
        #expect(after.memoryChanges > 0 && forgot.memoryChanges > 0)
        // A file from before a set existed reads as that set empty.
        #expect(try JSONDecoder().decode(BridgeCore.Memory.self, from: Data(#"{"taken":["ab"]}"#.utf8)).taken == ["ab"])
    }

    /// The size check skips serialising small events; it agrees with the
    /// serialised size for the worst escapes (control characters: 6 bytes each) and quotes.
    @Test(.computesHeavily) func theSizeCheckAgreesWithTheSerialisedSize() throws {
        let key = Secp256k1.PrivateKey.random()
        var checked = 0
        for ch in ["\u{01}", "\"", "a", "é"] {
            for n in stride(from: 0, through: 17_000, by: 250) {
                var e = NostrEvent(pubkey: "", createdAt: 1, kind: 20_000, tags: [["r", Self.cell]], content: String(repeating: ch, count: n))
                try e.sign(with: key)
                #expect(BridgeCore.fitsCarrier(e) == (e.json.utf8.count <= NostrCarrier.maxEventJSON), "\(n) × \(ch.unicodeScalars.first!.value)")
                checked += 1
            }
        }
        #expect(checked == 4 * 69)
    }

    @Test func theDownlinkSendsTwentyAMinute() throws {
        var b = Self.bridge()
        for i in 0..<25 { #expect(b.fromRelay(try Self.event("e\(i)", key: .random()), now: 0, wall: Self.t0, jitter: 200) != nil) }
        #expect(b.due(now: 200, wall: Self.t0).count == 20)
        #expect(b.nextDeadline(relaysUp: false) == 60_200)
        #expect(b.due(now: 60_199, wall: Self.t0).isEmpty)
        #expect(b.due(now: 60_200, wall: Self.t0 + 60_000).count == 5)
        #expect(b.nextDeadline(relaysUp: false) == nil)
    }

    @Test(.computesHeavily) func everyTableHoldsItsBoundUnderAFlood() throws {
        var limits = BridgeCore.Limits()
        limits.verifiesPerMinute = 100_000 // the inbound budgets are what this floods
        var b = Self.bridge(limits)
        // One signer: 120 a minute shown.
        let loud = Secp256k1.PrivateKey.random()
        var shown = 0
        for i in 0..<200 where b.fromRelay(try Self.event("loud \(i)", key: loud), now: 0, wall: Self.t0, jitter: 0) != nil { shown += 1 }
        #expect(shown == 120 && b.refusals[.rateLimited] == 80)
        // Many signers: 600 a minute in all.
        for i in 0..<700 where b.fromRelay(try Self.event("many \(i)", key: .random()), now: 1, wall: Self.t0, jitter: 0) != nil { shown += 1 }
        #expect(shown == 600)
        let sizes = b.sizes
        #expect(sizes["bridge.pending"] == 30 && sizes["bridge.inbound"] == 600 && sizes["bridge.receivedIDs"] == 600)
        #expect(BridgeCore.Limits().seenIDs == 18_000, "every event fresh enough to take at 600 a minute is remembered")
        #expect(sizes["bridge.participants"] == 128)
        // The verification budget: 720 a minute (a flood of forgeries costs at most that).
        var v = Self.bridge()
        var badSigned = try Self.event("bad", key: .random())
        badSigned.content = "bad!"
        for i in 0..<800 {
            var f = badSigned
            f.id = String(repeating: "0", count: 60) + String(format4(i))
            _ = v.fromRelay(f, now: 0, wall: Self.t0, jitter: 0)
        }
        #expect(v.refusals[.badSignature] == 720 && v.refusals[.overBudget] == 80)
        // Radio messages: 1,337 remembered, the oldest out.
        var r = Self.bridge()
        for i in 0..<2_000 { r.heardOnRadio("radio\(i)") }
        #expect(r.sizes["bridge.radioIDs"] == 1_337)
        // Depositors: 512 tracked.
        var d = Self.bridge()
        for i in 0..<600 {
            _ = d.deposit(try Self.carrier(try Self.event("d\(i)", key: .random()), .toBridge), from: PeerID(rawValue: UInt64(i + 1)),
                          relaysUp: true, now: UInt64(i), wall: Self.t0)
        }
        #expect(d.sizes["bridge.depositors"] == 512 && d.sizes["bridge.publishedIDs"] == 512)
        // Carriers heard and events carried down: 512 IDs each, the oldest out.
        var small = limits
        small.seenIDs = 512
        var listener = BridgeCore(cell: nil, key: nil, limits: small)
        var down = Self.bridge(limits)
        for i in 0..<600 {
            let e = try Self.event("carried \(i)", key: .random())
            _ = listener.heard(try Self.carrier(e), hops: 1, now: UInt64(i) * 3_000, wall: Self.t0)
            _ = down.fromRelay(e, now: UInt64(i) * 3_000, wall: Self.t0, jitter: 0)
            _ = down.due(now: UInt64(i) * 3_000, wall: Self.t0)
        }
        #expect(listener.sizes["bridge.meshBroadcastIDs"] == 512 && down.sizes["bridge.rebroadcastIDs"] == 512 && down.downlinked == 600)
        // Board events: 200 wait for the mesh (the oldest out), 20 go a minute; 512 post IDs crossed in and 512 sent out;
        // 5 waiting of one author, 10 of one signer.
        var boardLimits = limits
        boardLimits.inboundPerMinute = 100_000
        boardLimits.inboundPerSigner = 100_000
        var board = Self.bridge(boardLimits)
        let bridgeKey = MeshBridge.identity(seed: [UInt8](repeating: 9, count: 32), cell: Self.cell)
        func boardEvent(_ i: Int, key: Secp256k1.PrivateKey) throws -> NostrEvent { try Self.boardEvent("notice \(i)", key: key) }
        for i in 0..<300 { _ = board.fromRelay(try boardEvent(i, key: .random()), now: 0, wall: Self.t0, jitter: 0) }
        #expect(board.sizes["bridge.pendingBoard"] == 200)
        #expect(Self.drain(&board, now: 1) == 20)
        for minute in 1...40 { _ = Self.drain(&board, now: UInt64(minute) * 60_001) }
        #expect(board.sizes["bridge.pendingBoard"] == 0 && board.sizes["bridge.boardIn"] == 200)
        for round in 1...2 {
            let start = UInt64(round) * 3_000_000
            for i in 0..<200 { _ = board.fromRelay(try boardEvent(i, key: .random()), now: start + UInt64(i), wall: Self.t0, jitter: 0) }
            for minute in 0..<20 { _ = Self.drain(&board, now: start + UInt64(minute) * 60_001) }
        }
        #expect(board.sizes["bridge.boardIn"] == 512)
        var shares = Self.bridge(boardLimits)
        let one = Curve25519.Signing.PrivateKey(), signer = Secp256k1.PrivateKey.random()
        for i in 0..<8 { _ = shares.fromRelay(try Self.boardEvent("one author \(i)", author: one, key: .random()), now: 0, wall: Self.t0, jitter: 0) }
        for i in 0..<15 { _ = shares.fromRelay(try Self.boardEvent("one signer \(i)", key: signer), now: 0, wall: Self.t0, jitter: 0) }
        #expect(shares.sizes["bridge.pendingBoard"] == 15 && shares.refusals[.rateLimited] == 8, "\(shares.refusals)")
        for i in 0..<600 { board.published(try boardEvent(i, key: bridgeKey)) }
        #expect(board.sizes["bridge.boardOut"] == 512)
    }

    private func format4(_ i: Int) -> String {
        let s = String(i)
        return String(repeating: "0", count: 4 - s.count) + s
    }
}

/// Issue 41 on nodes in one process: two meshes that never meet, a bridge in
/// each, the relays between them played by hand (what one bridge publishes,
/// the other's subscription brings). Alice lets her lines cross; carol does
/// not (the control).
extension InProcessNodes {
@Suite struct BridgeNodeTests {
    static func bridged(_ net: EmbeddedNetwork, _ n: Int) -> [BridgedMessage] {
        net.events[n].compactMap { if case let .bridgedMessage(m) = $0 { m } else { nil } }
    }

    @Test func aPublicMessageCrossesToTheOtherMeshOnce() throws {
        let net = EmbeddedNetwork()
        let seed = { (n: UInt8) in [UInt8](repeating: n, count: 32) }
        let alice = net.addNode("alice") { $0.crossesBridges = true; $0.bridgeSeed = seed(1) }
        let carol = net.addNode("carol") { $0.bridgeSeed = seed(2) }
        let gateA = net.addNode("gateA") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = seed(3) }
        let gateB = net.addNode("gateB") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = seed(4) }
        let bob = net.addNode("bob") { $0.bridgeSeed = seed(5) }
        let dave = net.addNode("dave")
        let erin = net.addNode("erin")
        net.connect(bob, erin)
        net.connect(alice, gateA)
        net.connect(carol, gateA)
        net.connect(gateB, bob)
        net.connect(bob, dave)
        net.run(for: 3_000)
        // gateA's announce says bridge (bit 7) and its cell (TLV 0x06); alice's says neither.
        let a = net.nodes[alice].peers[net.nodes[gateA].peerID]
        #expect(a?.capabilities?.contains(.bridge) == true && a?.bridgeGeohash == BridgeTests.cell)
        #expect(net.nodes[gateA].peers[net.nodes[alice].peerID]?.bridgeGeohash == nil)
        for g in [gateA, gateB] { net.on(g) { $0.nostrRelays(up: true, now: $1) } }
        net.run(for: 100)

        // Erin (mesh B) blocked alice: alice's bridged line is not shown to her (the control: dave sees it).
        let aliceFingerprint = net.nodes[alice].identity.fingerprint
        net.on(erin) { c, _ in c.block(aliceFingerprint) }
        try net.on(alice) { try $0.sendPublic("hello from mesh A", now: $1) }
        try net.on(carol) { try $0.sendPublic("carol stays home", now: $1) }
        try net.on(gateA) { try $0.sendPublic("the bridge speaks", now: $1) }
        net.run(for: 1_000)
        // What gateA published: alice's deposit (signed by her bridge key) and its own line; never carol's.
        let up = net.published[gateA].filter { $0.event.kind == 20_000 }
        #expect(up.map(\.event.content).sorted() == ["hello from mesh A", "the bridge speaks"], "\(up.map(\.event.content))")
        #expect(up.allSatisfy { (try? $0.event.verify()) != nil && $0.event.tags.first == ["r", BridgeTests.cell] })
        #expect(up.first { $0.event.content == "hello from mesh A" }?.event.pubkey
                == MeshBridge.identity(seed: seed(1), cell: BridgeTests.cell).publicKey.hexString)
        #expect(net.published[gateA].contains { $0.event.kind == 20_001 }, "the bridge says it is there")

        // The relays: each bridge's subscription brings what both published (its own included).
        let all = (net.published[gateA] + net.published[gateB]).map(\.event)
        for g in [gateA, gateB] { for e in all { net.on(g) { $0.bridgeFromRelay(e, now: $1) } } }
        net.run(for: 3_000)
        // Mesh B: shown once at gateB (from the relay), bob and dave (fromBridge carriers).
        for n in [gateB, bob, dave] {
            #expect(Self.bridged(net, n).map(\.text).sorted() == ["hello from mesh A", "the bridge speaks"], "\(net.nodes[n].nickname)")
        }
        #expect(Self.bridged(net, bob).first?.hops == 1 && Self.bridged(net, dave).first?.hops == 2)
        #expect(Self.bridged(net, erin).map(\.text) == ["the bridge speaks"], "\(Self.bridged(net, erin))")
        // Mesh A: nothing comes back (heard on the radio, or ours).
        for n in [alice, carol, gateA] { #expect(Self.bridged(net, n).isEmpty, "\(net.nodes[n].nickname): \(Self.bridged(net, n))") }
        // Mesh B never publishes what came from Nostr.
        #expect(net.published[gateB].allSatisfy { $0.event.kind == 20_001 })
        // A line whose bridge event would be over 16 KiB (quotes double when escaped) goes on the radio only, and alice is told;
        // the control: a short one after it crosses.
        let before = net.published[gateA].count
        try net.on(alice) { try $0.sendPublic(String(repeating: "\"", count: 9_000), now: $1) }
        try net.on(alice) { try $0.sendPublic("short again", now: $1) }
        net.run(for: 1_000)
        #expect(net.events[alice].contains { if case let .notice(t) = $0 { t.contains("mesh only") && t.contains("16 KiB") } else { false } })
        #expect(net.published[gateA].dropFirst(before).map(\.event.content) == ["short again"])
        // A line said nearby only stays on the radio, at a bridge too (the control: "short again" crossed above).
        let published = net.published[gateA].count
        try net.on(gateA) { try $0.sendPublic("for this mesh only", nearbyOnly: true, now: $1) }
        net.run(for: 500)
        #expect(net.published[gateA].count == published)
        #expect(net.events[carol].contains { if case let .message(_, _, t, _, _, _) = $0 { t == "for this mesh only" } else { false } })
        // The relays send them all again: nothing new anywhere.
        for g in [gateA, gateB] { for e in all { net.on(g) { $0.bridgeFromRelay(e, now: $1) } } }
        net.run(for: 3_000)
        #expect(Self.bridged(net, bob).count == 2 && Self.bridged(net, gateB).count == 2)
    }
}
}

/// Issue 41: board posts cross between meshes as kind 1402 events (a
/// Starling extension; docs/PROTOCOL.md "Board posts across bridges").
@Suite struct BoardCrossingTests {
    static let documentedID = "86e9680564e8dd7a957ad2b56a932360d17533c7652a8a50d53337808aa0fe6e"
    static func posts(_ net: EmbeddedNetwork, _ n: Int) -> [BoardEntry] {
        net.events[n].compactMap { if case let .boardPost(e, _, _) = $0 { e } else { nil } }
    }
    static func deleted(_ net: EmbeddedNetwork, _ n: Int) -> [[UInt8]] {
        net.events[n].compactMap { if case let .boardPostDeleted(id, _) = $0 { id } else { nil } }
    }

    @Test func theBoardEventCarriesThePostAsItsAuthorSignedIt() throws {
        let author = Curve25519.Signing.PrivateKey()
        var post = BoardPost(postID: [UInt8](repeating: 0xab, count: 16), geohash: "", content: "water at the school", authorKey: [],
                             nickname: "alice", createdAt: BridgeTests.t0, expiresAt: BridgeTests.t0 + 86_400_000, flags: 0)
        try BoardSigning.sign(&post, with: author)
        let key = MeshBridge.identity(seed: [UInt8](repeating: 1, count: 32), cell: BridgeTests.cell)
        let e = try #require(MeshBridge.board(.post(post), cell: BridgeTests.cell, key: key, now: Int64(BridgeTests.t0 / 1_000)))
        #expect(e.kind == 1_402 && (try? e.verify()) != nil)
        #expect(e.tags == [["r", BridgeTests.cell], ["b", String(repeating: "ab", count: 16)], ["expiration", String((BridgeTests.t0 + 86_400_000) / 1_000)]])
        #expect(MeshBridge.boardPacket(of: e) == .post(post))
        // A `b` tag naming another post, or content that is no board packet, is refused (the control above reads).
        var other = e
        other.tags[1] = ["b", String(repeating: "cd", count: 16)]
        #expect(MeshBridge.boardPacket(of: other) == nil)
        var junk = e
        junk.content = "aGVsbG8="
        #expect(MeshBridge.boardPacket(of: junk) == nil)
        // The document's example: `board-post-urgent`'s post (its key 00 01 … 1f) with flags 03 (urgent, may cross),
        // deposited with a bridge on u4pruy, key 01×32, aux 00×32.
        guard case var p = try BoardPacket(decoding: try ProtocolDocument.example("board-post-urgent")[...]), case .post(var crossing) = p else {
            Issue.record("board-post-urgent is a post")
            return
        }
        crossing.flags = 0x03
        try BoardSigning.sign(&crossing, with: try Curve25519.Signing.PrivateKey(rawRepresentation: Array(0..<32) as [UInt8]))
        p = .post(crossing)
        let urgent = p
        let one = try Secp256k1.PrivateKey(bytes: [UInt8](repeating: 1, count: 32))
        var doc = try #require(MeshBridge.board(urgent, cell: "u4pruy", key: one, now: 1_700_000_000))
        try GatewayTests.sign(&doc, key: one, fixed: true)
        let deposit = try BridgeTests.carrier(doc, .toBridge, cell: "u4pruy").encoded()
        #expect(deposit == (try ProtocolDocument.example("bridge-board")), "\(deposit.hexString) \(doc.id)")
        #expect(doc.id == Self.documentedID && (try? doc.verify()) != nil && deposit.count == 684)
        #expect(MeshBridge.boardPacket(of: doc) == urgent && BoardSigning.isValid(urgent))
        // The bridge follows board events on its cells for 7 days, beside its 15 minutes of chat.
        let f = MeshBridge.boardFilter(cells: [BridgeTests.cell], now: 1_000_000)
        #expect(f.kinds == [1_402] && f.since == 1_000_000 - 604_800)
    }

    @Test func aBoardPostCrossesToTheOtherMeshOnceAndItsDeletionFollows() throws {
        let net = EmbeddedNetwork()
        let seed = { (n: UInt8) in [UInt8](repeating: n, count: 32) }
        let alice = net.addNode("alice") { $0.crossesBridges = true; $0.bridgeSeed = seed(1) }
        let carol = net.addNode("carol") { $0.bridgeSeed = seed(2) }
        let gateA = net.addNode("gateA") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = seed(3) }
        let gateB = net.addNode("gateB") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = seed(4) }
        let gateB2 = net.addNode("gateB2") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = seed(6) }
        let bob = net.addNode("bob") { $0.bridgeSeed = seed(5) }
        let dave = net.addNode("dave")
        net.connect(alice, gateA)
        net.connect(carol, gateA)
        net.connect(gateB, bob)
        net.connect(gateB2, bob)
        net.connect(bob, dave)
        net.run(for: 3_000)
        for g in [gateA, gateB, gateB2] { net.on(g) { $0.nostrRelays(up: true, now: $1) } }
        net.run(for: 100)

        let alicePost = try net.on(alice) { try $0.postToBoard("water at the school", now: $1) }
        _ = try net.on(carol) { try $0.postToBoard("carol's notice stays home", now: $1) }
        _ = try net.on(gateA) { try $0.postToBoard("the bridge's own notice", now: $1) }
        net.run(for: 1_000)
        let up = net.published[gateA].filter { $0.event.kind == 1_402 }
        #expect(up.compactMap { MeshBridge.boardPacket(of: $0.event) }.compactMap { if case let .post(p) = $0 { p.content } else { nil } }.sorted()
                == ["the bridge's own notice", "water at the school"])
        #expect(up.first { $0.event.pubkey == MeshBridge.identity(seed: seed(1), cell: BridgeTests.cell).publicKey.hexString } != nil,
                "alice's is signed by her bridge key")

        // The relays bring both to every bridge (gateA's own back to it).
        let all = net.published[gateA].map(\.event)
        for g in [gateA, gateB, gateB2] { for e in all { net.on(g) { $0.bridgeFromRelay(e, now: $1) } } }
        net.run(for: 3_000)
        for n in [gateB, gateB2, bob, dave] {
            #expect(Self.posts(net, n).map(\.post.content).sorted() == ["the bridge's own notice", "water at the school"], "\(net.nodes[n].nickname)")
            #expect(net.on(n) { c, now in c.boardPosts(now: now).count } == 2)
        }
        // The bridge that put it on the board says it crossed; alice's key is no peer here, so her name is a claim.
        let atB = Self.posts(net, gateB) + Self.posts(net, gateB2)
        #expect(atB.contains { $0.crossed }, "\(atB)")
        #expect(Self.posts(net, bob).first { $0.post.content == "water at the school" }?.shownName.hasPrefix("alice? ") == true)
        // Every node of mesh B shows them as crossed (their packets are a bridge's, not their authors'), as they
        // came and in its list, and after a restart from the board on disk; the control: bob's own notice is not.
        _ = try net.on(bob) { try $0.postToBoard("bob's notice", now: $1) }
        net.run(for: 1_000)
        for n in [bob, dave] {
            let came = Self.posts(net, n).filter { $0.post.content != "bob's notice" }
            #expect(came.count == 2 && came.allSatisfy(\.crossed), "\(net.nodes[n].nickname): \(came)")
            let listed = net.on(n) { c, now in c.boardPosts(now: now) }
            #expect(listed.filter(\.crossed).map(\.post.content).sorted() == ["the bridge's own notice", "water at the school"], "\(listed)")
            #expect(listed.contains { $0.post.content == "bob's notice" && !$0.crossed })
        }
        let kept = net.on(dave) { c, now in c.boardPackets(now: now) }
        net.restart(dave)
        #expect(net.on(dave) { c, now in c.restoreBoard(kept, now: now) } == 3)
        #expect(net.on(dave) { c, now in c.boardPosts(now: now).filter(\.crossed).count } == 2)
        // Mesh A: nothing comes back; mesh B publishes none of it.
        #expect(Self.posts(net, alice).map(\.post.content).sorted() == ["carol's notice stays home", "the bridge's own notice"])
        for g in [gateB, gateB2] { #expect(net.published[g].allSatisfy { $0.event.kind == 20_001 }) }

        // Alice deletes hers: her tombstone crosses the same way, and mesh B's board lets the post go.
        try net.on(alice) { try $0.deleteBoardPost(alicePost.postID, now: $1) }
        net.run(for: 1_000)
        let tombstones = net.published[gateA].map(\.event).filter { e in
            if case .tombstone = MeshBridge.boardPacket(of: e) { true } else { false }
        }
        #expect(tombstones.count == 1)
        for g in [gateB, gateB2] { for e in tombstones { net.on(g) { $0.bridgeFromRelay(e, now: $1) } } }
        net.run(for: 3_000)
        for n in [bob, dave] {
            #expect(Self.deleted(net, n) == [alicePost.postID], "\(net.nodes[n].nickname)")
            #expect(net.on(n) { c, now in c.boardPosts(now: now).map(\.post.content) }.sorted() == ["bob's notice", "the bridge's own notice"])
        }
        // The relays send everything again: nothing new anywhere.
        let shown = [bob, dave].map { Self.posts(net, $0).count }
        for g in [gateB, gateB2] { for e in all + tombstones { net.on(g) { $0.bridgeFromRelay(e, now: $1) } } }
        net.run(for: 3_000)
        #expect([bob, dave].map { Self.posts(net, $0).count } == shown)
    }

    /// Two bridges in one mesh, five hops apart, both get every event from the
    /// relays at once: the one with the lower peer ID sends each carrier, the
    /// other hears it and yields, so the mesh carries each event once; the
    /// control: with no extra hold-off some events go down twice.
    @Test(.computesHeavily) func twoBridgesOfOneMeshCarryEachEventOnce() throws {
        var twice: [Int] = []
        for holdOff: UInt64 in [3_000, 0] {
            let net = EmbeddedNetwork(seed: 7)
            let seed = { (n: UInt8) in [UInt8](repeating: n, count: 32) }
            let g1 = net.addNode("g1") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = seed(4); $0.bridgeLimits.holdOffPerBridgeAhead = holdOff }
            let middle = (0..<4).map { net.addNode("n\($0)") }
            let g2 = net.addNode("g2") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = seed(6); $0.bridgeLimits.holdOffPerBridgeAhead = holdOff }
            let chain = [g1] + middle + [g2]
            for (a, b) in zip(chain, chain.dropFirst()) { net.connect(a, b, latency: 150) }
            net.run(for: 5_000)
            for g in [g1, g2] { net.on(g) { $0.nostrRelays(up: true, now: $1) } }
            for i in 0..<15 {
                let e = try BridgeTests.event("line \(i)", key: .random(), at: net.now, sender: String(format: "%016x", i + 1), ms: net.now + UInt64(i))
                for g in [g1, g2] { net.on(g) { $0.bridgeFromRelay(e, now: $1) } }
                net.run(for: 4_000)
            }
            net.run(for: 10_000)
            let sent = [g1, g2].map { g in net.on(g) { c, _ in c.bridgeDownlinked } }
            twice.append(sent.reduce(0, +) - 15)
            for n in middle { #expect(InProcessNodes.BridgeNodeTests.bridged(net, n).count == 15, "each shown once") }
            if holdOff > 0 { #expect(sent.reduce(0, +) == 15, "\(sent)") }
        }
        #expect(twice[0] == 0 && twice[1] > 0, "extra carriers with and without the hold-off: \(twice)")
    }

    /// Alice's notice crossed through gateA; then gateA went out of reach (its announce forgotten).
    static func aCrossedNoticeAwayFromItsBridge() throws -> (net: EmbeddedNetwork, alice: Int, gateA: Int, post: BoardPost, tombstones: () -> Int) {
        let net = EmbeddedNetwork()
        let seed = { (n: UInt8) in [UInt8](repeating: n, count: 32) }
        let alice = net.addNode("alice") { $0.crossesBridges = true; $0.bridgeSeed = seed(1) }
        let gateA = net.addNode("gateA") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = seed(3) }
        net.connect(alice, gateA)
        net.run(for: 3_000)
        net.on(gateA) { $0.nostrRelays(up: true, now: $1) }
        let post = try net.on(alice) { try $0.postToBoard("the well is dry", now: $1) }
        net.run(for: 1_000)
        let tombstones = {
            net.published[gateA].filter { u in if case .tombstone = MeshBridge.boardPacket(of: u.event) { true } else { false } }.count
        }
        #expect(net.published[gateA].contains { MeshBridge.boardPacket(of: $0.event) != nil } && tombstones() == 0)
        net.disconnect(alice, gateA)
        net.run(for: 70_000) // gateA's announce is forgotten
        return (net, alice, gateA, post, tombstones)
    }

    /// Alice deletes her crossed notice while no bridge is near: she is told
    /// its deletion follows, and it does when the bridge is back (not before).
    @Test func aDeletionMadeAwayFromABridgeFollowsItsPostLater() throws {
        let (net, alice, gateA, post, tombstones) = try Self.aCrossedNoticeAwayFromItsBridge()
        try net.on(alice) { try $0.deleteBoardPost(post.postID, now: $1) }
        net.run(for: 5_000)
        #expect(net.events[alice].contains { if case let .notice(t) = $0 { t.contains("follows it there when a bridge is near") } else { false } })
        #expect(tombstones() == 0, "no bridge near: nothing crossed yet")
        net.connect(alice, gateA)
        net.run(for: 10_000)
        #expect(tombstones() == 1, "the deletion followed once the bridge was back")
    }

    /// The deletion waiting for a bridge is in the memory the node writes (at
    /// once): across a restart it still follows its post. The control: the same
    /// restart without the memory leaves it behind.
    @Test func aWaitingDeletionOutlivesARestart() throws {
        for keepsMemory in [true, false] {
            let (net, alice, gateA, post, tombstones) = try Self.aCrossedNoticeAwayFromItsBridge()
            let before = net.nodes[alice].deletionsToCrossChanges
            try net.on(alice) { try $0.deleteBoardPost(post.postID, now: $1) }
            #expect(net.nodes[alice].deletionsToCrossChanges > before, "a deletion waiting is a change to write at once")
            // As the node writes and reads it: JSON.
            let memory = try #require(net.nodes[alice].bridgeMemory)
            #expect(memory.deletionsToCross.count == 1 && !memory.boardOut.isEmpty)
            let kept = try JSONDecoder().decode(BridgeCore.Memory.self, from: JSONEncoder().encode(memory))
            net.restart(alice)
            if keepsMemory { net.on(alice) { core, _ in core.restoreBridgeMemory(kept) } }
            #expect(net.nodes[alice].tableSizes["node.tombstonesToCross"] == (keepsMemory ? 1 : 0))
            net.connect(alice, gateA)
            net.run(for: 10_000)
            #expect(tombstones() == (keepsMemory ? 1 : 0), "kept: \(keepsMemory)")
            #expect(net.nodes[alice].bridgeMemory?.deletionsToCross == [], "sent: no longer waiting")
        }
    }

    /// A bridge that starts afresh beside alice (her link was up all along, so
    /// she has no reason to announce, and her next announce is a minute off)
    /// knows nothing of her: her deletion waiting for it (handed over while its
    /// relays are not up yet), and a line she says at once, reach its relays
    /// all the same. (Tried by hand after one such deletion did not cross.)
    @Test(arguments: [false, true]) func aBridgeThatStartsAfreshBesideUsTakesWhatWeSendItAtOnce(twoHops: Bool) throws {
        let net = EmbeddedNetwork()
        let seed = { (n: UInt8) in [UInt8](repeating: n, count: 32) }
        let alice = net.addNode("alice") { $0.crossesBridges = true; $0.bridgeSeed = seed(1); $0.announceInterval = 60_000 }
        let gateA = net.addNode("gateA") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = seed(3) }
        // Two hops: carol between them, who keeps alice's announce (gateA gets it from her sync only after 5 s).
        if twoHops {
            let carol = net.addNode("carol")
            net.connect(alice, carol)
            net.connect(carol, gateA)
        } else {
            net.connect(alice, gateA)
        }
        net.run(for: 3_000)
        net.on(gateA) { $0.nostrRelays(up: true, now: $1) }
        let post = try net.on(alice) { try $0.postToBoard("the well is dry", now: $1) }
        net.run(for: 1_000)
        // gateA goes on as a node without a bridge; alice deletes her notice, which waits.
        net.restart(gateA) { $0.bridge = nil }
        net.run(for: 3_000)
        try net.on(alice) { try $0.deleteBoardPost(post.postID, now: $1) }
        net.run(for: 2_000)
        #expect(net.nodes[alice].tableSizes["node.tombstonesToCross"] == 1)
        // It starts afresh as a bridge: it announces; alice's link never went down. She announces at once.
        net.restart(gateA) { $0.bridge = BridgeTests.cell }
        net.run(for: 3_000)
        #expect(net.nodes[alice].tableSizes["node.tombstonesToCross"] == 0, "handed to gateA, whose relays are not up yet")
        net.on(gateA) { $0.nostrRelays(up: true, now: $1) }
        net.run(for: 1_500)
        try net.on(alice) { try $0.sendPublic("the road north is open", now: $1) }
        net.run(for: 5_000)
        let kinds = net.published[gateA].map(\.event.kind)
        #expect(kinds.filter { $0 == 1_402 }.count == 2, "the post, then its deletion: \(kinds)")
        #expect(kinds.filter { $0 == 20_000 }.count == 1, "the line: \(kinds)")
        #expect(net.nodes[alice].tableSizes["node.tombstonesToCross"] == 0)
    }

    /// A bridge next to alice that restarts within its 60 s of presence (she
    /// never saw it go) announces naming nobody: it does not know her, so a
    /// line she says would wait for an announce of hers that is a minute off
    /// (seen by hand: a line 3 s after a bridge's restart did not cross).
    /// She announces at once. The control: its announces that name her cost
    /// nothing; and such extra announces come at most one every 10 s.
    @Test func aBridgeThatNoLongerNamesUsGetsOurAnnounce() throws {
        let net = EmbeddedNetwork()
        let alice = net.addNode("alice") { $0.crossesBridges = true; $0.bridgeSeed = [UInt8](repeating: 1, count: 32); $0.announceInterval = 60_000 }
        net.run(for: 1_000)
        let raw = net.openRawLink(to: alice)
        let gate = Identity.generate()
        let me = net.nodes[alice].peerID
        func gateAnnounces(naming: [PeerID]) throws {
            net.inject(try Announcement.make(identity: gate, nickname: "gateA", timestamp: net.now, directNeighbors: naming,
                                             capabilities: Capabilities.bridge.rawValue, bridgeGeohash: BridgeTests.cell).encoded(), on: raw)
        }
        let announces = { net.transmissions[alice]?[MessageType.announce.rawValue] ?? 0 }
        let first = announces()
        try gateAnnounces(naming: [me])
        net.run(for: 1_500)
        #expect(announces() == first + 1, "a new bridge peer: one at once")
        for _ in 0..<3 {
            net.run(for: 5_000)
            try gateAnnounces(naming: [me])
        }
        net.run(for: 1_500)
        #expect(announces() == first + 1, "named: nothing more")
        try gateAnnounces(naming: []) // it started afresh
        net.run(for: 1_500)
        #expect(announces() == first + 2, "no longer named: one at once")
        try gateAnnounces(naming: [me])
        net.run(for: 500)
        try gateAnnounces(naming: [])
        net.run(for: 1_500)
        #expect(announces() == first + 2, "within 10 s of the last: held back")
        net.run(for: 8_000)
        #expect(announces() == first + 3, "then it goes")
    }

    /// A deposit that overtakes its depositor's announce (the bridge had not
    /// heard of alice yet) waits for it, 2 s at most, as a public message
    /// does: taken when the announce comes; the control, never announced, is
    /// refused (counted), and nothing is published for it.
    @Test func aDepositThatComesBeforeItsAnnounceWaitsForIt() throws {
        for announces in [true, false] {
            let net = EmbeddedNetwork()
            let gate = net.addNode("gateA") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = [UInt8](repeating: 3, count: 32) }
            net.run(for: 1_000)
            net.on(gate) { $0.nostrRelays(up: true, now: $1) }
            let raw = net.openRawLink(to: gate)
            let alice = Identity.generate()
            let key = MeshBridge.identity(seed: [UInt8](repeating: 1, count: 32), cell: BridgeTests.cell)
            let e = try #require(MeshBridge.message("the road north is open", nickname: "alice", cell: BridgeTests.cell,
                                                    senderIDHex: alice.peerID.description, timestampMs: net.now, key: key,
                                                    now: Int64(net.now / 1_000)))
            var deposit = Packet(type: .nostrCarrier, ttl: 7, timestamp: net.now, senderID: alice.peerID, recipientID: net.nodes[gate].peerID,
                                 payload: try BridgeTests.carrier(e, .toBridge).encoded())
            try PacketSigning.sign(&deposit, with: alice.signingKey)
            let refusedBefore = net.nodes[gate].refusals.unverifiable
            net.inject(try deposit.encoded(), on: raw)
            net.run(for: 300)
            if announces { net.inject(try Announcement.make(identity: alice, nickname: "alice", timestamp: net.now).encoded(), on: raw) }
            net.run(for: 3_000)
            #expect(net.published[gate].contains { $0.event.id == e.id } == announces, "announced: \(announces)")
            if !announces { #expect(net.nodes[gate].refusals.unverifiable == refusedBefore + 1) }
        }
    }

    /// Deletions waiting for a bridge hold 32 at most, the oldest going,
    /// however many a person makes while away (40 here), in the node and in
    /// the memory it writes; a memory file holding more is read up to 32.
    @Test(.computesHeavily) func theDeletionsWaitingToCrossHoldTheirBound() throws {
        let net = EmbeddedNetwork()
        let seed = { (n: UInt8) in [UInt8](repeating: n, count: 32) }
        let alice = net.addNode("alice") { $0.crossesBridges = true; $0.bridgeSeed = seed(1); $0.board?.maxPostsPerAuthor = 50 }
        let gateA = net.addNode("gateA") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = seed(3) }
        net.connect(alice, gateA)
        net.run(for: 3_000)
        net.on(gateA) { $0.nostrRelays(up: true, now: $1) }
        var posts: [BoardPost] = []
        for i in 0..<40 {
            posts.append(try net.on(alice) { try $0.postToBoard("notice \(i)", now: $1) })
            net.run(for: 500)
        }
        net.disconnect(alice, gateA)
        net.run(for: 70_000)
        for p in posts { try net.on(alice) { try $0.deleteBoardPost(p.postID, now: $1) } }
        #expect(net.nodes[alice].tableSizes["node.tombstonesToCross"] == 32)
        let memory = try #require(net.nodes[alice].bridgeMemory)
        let waiting = try memory.deletionsToCross.map { hex -> [UInt8] in try BoardPacket(decoding: try [UInt8](hex: hex)[...]).postID }
        #expect(waiting == posts.suffix(32).map(\.postID), "the newest 32, the oldest 8 gone")
        // A memory file with more (written by hand, or by another version) is read up to its bound.
        var more = memory
        let tombstone = { (key: Curve25519.Signing.PrivateKey) -> String in
            var t = BoardTombstone(postID: (0..<16).map { _ in UInt8.random(in: 0...255) }, authorKey: [], deletedAt: 1)
            try? BoardSigning.sign(&t, with: key)
            return BoardPacket.tombstone(t).encoded().hexString
        }
        let others = (0..<8).map { _ in tombstone(net.nodes[alice].identity.signingKey) }
        more.deletionsToCross = memory.deletionsToCross + others
        net.restart(alice)
        net.on(alice) { core, _ in core.restoreBridgeMemory(more) }
        #expect(net.nodes[alice].bridgeMemory?.deletionsToCross == Array(more.deletionsToCross.suffix(32)), "the last 32")
        // What is not a tombstone of ours is not taken (the last 32 entries read, 28 of them good).
        more.deletionsToCross = memory.deletionsToCross + ["not hex", "00", BoardPacket.post(posts[0]).encoded().hexString,
                                                           tombstone(Curve25519.Signing.PrivateKey())]
        net.restart(alice)
        net.on(alice) { core, _ in core.restoreBridgeMemory(more) }
        #expect(net.nodes[alice].bridgeMemory?.deletionsToCross == Array(memory.deletionsToCross.suffix(28)))
        // The bridge is back: they cross one every 15 s (under its 10 deposits a minute of one depositor), every one.
        let tombstones = {
            net.published[gateA].filter { u in if case .tombstone = MeshBridge.boardPacket(of: u.event) { true } else { false } }.count
        }
        net.connect(alice, gateA)
        net.run(for: 60_000)
        #expect((3...5).contains(tombstones()), "\(tombstones()) in the first minute")
        net.run(for: 7 * 60_000)
        #expect(tombstones() == 28 && net.nodes[alice].tableSizes["node.tombstonesToCross"] == 0)
    }

    /// The carriers a node offers to sync hold 200 at most, however many
    /// come (240 over 12 minutes here, all fresh), the oldest going; past 15
    /// minutes they leave the round.
    @Test(.computesHeavily) func theCarriersOfferedToSyncHoldTheirBound() throws {
        let net = EmbeddedNetwork()
        let gateB = net.addNode("gateB") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = [UInt8](repeating: 4, count: 32) }
        let bob = net.addNode("bob")
        net.connect(gateB, bob)
        net.run(for: 3_000)
        net.on(gateB) { $0.nostrRelays(up: true, now: $1) }
        var most = 0
        for minute in 0..<12 {
            for i in 0..<20 {
                let n = minute * 20 + i
                let e = try BridgeTests.event("line \(n)", key: .random(), at: net.now, sender: String(format: "%016x", n + 1), ms: net.now + UInt64(n))
                net.on(gateB) { $0.bridgeFromRelay(e, now: $1) }
                net.run(for: 3_000)
                most = max(most, net.nodes[bob].tableSizes["node.carriersForSync"] ?? 0)
            }
        }
        #expect(InProcessNodes.BridgeNodeTests.bridged(net, bob).count == 240, "every one shown (20 a minute)")
        #expect(most == 200 && net.nodes[bob].tableSizes["node.carriersForSync"] == 200)
        net.run(for: 16 * 60_000)
        #expect(net.nodes[bob].tableSizes["node.carriersForSync"] == 0, "past 15 minutes they leave the round")
    }

    /// A carrier a node missed (its link was down while the mesh flooded it)
    /// comes to it by sync (Starling's type bit 40) once the link is back, once;
    /// the control: a node that does not sync never gets it.
    @Test func aMissedCarrierIsRepairedBySync() throws {
        for syncs in [true, false] {
            let net = EmbeddedNetwork()
            let seed = { (n: UInt8) in [UInt8](repeating: n, count: 32) }
            let alice = net.addNode("alice") { $0.crossesBridges = true; $0.bridgeSeed = seed(1) }
            let gateA = net.addNode("gateA") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = seed(3) }
            let gateB = net.addNode("gateB") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = seed(4) }
            let bob = net.addNode("bob"), dave = net.addNode("dave") { if !syncs { $0.router.sync = nil } }
            net.connect(alice, gateA)
            net.connect(gateB, bob)
            net.connect(bob, dave)
            net.run(for: 3_000)
            for g in [gateA, gateB] { net.on(g) { $0.nostrRelays(up: true, now: $1) } }
            net.disconnect(bob, dave)
            try net.on(alice) { try $0.sendPublic("across, while dave was away", now: $1) }
            net.run(for: 1_000)
            for e in net.published[gateA].map(\.event) where e.kind == 20_000 { net.on(gateB) { $0.bridgeFromRelay(e, now: $1) } }
            net.run(for: 5_000)
            #expect(InProcessNodes.BridgeNodeTests.bridged(net, bob).map { $0.text } == ["across, while dave was away"])
            #expect(InProcessNodes.BridgeNodeTests.bridged(net, dave).isEmpty, "dave's link was down")
            net.connect(bob, dave)
            net.run(for: 40_000)
            #expect(InProcessNodes.BridgeNodeTests.bridged(net, dave).map { $0.text } == (syncs ? ["across, while dave was away"] : []), "syncs: \(syncs)")
            #expect(InProcessNodes.BridgeNodeTests.bridged(net, bob).count == 1, "bob shows it once")
        }
    }

    /// A blocked author's notice that crossed a bridge is not shown: the bridge
    /// puts it on mesh B's board under its own ID, so the block goes by the
    /// author's signing key (pinned when erin met alice). It stays on the board
    /// (the mesh's), and dave, who blocked nobody, sees it (the control).
    @Test func aBlockedAuthorsCrossedNoticeIsNotShown() throws {
        let net = EmbeddedNetwork()
        let seed = { (n: UInt8) in [UInt8](repeating: n, count: 32) }
        let alice = net.addNode("alice") { $0.crossesBridges = true; $0.bridgeSeed = seed(1) }
        let gateA = net.addNode("gateA") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = seed(3) }
        let gateB = net.addNode("gateB") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = seed(4) }
        let erin = net.addNode("erin"), dave = net.addNode("dave")
        net.connect(alice, gateA)
        net.connect(gateB, erin)
        net.connect(gateB, dave)
        // Erin met alice once (her announce verified, her signing key pinned), then went to mesh B.
        net.connect(alice, erin)
        net.run(for: 3_000)
        net.disconnect(alice, erin)
        let aliceFingerprint = net.nodes[alice].identity.fingerprint
        net.on(erin) { c, _ in c.block(aliceFingerprint) }
        for g in [gateA, gateB] { net.on(g) { $0.nostrRelays(up: true, now: $1) } }
        net.run(for: 100)
        _ = try net.on(alice) { try $0.postToBoard("alice's notice", now: $1) }
        _ = try net.on(gateA) { try $0.postToBoard("gateA's notice", now: $1) }
        net.run(for: 1_000)
        for e in net.published[gateA].map(\.event) where e.kind == 1_402 { net.on(gateB) { $0.bridgeFromRelay(e, now: $1) } }
        net.run(for: 10_000)
        let shown = { (n: Int) in net.on(n) { c, now in c.boardPosts(now: now).map(\.post.content).sorted() } }
        #expect(shown(dave) == ["alice's notice", "gateA's notice"])
        #expect(Self.posts(net, dave).map(\.post.content).sorted() == ["alice's notice", "gateA's notice"])
        #expect(shown(erin) == ["gateA's notice"])
        #expect(Self.posts(net, erin).map(\.post.content) == ["gateA's notice"])
        // Still on erin's board (she relays and syncs the mesh's board): unblocked, it shows.
        net.on(erin) { c, _ in c.unblock(aliceFingerprint) }
        #expect(shown(erin) == ["alice's notice", "gateA's notice"])
    }

    /// Posts from the relays hold at most their share of a mesh's board (3
    /// here, beside 6 that came), so a flood of free keys cannot push the
    /// mesh's own notices out; bob's own still goes on it. The control: a
    /// bridge with the default share (100) takes all 6.
    @Test func postsFromTheRelaysHoldAtMostTheirShareOfTheBoard() throws {
        let net = EmbeddedNetwork()
        let small = net.addNode("small") { c in
            c.bridge = BridgeTests.cell
            c.bridgeSeed = [UInt8](repeating: 4, count: 32)
            c.bridgeLimits.crossedPostsOnBoard = 3
        }
        let large = net.addNode("large") { c in
            c.bridge = BridgeTests.cell
            c.bridgeSeed = [UInt8](repeating: 5, count: 32)
        }
        let bob = net.addNode("bob")
        net.connect(small, bob)
        net.run(for: 3_000)
        for g in [small, large] { net.on(g) { $0.nostrRelays(up: true, now: $1) } }
        let events = try (0..<6).map { try BridgeTests.boardEvent("flood \($0)", key: .random(), at: net.now) }
        for g in [small, large] { for e in events { net.on(g) { $0.bridgeFromRelay(e, now: $1) } } }
        net.run(for: 60_000)
        let crossed = { (n: Int) in net.on(n) { c, now in c.boardPosts(now: now).filter(\.crossed).count } }
        #expect(crossed(small) == 3 && crossed(large) == 6)
        _ = try net.on(bob) { try $0.postToBoard("bob's own notice", now: $1) }
        net.run(for: 2_000)
        #expect(net.on(small) { c, now in c.boardPosts(now: now).map(\.post.content) }.contains("bob's own notice"))
    }

    @Test func aBoardEventWhoseAuthorDidNotSignItIsRefused() throws {
        var core = BridgeTests.bridge()
        let author = Curve25519.Signing.PrivateKey()
        let key = MeshBridge.identity(seed: [UInt8](repeating: 9, count: 32), cell: BridgeTests.cell)
        func event(_ text: String, tamper: Bool = false, flags: UInt8 = BoardPacket.mayCrossFlag, at: UInt64 = BridgeTests.t0) throws -> NostrEvent {
            try BridgeTests.boardEvent(text, author: author, key: key, at: at, flags: flags, tamper: tamper)
        }
        _ = core.fromRelay(try event("changed after signing", tamper: true), now: 0, wall: BridgeTests.t0, jitter: 0)
        #expect(core.refusals[.badBoard] == 1)
        // Its author did not let it cross (no flag bit 1): anyone may copy a post onto a relay, and it stays out.
        _ = core.fromRelay(try event("not to cross", flags: 0), now: 0, wall: BridgeTests.t0, jitter: 0)
        #expect(core.refusals[.badBoard] == 2 && BridgeTests.drain(&core, now: 1) == 0)
        // The control: the same post untouched waits for the mesh; a week-old board event is still taken, one older is not,
        // nor an expired post.
        _ = core.fromRelay(try event("signed as it is"), now: 0, wall: BridgeTests.t0, jitter: 0)
        #expect(BridgeTests.drain(&core, now: 1) == 1)
        _ = core.fromRelay(try event("six days on", at: BridgeTests.t0 + 6 * 86_400_000), now: 2, wall: BridgeTests.t0 + 6 * 86_400_000 + 60_000,
                           jitter: 0)
        #expect(BridgeTests.drain(&core, now: 3) == 1)
        _ = core.fromRelay(try event("eight days on", at: BridgeTests.t0), now: 4, wall: BridgeTests.t0 + 8 * 86_400_000, jitter: 0)
        _ = core.fromRelay(try event("expired an hour ago", at: BridgeTests.t0), now: 4, wall: BridgeTests.t0 + 7_200_000, jitter: 0)
        #expect(core.refusals[.stale] == 2 && BridgeTests.drain(&core, now: 5) == 0)
        // Nothing is put on the board faster than the spacing says.
        var spaced = BridgeTests.bridge()
        for i in 0..<3 { _ = spaced.fromRelay(try BridgeTests.boardEvent("spaced \(i)", key: .random()), now: 0, wall: BridgeTests.t0, jitter: 0) }
        let popped = spaced.nextBoard(now: 1)
        let first = try #require(popped)
        spaced.boardTaken(first, now: 1, spacing: 3_000)
        #expect(spaced.nextDeadline(relaysUp: false) == 3_001)
        let early = spaced.nextBoard(now: 2_999), onTime = spaced.nextBoard(now: 3_001)
        #expect(early == nil && onTime != nil)
        // One that could not be sent (signing failed) is put back at the head, waits, and is counted; not lost.
        var unsent = BridgeTests.bridge()
        _ = unsent.fromRelay(try BridgeTests.boardEvent("put back", key: .random()), now: 0, wall: BridgeTests.t0, jitter: 0)
        let handed = unsent.nextBoard(now: 1)
        let inHand = try #require(handed)
        unsent.boardNotSent(inHand, now: 1, retryAfter: 60_000)
        let tooSoon = unsent.nextBoard(now: 59_000), later = unsent.nextBoard(now: 60_001)
        #expect(tooSoon == nil && later == inHand && unsent.unsentBoardEntries == 1)
        // A carrier may not bring a board event (it could mark the real one taken).
        var listener = BridgeCore(cell: nil, key: nil)
        _ = listener.heard(try BridgeTests.carrier(try event("as a carrier")), hops: 1, now: 0, wall: BridgeTests.t0)
        #expect(listener.refusals[.wrongKind] == 1 && listener.sizes["bridge.receivedIDs"] == 0)
        // A deposit crosses only when the notice is the depositor's own (its announced key): nobody makes another's leave.
        var gate = BridgeTests.bridge()
        let mine = try BridgeTests.carrier(try event("mine to share"), .toBridge)
        let mallory = Array(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation)
        #expect(gate.deposit(mine, from: PeerID(rawValue: 2), signingKey: mallory, relaysUp: true, now: 0, wall: BridgeTests.t0) == .refused(.badBoard))
        let authorKey = Array(author.publicKey.rawRepresentation)
        #expect(gate.deposit(try BridgeTests.carrier(try event("mine, not to cross", flags: 0), .toBridge), from: PeerID(rawValue: 1), signingKey: authorKey,
                             relaysUp: true, now: 1, wall: BridgeTests.t0) == .refused(.badBoard))
        #expect(gate.deposit(try BridgeTests.carrier(try event("mine, old", at: BridgeTests.t0 - 3_600_000), .toBridge), from: PeerID(rawValue: 1),
                             signingKey: authorKey, relaysUp: true, now: 2, wall: BridgeTests.t0) == .refused(.stale))
        guard case .publish = gate.deposit(mine, from: PeerID(rawValue: 1), signingKey: authorKey, relaysUp: true, now: 3, wall: BridgeTests.t0) else {
            Issue.record("the author's own deposit is published")
            return
        }
    }
}

/// Issue 41: courier drops online (kind 1401), as iOS posts and reads them
/// (BridgeCourierService.swift), and a bridge that fetches a drop for a peer
/// who turned up in its mesh.
@Suite struct CourierDropTests {
    static let envelope = CourierEnvelope(recipientTag: [UInt8](repeating: 0xAB, count: 16), expiry: 1_900_000_000_000,
                                          ciphertext: [0x42, 0x42, 0x42, 0x42], copies: 3)

    @Test func theDropEventIsIOSs() throws {
        // The research note's vector C: one copy, base64 of the 37-byte envelope, tags x and expiration; key 01×32.
        let key = try Secp256k1.PrivateKey(bytes: [UInt8](repeating: 1, count: 32))
        let e = try #require(CourierDrop.event(Self.envelope, key: key, now: 1_750_000_000))
        #expect(e.kind == 1_401 && e.content == "AQAQq6urq6urq6urq6urq6urqwIACAAAAbpg0zgAAwAEQkJCQg==")
        #expect(e.tags == [["x", "abababababababababababababababab"], ["expiration", "1900000000"]])
        #expect(e.id == "99e0ba57b80a27ab169803bdf5c961b2bfb69f0961e8425492be82a4f4022f1c" && (try? e.verify()) != nil)
        var one = Self.envelope
        one.copies = 1
        #expect(CourierDrop.envelope(of: e, wall: 1_750_000_000_000) == one)
        // A fresh key each time when none is given.
        #expect(CourierDrop.event(Self.envelope, now: 1)?.pubkey != CourierDrop.event(Self.envelope, now: 1)?.pubkey)
        #expect(CourierDrop.filter(tags: ["ab"], now: 100_000).json == ##"{"#x":["ab"],"kinds":[1401],"limit":100,"since":13600}"##)
    }

    @Test func aDropThatIsNotWhatItSaysIsRefused() throws {
        let good = try #require(CourierDrop.event(Self.envelope, now: 1_750_000_000))
        #expect(CourierDrop.envelope(of: good, wall: 1_750_000_000_000) != nil, "the control")
        var mislabelled = good
        mislabelled.tags[0][1] = String(repeating: "cd", count: 16)
        var otherKind = good
        otherKind.kind = 1
        var notBase64 = good
        notBase64.content = "not base64!"
        var notAnEnvelope = good
        notAnEnvelope.content = "AAAA"
        for bad in [mislabelled, otherKind, notBase64, notAnEnvelope] { #expect(CourierDrop.envelope(of: bad, wall: 1_750_000_000_000) == nil) }
        #expect(CourierDrop.envelope(of: good, wall: 1_900_000_000_000) == nil, "expired by its own expiry")
        let big = CourierEnvelope(recipientTag: [UInt8](repeating: 1, count: 16), expiry: 1, ciphertext: [UInt8](repeating: 7, count: 16_384))
        #expect(CourierDrop.event(big, now: 1) != nil, "16 KiB of seal fits in 20 KiB")
        var huge = good
        huge.content = String(repeating: "A", count: 28_000)
        #expect(CourierDrop.envelope(of: huge, wall: 1) == nil)
    }
}

extension InProcessNodes {
@Suite struct CourierDropNodeTests {
    /// Alice (mesh A) seals a drop to bob, who is on no mesh; gateA, a bridge
    /// carrying it, posts it. gateB (mesh B) reads nothing for bob until he
    /// links to it; then it follows his tags, takes the drop and hands it to
    /// him, who opens it as from alice. A forged drop (its content changed)
    /// is refused beside it.
    @Test func aDropPostedInOneMeshReachesAPeerWhoLaterJoinsAnother() throws {
        let net = EmbeddedNetwork()
        let seed = { (n: UInt8) in [UInt8](repeating: n, count: 32) }
        let alice = net.addNode("alice")
        let gateA = net.addNode("gateA") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = seed(3) }
        let gateB = net.addNode("gateB") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = seed(4) }
        let bob = net.addNode("bob")
        net.connect(alice, gateA)
        net.run(for: 3_000)
        for g in [gateA, gateB] { net.on(g) { $0.nostrRelays(up: true, now: $1) } }
        let bobKey = net.nodes[bob].identity.noisePublicKey
        #expect(try net.on(alice) { try $0.sendDrop("meet me at the mill", toNoiseKey: bobKey, now: $1) } == 1)
        net.run(for: 1_000)
        let drops = net.published[gateA].map(\.event).filter { $0.kind == 1_401 }
        #expect(drops.count == 1, "\(net.published[gateA].map(\.event.kind))")
        let day = CourierSeal.epochDay(unixSeconds: net.now / 1_000)
        #expect(drops.first?.tags.first == ["x", CourierSeal.recipientTag(noiseKey: bobKey, day: day).hexString])
        // gateA follows its own tags and alice's; gateB its own only.
        let aliceTags = CourierSeal.candidateTags(noiseKey: net.nodes[alice].identity.noisePublicKey, day: day).map(\.hexString)
        #expect(Set(aliceTags).isSubset(of: Set(net.dropTags[gateA] ?? [])) && net.dropTags[gateA]?.count == 6)
        #expect(net.dropTags[gateB]?.count == 3)

        // Before bob is here, gateB takes nothing; once he is, it follows his tags and hands the drop over.
        let drop = try #require(drops.first)
        net.on(gateB) { $0.dropFromRelay(drop, now: $1) }
        net.connect(gateB, bob)
        net.run(for: 3_000)
        let bobTags = CourierSeal.candidateTags(noiseKey: bobKey, day: day).map(\.hexString)
        #expect(Set(bobTags).isSubset(of: Set(net.dropTags[gateB] ?? [])), "\(String(describing: net.dropTags[gateB]))")
        var forged = drop
        forged.content = try #require(CourierDrop.event(CourierEnvelope(recipientTag: CourierSeal.recipientTag(noiseKey: bobKey, day: day),
                                                                         expiry: net.now + 3_600_000, ciphertext: [1, 2, 3]), now: 1)?.content)
        let before = net.nodes[gateB].refusals.courier
        net.on(gateB) { $0.dropFromRelay(forged, now: $1) }
        #expect(net.nodes[gateB].refusals.courier == before + 1)
        net.on(gateB) { $0.dropFromRelay(drop, now: $1) }
        net.run(for: 5_000)
        let opened = net.events[bob].compactMap { if case let .dropOpened(_, fingerprint, _, _, text, _, _) = $0 { (fingerprint, text) } else { nil } }
        #expect(opened.map(\.1) == ["meet me at the mill"], "\(net.events[bob])")
        #expect(opened.first?.0 == net.nodes[alice].identity.fingerprint.hex)
        // It came from the relays: gateB never posts it back; the relays sending it again changes nothing.
        #expect(!net.published[gateB].contains { $0.event.kind == 1_401 })
        net.on(gateB) { $0.dropFromRelay(drop, now: $1) }
        net.run(for: 3_000)
        #expect(net.events[bob].filter { if case .dropOpened = $0 { true } else { false } }.count == 1)
    }
}
}

extension InProcessNodes {
@Suite struct CourierDropBoundsTests {
    /// A bridge's drop tables under a flood: its own drops waiting for a relay
    /// (20), the tags it follows (51: its own and 16 direct peers', 3 days each),
    /// the envelopes it posted and the drop events it took (512 each).
    @Test func theDropTablesHoldTheirBounds() throws {
        let net = EmbeddedNetwork()
        let gate = net.addNode("gate") { $0.bridge = BridgeTests.cell; $0.bridgeSeed = [UInt8](repeating: 3, count: 32) }
        let peers = (0..<20).map { net.addNode("p\($0)") }
        for p in peers { net.connect(gate, p) }
        net.run(for: 3_000)
        #expect(net.dropTags[gate]?.count == 51 && net.nodes[gate].tableSizes["node.dropTagsFollowed"] == 51)
        let away = Identity.generate().noisePublicKey
        for i in 0..<30 { _ = try net.on(gate) { try $0.sendDrop("waiting \(i)", toNoiseKey: away, now: $1) } }
        #expect(net.nodes[gate].tableSizes["node.dropsToPost"] == 20)
        net.on(gate) { $0.nostrRelays(up: true, now: $1) }
        #expect(net.nodes[gate].tableSizes["node.dropsToPost"] == 0 && net.published[gate].filter { $0.event.kind == 1_401 }.count >= 20)
        for i in 0..<600 { _ = try net.on(gate) { try $0.sendDrop("posted \(i)", toNoiseKey: away, now: $1) } }
        #expect(net.nodes[gate].tableSizes["node.dropsPosted"] == 512)
        // Drops for the gate itself, from the relays: each taken once, 4,096 remembered.
        let me = net.nodes[gate].identity.noisePublicKey
        let day = CourierSeal.epochDay(unixSeconds: net.now / 1_000)
        let sender = Identity.generate()
        for i in 0..<4_200 {
            if i > 0, i % 700 == 0 { net.run(for: 60_001) } // within the 720 signature checks a minute
            let payload = try NoisePayload.privateMessage(PrivateMessage(messageID: "m\(i)", content: "for the gate \(i)")).encoded()
            let envelope = CourierEnvelope(recipientTag: CourierSeal.recipientTag(noiseKey: me, day: day), expiry: net.now + 3_600_000,
                                           ciphertext: try CourierSeal.seal(payload, from: sender.noiseKey, to: me, prekeyID: nil))
            let event = try #require(CourierDrop.event(envelope, now: Int64(net.now / 1_000)))
            net.on(gate) { $0.dropFromRelay(event, now: $1) }
        }
        #expect(net.nodes[gate].tableSizes["node.dropEventsTaken"] == 4_096)
        #expect(net.events[gate].filter { if case .dropOpened = $0 { true } else { false } }.count == 4_200)
    }
}

@Suite struct BridgeSimulationTests {
    /// The simulation counts what it says: every message crosses once, none
    /// comes back, each deposit and carrier is counted (small meshes, no loss).
    @Test func twoSmallMeshesDeliverEveryMessageOnce() {
        var s = BridgeSimulation()
        s.nodesPerMesh = 10
        s.messages = 3
        s.settle = 10_000
        s.relayLatency = 300
        let r = s.run()
        #expect(r.delivery == 1 && r.duplicates == 0 && r.echoes == 0, "\(r)")
        #expect(r.depositsAtA == 3 && r.carriersFromB == 3, "\(r)")
        #expect((r.medianLatency ?? 0) >= 300, "\(r)")
        // The control (mesh B's own broadcasts) reaches all of it too; each carrier went out at least
        // once (the bridge) and at most once a node of mesh B; frames are sends times links.
        #expect(r.controlDelivery == 1, "\(r)")
        #expect(r.carrierTransmissionsPerMessage >= 1 && r.carrierTransmissionsPerMessage <= 10, "\(r)")
        #expect(r.carrierFramesPerMessage >= r.carrierTransmissionsPerMessage, "\(r)")
        // The load: each bridge took the relay's events (both bridges' own, presence too) and sent frames.
        #expect(r.bridgeLoad.map(\.node) == ["a0", "b0"] && r.bridgeLoad.allSatisfy { $0.eventsIn >= 3 && $0.framesSent > 0 }, "\(r)")
        #expect(r.bridgeLoad[0].eventsPublished >= 3 && r.bridgeLoad[0].meshMeanFramesSent > 0, "\(r)")
        #expect(r.bridgeLoad.allSatisfy { $0.otherBridgeDistance == nil }, "\(r)") // no other bridge in its mesh
    }

    /// Two bridges in each mesh: still once each, none back, and the deposits split between mesh A's two.
    @Test func twoBridgesAMeshStillDeliverEachMessageOnce() {
        var s = BridgeSimulation()
        s.nodesPerMesh = 10
        s.messages = 3
        s.settle = 10_000
        s.relayLatency = 300
        s.bridgesPerMesh = 2
        let r = s.run()
        #expect(r.delivery == 1 && r.duplicates == 0 && r.echoes == 0, "\(r)")
        #expect(r.depositsAtA == 3 && r.bridgeLoad.map(\.node) == ["a0", "a5", "b0", "b5"], "\(r)")
        // The graph's distance between a mesh's two bridges, the same both ways; within the carriers'
        // TTL the second bridge hears the first one's carrier and yields: mesh B carries each message once.
        let d = r.bridgeLoad.map(\.otherBridgeDistance)
        #expect(d[0] == d[1] && d[2] == d[3] && d.allSatisfy { ($0 ?? 0) >= 1 && ($0 ?? 0) <= 6 }, "\(d)")
        #expect(r.carriersFromB == 3, "\(r)")
    }
}
}
