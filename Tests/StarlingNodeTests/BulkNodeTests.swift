import Foundation
import Testing
import Starling

/// Issue 40 in process: two nodes over an in-memory hub, files over TCP on
/// loopback. A file too large for the mesh goes as an offer; a receiver that
/// cannot reach the sender gives up in words, and the sender hears it.
@Suite struct BulkNodeTests {
    typealias Recorder = RuntimeTests.Recorder

    static func node(_ name: String, _ t: any Transport, _ dir: URL, advertise: [String]? = nil,
                     configure: (inout MeshNode.BulkOptions) -> Void = { _ in }) throws -> MeshNode {
        var o = MeshNode.Options(nickname: name)
        o.udp = nil
        o.transports = [t]
        o.downloads = dir.appendingPathComponent(name)
        var b = MeshNode.BulkOptions()
        b.host = "127.0.0.1"
        b.advertise = advertise
        b.attempts = 2
        b.retryWait = .milliseconds(100)
        configure(&b)
        o.bulk = b
        return try MeshNode(identity: .generate(), options: o)
    }

    /// Alice and Bob on an in-memory hub, running, their events recorded, once
    /// each sees the other (and Bob's wifiBulk); a 2 MB file of alice's in `dir`.
    struct Pair {
        let alice: MeshNode, bob: MeshNode
        let seenA = Recorder(), seenB = Recorder()
        let tasks: [Task<Void, Never>]
        let file: URL
        let hub = InMemoryHub()

        init(_ name: String, alice advertise: [String]? = nil, bob configure: (inout MeshNode.BulkOptions) -> Void = { _ in }) async throws {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("starling-bulk-node-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            file = dir.appendingPathComponent(name)
            try Data((0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(to: file)
            let ta = hub.endpoint("a"), tb = hub.endpoint("b")
            let alice = try BulkNodeTests.node("alice", ta, dir, advertise: advertise)
            let bob = try BulkNodeTests.node("bob", tb, dir, configure: configure)
            let (seenA, seenB) = (seenA, seenB)
            (self.alice, self.bob) = (alice, bob)
            tasks = [Task { await alice.run() }, Task { await bob.run() },
                     Task { for await e in alice.events { await seenA.add(e) } }, Task { for await e in bob.events { await seenB.add(e) } }]
            hub.connect(ta, tb, maxFrame: 512)
            #expect(await RuntimeTests.waitFor(seconds: 120) {
                let ab = await alice.peers.values.contains { $0.capabilities?.contains(.wifiBulk) == true }
                let ba = await bob.peer(named: "alice") != nil
                return ab && ba
            }, "bob announces wifiBulk")
        }

        func stop() async {
            await alice.stop()
            await bob.stop()
            for t in tasks { await t.value }
        }
    }

    @Test(arguments: [true, false])
    func aLargeFileGoesOverTCPOrIsGivenUpInWords(reachable: Bool) async throws {
        // Unreachable: the offer names a port nothing listens on.
        let pair = try await Pair("survey.tif", alice: reachable ? nil : ["127.0.0.1:1"])
        let (alice, seenA, seenB, file) = (pair.alice, pair.seenA, pair.seenB, pair.file)
        let id = try await alice.sendFile(at: file, to: try #require(await alice.peer(named: "bob")))
        if reachable {
            #expect(await RuntimeTests.waitFor(seconds: 60) { await seenA.events.contains { if case .delivered(id, _) = $0 { true } else { false } } })
            // Bob says "saved" before his own event reaches his recorder: wait for it too.
            #expect(await RuntimeTests.waitFor(seconds: 60) { await seenB.events.contains { if case .fileReceived = $0 { true } else { false } } })
            let got = await seenB.events.compactMap { if case let .fileReceived(_, name, size, path, t) = $0 { (name, size, path, t) } else { nil } }
            #expect(got.count == 1 && got.first?.0 == "survey.tif" && got.first?.1 == 2_000_000 && got.first?.3 == id)
            #expect(try Data(contentsOf: URL(fileURLWithPath: try #require(got.first?.2))) == Data(contentsOf: file))
            #expect(await seenB.events.contains { if case .fileProgress = $0 { true } else { false } })
            // The sender's side: offered (0 fragments: not the mesh), then what is on bob's disk, to the whole.
            #expect(await seenA.events.contains { if case .fileSent(id, _, 0) = $0 { true } else { false } })
            let sending = await seenA.events.compactMap { if case let .fileSending(t, _, sent, total) = $0, t == id { (sent, total) } else { nil } }
            #expect(sending.last.map { $0 == (2_000_000, 2_000_000) } == true, "\(sending)")
        } else {
            #expect(await RuntimeTests.waitFor(seconds: 60) {
                await seenA.events.contains { if case let .rejected(r) = $0 { r.kind == .fileRefused && r.detail.contains("cannot reach the sender") } else { false } }
            }, "alice heard bob give up")
            #expect(await seenB.events.contains { if case let .rejected(r) = $0 { r.kind == .fileNotSaved } else { false } })
            #expect(!(await seenB.events.contains { if case .fileReceived = $0 { true } else { false } }))
        }
        await pair.stop()
    }

