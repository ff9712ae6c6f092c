import Foundation
import StarlingMesh
import StarlingStately
import StarlingWire

/// Every node of a mesh shares a state at one power mode: what it costs in
/// radio transmissions, and how fresh and complete each node's view is.
public struct StatelyExperiment: Sendable {
    public var mode: PowerMode = .balanced
    public var duration: Millis = 300_000
    /// Views are sampled this often, after a first interval of warm-up.
    public var sampleEvery: Millis = 5_000
    public var radio = RadioMedium.Radio()
    public var cancelAfter: Int? = nil
    public var seed: UInt64 = 1
    public init() {}

    public struct Result: Sendable {
        public var mode: PowerMode
        public var nodes: Int
        public var transmissionsPerNodePerMinute: Double
        public var bytesPerNodePerMinute: Double
        /// Ages (now − the state's timestamp) of the states nodes show, sampled: median and p95, ms.
        public var medianAge: Millis
        public var p95Age: Millis
        /// Of the peers within 3 hops, the share each node shows (mean over samples).
        public var coverage: Double
        /// Shown states of peers beyond 3 hops (must be 0).
        public var beyondReach: Int
        public var wallSeconds: Double
    }

    public func run(on topology: Topology) -> Result {
        let clock = ContinuousClock()
        let start = clock.now
        var sim = StatelySimulation(topology: topology, radio: radio, seed: seed) { _, c in c.cancelAfter = cancelAfter }
        var rng = SeededGenerator(seed: seed ^ 0x57A7E)
        let kinds = StateKind.allCases.filter { $0 != .invisible && $0 != .sos }
        // Everyone starts at a random moment of the first interval, in a random state.
        let starts = (0..<topology.nodeCount).map { _ in rng.next() % mode.broadcastInterval }
        let order = (0..<topology.nodeCount).sorted { (starts[$0], $0) < (starts[$1], $1) }
        for node in order {
            sim.run(until: starts[node])
            let kind = kinds[Int(rng.next() % UInt64(kinds.count))]
            sim.at(node) { e, now in
                e.setOverride(mode, now: now)
                return e.set(kind, now: now)
            }
        }
        let within = (0..<topology.nodeCount).map { i in
            Set(topology.distances(from: i).enumerated().filter { $0.offset != i && ($0.element.map { $0 <= 3 } ?? false) }.map(\.offset))
        }
        let index = Dictionary(uniqueKeysWithValues: (0..<topology.nodeCount).map { (Simulator.peerID($0), $0) })
        let tx0 = sim.medium.transmissions.reduce(0, +), bytes0 = sim.medium.bytesSent.reduce(0, +)
        let measureFrom = sim.now + mode.broadcastInterval
        sim.run(until: measureFrom)
        let txWarm = sim.medium.transmissions.reduce(0, +) - tx0, bytesWarm = sim.medium.bytesSent.reduce(0, +) - bytes0
        var ages: [Millis] = [], coverage: [Double] = [], beyond = 0
        var t = measureFrom
        while t < measureFrom + duration {
            t += sampleEvery
            sim.run(until: t)
            for i in 0..<topology.nodeCount {
                let board = sim.engines[i].board
                var shown = 0
                for (peer, s) in board {
                    ages.append(t > s.timestamp ? t - s.timestamp : 0)
                    if let j = index[peer], within[i].contains(j) { shown += 1 } else { beyond += 1 }
                }
                if !within[i].isEmpty { coverage.append(Double(shown) / Double(within[i].count)) }
            }
        }
        let minutes = Double(duration) / 60_000
        let tx = sim.medium.transmissions.reduce(0, +) - tx0 - txWarm
        let bytes = sim.medium.bytesSent.reduce(0, +) - bytes0 - bytesWarm
        ages.sort()
        let elapsed = clock.now - start
        return Result(mode: mode, nodes: topology.nodeCount,
                      transmissionsPerNodePerMinute: Double(tx) / Double(topology.nodeCount) / minutes,
                      bytesPerNodePerMinute: Double(bytes) / Double(topology.nodeCount) / minutes,
                      medianAge: ages.isEmpty ? 0 : ages[ages.count / 2],
                      p95Age: ages.isEmpty ? 0 : ages[min(ages.count - 1, ages.count * 95 / 100)],
                      coverage: coverage.isEmpty ? 0 : coverage.reduce(0, +) / Double(coverage.count),
                      beyondReach: beyond,
                      wallSeconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}
