import StarlingMesh
import StarlingSim

/// `starling-bench mesh`: relay policies on random geometric graphs with 5%
/// loss per reception, against pure flooding and the greedy CDS of each graph.
enum MeshBench {
    static let policies: [any RelayPolicy] = [
        FloodingPolicy(), DegreeTablePolicy(), DeployedBitchatPolicy(), CounterPolicy(threshold: 3),
        CoveragePolicy(redundancy: 1), BackbonePolicy(),
    ]

    /// The random geometric graph of a bench cell (the same for every run).
    static func graph(nodes n: Int, degree: Double) -> Topology {
        var rng = SeededGenerator(seed: UInt64(n) * 31 + UInt64(degree))
        return Topology.randomGeometric(nodes: n, radius: Topology.radius(nodes: n, meanDegree: degree), rng: &rng)
    }

    /// A parameter sweep of the default policy on three graphs (for tuning).
    static func sweep() {
        var experiment = BroadcastExperiment()
        experiment.radio.loss = 0.05
        experiment.ttl = 64
        experiment.broadcasts = 30
        for (n, degree) in [(300, 8.0), (300, 16.0), (1000, 8.0)] {
            let topology = graph(nodes: n, degree: degree)
            let cds = topology.greedyConnectedDominatingSet(of: topology.largestComponent).count
            let probe = Simulator(topology: topology, radio: .init(), policy: BackbonePolicy(), seed: 1)
            let forwarders = probe.routers.filter { $0.neighborhood.isForwarder }.count
            print("n=\(n) d=\(degree) CDS=\(cds) self-pruned forwarders=\(forwarders)")
            for (fj, bd, bj, cov) in [(10, 60, 40, 1), (20, 100, 60, 1), (10, 60, 40, 2)] as [(Millis, Millis, Millis, Int)] {
                let p = BackbonePolicy(forwarderJitter: fj, backstopDelay: bd, backstopJitter: bj, backstopCoverage: cov)
                let r = experiment.run(on: topology, policy: p, cdsSize: cds)
                print("  fj=\(fj) bd=\(bd) bj=\(bj) coverage=\(cov): delivery \(pct(r.meanDelivery)) (min \(pct(r.minDelivery))) tx/CDS \(format2(r.transmissionsPerCDS)) p95 \(r.latencyPercentile(0.95))")
            }
        }
    }

    static func run() {
        print("starling-bench mesh (release; random geometric graphs; 5% loss per reception; TTL 64; 30 broadcasts per cell)")
        print("delivery = mean (min over broadcasts); tx/CDS = transmissions per broadcast ÷ greedy CDS size\n")
        var experiment = BroadcastExperiment()
        experiment.radio.loss = 0.05
        experiment.broadcasts = 30
        experiment.ttl = 64
        for n in [100, 300, 1000] {
            for degree in [8.0, 16.0] {
                let topology = graph(nodes: n, degree: degree)
                let component = topology.largestComponent
                let cds = topology.greedyConnectedDominatingSet(of: component).count
                print("n=\(n) degree≈\(format1(topology.meanDegree)) component=\(component.count) CDS=\(cds)")
                for policy in policies {
                    experiment.seed = UInt64(n) + UInt64(degree)
                    let r = experiment.run(on: topology, policy: policy, cdsSize: cds)
                    print("  \(policy.name.padding(14)) delivery \(pct(r.meanDelivery)) (min \(pct(r.minDelivery)))  tx/bcast \(format1(r.transmissionsPerBroadcast).leftPadding(7))  tx/CDS \(format2(r.transmissionsPerCDS).leftPadding(5))  p50/p95 \(r.latencyPercentile(0.5))/\(r.latencyPercentile(0.95)) ms  \(format2(r.wallSeconds)) s")
                }
            }
        }
        // Seed 001's claims, on 20-node meshes: > 95% delivery, < 20% duplicate
        // transmissions, < 200 ms added latency over multiple hops.
        print("\nseed 001's claims on 20-node meshes (degree ≈ 4, TTL 7, 5% loss, 100 broadcasts)")
        var small = BroadcastExperiment()
        small.radio.loss = 0.05
        small.broadcasts = 100
        small.ttl = 7
        var srng = SeededGenerator(seed: 20)
        let twenty = Topology.randomGeometric(nodes: 20, radius: Topology.radius(nodes: 20, meanDegree: 4), rng: &srng)
        for policy in [DegreeTablePolicy(), BackbonePolicy()] as [any RelayPolicy] {
            let r = small.run(on: twenty, policy: policy)
            let dupShare = 1 - r.usefulness
            print("  \(policy.name.padding(14)) delivery \(pct(r.meanDelivery))  duplicate share of receptions \(pct(dupShare))  latency p50/p95 \(r.latencyPercentile(0.5))/\(r.latencyPercentile(0.95)) ms")
        }

        // Duplicate suppression: memory and false drops.
        var dedup = Deduplicator()
        var drng = SeededGenerator(seed: 4)
        var falseDrops = 0
        for i in 0..<1_000_000 {
            // 1,000,000 distinct packets over 5 minutes: each new one must be let through.
            if !dedup.insert(drng.next(), now: Millis(i) * 300_000 / 1_000_000) { falseDrops += 1 }
        }
        print("\nduplicate suppression: 1,000,000 distinct packets in 5 min → \(falseDrops) false drops; \(dedup.count) fingerprints kept (cap 65,536), ~\(dedup.approximateMemory / 1024) KiB; \(dedup.evictedEarly) forgotten early at the cap")
        let insertTime = Timer.measure("dedup insert (new packet)") { blackHole(dedup.insert(drng.next(), now: 300_000)) }
        Timer.report(insertTime)

        // Speed: 1,000 nodes × 100 broadcasts with the default policy.
        let big = graph(nodes: 1000, degree: 8)
        experiment.broadcasts = 100
        let r = experiment.run(on: big, policy: BackbonePolicy())
        print("\nspeed: 1,000 nodes × 100 broadcasts (\(r.policy)): \(format2(r.wallSeconds)) s wall (goal < 10 s)")
    }

    static func pct(_ v: Double) -> String { (format2(v * 100) + "%").leftPadding(7) }
}
