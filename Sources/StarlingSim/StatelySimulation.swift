import StarlingCrypto
import StarlingMesh
import StarlingStately
import StarlingWire

/// Stately on every node of a topology, over the simulated radio: the same
/// engine as a real node, on a virtual clock. Deterministic for a seed.
public struct StatelySimulation: RadioSimulation {
    public private(set) var topology: Topology
    public private(set) var engines: [StatelyEngine]
    public var medium: RadioMedium
    public var now: Millis { medium.now }
    /// Every action an engine gives, with the node and the time (transmissions included).
    public var onAction: ((_ node: Int, _ action: StatelyEngine.Action, _ at: Millis) -> Void)?

    /// One engine per node; `configure` adjusts each node's configuration.
    public init(topology: Topology, radio: RadioMedium.Radio, seed: UInt64,
                configure: (Int, inout StatelyEngine.Configuration) -> Void = { _, _ in }) {
        self.topology = topology
        var rng = SeededGenerator(seed: seed)
        engines = (0..<topology.nodeCount).map { i in
            var config = StatelyEngine.Configuration(name: "node\(i)")
            configure(i, &config)
            final class Counter: @unchecked Sendable { var n: UInt64 = 0 }
            let counter = Counter()
            // In a simulation nonces need only be unique under the shared key: node ‖ counter.
            let nonce: @Sendable () -> [UInt8] = {
                counter.n += 1
                return (0..<4).map { UInt8(truncatingIfNeeded: i >> (8 * (3 - $0))) }
                    + (0..<8).map { UInt8(truncatingIfNeeded: counter.n >> (8 * UInt64(7 - $0))) }
            }
            var e = StatelyEngine(senderID: Simulator.peerID(i), configuration: config, seed: rng.next(), nonce: nonce)
            for j in topology.neighbors[i] { e.linkUp(LinkID(UInt32(j))) }
            return e
        }
        medium = RadioMedium(nodes: topology.nodeCount, radio: radio, rng: rng)
    }

    public var transmissions: [Int] { medium.transmissions }

    /// Runs something on one node's engine now (set a state, change power mode …).
    public mutating func at(_ node: Int, _ body: (inout StatelyEngine, Millis) -> [StatelyEngine.Action]) {
        let actions = body(&engines[node], now)
        perform(actions, node: node)
    }

    public mutating func receive(_ bytes: [UInt8], at node: Int, from: Int) {
        perform(engines[node].receive(bytes, on: LinkID(UInt32(from)), now: now), node: node)
    }

    public mutating func tick(_ node: Int) {
        perform(engines[node].tick(now: now), node: node)
    }

    private mutating func perform(_ actions: [StatelyEngine.Action], node: Int) {
        for action in actions {
            if case let .transmit(bytes, links) = action { medium.transmit(bytes, from: node, on: links) }
            onAction?(node, action, now)
        }
        medium.wake(node, at: engines[node].nextDeadline)
    }
}
