import Foundation
import StarlingTestSupport
import Testing
import StarlingCrypto
import StarlingMesh
import StarlingSim
import StarlingWire
@testable import StarlingStately

/// Everything the engines said, per node.
final class Said: @unchecked Sendable {
    var actions: [Int: [(StatelyEngine.Action, Millis)]] = [:]
    func updates(_ node: Int) -> [StatelyEngine.PeerState] {
        (actions[node] ?? []).compactMap { if case let .updated(s) = $0.0 { s } else { nil } }
    }
    func sent(_ node: Int) -> [[UInt8]] {
        (actions[node] ?? []).compactMap { if case let .transmit(b, _) = $0.0 { b } else { nil } }
    }
}

func simulate(_ topology: Topology, configure: (Int, inout StatelyEngine.Configuration) -> Void = { _, _ in }) -> (StatelySimulation, Said) {
    var sim = StatelySimulation(topology: topology, radio: .init(), seed: 5, configure: configure)
    let said = Said()
    sim.onAction = { node, action, at in said.actions[node, default: []].append((action, at)) }
    return (sim, said)
}

let fixedNonce: @Sendable () -> [UInt8] = { [UInt8](repeating: 7, count: 12) }

@Suite struct StateReportTests {
    @Test func jsonIsSortedCompactAndPaddedToOneSize() throws {
        let r = StateReport(name: "alice", state: .working, timestamp: 1_767_225_600_000)
        let padded = try r.encoded()
        #expect(padded.count == StateReport.paddedSize)
        let json = #"{"name":"alice","state":"working","timestamp":1767225600000}"#
        #expect(Array(padded.prefix(json.utf8.count)) == Array(json.utf8))
        #expect(padded.last == UInt8(192 - json.utf8.count))
        #expect(try StateReport(decoding: padded) == r)
        // Every state, any name up to the limit: the same length on the air.
        for kind in StateKind.allCases {
            let long = StateReport(name: String(repeating: "é", count: 32), state: kind, timestamp: .max)
            #expect(try long.encoded().count == 192)
        }
    }

    @Test func badReportsAreRefusedWithAReason() {
        #expect(throws: StateReport.Error.nameLength(65)) { try StateReport(name: String(repeating: "x", count: 65), state: .busy, timestamp: 1).encoded() }
        #expect(throws: StateReport.Error.nameLength(0)) { try StateReport(name: "", state: .busy, timestamp: 1).encoded() }
        var padded = (try? StateReport(name: "bob", state: .busy, timestamp: 1).encoded()) ?? []
        padded[191] = 0
        #expect(throws: StateReport.Error.badPadding) { try StateReport(decoding: padded) }
        let unknown = Array(#"{"name":"bob","state":"dancing","timestamp":1}"#.utf8)
        let pad = 192 - unknown.count
        #expect(throws: StateReport.Error.self) { try StateReport(decoding: unknown + [UInt8](repeating: UInt8(pad), count: pad)) }
    }

    @Test func theTenStatesHaveTheirEmoji() {
        #expect(StateKind.allCases.count == 10)
        #expect(StateKind.away.emoji == "🏃" && StateKind.eating.emoji == "🍽️" && StateKind.traveling.emoji == "✈️")
        #expect(StateKind(name: "red-circle") == .redCircle && StateKind(name: "DND") == .redCircle && StateKind(name: "nope") == nil)
        #expect(Set(StateKind.allCases.map(\.emoji)).count == 10)
    }
}

@Suite struct StatePacketTests {
    @Test func roundTripAndHeaderLayout() throws {
        let p = StatePacket(ttl: 3, timestamp: 0x0102_0304_0506_0708, senderID: PeerID(rawValue: 0xAABB_CCDD_EEFF_0011),
                            box: [UInt8](repeating: 0x55, count: 28))
        let bytes = try p.encoded()
        #expect(bytes.count == 13 + 8 + 28)
        #expect(Array(bytes.prefix(13)) == [0x01, 0x0A, 0x03, 1, 2, 3, 4, 5, 6, 7, 8, 0x00, 0x1C])
        #expect(try StatePacket(decoding: bytes) == p)
    }

    @Test func everyTruncationAndBadHeaderIsATypedError() throws {
        let bytes = try StatePacket(timestamp: 1, senderID: PeerID(rawValue: 1), box: [UInt8](repeating: 1, count: 40)).encoded()
        for n in 0..<bytes.count {
            #expect(throws: WireError.self) { try StatePacket(decoding: Array(bytes.prefix(n))) }
        }
        var badType = bytes; badType[1] = 0x02
        #expect(throws: WireError.self) { try StatePacket(decoding: badType) }
        var badVersion = bytes; badVersion[0] = 2
        #expect(throws: WireError.self) { try StatePacket(decoding: badVersion) }
        #expect(throws: WireError.self) { try StatePacket(decoding: bytes + [0]) }
        var tiny = bytes; tiny[11] = 0; tiny[12] = 27                 // a box too small for nonce and tag
        #expect(throws: WireError.self) { try StatePacket(decoding: tiny) }
    }
}

@Suite struct StateKeyTests {
    @Test func broadcastKeyIsHKDFOfTheBeacon() throws {
        let expected = try HKDFSHA256.derive(inputKeyMaterial: Array("StateBeacon2024".utf8), salt: [],
                                             info: Array("stately broadcast key v1".utf8), outputByteCount: 32)
        let sealed = try StateKey.broadcast.seal([1, 2, 3], nonce: [UInt8](repeating: 0, count: 12))
        #expect(try StateKey(bytes: expected).open(sealed) == [1, 2, 3])
    }

