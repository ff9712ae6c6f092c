import Foundation
import StarlingTestSupport
import Testing
import Starling

/// The node runtime over transports that are not sockets: the same node that
/// `starling` runs, with an in-memory hub.
@Suite struct RuntimeTests {
    /// Collects a node's events as they come.
    actor Recorder {
        var events: [NodeEvent] = []
        func add(_ e: NodeEvent) { events.append(e) }
        func has(_ name: String) -> Bool { events.contains { $0.name == name } }
    }

    /// Polls `condition` until it holds or `seconds` pass. The limits are
    /// generous (120 s where a node must first appear): on CI's two cores,
    /// synchronous simulations in other tests can hold both of Swift's
    /// cooperative threads for half a minute, and these nodes run on them.
    static func waitFor(seconds: Double, _ condition: @Sendable () async -> Bool) async -> Bool {
        await waitUntil(seconds: seconds, condition)
    }

    static func options(_ name: String, _ transport: any Transport) -> MeshNode.Options {
        var o = MeshNode.Options(nickname: name)
        o.udp = nil
        o.transports = [transport]
        return o
    }

    @Test func twoNodesTalkOverAnInMemoryHubWithoutSockets() async throws {
        let hub = InMemoryHub()
        let ta = hub.endpoint("a"), tb = hub.endpoint("b")
        let alice = try MeshNode(identity: .generate(), options: Self.options("alice", ta))
        let bob = try MeshNode(identity: .generate(), options: Self.options("bob", tb))
        let seenByBob = Recorder(), seenByAlice = Recorder()
        let runners = [Task { await alice.run() }, Task { await bob.run() }]
        let readers = [Task { for await e in bob.events { await seenByBob.add(e) } },
                       Task { for await e in alice.events { await seenByAlice.add(e) } }]
        hub.connect(ta, tb, maxFrame: 185)
        #expect(await Self.waitFor(seconds: 120) { await bob.peer(named: "alice") != nil })
        #expect(await alice.port == nil) // no UDP at all
        let id = try await alice.sendPrivate("over the hub", to: bob.peerID)
        #expect(await Self.waitFor(seconds: 120) { await seenByAlice.has("delivered") })
        let got = await seenByBob.events.compactMap { if case let .privateMessage(_, _, text, messageID, _, _) = $0 { (text, messageID) } else { nil } }
        #expect(got.map(\.0) == ["over the hub"] && got.map(\.1) == [id])
        #expect(await seenByBob.events.contains { if case .linkUp("memory a") = $0 { true } else { false } })
        hub.disconnect(ta, tb)
        #expect(await Self.waitFor(seconds: 120) { await seenByBob.has("linkDown") })
        await alice.stop()
        await bob.stop()
        for r in runners { await r.value }
        for r in readers { await r.value }
    }

    /// The runtime sleeps until the core's next deadline: idle and alone (no
    /// link), it wakes for its chores every 30 s, not every 10 ms as it used to
    /// poll (nor every second, as it did with a link).
    @Test func anIdleNodeSleeps() async throws {
        var options = MeshNode.Options(nickname: "idle")
        options.udp = nil
        let node = try MeshNode(identity: .generate(), options: options)
        let started = UInt64(Date().timeIntervalSince1970 * 1000)
        let runner = Task { await node.run() }
        try await Task.sleep(for: .seconds(3))
        let wakes = await node.wakeUps
        // Its first chores done (a starved test may get here before they are: at most 60 s more).
        let until = Date().addingTimeInterval(60)
        while (await node.coreDeadline ?? 0) < started, Date() < until { try await Task.sleep(for: .milliseconds(20)) }
        let wake = try #require(await node.scheduledWake), due = try #require(await node.coreDeadline)
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        await node.stop()
        await runner.value
        // Not polling (it used to wake 300 times in 3 s); the core's next
        // chores are 30 s after the first at its start (not a second, the pace
        // with a link), and the timer never sleeps past them. (How often and
        // when it did wake depends on the machine's load: other tests share
        // these threads, a starved test reads `now` late, and a timer armed
        // for an earlier deadline during the start stays armed and fires harmlessly.)
        #expect(wakes <= 12, "\(wakes) wake-ups in 3 s")
        #expect(due >= started + 29_000 && wake <= due, "core due \(Int64(due) - Int64(started)) ms after the start, timer at \(Int64(wake) - Int64(started)) ms")
        #expect(wake <= now + 30_050, "next wake \(Int64(wake) - Int64(now)) ms from now")
    }

    @Test func cancellingTheTaskThatRunsANodeStopsIt() async throws {
        var options = MeshNode.Options(nickname: "cancelled")
        options.udp = nil
        let node = try MeshNode(identity: .generate(), options: options)
        let runner = Task { await node.run() }
        try await Task.sleep(for: .milliseconds(200))
        runner.cancel()
        let finished = Recorder()
        let watcher = Task { await runner.value; await finished.add(.left(PeerID(rawValue: 1))) }
        #expect(await Self.waitFor(seconds: 120) { await finished.has("left") })
        watcher.cancel()
    }
}

/// README's embedding example compiles (it is in this target) and runs: two
/// greeters over an in-memory hub greet each other.
@Suite struct ReadmeExampleTests {
    static func block(in text: String, after start: String, before end: String) -> String? {
        guard let a = text.range(of: start), let b = text.range(of: end, range: a.upperBound..<text.endIndex) else { return nil }
        return String(text[a.upperBound..<b.lowerBound])
    }

    @Test func theREADMEShowsExactlyTheExampleThatRuns() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("ReadmeExample.swift"), encoding: .utf8)
        let inReadme = try #require(Self.block(in: readme, after: "<!-- example: embed -->\n```swift\n", before: "```"))
        let inSource = try #require(Self.block(in: source, after: "// README example: begin\n", before: "// README example: end"))
        #expect(inReadme == inSource)
    }

    @Test func twoGreetersGreetEachOther() async throws {
        let hub = InMemoryHub()
        let ta = hub.endpoint("a"), tb = hub.endpoint("b")
        var oa = MeshNode.Options(nickname: "alice"), ob = MeshNode.Options(nickname: "bob")
        (oa.udp, ob.udp) = (nil, nil)
        (oa.transports, ob.transports) = ([ta], [tb])
        async let heardByAlice = greeter(oa)
        async let heardByBob = greeter(ob)
        hub.connect(ta, tb)
        let (a, b) = try await (heardByAlice, heardByBob)
        #expect(a == "bob: hello alice!")
        #expect(b == "alice: hello bob!")
    }
}
