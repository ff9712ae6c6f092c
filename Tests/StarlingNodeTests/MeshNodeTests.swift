import Foundation
import Testing
import StarlingCrypto
import StarlingMesh
import StarlingNode
import StarlingTransport
import StarlingWire

/// What a node has said so far, for tests that wait for an event.
actor EventLog {
    private(set) var events: [MeshNode.Event] = []
    func append(_ e: MeshNode.Event) { events.append(e) }

    /// Waits (bounded) until an event matches; returns it.
    func wait(seconds: Double, _ match: @Sendable (MeshNode.Event) -> Bool) async -> MeshNode.Event? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let e = events.first(where: match) { return e }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return events.first(where: match)
    }
}

/// A node running in this process on 127.0.0.1, its events logged.
struct RunningNode {
    let node: MeshNode
    let log = EventLog()
    let task: Task<Void, Never>

    init(_ identity: Identity, _ options: MeshNode.Options, seconds: Double = 30) throws {
        let node = try MeshNode(identity: identity, options: options)
        self.node = node
        let log = self.log
        let deadline = UInt64(Date().timeIntervalSince1970 * 1000) + UInt64(seconds * 1000)
        task = Task {
            async let run: Void = node.run(until: deadline)
            for await e in node.events { await log.append(e) }
            await run
        }
    }

    func stop() async {
        await node.stop()
        await task.value
    }
}

func options(_ name: String, port: UInt16? = nil, peers: [UInt16] = []) -> MeshNode.Options {
    var o = MeshNode.Options(nickname: name)
    o.port = port
    o.discovery = false
    o.peers = peers.map { UDPAddress.loopback($0) }
    o.announceInterval = 300
    return o
}

@Suite(.serialized) struct MeshNodeTests {
    @Test func aMessageForAnAbsentFavouriteIsHeldAndDeliveredWhenItReturns() async throws {
        let alice = Identity.generate(), carol = Identity.generate()
        var a = options("alice")
        a.favorites = [carol.fingerprint]
        a.retry.firstRetry = 200
        a.retry.maxInterval = 400
        a.retry.budget = 1_000
        let nodeA = try RunningNode(alice, a)
        let portA = await nodeA.node.port
        let carol1 = try RunningNode(carol, options("carol", peers: [portA]))
        let portC = await carol1.node.port
        #expect(await nodeA.log.wait(seconds: 5) { if case .peer(_, "carol", _) = $0 { true } else { false } } != nil)
        await carol1.stop()                                        // carol leaves (no LEAVE: she just goes)

        let id = try await nodeA.node.sendPrivate("while you were away", to: carol.peerID)
        let held = await nodeA.log.wait(seconds: 5) { if case .held(id, _) = $0 { true } else { false } }
        #expect(held != nil)                                       // budget spent: held, not failed
        let failed = await nodeA.log.events.contains { if case .failed = $0 { true } else { false } }
        #expect(!failed)

        let carol2 = try RunningNode(carol, options("carol", port: portC, peers: [portA])) // she is back
        let got = await carol2.log.wait(seconds: 15) { if case .privateMessage(_, _, "while you were away", _, _) = $0 { true } else { false } }
        #expect(got != nil)
        let delivered = await nodeA.log.wait(seconds: 5) { if case .delivered(id, _) = $0 { true } else { false } }
        #expect(delivered != nil)
        await carol2.stop()
        await nodeA.stop()
    }

    @Test func aNonFavouriteFailsAtTheEndOfItsBudgetAndSaysSo() async throws {
        let alice = Identity.generate(), bob = Identity.generate()
        var a = options("alice")
        a.retry.firstRetry = 200
        a.retry.maxInterval = 400
        a.retry.budget = 1_000
        let nodeA = try RunningNode(alice, a)
        let start = Date()
        let id = try await nodeA.node.sendPrivate("nobody is there", to: bob.peerID)
        let failed = await nodeA.log.wait(seconds: 5) { if case .failed(id, _) = $0 { true } else { false } }
        #expect(failed != nil)
        #expect(Date().timeIntervalSince(start) >= 1.0)            // not before the budget
        let held = await nodeA.log.events.contains { if case .held = $0 { true } else { false } }
        #expect(!held)
        await nodeA.stop()
    }
}