    @Test(.computesHeavily) func aGroupKeyOpensOnlyItsOwn() throws {
        let a = try StateKey.group(passphrase: "hiking club"), b = try StateKey.group(passphrase: "hiking club!")
        let sealed = try a.seal([9, 9], nonce: [UInt8](repeating: 1, count: 12))
        #expect(try StateKey.group(passphrase: "hiking club").open(sealed) == [9, 9])
        #expect(throws: StateKey.Error.authenticationFailed) { try b.open(sealed) }
        #expect(throws: StateKey.Error.authenticationFailed) { try StateKey.broadcast.open(sealed) }
        #expect(throws: StateKey.Error.emptyPassphrase) { try StateKey.group(passphrase: "") }
    }
}

@Suite struct PowerTests {
    @Test func optimiserPicksTheModeFromTheBattery() {
        let o = BatteryOptimizer()
        #expect(o.mode(for: nil) == .balanced)
        #expect(o.mode(for: PowerReading(level: 0.5, charging: true)) == .performance)
        #expect(o.mode(for: PowerReading(level: 0.9, charging: false)) == .performance)
        #expect(o.mode(for: PowerReading(level: 0.5, charging: false)) == .balanced)
        #expect(o.mode(for: PowerReading(level: 0.2, charging: false)) == .powerSaver)
        #expect(o.mode(for: PowerReading(level: 0.05, charging: false)) == .ultraLowPower)
        #expect(BatteryOptimizer(override: .ultraLowPower).mode(for: PowerReading(level: 1, charging: true)) == .ultraLowPower)
        var bg = BatteryOptimizer()
        bg.background = true
        #expect(bg.broadcastInterval(for: nil) == 30_000)
        #expect(PowerMode.allCases.map(\.linkBudget) == [8, 6, 4, 2])
    }

