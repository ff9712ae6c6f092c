import Crypto
import Foundation
import Testing
import StarlingCrypto
import StarlingEmbeddedNetwork
import StarlingMesh
import StarlingNode
import StarlingNodeCore
import StarlingWire

/// Issue 36: the mesh board (0x23) kept, relayed, synced and shown as iOS does.
extension InProcessNodes {
@Suite struct BoardNodeTests {
    static func posts(_ net: EmbeddedNetwork, _ node: Int) -> [BoardPost] {
        net.events[node].compactMap { if case let .boardPost(e, _, _) = $0 { e.post } else { nil } }
    }

    /// A signed board packet by `key` (a post unless `tombstone`), stamped `at`.
    static func packet(_ key: Curve25519.Signing.PrivateKey, sender: PeerID, content: String = "notice", nickname: String = "x", postID: [UInt8]? = nil,
                       created: UInt64, lifetime: UInt64 = 86_400_000, at stamp: UInt64? = nil, tombstone: Bool = false) throws -> Packet {
        let id = postID ?? (0..<16).map { _ in UInt8.random(in: 0...255) }
        let board: BoardPacket
        if tombstone {
            var t = BoardTombstone(postID: id, authorKey: [], deletedAt: created)
            try BoardSigning.sign(&t, with: key)
            board = .tombstone(t)
        } else {
            var p = BoardPost(postID: id, geohash: "", content: content, authorKey: [], nickname: nickname, createdAt: created,
                              expiresAt: created + lifetime)
            try BoardSigning.sign(&p, with: key)
            board = .post(p)
        }
        return Packet(type: .boardPost, ttl: 7, timestamp: stamp ?? created, senderID: sender, payload: board.encoded())
    }

    /// A post's nickname is its author's claim: a key no peer here announces
    /// is shown as "alice? KEY", never as alice. The control: the same name
    /// from the key alice's verified announce carries is shown as alice.
    @Test func aPostByAKeyNoPeerAnnouncesIsShownAsAClaim() throws {
        let net = EmbeddedNetwork()
        let victim = net.addNode("victim")
        let raw = net.openRawLink(to: victim)
        let alice = Identity.generate(), stranger = Identity.generate()
        net.inject(try Announcement.make(identity: alice, nickname: "alice", timestamp: net.now).encoded(), on: raw)
        net.run(for: 100)
        net.inject(try Self.packet(stranger.signingKey, sender: stranger.peerID, content: "free food", nickname: "alice", created: net.now).encoded(), on: raw)
        net.inject(try Self.packet(alice.signingKey, sender: alice.peerID, content: "water here", nickname: "alice", created: net.now).encoded(), on: raw)
        net.run(for: 500)
        let shown = net.events[victim].compactMap { if case let .boardPost(e, _, _) = $0 { e } else { nil } }
        let forged = try #require(shown.first { $0.post.content == "free food" })
        let real = try #require(shown.first { $0.post.content == "water here" })
        let prefix = stranger.signingPublicKey.prefix(4).map { String(format: "%02x", $0) }.joined()
        #expect(forged.author == nil && forged.shownName == "alice? \(prefix)" && !forged.ours)
        #expect(real.author == "alice" && real.shownName == "alice" && !real.ours)
        #expect(net.nodes[victim].boardPosts(now: net.now).map(\.shownName).sorted() == ["alice", "alice? \(prefix)"])
    }

    @Test func aPostCrossesThreeHopsAndIsShownOnceEverywhere() throws {
        let net = EmbeddedNetwork()
        for name in ["alice", "bob", "carol", "dave"] { net.addNode(name) }
        for i in 0..<3 { net.connect(i, i + 1) }
        net.run(for: 2_000)
        let post = try net.on(0) { try $0.postToBoard("water at gate 2", urgent: true, now: $1) }
        net.run(for: 2_000)
        for n in 1...3 {
            let seen = Self.posts(net, n)
            #expect(seen.count == 1 && seen.first == post, "node \(n): \(seen)")
            #expect(net.nodes[n].boardPosts(now: net.now).map(\.post.content) == ["water at gate 2"])
        }
        let hops = net.events[3].compactMap { if case let .boardPost(_, _, h) = $0 { h } else { nil } }
        #expect(hops == [3])
        #expect(post.isUrgent && post.authorKey == Array(net.nodes[0].identity.signingKey.publicKey.rawRepresentation))
        // A minute of sync rounds later, still once.
        net.run(for: 130_000)
        #expect(Self.posts(net, 3).count == 1)
        #expect(net.nodes[3].tableSizes["node.boardPosts"] == 1)
    }

