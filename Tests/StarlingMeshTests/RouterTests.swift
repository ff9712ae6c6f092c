import Testing
import StarlingWire
@testable import StarlingMesh

func message(from sender: PeerID, ttl: UInt8 = 7, text: String = "hello", at time: Millis = 1_000,
             recipient: PeerID? = nil, type: MessageType = .message) -> Packet {
    Packet(type: type, ttl: ttl, timestamp: time, senderID: sender, recipientID: recipient,
           payload: Array(text.utf8), compress: false)
}

let me = PeerID(rawValue: 0x1000)
let alice = PeerID(rawValue: 0xA11CE)

/// A router with `n` links, 0 ..< n, to peers 1 ... n.
func router(links n: Int, policy: any RelayPolicy = FloodingPolicy(jitter: 0), maxFrame: Int? = nil,
            configure: (inout MeshRouter.Configuration) -> Void = { _ in }) -> MeshRouter {
    var config = MeshRouter.Configuration()
    configure(&config)
    var r = MeshRouter(localPeer: me, policy: policy, seed: 7, configuration: config)
    for i in 0..<n { r.linkUp(LinkID(UInt32(i)), peer: PeerID(rawValue: UInt64(i + 1)), maxFrame: maxFrame) }
    return r
}

func transmissions(_ actions: [MeshRouter.Action]) -> [(bytes: [UInt8], links: [LinkID])] {
    actions.compactMap { if case let .transmit(b, l) = $0 { return (b, l) } else { return nil } }
}

func deliveries(_ actions: [MeshRouter.Action]) -> [Packet] {
    actions.compactMap { if case let .deliver(p, _, _) = $0 { return p } else { return nil } }
}

@Suite struct RouterTests {
    @Test func aTTLAboveOursIsTakenAsOurs() throws {
        var r = router(links: 2)
        let sent = transmissions(r.receive(try message(from: alice, ttl: 200).encoded(), on: LinkID(0), now: 0))
        #expect(sent.count == 1)
        #expect(try Packet(decoding: sent[0].bytes).ttl == r.configuration.maxTTL - 1)
        #expect(r.statistics.ttlClamped == 1)
        let direct = transmissions(r.receive(try message(from: alice, ttl: 7, text: "ours").encoded(), on: LinkID(0), now: 0))
        #expect(try Packet(decoding: direct[0].bytes).ttl == 6)
        #expect(r.statistics.ttlClamped == 1)
    }

    @Test func relaysWithTTLDecrementedAndNeverBackToTheSource() throws {
        var r = router(links: 3)
        let bytes = try message(from: alice, ttl: 7).encoded()
        let actions = r.receive(bytes, on: LinkID(1), now: 0)
        #expect(deliveries(actions).count == 1)
        let sent = transmissions(actions)
        #expect(sent.count == 1)
        #expect(sent[0].links == [LinkID(0), LinkID(2)]) // not link 1
        #expect(try Packet(decoding: sent[0].bytes).ttl == 6)
        #expect(r.statistics.relaysExecuted == 1)
    }

    @Test func ttlDeath() throws {
        var r = router(links: 3)
        // Arrives with TTL 1: decremented to 0, processed but not relayed.
        let actions = r.receive(try message(from: alice, ttl: 1).encoded(), on: LinkID(0), now: 0)
        #expect(deliveries(actions).count == 1)
        #expect(transmissions(actions).isEmpty)
        // TTL 0 (a sync reply, say): processed, not relayed.
        let zero = r.receive(try message(from: alice, ttl: 0, text: "z").encoded(), on: LinkID(0), now: 0)
        #expect(deliveries(zero).count == 1 && transmissions(zero).isEmpty)
        #expect(r.statistics.relaysDeclined == 2)
    }

