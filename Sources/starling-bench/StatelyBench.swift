import StarlingMesh
import StarlingSim
import StarlingStately

/// `starling-bench stately`: a 300-node mesh where every node shares a state,
/// at each power mode: radio cost per node and the freshness of each view.
enum StatelyBench {
    static func run() {
        print("starling-bench stately (release; 300-node random geometric graph, d≈8, 5% loss; every node shares a state; 5 virtual minutes after one interval)")
        print("age = now − the shown state's timestamp, over every state every node shows, sampled every 5 s; coverage = share of the peers within 3 hops shown\n")
        let topology = MeshBench.graph(nodes: 300, degree: 8)
        for cancel in [nil, 3] as [Int?] {
            print(cancel == nil ? "relays: every node within TTL relays once (jitter 0–50 ms)" : "relays: cancelled after 3 copies heard")
            for mode in PowerMode.allCases {
                var e = StatelyExperiment()
                e.mode = mode
                e.radio.loss = 0.05
                e.cancelAfter = cancel
                e.seed = 11
                let r = e.run(on: topology)
                print("  \(mode.rawValue.padding(16)) interval \(mode.broadcastInterval / 1000) s: \(format1(r.transmissionsPerNodePerMinute).leftPadding(6)) tx/node/min (\(Int(r.bytesPerNodePerMinute)) B), median age \(format1(Double(r.medianAge) / 1000)) s, p95 \(format1(Double(r.p95Age) / 1000)) s, coverage \(MeshBench.pct(r.coverage)), shown beyond 3 hops \(r.beyondReach); \(format2(r.wallSeconds)) s")
            }
        }
    }
}
