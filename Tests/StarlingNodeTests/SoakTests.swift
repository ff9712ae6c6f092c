import Foundation
import StarlingEmbeddedNetwork
import StarlingNodeCore
import StarlingTestSupport
import Testing

/// Issue 37, item 6, in the suite's time: 20 node cores with heavy churn for
/// 24 virtual minutes (`starling-bench soak` runs 50 for 24 hours). No table
/// above its cap, every table has one, the tables that live by time stay flat,
/// and delivery holds from the first period to the last.
@Suite struct SoakTests {
    @Test(.computesHeavily) func twentyNodesWithChurnKeepEveryTableFlatAndDeliveryUp() async throws {
        var c = Soak.Configuration()
        c.nodes = 20
        c.duration = 24 * 60_000
        c.sampleEvery = 6 * 60_000
        c.awayPerMinute = 0.02
        c.restartPerMinute = 0.01
        // Seconds of work on a thread of its own: Swift's cooperative pool (two
        // threads on CI) stays free for the in-process nodes of the tests beside it.
        let configuration = c
        let samples = await withCheckedContinuation { (done: CheckedContinuation<[Soak.Sample], Never>) in
            Thread {
                var soak = Soak(configuration)
                done.resume(returning: soak.run())
            }.start()
        }
        try #require(samples.count == 4)
        #expect(samples.map(\.churn).reduce(0, +) >= 10, "churn: \(samples.map(\.churn))")
        for s in samples {
            #expect(s.privateSent > 0 && s.publicSent > 0)
            for (name, size) in s.largest {
                let cap = Soak.caps[name]
                #expect(cap != nil, "\(name) has no cap in Soak.caps (and docs/MESH.md)")
                #expect(size <= cap ?? 0, "\(name): \(size) at \(s.at / 60_000) min")
            }
        }
        // The tables that live by time (a window, a timeout, the peers present)
        // are no larger at the end than after the first period, give or take.
        // (Peers present and routes follow who is away; sessions stay until
        // the LRU cap, so they grow with the pairs that talked: both bounded above.)
        let timed = ["router.dedup", "router.pendingRelays", "router.deadlines", "router.reassemblies", "node.pendingHandshakes",
                     "node.handshakeStarted", "node.awaitingAnnounce", "node.linkClocks", "node.waitingPayloads", "node.unacknowledged",
                     "node.tracked", "node.pings", "router.streamAsked"]
        let (second, last) = (samples[1], samples[3])
        for name in timed {
            let a = second.total[name] ?? 0, b = last.total[name] ?? 0
            #expect(Double(b) <= Double(a) * 1.25 + 16, "\(name): \(a) after 12 min, \(b) at 24 min (all nodes)")
        }
        // Delivery as in the first period: private messages acknowledged, public heard.
        for s in samples {
            #expect(s.privateRatio >= 0.8, "private \(s.privateDelivered)/\(s.privateSent) at \(s.at / 60_000) min")
            #expect(s.publicRatio >= 0.8, "public \(s.publicHeard)/\(s.publicPossible) at \(s.at / 60_000) min")
        }
        #expect(last.privateRatio >= samples[0].privateRatio - 0.1 && last.publicRatio >= samples[0].publicRatio - 0.1,
                "\(samples.map { ($0.privateRatio, $0.publicRatio) })")
    }
}
