import Foundation
import Synchronization
import Testing
import Starling

/// The machine's clocks, with a wall clock that a test steps (as NTP, or a
/// person setting the time, does) and a monotonic clock that a test moves on
/// (as a laptop's suspend does, which `CLOCK_BOOTTIME` counts).
final class SteppedClock: NodeClock {
    private let system = SystemClock()
    private let steps = Mutex<(wall: Int64, monotonic: UInt64)>((0, 0))

    func stepWall(by millis: Int64) { steps.withLock { $0.wall += millis } }
    /// A suspend: both clocks move on.
    func suspend(for millis: UInt64) { steps.withLock { $0.wall += Int64(millis); $0.monotonic += millis } }

    func wallMillis() -> UInt64 { UInt64(Int64(system.wallMillis()) + steps.withLock { $0.wall }) }
    func monotonicMillis() -> UInt64 { system.monotonicMillis() + steps.withLock { $0.monotonic } }
}

/// Issue 37, item 4: an NTP step of ±1 h moves no timer (retries, expiries,
/// relay delays run on the monotonic clock), while packets are stamped with,
/// and judged by, the wall clock. Nodes in one process share one clock, as
/// programs on one machine do.
@Suite struct ClockStepTests {
    typealias Recorder = RuntimeTests.Recorder

    static func options(_ name: String, _ transports: [any Transport], _ clock: SteppedClock) -> MeshNode.Options {
        var o = MeshNode.Options(nickname: name)
        o.udp = nil
        o.transports = transports
        o.clock = clock
        o.power = NoPower()
        return o
    }

    struct NoPower: PowerProvider { func read() -> PowerReading? { nil } }

    struct Line {
        let hub = InMemoryHub()
        let nodes: [MeshNode]
        let recorders: [Recorder]
        let tasks: [Task<Void, Never>]
        let ends: [InMemoryTransport]

        /// a – r – b: a and b hear each other only through r's relaying.
        init(_ clock: SteppedClock) throws {
            let ta = hub.endpoint("a"), tr1 = hub.endpoint("r1"), tr2 = hub.endpoint("r2"), tb = hub.endpoint("b")
            let r = try MeshNode(identity: .generate(), options: ClockStepTests.options("r", [tr1, tr2], clock))
            let a = try MeshNode(identity: .generate(), options: ClockStepTests.options("a", [ta], clock))
            let b = try MeshNode(identity: .generate(), options: ClockStepTests.options("b", [tb], clock))
            nodes = [a, r, b]
            recorders = nodes.map { _ in Recorder() }
            var tasks: [Task<Void, Never>] = nodes.map { n in Task { await n.run() } }
            for (n, rec) in zip(nodes, recorders) { tasks.append(Task { for await e in n.events { await rec.add(e) } }) }
            self.tasks = tasks
            ends = [ta, tr1, tr2, tb]
            connect()
        }

        /// Links what is not linked (as a Bluetooth scan finds its neighbours again).
        func connect() {
            hub.connect(ends[0], ends[1], maxFrame: 512)
            hub.connect(ends[2], ends[3], maxFrame: 512)
        }

        func stop() async {
            for n in nodes { await n.stop() }
            for t in tasks { await t.value }
        }
    }

    static func messages(_ r: Recorder) async -> [(text: String, timestamp: UInt64)] {
        await r.events.compactMap { if case let .message(_, _, text, _, timestamp, _) = $0 { (text, timestamp) } else { nil } }
    }

    @Test(arguments: [-3_600_000, 3_600_000] as [Int64])
    func aStepOfTheWallClockMovesNoTimer(step: Int64) async throws {
        let clock = SteppedClock()
        let line = try Line(clock)
        let (a, b) = (line.nodes[0], line.nodes[2])
        #expect(await RuntimeTests.waitFor(seconds: 60) { 
            let ab = await a.peer(named: "b"), ba = await b.peer(named: "a")
            return ab != nil && ba != nil
         })
        let first = try await a.sendPrivate("before the step", to: b.peerID)
        #expect(await RuntimeTests.waitFor(seconds: 60) { await line.recorders[0].events.contains { if case .delivered(first, _) = $0 { true } else { false } } })
        let seenBefore = await line.recorders[0].events.count

        clock.stepWall(by: step)
        // Housekeeping (peers' expiry, link health) runs every second: give it several.
        try await Task.sleep(for: .seconds(3))
        try await a.sendPublic("after the step")
        let second = try await a.sendPrivate("after the step, privately", to: b.peerID)
        #expect(await RuntimeTests.waitFor(seconds: 60) {
            let got = await Self.messages(line.recorders[2]).contains { $0.text == "after the step" }
            let events = await line.recorders[0].events
            return got && events.contains { if case .delivered(second, _) = $0 { true } else { false } }
        }, "a public message through r and a private one acknowledged after a step of \(step / 1000) s")
        // Stamped with the wall clock as it is now: b, whose clock says the same, takes it as fresh.
        let stamp = try #require(await Self.messages(line.recorders[2]).first { $0.text == "after the step" }?.timestamp)
        #expect(Int64(stamp).distance(to: Int64(clock.wallMillis())).magnitude < 30_000,
                "stamped \(stamp), the wall clock says \(clock.wallMillis())")
        // Nobody expired, no link dropped, no session made again.
        let after = await line.recorders[0].events.dropFirst(seenBefore)
        #expect(!after.contains { ["left", "linkDown", "session"].contains($0.name) }, "\(after.map(\.name))")
        #expect(await a.peer(named: "b") != nil)
        await line.stop()
    }

    /// The positive control beside the step: a laptop's suspend of an hour moves
    /// the monotonic clock too, and then peers heard an hour ago do expire.
    @Test func anHourOfSuspendExpiresThePeers() async throws {
        let clock = SteppedClock()
        let line = try Line(clock)
        let (a, b) = (line.nodes[0], line.nodes[2])
        #expect(await RuntimeTests.waitFor(seconds: 60) { 
            let ab = await a.peer(named: "b"), ba = await b.peer(named: "a")
            return ab != nil && ba != nil
         })
        let seenBefore = await line.recorders[0].events.count
        clock.suspend(for: 3_600_000)
        #expect(await RuntimeTests.waitFor(seconds: 120) {
            await line.recorders[0].events.dropFirst(seenBefore).contains { if case .left(b.peerID) = $0 { true } else { false } }
        }, "b expires at a after an hour asleep")
        // Their links were silent for an hour too, and were dropped (wait until every end has
        // let go, or a late close would cut the new link); found again, b is heard again.
        #expect(await RuntimeTests.waitFor(seconds: 120) {
            !line.hub.isLinked(line.ends[0], line.ends[1]) && !line.hub.isLinked(line.ends[1], line.ends[0])
                && !line.hub.isLinked(line.ends[2], line.ends[3]) && !line.hub.isLinked(line.ends[3], line.ends[2])
        })
        line.connect()
        #expect(await RuntimeTests.waitFor(seconds: 60) { await a.peer(named: "b") != nil })
        await line.stop()
    }
}
