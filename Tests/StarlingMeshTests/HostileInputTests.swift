import Foundation
import Testing
import StarlingWire
@testable import StarlingMesh
@testable import StarlingSim

/// The router under hostile input (``HostileInput``): the router fuzzer's
/// finds replayed, seeded random scripts for every policy, and the checks
/// themselves shown to catch a broken promise.
@Suite struct HostileInputTests {
    /// What the router fuzzer found (kept by scripts/fuzz), and its seeds.
    static func savedScripts() -> [String] {
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let dirs = [tests.appendingPathComponent("StarlingWireTests/Regressions/router"),
                    tests.deletingLastPathComponent().appendingPathComponent("Fuzz/seeds/router")]
        return dirs.flatMap { dir in
            ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [])
                .filter { !$0.hasPrefix(".") && $0 != "README.md" }.sorted().map { dir.appendingPathComponent($0).path }
        }
    }

    /// An empty `arguments:` list fails nothing: this does.
    @Test func theSavedScriptsArePresent() {
        #expect(!Self.savedScripts().isEmpty)
    }

    @Test(arguments: savedScripts())
    func savedScriptsKeepEveryPromise(path: String) throws {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(!HostileInput.script(from: bytes).isEmpty)
        let violation = HostileInput.run(bytes)
        #expect(violation == nil, "\(violation!)")
    }

    static let policies: [(String, any RelayPolicy)] = [
        ("planned", PlannedPolicy()), ("flooding", FloodingPolicy()), ("degree-table", DegreeTablePolicy()),
        ("bitchat", DeployedBitchatPolicy()), ("counter", CounterPolicy()), ("coverage", CoveragePolicy()),
        ("backbone", BackbonePolicy()),
    ]

    /// 300 random scripts of up to 3 KB per policy: every step of each keeps
    /// every promise.
    @Test(arguments: policies.map(\.0))
    func randomScriptsKeepEveryPromise(policy name: String) {
        let policy = Self.policies.first { $0.0 == name }!.1
        var rng = SeededGenerator(seed: name.utf8.reduce(0x486F_7374) { $0 &* 31 &+ UInt64($1) })
        var steps = 0
        for _ in 0..<300 {
            let bytes = (0..<Int(rng.next() % 3_000)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            steps += HostileInput.script(from: bytes).count
            let violation = HostileInput.run(bytes, policy: policy)
            #expect(violation == nil, "\(violation!)")
            if violation != nil { break }
        }
        #expect(steps > 300 * 10) // the scripts did something
    }

    /// A script that reaches the router's deep paths: a fragmented packet
    /// reassembled and delivered once, a sync answered on its own link, a
    /// relay fired by a tick, and a flood of distinct packets held to the
    /// pending limit.
    @Test func aScriptReachesTheRoutersDeepPaths() throws {
        var input = HostileInput()
        let sender = HostileInput.peers[9]
        var message = Packet(type: .message, ttl: 5, timestamp: input.now, senderID: sender,
                             payload: Array(repeating: 0x61, count: 900), compress: false)
        try input.apply(.receiveFragments(link: 0, packet: message, chunk: 200, keep: 0xFFFF, reversed: true))
        #expect(input.router.statistics.messagesReassembled == 1)
        #expect(input.router.statistics.delivered == 1)
        // The same fragments again: reassembled maybe, never delivered twice.
        try input.apply(.receiveFragments(link: 1, packet: message, chunk: 200, keep: 0xFFFF, reversed: false))
        #expect(input.router.statistics.delivered == 1)

        func decided(_ s: MeshStatistics) -> Int {
            s.relaysExecuted + s.relaysDeclined + s.relaysCancelled + s.relaysOverflowed
        }
        let undecided = decided(input.router.statistics)
        message.setPayload(Array("short".utf8))
        try input.apply(.receive(link: 1, bytes: try message.encoded()))
        try input.apply(.tick(advance: 2_000))
        #expect(decided(input.router.statistics) > undecided)

        let filter = GCSFilter(p: 8, m: 1 << 8, data: [])
        let request = Packet(type: .requestSync, ttl: 0, timestamp: input.now, senderID: HostileInput.peers[2],
                             payload: try RequestSync(filter: filter).encoded())
        let before = input.router.statistics.syncRepliesSent
        try input.apply(.receive(link: 1, bytes: try request.encoded()))
        #expect(input.router.statistics.syncRepliesSent > before)

        for i in 0..<40 {
            let p = Packet(type: .message, ttl: 7, timestamp: input.now + UInt64(i), senderID: sender, payload: [UInt8(i)])
            try input.apply(.receive(link: i % 3, bytes: try p.encoded()))
        }
        #expect(input.router.pendingRelayCount <= input.router.configuration.maxPendingRelays)
    }

    /// The checks are not vacuous: each broken promise is reported.
    @Test func brokenPromisesAreReported() throws {
        var input = HostileInput()
        let junk = MeshRouter.Action.transmit([1, 2, 3], links: [LinkID(0)])
        #expect(throws: HostileInput.Violation.self) { try input.check([junk], incoming: nil) }

        let p = Packet(type: .message, ttl: 3, timestamp: input.now, senderID: HostileInput.peers[4], payload: [7])
        let bytes = try p.encoded()
        #expect(throws: HostileInput.Violation.self) { // link 5 is down
            try input.check([.transmit(bytes, links: [LinkID(5)])], incoming: nil)
        }
        #expect(throws: HostileInput.Violation.self) { // back where it came from
            try input.check([.transmit(bytes, links: [LinkID(0), LinkID(1)])], incoming: LinkID(1))
        }
        let big = Packet(type: .message, ttl: 3, timestamp: input.now, senderID: HostileInput.peers[4],
                         payload: Array(repeating: 1, count: 400), compress: false)
        #expect(throws: HostileInput.Violation.self) { // link 1 carries 185 bytes at most
            try input.check([.transmit(try big.encoded(), links: [LinkID(1)])], incoming: nil)
        }
        try input.check([.deliver(p, link: LinkID(0), hops: 1)], incoming: LinkID(0))
        #expect(throws: HostileInput.Violation.self) {
            try input.check([.deliver(p, link: LinkID(1), hops: 2)], incoming: LinkID(1))
        }
        #expect(throws: HostileInput.Violation.self) { // relayed with the TTL it came with
            try input.check([.transmit(bytes, links: [LinkID(0)])], incoming: LinkID(1), received: p)
        }
        // What is allowed passes: a sync answer back on its own link.
        var answer = p
        answer.ttl = 0
        answer.isRSR = true
        try input.check([.transmit(try answer.encoded(), links: [LinkID(1)])], incoming: LinkID(1))
    }

    /// Every byte string is a script, and the same bytes give the same script.
    @Test func scriptsDecodeFromAnyBytes() {
        #expect(HostileInput.script(from: []).isEmpty)
        let bytes: [UInt8] = [5, 0x00, 0x64, 7, 0, 3, 6, 1, 2, 1]
        let script = HostileInput.script(from: bytes)
        #expect(script == [.tick(advance: 100), .linkDown(link: 3), .linkUp(link: 2, peer: 1, maxFrame: 185)])
        #expect(HostileInput.script(from: bytes) == script)
    }
}