    @Test func duplicatesAreBlockedWhateverTheirTTL() throws {
        var r = router(links: 2)
        _ = r.receive(try message(from: alice, ttl: 7).encoded(), on: LinkID(0), now: 0)
        let again = r.receive(try message(from: alice, ttl: 5).encoded(), on: LinkID(1), now: 10)
        #expect(again.isEmpty)
        #expect(r.statistics.duplicatesBlocked == 1)
        #expect(r.statistics.received == 1)
        // After the 5-minute retention the same packet is new again.
        let later = r.receive(try message(from: alice, ttl: 7).encoded(), on: LinkID(0), now: 400_000)
        #expect(deliveries(later).count == 1)
    }

    @Test func requestSyncAndPacketsForUsAreNotRelayed() throws {
        var r = router(links: 3)
        let sync = message(from: alice, ttl: 5, type: .requestSync)
        #expect(transmissions(r.receive(try sync.encoded(), on: LinkID(0), now: 0)).isEmpty)
        let forMe = message(from: alice, ttl: 5, text: "private", recipient: me, type: .noiseEncrypted)
        let actions = r.receive(try forMe.encoded(padded: true), on: LinkID(0), now: 0)
        #expect(transmissions(actions).isEmpty)
        #expect(deliveries(actions).count == 1)
        // Addressed to someone else: relayed, not delivered.
        let other = message(from: alice, ttl: 5, text: "x", recipient: PeerID(rawValue: 99), type: .noiseEncrypted)
        let relayed = r.receive(try other.encoded(padded: true), on: LinkID(0), now: 0)
        #expect(deliveries(relayed).isEmpty)
        #expect(transmissions(relayed).count == 1)
        // Relayed Noise packets stay padded on the air.
        #expect(transmissions(relayed)[0].bytes.count == 256)
    }

    @Test func cancellationByCopiesHeard() throws {
        var r = router(links: 4, policy: CounterPolicy(threshold: 3, maxDelay: 50))
        _ = r.receive(try message(from: alice).encoded(), on: LinkID(0), now: 0)
        #expect(r.pendingRelayCount == 1)
        _ = r.receive(try message(from: alice, ttl: 6).encoded(), on: LinkID(1), now: 1)
        #expect(r.pendingRelayCount == 1)
        _ = r.receive(try message(from: alice, ttl: 6).encoded(), on: LinkID(2), now: 2)
        #expect(r.pendingRelayCount == 0)
        #expect(r.statistics.relaysCancelled == 1)
        #expect(transmissions(r.tick(now: 1_000)).isEmpty)
        #expect(r.statistics.relaysExecuted == 0)
    }

    @Test func jitteredRelayFiresAtItsDeadline() throws {
        var r = router(links: 2, policy: FloodingPolicy(jitter: 100))
        let first = r.receive(try message(from: alice).encoded(), on: LinkID(0), now: 1_000)
        #expect(transmissions(first).isEmpty)
        let deadline = try #require(r.nextDeadline)
        #expect(deadline >= 1_000 && deadline < 1_100)
        #expect(transmissions(r.tick(now: deadline - 1)).isEmpty)
        #expect(transmissions(r.tick(now: deadline)).count == 1)
        #expect(r.nextDeadline == nil)
    }

    @Test func pendingRelaysAreBoundedUnderAFlood() throws {
        var r = router(links: 2, policy: FloodingPolicy(jitter: 10_000)) { $0.maxPendingRelays = 100 }
        for i in 0..<1_000 {
            _ = r.receive(try message(from: alice, text: "flood \(i)").encoded(), on: LinkID(0), now: 0)
        }
        #expect(r.pendingRelayCount == 100)
        #expect(r.statistics.relaysOverflowed == 900)
        #expect(r.statistics.received == 1_000) // all still delivered
    }

