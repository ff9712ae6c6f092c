import StarlingMesh
import StarlingSim

/// `starling-bench services`: directed traffic (source routes against the
/// shortest path and against flooding), private-delivery reliability under
/// loss and churn, and a healed partition's convergence with its sync traffic.
enum ServicesBench {
    static func run() {
        print("starling-bench services (release; random geometric graphs; the default relay policy, \(defaultRelayPolicy().name))\n")
        print("source routes: one message at a time between random pairs, TTL 32, no loss; sent along the route, then flooded")
        for (n, degree) in [(100, 8.0), (300, 8.0), (300, 16.0), (1000, 8.0)] {
            let topology = MeshBench.graph(nodes: n, degree: degree)
            var e = DirectedExperiment()
            e.messages = n >= 1000 ? 50 : 100
            e.ttl = 32
            e.seed = UInt64(n)
            let r = e.routeCost(on: topology, policy: defaultRelayPolicy())
            print("  n=\(n) d≈\(format1(topology.meanDegree)): shortest \(format2(r.shortestHops)) hops; routed \(format2(r.routedTransmissions)) tx (\(format2(r.routedRatio))× shortest, goal ≤ 1.2); flooded \(format1(r.floodedTransmissions)) tx; delivered \(r.delivered)/\(r.messages)")
        }
        print("\nprivate delivery: 100 nodes (d≈8), messages 0.5 s apart between pairs within TTL 16, acknowledged; retries 2 s ×2 ≤ 60 s, budget 5 min; first send routed, retries flooded")
        let hundred = MeshBench.graph(nodes: 100, degree: 8)
        for (loss, churn, routes, count) in [(0.05, 0.0, true, 1_000), (0.10, 0.0, true, 1_000), (0.10, 0.10, false, 1_000),
                                             (0.10, 0.10, true, 5_000)] {
            var e = DirectedExperiment()
            e.messages = count
            e.radio.loss = loss
            e.churn = churn
            e.sourceRoutes = routes
            e.seed = 7
            let clock = ContinuousClock()
            let t0 = clock.now
            let r = e.reliability(on: hundred, policy: defaultRelayPolicy())
            let wall = clock.now - t0
            print("  loss \(MeshBench.pct(loss)) offline \(MeshBench.pct(churn)) \(routes ? "routes" : "no routes"): delivered \(r.delivered)/\(r.sent) (\(MeshBench.pct(r.deliveredRatio)), goal ≥ 99.9%), failed \(r.failed), falsely delivered \(r.falselyDelivered), duplicate acks \(r.duplicateAcknowledgements); \(format2(r.attemptsPerMessage)) sends and \(format1(r.transmissionsPerMessage)) tx per message; ack p50/p99 \(r.latencyPercentile(0.5))/\(r.latencyPercentile(0.99)) ms; \(format2(Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18)) s")
        }
        print("\npartition heal: a 300-node mesh (d≈8) cut in two halves while 40 public messages are sent over 60 s, 5% loss; then joined")
        let three = MeshBench.graph(nodes: 300, degree: 8)
        for (repair, seed) in [(true, 3), (true, 4), (true, 5), (false, 3)] as [(Bool, UInt64)] {
            var e = PartitionExperiment()
            e.radio.loss = 0.05
            e.seed = seed
            if !repair { e.sync.repairRelayWindow = nil }
            let r = e.run(on: three, policy: defaultRelayPolicy())
            let conv = r.convergence.map { "\(format1(Double($0) / 1000)) s = \(format2(r.convergenceIntervals ?? 0)) intervals of 15 s (goal ≤ 2)" } ?? "not within \(e.maxIntervals) intervals"
            print("  seed \(seed) \(repair ? "repairs relayed" : "sync replies only (TTL 0)"): own half complete before the join \(r.completeBeforeHeal)/\(three.largestComponent.count); converged in \(conv); sync while apart \(Int(r.splitSyncBytesPerNodePerInterval)) B/node/interval, after the join \(Int(r.syncBytesPerNodePerInterval)), all traffic after the join \(Int(r.allBytesPerNodePerInterval)) B/node/interval; \(r.repairsRelayed) repairs relayed")
        }
    }
}