    /// Above `acceptUpTo`, a node with a person asks: the offer waits for an
    /// answer (taken, declined, or declined when none came in time), and at
    /// most `maxAsked` wait at once.
    @Test func aLargeOfferWaitsForItsPersonsAnswer() async throws {
        let pair = try await Pair("map.pdf") { b in
            b.acceptUpTo = 1_000_000
            b.ask = true
            b.askTimeout = .seconds(15) // past the time three offers take to arrive on a loaded machine
            b.maxAsked = 2
        }
        let (alice, bob, seenA, seenB, file) = (pair.alice, pair.bob, pair.seenA, pair.seenB, pair.file)
        let toBob = try #require(await alice.peer(named: "bob"))
        func offered(_ id: String) async -> Bool {
            await RuntimeTests.waitFor(seconds: 120) { await seenB.events.contains { if case .fileOffered(_, id, "map.pdf", 2_000_000, _) = $0 { true } else { false } } }
        }
        func declined(_ why: String) async -> Bool {
            await RuntimeTests.waitFor(seconds: 120) {
                await seenA.events.contains { if case let .rejected(r) = $0 { r.kind == .fileRefused && r.detail.contains(why) } else { false } }
            }
        }
        // Taken: asked first, fetched only once the answer is yes.
        let first = try await alice.sendFile(at: file, to: toBob)
        #expect(await offered(first))
        #expect(await bob.fileOffers.map(\.transferID) == [first])
        try await Task.sleep(for: .milliseconds(500))
        #expect(!(await seenB.events.contains { if case .fileReceived = $0 { true } else { false } }), "nothing is fetched before the answer")
        try await bob.answerFileOffer(first, accept: true)
        #expect(await RuntimeTests.waitFor(seconds: 60) { await seenA.events.contains { if case .delivered(first, _) = $0 { true } else { false } } })
        // Bob says "saved" over TCP before his own event reaches his recorder: wait for it too.
        #expect(await RuntimeTests.waitFor(seconds: 60) {
            await seenB.events.contains { if case .fileReceived(_, "map.pdf", 2_000_000, _, first) = $0 { true } else { false } }
        })
        #expect(await bob.fileOffers.isEmpty)
        await #expect(throws: MeshNode.UnknownFileOffer.self) { try await bob.answerFileOffer(first, accept: true) }
        // Declined: the sender reads it, and its transfer fails.
        let second = try await alice.sendFile(at: file, to: toBob)
        #expect(await offered(second))
        try await bob.answerFileOffer(second, accept: false)
        #expect(await declined("declined the file: not wanted"))
        #expect(await RuntimeTests.waitFor(seconds: 10) { await seenA.events.contains { if case .failed(second, _) = $0 { true } else { false } } })
        // Three at once where two may wait: the oldest is declined; the others, never answered, at the timeout.
        var more: [String] = []
        for _ in 0..<3 {
            more.append(try await alice.sendFile(at: file, to: toBob))
            #expect(await offered(more.last!))
        }
        #expect(await declined("too many files offered at once"))
        #expect(await bob.fileOffers.map(\.transferID) == Array(more.suffix(2)))
        #expect(await declined("not answered in time"))
        #expect(await RuntimeTests.waitFor(seconds: 120) { await bob.fileOffers.isEmpty })
        let three = more
        #expect(await RuntimeTests.waitFor(seconds: 10) {
            await seenA.events.filter { if case let .failed(id, _) = $0 { three.contains(id) } else { false } }.count == 3
        })
        #expect(await seenB.events.filter { if case .fileReceived = $0 { true } else { false } }.count == 1, "only the one taken was fetched")
        await pair.stop()
    }
}