    @Test func powerModesSetTheInterval() {
        // One node alone: count its broadcasts over two minutes in each mode.
        for mode in PowerMode.allCases {
            var e = StatelyEngine(senderID: PeerID(rawValue: 1), configuration: .init(name: "a"), seed: 1, nonce: fixedNonce)
            e.linkUp(LinkID(9))
            e.setOverride(mode, now: 0)
            var sent = e.set(.working, now: 0).count
            var t: Millis = 0
            while t < 120_000, let next = e.nextDeadline { t = next; sent += e.tick(now: t).filter { if case .transmit = $0 { true } else { false } }.count }
            #expect(sent == Int(120_000 / mode.broadcastInterval) + 1, "\(mode)")
        }
    }
}

@Suite struct StatelyMeshTests {
    @Test func aStateReachesEveryNodeWithinThreeHopsInOneIntervalAndNoFurther() {
        var (sim, said) = simulate(.line(7))
        sim.at(0) { e, now in e.set(.working, now: now) }
        sim.run(until: 15_000)                                    // one balanced interval
        for node in 1...3 {
            let got = said.updates(node).first { $0.senderID == Simulator.peerID(0) }
            #expect(got?.state == .working && got?.name == "node0", "node \(node)")
            #expect(got?.hops == node)
            #expect(sim.engines[node].board[Simulator.peerID(0)] != nil)
        }
        for node in 4...6 { #expect(sim.engines[node].board.isEmpty, "node \(node) is beyond 3 hops") }
    }

    @Test func anSOSReachesEveryNodeWithinFiveSecondsWithTheMaximumTTL() throws {
        var (sim, said) = simulate(.line(9))
        sim.at(0) { e, now in e.set(.sos, now: now) }
        let sentFirst = try #require(said.sent(0).first)
        #expect(try StatePacket(decoding: sentFirst).ttl == StatePacket.sosTTL)
        sim.run(until: 5_000)
        for node in 1...7 {
            #expect(sim.engines[node].board[Simulator.peerID(0)]?.state == .sos, "node \(node)")
            let alert = (said.actions[node] ?? []).contains { if case .sos = $0.0 { true } else { false } }
            #expect(alert)
        }
        #expect(sim.engines[8].board.isEmpty)                     // 8 hops: beyond the maximum TTL
        // SOS repeats every 5 s; clearing it broadcasts at once.
        sim.run(until: 20_000)
        #expect(said.sent(0).count == 5)                          // at 0, 5, 10, 15, 20 s
        sim.at(0) { e, now in e.clearSOS(now: now) }
        sim.run(until: 20_500)
        #expect(sim.engines[7].board[Simulator.peerID(0)] == nil || sim.engines[3].board[Simulator.peerID(0)]?.state == .available)
        #expect(sim.engines[3].board[Simulator.peerID(0)]?.state == .available)
    }

    @Test func statesExpireAfterFiveMinutesAndInvisibleStopsBroadcasting() {
        var (sim, said) = simulate(.line(3))
        sim.at(0) { e, now in e.set(.eating, now: now) }
        sim.run(until: 1_000)
        #expect(sim.engines[1].board.count == 1)
        sim.at(0) { e, now in e.set(.invisible, now: now) }
        let sentBefore = said.sent(0).count
        sim.run(until: 300_000)
        #expect(sim.engines[1].board.count == 1)                  // still shown at 5 minutes
        sim.run(until: 302_000)
        #expect(sim.engines[1].board.isEmpty)                     // gone after
        #expect(said.sent(0).count == sentBefore)                 // invisible: nothing more sent
        let expired = (said.actions[1] ?? []).contains { if case .expired = $0.0 { true } else { false } }
        #expect(expired)
    }

    @Test func aNodeWithAnotherGroupKeySeesNothingButStillRelays() throws {
        let group = try StateKey.group(passphrase: "family")
        var (sim, _) = simulate(.line(3)) { i, c in if i != 1 { c.key = group } }
        sim.at(0) { e, now in e.set(.traveling, now: now) }
        sim.run(until: 2_000)
        #expect(sim.engines[1].board.isEmpty)
        #expect(sim.engines[1].statistics.unreadable == 1)
        #expect(sim.engines[2].board[Simulator.peerID(0)]?.state == .traveling) // through node 1
    }

    @Test func tamperedTruncatedStaleAndFuturePacketsAreRefusedAndNothingBreaks() throws {
        var e = StatelyEngine(senderID: PeerID(rawValue: 1), configuration: .init(name: "me"), seed: 1, nonce: fixedNonce)
        e.linkUp(LinkID(1)); e.linkUp(LinkID(2))
        var other = StatelyEngine(senderID: PeerID(rawValue: 2), configuration: .init(name: "you"), seed: 2, nonce: fixedNonce)
        other.linkUp(LinkID(1))
        func sent(_ actions: [StatelyEngine.Action]) -> [UInt8] {
            actions.compactMap { if case let .transmit(b, _) = $0 { b } else { nil } }.first ?? []
        }
        let good = sent(other.set(.busy, now: 1_000_000))
        func reason(_ actions: [StatelyEngine.Action]) -> String? {
            actions.compactMap { if case let .rejected(r) = $0 { r } else { nil } }.first
        }
        var tampered = good; tampered[40] ^= 1                    // inside the ciphertext
        #expect(e.receive(tampered, on: LinkID(1), now: 1_000_000).allSatisfy { if case .updated = $0 { false } else { true } })
        #expect(e.statistics.unreadable == 1)                     // cannot tell tampering from another group
        #expect(reason(e.receive(Array(good.prefix(30)), on: LinkID(1), now: 1_000_000))?.contains("malformed") == true)
        var lied = good; lied[10] ^= 1                            // header timestamp ≠ sealed timestamp
        #expect(reason(e.receive(lied, on: LinkID(1), now: 1_000_000))?.contains("not the sealed one") == true)
        #expect(reason(e.receive(good, on: LinkID(1), now: 1_000_000 + 301_000))?.contains("stale") == true)
        let future = sent(other.set(.away, now: 2_000_000))
        #expect(reason(e.receive(future, on: LinkID(1), now: 2_000_000 - 61_000))?.contains("future") == true)
        // And a good one still goes through, shown and relayed on the other link.
        let fresh = sent(other.set(.available, now: 3_000_000))
        let actions = e.receive(fresh, on: LinkID(1), now: 3_000_000)
        #expect(actions.contains { if case let .updated(s) = $0 { s.state == .available } else { false } })
        let later = e.tick(now: 3_000_100)
        #expect(later.contains { if case let .transmit(_, links) = $0 { links == [LinkID(2)] } else { false } })
    }

    @Test func duplicatesBySenderAndTimestampAreShownOnce() throws {
        var e = StatelyEngine(senderID: PeerID(rawValue: 1), configuration: .init(name: "me"), seed: 1, nonce: fixedNonce)
        e.linkUp(LinkID(1))
        var other = StatelyEngine(senderID: PeerID(rawValue: 2), configuration: .init(name: "you"), seed: 2, nonce: fixedNonce)
        other.linkUp(LinkID(1))
        let bytes = other.set(.busy, now: 10).compactMap { if case let .transmit(b, _) = $0 { b } else { nil } }[0]
        #expect(e.receive(bytes, on: LinkID(1), now: 10).count == 1)
        #expect(e.receive(bytes, on: LinkID(1), now: 11).isEmpty)
        #expect(e.statistics.duplicates == 1)
    }
}
