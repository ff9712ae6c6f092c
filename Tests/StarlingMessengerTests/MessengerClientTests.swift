import Foundation
import StarlingAPIContract
import Logging
import Testing
import StarlingCrypto
import StarlingBulkTransport
import StarlingMessenger
import StarlingMessengerCore
@testable import StarlingMessengerAPI
import StarlingNode
import StarlingNodeCore
import StarlingNostr
import StarlingQR
import StarlingStately
import StarlingTestSupport
import StarlingWire
import StarlingYaOK
import StarlingStore

/// A face sees the same through a daemon's API as in process: every event
/// reads back as it was written, and the API client answers as the local
/// client over the same messenger does.
@Suite struct MessengerClientTests {
    static let a = PeerID(rawValue: 0x0102_0304_0506_0708), b = PeerID(rawValue: 0xA1B2_C3D4_E5F6_0718)
    static let f = Identity.generate().fingerprint

    static func json(_ e: NodeEvent) throws -> String {
        String(decoding: try #require(APIEvent(e), "\(e.name) has no API event").json(), as: UTF8.self)
    }

    /// One of each node event (25 kinds), with every optional field both set and not.
    static var nodeEvents: [NodeEvent] {
        let s = StatelyEngine.PeerState(senderID: a, name: "ann", state: .sos, timestamp: 1_795_000_000_000, heardAt: 0, hops: 2)
        return [
            .started(port: 4242, peerID: a, nickname: "ann"), .started(port: nil, peerID: a, nickname: "ann"),
            .linkUp("127.0.0.1:1"), .linkDown("127.0.0.1:1"), .peer(b, nickname: "bob", hops: 3),
            .capabilities(b, [.prekeys, .board]), .capabilities(b, nil),
            .message(from: b, nickname: "bob", text: "hi \"all\"\n✓", hops: 2, timestamp: 17, history: true),
            .message(from: b, nickname: nil, text: "x", hops: 1, timestamp: 18),
            .privateMessage(from: b, nickname: "bob", text: "psst", messageID: "M1", hops: 1, via: "nostr"),
            .privateMessage(from: b, nickname: nil, text: "psst", messageID: "M2", hops: 2),
            .sessionEstablished(b, fingerprint: f.hex), .delivered(messageID: "M1", by: b), .sentOffMesh(messageID: "M1", to: b, via: "nostr"),
            .failed(messageID: "M1", to: b), .held(messageID: "M1", for: b), .fileProgress(from: b, received: 3, total: 9),
            .fileSent(transferID: "T", to: b, fragments: 9), .fileReceived(from: b, name: "a.txt", size: 10, path: "/tmp/a.txt", transferID: "T"),
            .read(messageID: "M1", by: b), .left(b), .rejected(Rejection(.badAnnounce, peer: b, "bad")), .rejected(Rejection(.transport, "down")),
            .state(s), .sos(s), .stateExpired(b), .pong(from: b, rttMillis: 12, hops: 2),
            .favorited(by: b, nickname: "bob", on: true, npub: "npub1x"), .favorited(by: b, nickname: nil, on: false, npub: nil),
            .pinned(fingerprint: f, signingKey: [1, 2, 0xFF]), .notice("a relay connected"),
            .groupMessage(GroupMessage(group: group, messageID: "6F96", sender: f.hex, nickname: "ann", text: "summit", timestamp: 9, hops: 2,
                                       history: true)),
            .groupChanged(group, change: .joined, by: "ann"), .groupChanged(group, change: .left, by: nil),
            .dropOpened(from: b, fingerprint: f.hex, noiseKey: Array(repeating: 7, count: 32), nickname: nil, text: "later", messageID: "M3", hops: 1),
            .dropOpened(from: b, fingerprint: f.hex, noiseKey: Array(repeating: 7, count: 32), nickname: "bob", text: "later", messageID: "M4", hops: 2),
            .dropDeposited(messageID: "M3", to: b, couriers: 2),
            .gatewayMessage(GatewayMessage(geohash: "u4pruy", eventID: String(repeating: "ab", count: 32), pubkey: String(repeating: "cd", count: 32),
                                           nickname: "ann", text: "water", createdAt: 1_750_000_000, hops: 2)),
            .gatewayMessage(GatewayMessage(geohash: "u4pruy", eventID: "e", pubkey: "p", nickname: nil, text: "x", createdAt: 1, hops: 1)),
            .bridgedMessage(BridgedMessage(cell: "u4pruy", eventID: String(repeating: "ab", count: 32), pubkey: String(repeating: "cd", count: 32),
                                           nickname: "alice", text: "the north road", createdAt: 1_750_000_000, radioID: "b83f94d81dcdd1b0c0048f6645995dd4", hops: 2)),
            .bridgedMessage(BridgedMessage(cell: "u4pruz", eventID: "e", pubkey: "p", nickname: nil, text: "x", createdAt: 1, radioID: nil, hops: 0)),
            .fileSending(transferID: "T", to: b, sent: 5, total: 9), .fileOffered(from: b, transferID: "T", name: "big.iso", size: 9, mimeType: nil),
            .fileOffered(from: b, transferID: "T", name: "a.png", size: 9, mimeType: "image/png"),
            .boardPost(BoardEntry(post: BoardPost(postID: [1, 2], geohash: "u4pruy", content: "water", authorKey: [3], nickname: "ann", createdAt: 1, expiresAt: 2,
                                                  flags: 1, signature: [4]), author: "ann", ours: true, crossed: true), from: b, hops: 2),
            .boardPostDeleted(postID: [1, 2], authorKey: [3]), .voiceNote(from: b, path: "/tmp/v.aac", durationMillis: 2_500, isPrivate: true, id: "voice_0102030405060708_\(b)_dm", size: 1_234),
            .recognized(b, fingerprint: f.hex, nickname: "bob", epoch: 7), .recognized(b, fingerprint: f.hex, nickname: nil, epoch: 8),
            .vouched(f.hex, by: f.hex, voucherName: "carol"), .vouched(f.hex, by: f.hex, voucherName: nil),
        ]
    }

    static let group = GroupSummary(groupID: "000102030405060708090a0b0c0d0e0f", name: "trail crew", epoch: 2,
                                    members: [.init(fingerprint: String(repeating: "ab", count: 32), nickname: "ann")],
                                    creator: String(repeating: "ab", count: 32))

    @Test func everyNodeEventReadsBackAsItWasWritten() throws {
        // The messenger says a private message and a courier drop itself (with their conversation).
        let events = Self.nodeEvents.filter {
            switch $0 {
            case .privateMessage, .dropOpened, .dropDeposited: false
            default: true
            }
        }
        #expect(Set(events.map(\.name)).count == 35) // every other kind, none forgotten
        for e in events {
            let written = try Self.json(e)
            let read = try APIEvent.decoding(Data(written.utf8)).nodeEvent()
            #expect(try Self.json(read) == written)
        }
        #expect(APIEvent(.dropDeposited(messageID: "M3", to: Self.b, couriers: 2)) == nil, "the messenger's dropDeposited stands for it")
        // Refused, never guessed: an unknown kind, a peer ID that is not one.
        #expect(throws: APIEvent.Unknown.self) { try APIEvent.decoding(Data(#"{"event":"teleported"}"#.utf8)) }
        #expect(throws: (any Error).self) { try APIEvent.decoding(Data(#"{"event":"left","peerID":"not hex"}"#.utf8)).nodeEvent() }
        #expect((try? APIEvent.decoding(Data(#"{"event":"left","peerID":"0102030405060708"}"#.utf8)).nodeEvent()) != nil)
    }

    /// The exact bytes of two events (docs/API.md shows them): keys sorted, an
    /// optional field left out when absent.
    @Test func eventsEncodeAsTheJSONThatListenPrints() throws {
        let peer = PeerID(rawValue: 0xA1B2_C3D4_E5F6_0718)
        #expect(try Self.json(.message(from: peer, nickname: nil, text: "hi", hops: 2, timestamp: 5))
            == #"{"event":"message","from":"a1b2c3d4e5f60718","hops":2,"text":"hi","timestamp":5}"#)
        #expect(try Self.json(.rejected(Rejection(.badAnnounce, peer: peer, "announce from a1b2c3d4e5f60718: stale")))
            == #"{"event":"rejected","kind":"badAnnounce","peerID":"a1b2c3d4e5f60718","reason":"announce from a1b2c3d4e5f60718: stale"}"#)
        // A board post whose key is no peer's we know: its shown name says so, and no author is claimed.
        let post = BoardPost(postID: [1], geohash: "", content: "free food", authorKey: [2], nickname: "alice", createdAt: 1, expiresAt: 2, flags: 0,
                             signature: [3])
        let line = try Self.json(.boardPost(BoardEntry(post: post, author: nil, ours: false), from: peer, hops: 1))
        #expect(line.contains("\"shownName\":\"alice? 02\"") && !line.contains("\"author\""), "\(line)")
        let vouched = try Self.json(.boardPost(BoardEntry(post: post, author: "alice", ours: false), from: peer, hops: 1))
        #expect(vouched.contains("\"author\":\"alice\""), "the control: \(vouched)")
        let logged = try APIJSONCoding.data(APISequencedEvent(seq: 7, event: .left(.init(peerID: "a1b2c3d4e5f60718"))))
        #expect(String(decoding: logged, as: UTF8.self) == #"{"event":"left","peerID":"a1b2c3d4e5f60718","seq":7}"#)
    }

    /// A peer as the API gives it reads back whole: who vouches for it too
    /// (absent when nobody does: the control).
    @Test func aPeerReadsBackWithWhoVouchesForIt() throws {
        for vouchers in [["alice", "carol"], []] {
            let p = PeerView(id: Self.b, nickname: "bob", fingerprint: Self.f, hops: 2, capabilities: ["groups"], neighbour: false,
                             blocked: false, favorite: true, verified: false, vouchedBy: vouchers)
            let o = APIJSON.peer(p)
            #expect((o.vouchedBy != nil) == !vouchers.isEmpty)
            #expect(try APIJSON.readPeer(JSONSerialization.jsonObject(with: APIJSONCoding.data(o))) == p)
        }
    }

    static func text(_ events: [APIEvent]) throws -> [String] { try events.map { String(decoding: try $0.json(), as: UTF8.self) } }

    /// One of each messenger event, with optional fields set and not.
    static var messengerEvents: [MessengerEvent] {
        let conversation = UserID.random(), record = MessageRecord(id: UserID.random(), contact: conversation, outgoing: true, text: "hello", timestamp: 1_795_000_000_123,
                                                            recordedAt: 1_795_000_000.5, progress: MessageProgress(reported: .delivered, at: 1_795_000_000.5),
                                                            transport: "mesh", transportID: "M1")
        var incoming = MessageRecord(id: UserID.random(), contact: conversation, outgoing: false, text: "yes", timestamp: 2, recordedAt: 3, transportID: "M2")
        incoming.readAt = 3
        var groupLine = incoming
        groupLine.author = "ann? 03a107bf"
        return [
            .trustLoaded(contacts: 2, pending: 1), .storeUnlocked(storedMeanwhile: 4),
            .privateMessage(conversation: conversation, record: incoming, from: Self.b, name: "bob", hops: 2, via: "nostr", fingerprint: Self.f),
            .sent(conversation: conversation, record: record), .sent(conversation: conversation, record: groupLine), .sendingWaiting(conversation: conversation, count: 3),
            .progress(conversation: conversation, record: record), .dropDeposited(conversation: conversation, record: record, couriers: 3),
            .peerJoined(Self.b, nickname: "bob", hops: 1), .peerLeft(Self.b),
            .sessionEstablished(Self.b, name: "bob", fingerprint: Self.f), .favorited(by: Self.b, name: "bob", on: true, npub: "npub1q", overNostr: true),
            .trustChanged(Self.f, name: "bob", blocked: true, favorite: false, verified: true), .warning("careful"), .notSaved("disk full"),
            .diagnostic(Rejection(.undecryptable, peer: Self.b, "no session")),
            .publicHistory([.message(from: Self.b, nickname: "bob", text: "old", hops: 1, timestamp: 5, history: true)]),
            .channel(.message(.init(geohash: "u4pru", publicKey: "ab", nickname: "ann", text: "hey", createdAt: 9, eventID: "e1"))),
            .channel(.presence(geohash: "u4pru", publicKey: "ab")), .channel(.failed("no relay took it")),
            .node(.pong(from: Self.b, rttMillis: 3, hops: 1)), .node(.rejected(Rejection(.transport, "adapter off"))),
            // (A stranger's request was read as a node event, failed, and was dropped: the chat through a daemon never saw one.)
            .request(StrangerRequest(publicKey: String(repeating: "ab", count: 32), npub: "npub1abc",
                                     messages: [.init(publicKey: String(repeating: "ab", count: 32), text: "hello?", createdAt: 1_795_000_000, wrapID: "w1")],
                                     firstAt: 1_795_000_000.5, lastAt: 1_795_000_001.5)),
        ]
    }

    /// One of each event of the contract (node and messenger events as the API says them, and a gap).
    static var contractSamples: [APIEvent] {
        nodeEvents.compactMap(APIEvent.init) + messengerEvents.flatMap(APIEvent.of) + [.gap(.init(missed: 3))]
    }

    @Test func everyMessengerEventReadsBackFromTheEventStream() throws {
        let events = Self.messengerEvents
        for e in events {
            let written = APIEvent.of(e)
            #expect(!written.isEmpty)
            let words = try Self.text(written)
            let read = try written.map { try #require(try APIJSON.readEvent($0.json()), "\(words)") }
            #expect(try Self.text(read.flatMap(APIEvent.of)) == words)
        }
        // What it cannot read is said or skipped, never made up: a newer daemon's event, a gap.
        #expect(try APIJSON.readEvent(Data(#"{"event":"somethingNew"}"#.utf8)) == nil)
        guard case let .warning(words)? = try APIJSON.readEvent(Data(#"{"event":"gap","missed":12}"#.utf8)) else {
            Issue.record("a gap is not said")
            return
        }
        #expect(words.contains("12 events were missed"))
        #expect(throws: (any Error).self) { try APIJSON.readEvent(Data(#"{"event":"sent","conversation":"not a uuid"}"#.utf8)) }
    }

    // MARK: The same answers, in process and through the API

    struct Side {
        let node: MeshNode
        let messenger: Messenger
        let local: LocalMessengerClient
        let directory: URL
    }

    static func side(_ name: String, peers: [UInt16]) async throws -> Side {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("starling-client-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        var options = MeshNode.Options(nickname: name)
        options.udp?.port = 0
        options.udp?.discovery = false
        options.udp?.peers = peers.map { .loopback($0) }
        options.core.announceInterval = 500
        let identity = Identity.generate()
        let node = try MeshNode(identity: identity, options: options)
        let messenger = Messenger(node: node, directory: dir)
        try await messenger.open(try MessengerStore.open(directory: dir, protection: .keyFile(identity), iterations: 1_000))
        let ids = IdentityStore(directory: DataDirectory(explicit: dir.path))
        return Side(node: node, messenger: messenger, local: LocalMessengerClient(messenger: messenger, identityStore: ids), directory: dir)
    }

    /// Polls `condition` for at most `seconds` (a limit, not a sleep).
    static func eventually(_ seconds: Double = 20, _ condition: () async throws -> Bool) async rethrows -> Bool {
        let until = Date().addingTimeInterval(seconds)
        while Date() < until {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return try await condition()
    }

    /// Issue 54, item 3: the auto-lock is the messenger's, whichever face the
    /// person uses: activity from any face keeps the store open (the control);
    /// idle, it closes, and every face hears it as an event (the page asks for the PIN).
    @Test(.timeLimit(.minutes(1))) func theMessengersAutoLockClosesTheStoreForEveryFace() async throws {
        let a = try await Self.side("ann", peers: [])
        defer { try? FileManager.default.removeItem(at: a.directory) }
        let locked = Task { () -> String? in
            for await e in a.messenger.events { if case let .storeLocked(reason) = e { return reason } }
            return nil
        }
        // The control first: a store sealed with the key file is not locked (it would open at once).
        await a.messenger.setAutoLock(after: 1)
        try await Task.sleep(for: .milliseconds(1_500))
        #expect(await a.messenger.isStoreOpen, "the key file: no auto-lock")
        // A PIN (given through the client, as `starling pin` beside a daemon): the auto-lock counts from then.
        // (4 s set first: with 1 s still set, a loaded machine's slow PBKDF2 let the 1 s lock
        // fire before the 4 s were set, in CI.)
        await a.messenger.setAutoLock(after: 4)
        try await a.local.changeProtection(current: nil, to: .pin("4711"))
        for _ in 0..<6 {
            try await Task.sleep(for: .milliseconds(500))
            try await a.local.noteActivity()
        }
        #expect(await a.messenger.isStoreOpen, "3 s of activity, noted every 0.5 s: still open")
        let timeout = Task { try? await Task.sleep(for: .seconds(30)); locked.cancel() }
        let reason = await locked.value
        timeout.cancel()
        #expect(reason == "locked after 4 s idle", "\(String(describing: reason))")
        #expect(await !a.messenger.isStoreOpen)
        // It opens again with the PIN only.
        await #expect(throws: MessengerClientError.self) { try await a.local.unlock(secret: "1234") }
        try await a.local.unlock(secret: "4711")
        #expect(await a.messenger.isStoreOpen)
        await a.messenger.setAutoLock(after: 0)
    }

    @Test(.timeLimit(.minutes(2))) func theAPIClientAnswersAsTheLocalClientDoes() async throws {
        let a = try await Self.side("ann", peers: [])
        let aPort = try #require(await a.node.port)
        let b = try await Self.side("bob", peers: [aPort])
        var logger = Logger(label: "test.api")
        logger.logLevel = .critical
        let api = APIServer(client: a.local, configuration: .init(directory: a.directory))
        let received = ReceivedTexts()
        var tasks: [Task<Void, Never>] = [Task { await a.node.run() }, Task { await b.node.run() }, Task { await a.messenger.run() },
                                          Task { await b.messenger.run() }, Task { await api.record() },
                                          Task {
                                              for await e in b.messenger.events {
                                                  if case let .privateMessage(_, record, _, _, _, _, _) = e { await received.add(record.text) }
                                                  if case let .node(.groupMessage(m)) = e { await received.add(m.text) }
                                              }
                                          }]
        tasks += try api.applications(logger: logger).map { s in Task { try? await s.run() } }
        defer {
            for t in tasks { t.cancel() }
            for d in [a.directory, b.directory] { try? FileManager.default.removeItem(at: d) }
        }
        let remote = APIMessengerClient(APIClient(host: "127.0.0.1", port: await api.port, token: api.configuration.token))
        let local = a.local
        #expect(try await Self.eventually { try await local.peers().count == 1 })
        let bob = try #require(try await local.peers().first)

        // The remote's events, followed from now.
        let events = try await remote.events()
        let seen = SeenEvents()
        tasks.append(Task { do { for try await e in events { await seen.add(e) } } catch {} })

        // A message sent through the API reaches bob; its receipt comes back as an event.
        guard case let .conversation(withBob) = try await remote.resolve("bob") else {
            Issue.record("bob does not resolve through the API")
            return
        }
        #expect(try await local.resolve("bob") == .conversation(withBob))
        let sent = try await remote.send("through the API", to: withBob)
        #expect(sent.text == "through the API" && sent.outgoing)
        #expect(await Self.eventually { await received.contains("through the API") })
        #expect(await Self.eventually { await seen.delivered(sent.transportID ?? "") })

        try await remote.decide(.favourite, about: bob.fingerprint, nickname: "bob")
        try await remote.decide(.verify, about: bob.fingerprint, nickname: "bob")

        // Now every question has the same answer both ways.
        let (l, r) = (try await local.summary(), try await remote.summary())
        #expect(l == r)
        #expect(l.peers == 1 && l.storeOpen && l.trustKnown)
        #expect(try await local.peers() == (try await remote.peers()))
        #expect(try await remote.peers().first?.verified == true)
        #expect(try await local.contacts() == (try await remote.contacts()))
        // (Their times as JSON numbers: equal within 10 µs; Foundation's JSON
        // writes 16 digits, 10 of them before the point.)
        func decisions(_ t: [Fingerprint: TrustRecord]) -> [String] {
            t.sorted { $0.key < $1.key }.map { f, r in
                "\(f.hex) \(r.nickname ?? "-") \(r.verified) \(r.favorite) \(r.blocked) \(r.npub ?? "-") \(r.nostrVariant ?? "-") \(String(describing: r.favoritesUs))"
            }
        }
        func times(_ t: [Fingerprint: TrustRecord]) -> [Double] { t.sorted { $0.key < $1.key }.map(\.value.updatedAt) }
        func same(_ a: [Fingerprint: TrustRecord], _ b: [Fingerprint: TrustRecord]) -> Bool {
            decisions(a) == decisions(b) && times(a).count == times(b).count && zip(times(a), times(b)).allSatisfy { abs($0 - $1) < 1e-5 }
        }
        // (The node may still be taking an announce that updates a record: the
        // local answer must equal the remote one read before it or after it.)
        let before = try await remote.trust(), here = try await local.trust(), after = try await remote.trust()
        #expect(same(here, before) || same(here, after), "\(decisions(before)) \(times(before))\n\(decisions(here)) \(times(here))")
        #expect(!(try await remote.trust()).isEmpty)
        #expect(try await remote.trust()[bob.fingerprint]?.favorite == true)
        #expect(try await local.identity(ofPeer: bob.id) == (try await remote.identity(ofPeer: bob.id)))
        #expect(try await remote.identity(ofPeer: PeerID(rawValue: 7)) == nil)
        let lc = try await local.conversations(), rc = try await remote.conversations()
        #expect(lc.map(\.id) == rc.map(\.id) && lc.map(\.name) == rc.map(\.name) && lc.map(\.fingerprint) == rc.map(\.fingerprint))
        #expect(try await local.conversation(withPeer: bob.id) == (try await remote.conversation(withPeer: bob.id)))
        let lh = try await local.history(withBob, limit: 10), rh = try await remote.history(withBob, limit: 10)
        #expect(lh.map(\.id) == rh.map(\.id) && lh.map(\.text) == rh.map(\.text) && lh.map(\.progress?.state) == rh.map(\.progress?.state))
        // Search, both ways: any case, a `+` and an accent through the query; the history's other lines as the control.
        _ = try await remote.send("Find me +1 in the café", to: withBob)
        _ = try await remote.send("not this one", to: withBob)
        let ls = try await local.search(withBob, for: "find ME +1 in the CAFÉ", limit: 10, before: nil)
        let rs = try await remote.search(withBob, for: "find ME +1 in the CAFÉ", limit: 10, before: nil)
        #expect(ls.map(\.record.text) == ["Find me +1 in the café"] && rs.map(\.record.id) == ls.map(\.record.id) && rs.map(\.position) == ls.map(\.position))
        #expect(try await remote.search(withBob, for: "nowhere said", limit: 10, before: nil).isEmpty)
        #expect(try await remote.search(withBob, for: "t", limit: 10, before: nil).count == (try await local.history(withBob, limit: 10)).filter { $0.text.localizedCaseInsensitiveContains("t") }.count)
        #expect(try await local.stately().state == (try await remote.stately().state))
        #expect(try await local.card() == (try await remote.card()))
        // A contact added and removed through the API (as `starling contact` beside a daemon does):
        // both ways answer the same at each step; a second add is a conflict, a second removal not found.
        let bobCard = try await b.local.card()
        try await remote.addContact(bobCard, replace: false)
        #expect(try await local.contacts() == (try await remote.contacts()))
        #expect(try await local.contacts().contains { $0.card?.userID == bobCard.userID })
        await #expect(throws: MessengerClientError.self) { try await remote.addContact(bobCard, replace: false) }
        do { try await remote.addContact(bobCard, replace: false) } catch let e as MessengerClientError { #expect(e.kind == .conflict, "\(e)") }
        await #expect(throws: MessengerClientError.self) { try await remote.addContact(try await local.card(), replace: false) } // our own code
        try await remote.removeContact(bobCard.userID)
        #expect(try await !local.contacts().contains { $0.card?.userID == bobCard.userID })
        #expect(try await local.contacts() == (try await remote.contacts()))
        do { try await remote.removeContact(bobCard.userID) } catch let e as MessengerClientError { #expect(e.kind == .notFound, "\(e)") }
        let mesh = try await remote.mesh()
        #expect(mesh == (try await local.mesh()))
        #expect(mesh[a.node.identity.peerID]?.contains(bob.id) == true, "\(mesh)")
        // Our QR code as a picture: its modules are the card's code, one square each.
        let raw = try #require(try await APIClient(host: "127.0.0.1", port: await api.port, token: api.configuration.token).get("/v1/card") as? [String: Any])
        let svg = try #require(raw["qrSVG"] as? String)
        let code = try QRCode(text: try await local.card().uri)
        var drawn: Set<[Int]> = []
        for square in svg.components(separatedBy: "M").dropFirst() {
            let xy = square.prefix { $0 != "h" }.split(separator: " ").compactMap { Int($0) }
            if xy.count == 2 { drawn.insert([xy[0] - 4, xy[1] - 4]) }
        }
        var dark: Set<[Int]> = []
        for y in 0..<code.size { for x in 0..<code.size where code.isDark(x: x, y: y) { dark.insert([x, y]) } }
        #expect(!dark.isEmpty && drawn == dark)
        #expect(try await remote.statistics().mesh.received > 0)

        // The board, both ways: a post through the API is on ann's board and reaches bob's; deleted through the API, it is gone.
        let post = try await remote.postToBoard("water at gate 2", urgent: true, days: 3)
        #expect(post.isUrgent && post.expiresAt - post.createdAt == 3 * 86_400_000 && BoardSigning.isValid(.post(post)))
        let (mine, theirs) = (try await local.boardPosts(), try await remote.boardPosts())
        // Ours, by ann's own name, whichever face asks (the messenger says so, not the route).
        let annsOwn = BoardEntry(post: post, author: "ann", ours: true)
        #expect(mine == [annsOwn] && theirs == [annsOwn])
        // On bob's node: not his, and by ann (her verified announce carries the post's key).
        #expect(await Self.eventually { await b.node.boardPosts == [BoardEntry(post: post, author: "ann", ours: false)] })
        let bobs = try await b.node.postToBoard("bread at noon")
        #expect(await Self.eventually { await seen.boardPosts.contains(BoardEntry(post: bobs, author: "bob", ours: false)) },
                "bob's post on the API's event stream, whole, by bob")
        #expect(try await remote.boardPosts() == [annsOwn, BoardEntry(post: bobs, author: "bob", ours: false)]) // urgent first
        await #expect(throws: MessengerClientError.self) { _ = try await remote.postToBoard("x", urgent: false, days: 8) }
        await #expect(throws: MessengerClientError.self) { try await remote.deleteBoardPost("ffffffff") }
        // Bob's post is not ann's to delete, whatever its ID.
        await #expect(throws: MessengerClientError.self) { try await remote.deleteBoardPost(String(bobs.postID.hexString.prefix(8))) }
        try await remote.deleteBoardPost(String(post.postID.hexString.prefix(8)))
        #expect(try await remote.boardPosts().map(\.post) == [bobs])
        #expect(await Self.eventually { await b.node.boardPosts.map(\.post) == [bobs] })

        // Groups, through the API as in process: made with bob in it, a message to it, bob removed, left.
        let made = try await remote.createGroup("trail crew", members: ["bob"])
        #expect(made.name == "trail crew" && made.members.map(\.nickname) == ["ann", "bob"] && made.epoch == 2, "\(made)")
        let (localGroups, remoteGroups) = (try await local.groups(), try await remote.groups())
        #expect(localGroups == [made] && remoteGroups == [made])
        #expect(await Self.eventually { await b.node.groups.first?.epoch == 2 })
        let said = try await remote.sendToGroup("Trail Crew", text: "summit at noon")
        #expect(said.outgoing && said.contact == MessengerCore.conversationID(forGroup: made.groupID))
        #expect(await Self.eventually { await received.contains("summit at noon") }, "bob reads ann's group message")
        await #expect(throws: MessengerClientError.self) { _ = try await remote.sendToGroup("no such group", text: "x") }
        await #expect(throws: MessengerClientError.self) { try await remote.removeFromGroup("trail crew", member: "ann") } // the creator stays
        try await remote.removeFromGroup("trail crew", member: "bob")
        #expect(await Self.eventually { await b.node.groups.isEmpty })
        try await remote.leaveGroup(String(made.groupID.prefix(8)))
        #expect(try await remote.groups().isEmpty)

        // A message for someone not here waits: counted, both ways (from the messenger's memory).
        #expect(try await local.summary().pending == 0)
        let away = try await local.conversation(withKey: Identity.generate().fingerprint)
        let waiting = try await remote.send("for later", to: away)
        #expect(waiting.transport == nil)
        #expect(try await local.summary().pending == 1)
        #expect(try await remote.summary().pending == 1)

        // Refusals keep their kind: a name nobody has, an empty public line, a locked store.
        #expect(try await remote.resolve("nobody") == Messenger.Resolution.none)
        await #expect(throws: MessengerClientError.self) { try await remote.sendPublic("") }
        await #expect(throws: MessengerClientError.self) { try await remote.ping(PeerID(rawValue: 7)) }
        try await remote.lock()
        #expect(try await remote.summary().storeOpen == false)
        do {
            _ = try await remote.history(withBob, limit: 10)
            Issue.record("the history of a locked store was given")
        } catch let e as MessengerClientError {
            #expect(e.kind == .locked)
        }
        try await remote.unlock(secret: nil) // the key file
        #expect(try await remote.summary().storeOpen)
        try await remote.rename("annie")
        #expect(try await local.summary().nickname == "annie")
    }

    @Test(.timeLimit(.minutes(1))) func aClientThatLeavesAQuietStreamFreesItsPlace() async throws {
        let a = try await Self.side("quiet", peers: [])
        var logger = Logger(label: "test.api")
        logger.logLevel = .critical
        var configuration = APIServer.Configuration(directory: a.directory)
        configuration.heartbeat = .milliseconds(100)
        let api = APIServer(client: a.local, configuration: configuration)
        let serving = try api.applications(logger: logger).map { s in Task { try? await s.run() } }
        defer {
            for t in serving { t.cancel() }
            try? FileManager.default.removeItem(at: a.directory)
        }
        let client = APIClient(host: "127.0.0.1", port: await api.port, token: configuration.token)
        let staying = Task { do { for try await _ in client.events() {} } catch {} }
        let leaving = Task { do { for try await _ in client.events() {} } catch {} }
        defer { staying.cancel() }
        #expect(await Self.eventually { await api.log.subscriberCount == 2 })
        leaving.cancel() // its connection closes; no event comes to find out
        #expect(await Self.eventually(10) { await api.log.subscriberCount == 1 })
        // The controls: without a heartbeat due, a client that left keeps its place
        // (nothing tells the server); the one that stays keeps its place across many heartbeats.
        var slow = APIServer.Configuration(directory: a.directory.appendingPathComponent("slow"))
        slow.heartbeat = .seconds(600)
        try FileManager.default.createDirectory(at: slow.directory, withIntermediateDirectories: true)
        let quietAPI = APIServer(client: a.local, configuration: slow)
        let quietServing = try quietAPI.applications(logger: logger).map { s in Task { try? await s.run() } }
        defer { for t in quietServing { t.cancel() } }
        let quietClient = APIClient(host: "127.0.0.1", port: await quietAPI.port, token: slow.token)
        let gone = Task { do { for try await _ in quietClient.events() {} } catch {} }
        #expect(await Self.eventually { await quietAPI.log.subscriberCount == 1 })
        gone.cancel()
        try await Task.sleep(for: .milliseconds(500))
        #expect(await quietAPI.log.subscriberCount == 1)
        try await Task.sleep(for: .milliseconds(500))
        #expect(await api.log.subscriberCount == 1)
        await api.log.append(.warning(.init(text: "still here")))
        #expect(await api.log.subscriberCount == 1)
    }

    /// A daemon gone as a face subscribes (it stopped between the face's first
    /// call and its event stream): the stream ends at once with the refusal,
    /// not after the HTTP client's retries. The control: a daemon that runs
    /// keeps the stream open.
    @Test(.timeLimit(.minutes(1))) func aDaemonGoneAsAFaceSubscribesEndsItsStreamAtOnce() async throws {
        let gone = APIClient(host: "127.0.0.1", port: Int(try LoopbackPorts.freeTCP()), token: "t")
        let start = ContinuousClock.now
        var ended: (any Error)?
        do { for try await _ in gone.events() {} } catch { ended = error }
        #expect(ended != nil && ContinuousClock.now - start < .seconds(5), "\(String(describing: ended)) after \(ContinuousClock.now - start)")

        let a = try await Self.side("gone", peers: [])
        var logger = Logger(label: "test.api")
        logger.logLevel = .critical
        let configuration = APIServer.Configuration(directory: a.directory)
        let api = APIServer(client: a.local, configuration: configuration)
        let serving = try api.applications(logger: logger).map { s in Task { try? await s.run() } }
        defer {
            for t in serving { t.cancel() }
            try? FileManager.default.removeItem(at: a.directory)
        }
        let running = APIClient(host: "127.0.0.1", port: await api.port, token: configuration.token)
        let open = Task { do { for try await _ in running.events() {} } catch {} }
        #expect(await Self.eventually { await api.log.subscriberCount == 1 })
        try await Task.sleep(for: .seconds(1))
        #expect(await api.log.subscriberCount == 1)
        open.cancel()
    }

    @Test(.timeLimit(.minutes(1))) func twoFacesUnlockingAtOnceOpenTheStoreOnce() async throws {
        let a = try await Self.side("unlock", peers: [])
        defer { try? FileManager.default.removeItem(at: a.directory) }
        let opened = SeenStoreEvents()
        let watching = Task { for await e in a.messenger.events { await opened.add(e) } }
        defer { watching.cancel() }
        try await a.local.lock()
        #expect(try await a.local.summary().storeOpen == false)
        // Two handles opened by two faces, handed to the messenger at once.
        let one = try MessengerStore.open(directory: a.directory, protection: .keyFile(a.node.identity), iterations: 1_000)
        let two = try MessengerStore.open(directory: a.directory, protection: .keyFile(a.node.identity), iterations: 1_000)
        let m = a.messenger
        async let first: Void = m.open(one)
        async let second: Void = m.open(two)
        _ = try await (first, second)
        #expect(try await a.local.summary().storeOpen)
        #expect(await Self.eventually { await opened.unlocked >= 1 })
        try await Task.sleep(for: .milliseconds(200))
        #expect(await opened.unlocked == 1, "the store was opened twice")
        // And it locks and opens again as before.
        try await a.local.lock()
        try await a.local.unlock(secret: nil)
        #expect(try await a.local.summary().storeOpen)
        #expect(await Self.eventually { await opened.unlocked == 2 })
    }

    /// Two faces on one messenger: one marks seen what it showed; a message
    /// that came after it is not read until a face shows it.
    @Test(.timeLimit(.minutes(2))) func seenMarksReadOnlyThroughTheMessageAFaceShowed() async throws {
        let a = try await Self.side("reader", peers: [])
        let aPort = try #require(await a.node.port)
        let b = try await Self.side("writer", peers: [aPort])
        var logger = Logger(label: "test.api")
        logger.logLevel = .critical
        let api = APIServer(client: a.local, configuration: .init(directory: a.directory))
        let incoming = Incoming(), progress = SeenEvents()
        var tasks: [Task<Void, Never>] = [Task { await a.node.run() }, Task { await b.node.run() }, Task { await b.messenger.run() },
                                          Task { await a.messenger.run() },
                                          Task { for await e in a.messenger.events { await incoming.add(e) } },
                                          Task { for await e in b.messenger.events { await progress.add(e) } }]
        tasks += try api.applications(logger: logger).map { s in Task { try? await s.run() } }
        defer {
            for t in tasks { t.cancel() }
            for d in [a.directory, b.directory] { try? FileManager.default.removeItem(at: d) }
        }
        let remote = APIMessengerClient(APIClient(host: "127.0.0.1", port: await api.port, token: api.configuration.token))
        #expect(await Self.eventually { await b.node.peers.count == 1 })
        let toA = try #require(await b.messenger.conversation(withPeer: a.node.identity.peerID))
        let one = try await b.messenger.send("first", to: toA)
        #expect(await Self.eventually { await incoming.records.count == 1 })
        let two = try await b.messenger.send("second", to: toA)
        #expect(await Self.eventually { await incoming.records.count == 2 })
        let (conversation, shown) = try #require(await incoming.records.first)
        #expect(shown.text == "first")
        // A face that showed only the first.
        try await remote.markSeen(conversation, through: shown.id)
        #expect(await Self.eventually { await progress.read(one.transportID ?? "") })
        try await Task.sleep(for: .milliseconds(500))
        #expect(await !progress.read(two.transportID ?? ""), "read before any face showed it")
        #expect(try await remote.conversation(conversation).unread == 1)
        // A message ID the messenger does not hold marks nothing; one that is not an ID is refused.
        try await remote.markSeen(conversation, through: UserID.random())
        #expect(try await remote.conversation(conversation).unread == 1)
        let api2 = APIClient(host: "127.0.0.1", port: await api.port, token: api.configuration.token)
        await #expect(throws: APIClient.Failure.self) { _ = try await api2.post("/v1/conversations/\(conversation)/seen", ["through": "nope"]) }
        // Then the face shows the second.
        let second = try #require(await incoming.records.last?.1)
        try await remote.markSeen(conversation, through: second.id)
        #expect(await Self.eventually { await progress.read(two.transportID ?? "") })
        #expect(try await remote.conversation(conversation).unread == 0)
    }

    /// Files that came are remembered for GET /v1/files/ID: the newest 1,000, flooded past that.
    @Test func theFilesThatCameAreAFloodBoundedTable() async {
        let files = APIServer.ReceivedFiles()
        for i in 0..<1_500 { await files.add("t\(i)", "/x/files/incoming/\(i)") }
        let (kept, order) = (await files.paths.count, await files.order.count)
        #expect(kept == 1_000 && order == 1_000)
        #expect(await files.path("t499") == nil) // the oldest went
        #expect(await files.path("t500") == "/x/files/incoming/500")
        #expect(await files.path("t1499") == "/x/files/incoming/1499")
        await files.add("t1499", "/x/again") // the same one again: not counted twice
        #expect(await files.order.count == 1_000)
        #expect(await files.path("t1499") == "/x/again")
    }

    /// Uploads waiting for their transfer are a flood-bounded table: past 128,
    /// the oldest goes (its copy removed), never an arbitrary one.
    @Test func uploadsPastTheBoundLoseTheOldest() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("uploads-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        func copy(_ i: Int) throws -> URL {
            let dir = root.appendingPathComponent("u\(i)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            let url = dir.appendingPathComponent("f.bin")
            _ = FileManager.default.createFile(atPath: url.path, contents: Data([1]))
            return url
        }
        let uploads = APIServer.Uploads(adopting: ["t0": try copy(0)]) // one kept from a run before: the oldest
        for i in 1...130 { await uploads.sending("t\(i)", try copy(i)) }
        let (count, ordered) = (await uploads.byTransfer.count, await uploads.order.count)
        #expect(count == 128 && ordered == 128)
        for gone in 0...2 {
            #expect(await uploads.byTransfer["t\(gone)"] == nil)
            #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("u\(gone)").path))
        }
        #expect(await uploads.byTransfer["t3"] != nil && FileManager.default.fileExists(atPath: root.appendingPathComponent("u3").path))
        #expect(await uploads.byTransfer["t130"] != nil)
        await uploads.ended("t3")
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("u3").path))
        let order = await uploads.order
        #expect(order.count == 127 && order.first == "t4")
        // At a start, the directories no adopted upload names are cleared, the adopted ones kept.
        let restarted = APIServer.Uploads(adopting: ["t4": root.appendingPathComponent("u4/f.bin")])
        try APIServer.Uploads.clear(root, keeping: restarted.keptAtStart)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path) == ["u4"])
    }

    /// A daemon whose kept offers cannot be read deletes no upload: a receiver
    /// may still be resuming one. The control: readable and empty, the same
    /// copies are stale and go.
    @Test func unreadableKeptOffersClearNoUpload() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("uploads-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let outgoing = root.appendingPathComponent("files/outgoing"), offered = root.appendingPathComponent("files/offered")
        try FileManager.default.createDirectory(at: outgoing.appendingPathComponent("u1"), withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: offered.path, contents: Data([1])) // a file where the directory should be
        #expect(throws: (any Error).self) { try KeptOffers(directory: offered).files() }
        let unreadable = APIServer.Uploads.atStart(keptOffers: offered, outgoing: outgoing)
        #expect(unreadable.keptAtStart == nil)
        try APIServer.Uploads.clear(outgoing, keeping: unreadable.keptAtStart)
        #expect(try FileManager.default.contentsOfDirectory(atPath: outgoing.path) == ["u1"])
        // Control: an empty, readable record keeps nothing, so the stale copy goes.
        try FileManager.default.removeItem(at: offered)
        try FileManager.default.createDirectory(at: offered, withIntermediateDirectories: true)
        #expect(try KeptOffers(directory: offered).files().isEmpty)
        let readable = APIServer.Uploads.atStart(keptOffers: offered, outgoing: outgoing)
        try APIServer.Uploads.clear(outgoing, keeping: readable.keptAtStart)
        #expect(try FileManager.default.contentsOfDirectory(atPath: outgoing.path).isEmpty)
    }

    actor Incoming {
        var records: [(UserID, MessageRecord)] = []
        func add(_ e: MessengerEvent) { if case let .privateMessage(c, r, _, _, _, _, _) = e { records.append((c, r)) } }
    }

    actor SeenStoreEvents {
        var unlocked = 0
        func add(_ e: MessengerEvent) { if case .storeUnlocked = e { unlocked += 1 } }
    }

    actor ReceivedTexts {
        var texts: Set<String> = []
        func add(_ t: String) { texts.insert(t) }
        func contains(_ t: String) -> Bool { texts.contains(t) }
    }

    actor SeenEvents {
        var states: [String: MessageState] = [:]
        var boardPosts: [BoardEntry] = []
        func add(_ e: MessengerEvent) {
            if case let .node(.boardPost(p, _, _)) = e { boardPosts.append(p) }
            if case let .progress(_, record) = e, let id = record.transportID, let s = record.progress?.state { states[id] = max(states[id] ?? s, s) }
        }
        func delivered(_ id: String) -> Bool { (states[id] ?? .composing) >= .delivered }
        func read(_ id: String) -> Bool { states[id] == .read }
    }
}