    @Test func fragmentsToSmallLinksAndReassembly() throws {
        var sender = router(links: 1, policy: FloodingPolicy(jitter: 0), maxFrame: 128)
        var receiver = MeshRouter(localPeer: PeerID(rawValue: 5), policy: FloodingPolicy(jitter: 0), seed: 1)
        receiver.linkUp(LinkID(0), peer: me)
        let big = message(from: me, text: String(repeating: "long message, ", count: 60))
        let out = transmissions(sender.originate(big, now: 0))
        #expect(out.count > 5)
        #expect(out.allSatisfy { $0.bytes.count <= 128 })
        #expect(sender.statistics.fragmentsSent == out.count)
        var delivered: [Packet] = []
        // Out of order, with one fragment duplicated.
        for piece in (out.reversed() + [out[0]]) {
            delivered += deliveries(receiver.receive(piece.bytes, on: LinkID(0), now: 1))
        }
        #expect(delivered == [big])
        #expect(receiver.statistics.messagesReassembled == 1)
    }

    /// A relay whose next link has a smaller frame fragments the fragments
    /// again; the receiver puts both levels back together.
    @Test func fragmentsOfFragmentsAreReassembled() throws {
        var a = router(links: 1, maxFrame: 512)
        var b = MeshRouter(localPeer: PeerID(rawValue: 1), policy: FloodingPolicy(jitter: 0), seed: 2)
        b.linkUp(LinkID(0), peer: me, maxFrame: 512)
        b.linkUp(LinkID(1), peer: PeerID(rawValue: 3), maxFrame: 185)
        var c = MeshRouter(localPeer: PeerID(rawValue: 3), policy: FloodingPolicy(jitter: 0), seed: 3)
        c.linkUp(LinkID(0), peer: PeerID(rawValue: 1), maxFrame: 185)
        let big = message(from: me, text: String(repeating: "a long way, ", count: 150))
        let first = transmissions(a.originate(big, now: 0))
        #expect(first.count > 3 && first.allSatisfy { $0.bytes.count <= 512 })
        let second = first.flatMap { transmissions(b.receive($0.bytes, on: LinkID(0), now: 1)) }
        #expect(second.count > first.count && second.allSatisfy { $0.bytes.count <= 185 && $0.links == [LinkID(1)] })
        var events: [MeshRouter.Action] = []
        for piece in second.reversed() { events += c.receive(piece.bytes, on: LinkID(0), now: 2) }
        #expect(deliveries(events) == [big])
        // Progress is reported for the message's own fragments only.
        let totals = Set(events.compactMap { if case let .progress(_, _, _, total) = $0 { total } else { nil } })
        #expect(totals == [first.count])
    }

    @Test func lostFragmentMeansNoDeliveryAndNoTrap() throws {
        var sender = router(links: 1, maxFrame: 100)
        var receiver = MeshRouter(localPeer: PeerID(rawValue: 5), policy: FloodingPolicy(jitter: 0), seed: 1)
        receiver.linkUp(LinkID(0), peer: me)
        let out = transmissions(sender.originate(message(from: me, text: String(repeating: "x", count: 500)), now: 0))
        var delivered = 0
        for piece in out.dropLast() { delivered += deliveries(receiver.receive(piece.bytes, on: LinkID(0), now: 1)).count }
        #expect(delivered == 0)
        // The missing piece arrives 40 s later: the reassembly timed out.
        delivered += deliveries(receiver.receive(out.last!.bytes, on: LinkID(0), now: 40_000)).count
        #expect(delivered == 0)
    }

    @Test func blockedSendersAreDroppedBeforeAnythingElse() throws {
        var r = router(links: 3)
        r.blockedSenders = [alice]
        let actions = r.receive(try message(from: alice).encoded(), on: LinkID(0), now: 0)
        #expect(actions.isEmpty)            // not delivered, not relayed
        #expect(r.statistics.blockedDropped == 1 && r.statistics.received == 0)
        r.blockedSenders = []
        #expect(deliveries(r.receive(try message(from: alice).encoded(), on: LinkID(0), now: 1)).count == 1)
    }

    @Test func malformedBytesAreCountedNotTrapped() {
        var r = router(links: 1)
        #expect(r.receive([1, 2, 3], on: LinkID(0), now: 0).isEmpty)
        #expect(r.statistics.malformed == 1)
    }
}