    /// A node that joins after the post was made hears it from the board's
    /// own sync round (type bit 8), minutes later; the control: without the
    /// board's round it would not (public messages are not the board).
    @Test func aLateJoinerGetsThePostsBySyncAndATombstoneDeletesEverywhere() throws {
        let net = NodeCoreTests.line()
        net.run(for: 2_000)
        let post = try net.on(0) { try $0.postToBoard("meeting at the school, 6 pm", now: $1) }
        net.run(for: 5 * 60_000) // past the freshness window and the duplicate filter
        let late = net.addNode("erin")
        // The control: a node with no sync at all hears nothing of it (relays are long over).
        let deaf = net.addNode("frank") { $0.router.sync = nil }
        net.connect(2, late)
        net.connect(2, deaf)
        net.run(for: 70_000)
        #expect(Self.posts(net, late) == [post])
        let answered = net.events[late].contains { if case let .boardPost(_, _, hops) = $0 { hops == 1 } else { false } }
        #expect(answered, "a sync answer counts one hop")
        #expect(Self.posts(net, deaf).isEmpty)
        // The author deletes it: gone from every board, and no sync brings it back.
        try net.on(0) { try $0.deleteBoardPost(post.postID, now: $1) }
        net.run(for: 3_000)
        for n in 0...deaf { #expect(net.nodes[n].boardPosts(now: net.now).isEmpty, "node \(n)") }
        let deleted = net.events[late].contains { if case let .boardPostDeleted(id, key) = $0 { id == post.postID && key == post.authorKey } else { false } }
        #expect(deleted)
        net.run(for: 130_000)
        for n in 0...late { #expect(net.nodes[n].boardPosts(now: net.now).isEmpty, "node \(n)") }
        // Only the author deletes: someone else's tombstone for its ID is refused at once.
        #expect(throws: NodeCore.BoardError.notOurs) { try net.on(1) { try $0.deleteBoardPost(post.postID, now: $1) } }
    }

    @Test func postsExpireFromEveryBoardAndTheSyncRound() throws {
        let net = NodeCoreTests.line()
        net.run(for: 2_000)
        try net.on(0) { _ = try $0.postToBoard("short-lived", lifetime: 3_600_000, now: $1) }
        try net.on(2) { _ = try $0.postToBoard("a week", lifetime: 30 * 86_400_000, now: $1) } // capped at 7 days
        net.run(for: 2_000)
        #expect(net.nodes[1].boardPosts(now: net.now).count == 2)
        net.run(for: 3_600_000 + 120_000)
        for n in 0...2 {
            #expect(net.nodes[n].boardPosts(now: net.now).map(\.post.content) == ["a week"], "node \(n)")
            #expect(net.nodes[n].router.providedCount == 1, "node \(n): the expired post leaves the sync round")
        }
        let week = try #require(net.nodes[1].boardPosts(now: net.now).first?.post)
        #expect(week.expiresAt - week.createdAt == BoardPacket.maxLifetime)
    }

    /// An attacker in radio range: forged, expired and future posts are refused
    /// and not relayed (a valid one beside them is: the control); a flood of
    /// authors and of one author stays within 200 posts and 5 an author;
    /// orphan tombstones within 100.
    @Test func forgedPostsGoNowhereAndFloodsStayWithinTheBounds() throws {
        let net = EmbeddedNetwork()
        let victim = net.addNode("victim")
        let attacker = net.openRawLink(to: victim), watcher = net.openRawLink(to: victim)
        let sender = PeerID(hex: "a1b2c3d4e5f60718")!
        func relayed(_ p: Packet) -> Bool {
            let id = PacketID(p)
            return (net.rawReceived[watcher] ?? []).contains { (try? Packet(decoding: $0)).map { PacketID($0) == id } ?? false }
        }
        let key = Curve25519.Signing.PrivateKey()
        let good = try Self.packet(key, sender: sender, created: net.now)
        var payload = try Self.packet(key, sender: sender, content: "original", created: net.now).payload
        payload[payload.count - 1] ^= 1 // the signature broken
        let forged = Packet(type: .boardPost, ttl: 7, timestamp: net.now, senderID: sender, payload: payload)
        let expired = try Self.packet(key, sender: sender, created: net.now - 90_000_000, at: net.now)
        let ahead = try Self.packet(key, sender: sender, created: net.now + 2 * 3_600_000, at: net.now)
        for p in [good, forged, expired, ahead] { net.inject(try p.encoded(), on: attacker) }
        net.run(for: 1_000)
        #expect(relayed(good), "the control: a valid post is relayed")
        for p in [forged, expired, ahead] { #expect(!relayed(p)) }
        #expect(net.nodes[victim].refusals.board == 3)
        #expect(Self.posts(net, victim).count == 1)

        // 300 authors, then 20 posts of one: at most 200 kept, 5 of that author, the newest made.
        for i in 0..<300 {
            net.inject(try Self.packet(.init(), sender: sender, created: net.now + UInt64(i)).encoded(), on: attacker)
            if i % 50 == 0 { net.run(for: 10) }
        }
        let one = Curve25519.Signing.PrivateKey()
        for i in 0..<20 { net.inject(try Self.packet(one, sender: sender, content: "n\(i)", created: net.now + 1_000 + UInt64(i)).encoded(), on: attacker) }
        net.run(for: 1_000)
        let board = try #require(net.nodes[victim].board)
        #expect(board.postCount == 200)
        #expect(board.posts(by: Array(one.publicKey.rawRepresentation)).map(\.content) == ["n19", "n18", "n17", "n16", "n15"])
        // 150 tombstones of posts never seen, from 150 authors: at most 100 kept.
        for _ in 0..<150 { net.inject(try Self.packet(.init(), sender: sender, created: net.now, tombstone: true).encoded(), on: attacker) }
        net.run(for: 1_000)
        #expect(net.nodes[victim].board?.orphanCount == 100)
        #expect(net.nodes[victim].tableSizes["node.boardTombstones"] == 100)
    }

    /// A post whose packet another key signed came across a bridge; one its
    /// author signed did not, nor does one unsigned (nothing to tell). The
    /// author's own packet after a bridge's copy takes the mark away (the
    /// author is here); another bridge's copy does not.
    @Test func aPostCarriedByAnotherIsMarkedUntilItsAuthorsOwnComes() throws {
        let now: UInt64 = 1_700_000_000_000
        let author = Curve25519.Signing.PrivateKey(), bridge = Curve25519.Signing.PrivateKey()
        let id = (0..<16).map { UInt8($0) }
        func post(_ signer: Curve25519.Signing.PrivateKey?, at stamp: UInt64, postID: [UInt8] = id) throws -> (Packet, BoardPacket, BoardPost) {
            var p = try Self.packet(author, sender: PeerID(hex: "0102030405060708")!, postID: postID, created: now, at: stamp)
            if let signer { try PacketSigning.sign(&p, with: signer) }
            let b = try BoardPacket(decoding: p.payload[...])
            guard case let .post(bp) = b else { throw WireError(.invalidValue("not a post"), field: "board", offset: 0) }
            return (p, b, bp)
        }
        var store = BoardStore()
        let (viaBridge, b, thePost) = try post(bridge, at: now)
        #expect(store.ingest(viaBridge, b, now: now) == .accepted && store.cameAcross(thePost))
        let (again, b2, _) = try post(Curve25519.Signing.PrivateKey(), at: now + 1)
        #expect(store.ingest(again, b2, now: now) == .duplicate && store.cameAcross(thePost), "another bridge's copy")
        let (own, b3, _) = try post(author, at: now + 2)
        #expect(store.ingest(own, b3, now: now) == .duplicate && !store.cameAcross(thePost), "its author's own")
        // The controls: kept first from its author, or unsigned: not marked.
        var other = BoardStore()
        let (first, b4, p4) = try post(author, at: now)
        #expect(other.ingest(first, b4, now: now) == .accepted && !other.cameAcross(p4))
        let (unsigned, b5, p5) = try post(nil, at: now, postID: (16..<32).map { UInt8($0) })
        #expect(other.ingest(unsigned, b5, now: now) == .accepted && !other.cameAcross(p5))
    }

    @Test func theStoreKeepsIOSRules() throws {
        let now: UInt64 = 1_700_000_000_000
        let sender = PeerID(hex: "0102030405060708")!
        let key = Curve25519.Signing.PrivateKey(), other = Curve25519.Signing.PrivateKey()
        func take(_ store: inout BoardStore, _ p: Packet) throws -> BoardStore.Outcome {
            store.ingest(p, try BoardPacket(decoding: p.payload[...]), now: now)
        }
        var store = BoardStore()
        let id = (0..<16).map { UInt8($0) }
        #expect(try take(&store, try Self.packet(key, sender: sender, postID: id, created: now)) == .accepted)
        #expect(try take(&store, try Self.packet(key, sender: sender, postID: id, created: now, at: now + 5)) == .duplicate)
        // Future-dated by more than an hour, or living past 7 days and an hour from now: refused.
        #expect(try take(&store, try Self.packet(key, sender: sender, created: now + 3_600_001)) != .accepted)
        #expect(try take(&store, try Self.packet(key, sender: sender, created: now + 3_600_000)) == .accepted) // the control: exactly an hour
        // Another author's tombstone does not delete a post (it is an orphan of its own).
        #expect(try take(&store, try Self.packet(other, sender: sender, postID: id, created: now, tombstone: true)) == .accepted)
        #expect(store.post(id, by: Array(key.publicKey.rawRepresentation)) != nil)
        // The author's does, and then the post is refused if it comes again.
        #expect(try take(&store, try Self.packet(key, sender: sender, postID: id, created: now + 1, tombstone: true)) == .accepted)
        #expect(store.post(id, by: Array(key.publicKey.rawRepresentation)) == nil)
        if case .rejected = try take(&store, try Self.packet(key, sender: sender, postID: id, created: now, at: now + 9)) {} else {
            Issue.record("a deleted post came back")
        }
        // An orphan tombstone ends 7 days after its deletion time.
        var later = store
        later.prune(now: now + 7 * 86_400_000 + 1)
        #expect(later.orphanCount == 0 && later.tombstoneCount == 0)
        // An author who posts and deletes in turn (each tombstone matched, kept
        // until its post would expire): tombstones stay within 300 in all.
        var churn = BoardStore()
        let author = Curve25519.Signing.PrivateKey()
        for i in 0..<400 {
            let pid = withUnsafeBytes(of: UInt64(i).bigEndian) { Array($0) } + [UInt8](repeating: 0, count: 8)
            #expect(try take(&churn, try Self.packet(author, sender: sender, postID: pid, created: now + UInt64(i))) == .accepted)
            #expect(try take(&churn, try Self.packet(author, sender: sender, postID: pid, created: now + UInt64(i), tombstone: true)) == .accepted)
        }
        #expect(churn.tombstoneCount == 300 && churn.postCount == 0 && churn.orphanCount == 0)
    }

    /// The board file: what was saved loads back; a file cut or damaged gives
    /// what came before the damage; a node restores only what still holds.
    @Test func theBoardFileLoadsWhatItSavedAndStopsAtDamage() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("board-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: url) }
        let key = Curve25519.Signing.PrivateKey(), sender = PeerID(hex: "0102030405060708")!
        let now: UInt64 = 1_763_800_000_000
        let packets = try (0..<3).map { try Self.packet(key, sender: sender, content: "p\($0)", created: now + UInt64($0)) }
        try BoardFile(url: url).save(packets)
        #expect(try BoardFile(url: url).load() == packets)
        var bytes = try Data(contentsOf: url)
        bytes.removeLast(3)
        try bytes.write(to: url)
        #expect(try BoardFile(url: url).load() == Array(packets.prefix(2)))
        try Data([0, 0, 0, 9, 1, 2, 3]).write(to: url)
        #expect(try BoardFile(url: url).load().isEmpty)
        #expect(try BoardFile(url: url.appendingPathExtension("none")).load().isEmpty)
        // Restored into a node: checked again (an expired one, a forged one are not taken).
        var forged = try Self.packet(key, sender: sender, content: "x", created: now).payload
        forged[forged.count - 1] ^= 1
        let old = try Self.packet(key, sender: sender, created: now - 2 * 86_400_000)
        let net = EmbeddedNetwork(start: now)
        let n = net.addNode("restored")
        let taken = net.on(n) { $0.restoreBoard(packets + [old, Packet(type: .boardPost, ttl: 7, timestamp: now, senderID: sender, payload: forged)], now: $1) }
        #expect(taken == 3)
        #expect(net.nodes[n].boardPosts(now: net.now).map(\.post.content) == ["p2", "p1", "p0"])
        #expect(net.events[n].isEmpty, "nothing restored is shown again")
    }
}
}
