import Testing
@testable import StarlingWire

@Suite struct FragmentTests {
    static func bigFile(_ size: Int, seed: UInt64 = 3) -> Packet {
        var rng = SeededRandom(seed: seed)
        let file = FileTransfer(name: "photo.jpg", mimeType: "image/jpeg", content: rng.bytes(size))
        return Packet(version: 2, type: .fileTransfer, ttl: 7, timestamp: sampleTime, senderID: aliceID,
                      payload: try! file.encoded(), signature: Signature(bytes: repeated(0x77, 64)))
    }

    @Test func chunkSizeFollowsTheLink() {
        let broadcast = Packet(type: .message, ttl: 7, timestamp: 0, senderID: aliceID, payload: [])
        let addressed = Packet(type: .message, ttl: 7, timestamp: 0, senderID: aliceID, recipientID: bobID, payload: [])
        #expect(Fragmenter.chunkSize(for: broadcast, linkLimit: nil) == 469)
        #expect(Fragmenter.chunkSize(for: broadcast, linkLimit: 512) == 512 - 35)
        #expect(Fragmenter.chunkSize(for: addressed, linkLimit: 512) == 512 - 43)
        #expect(Fragmenter.chunkSize(for: addressed, linkLimit: 100) == 64)
        #expect(Fragmenter.chunkSize(for: addressed, linkLimit: 23) == 64)
    }

    @Test(arguments: [64, 128, 185, 244, 512])
    func fragmentsFitTheLinkAndCopyTheHeader(linkLimit: Int) throws {
        var original = Self.bigFile(9_000)
        original.recipientID = bobID
        original.isRSR = true
        let chunk = Fragmenter.chunkSize(for: original, linkLimit: linkLimit)
        let pieces = try Fragmenter.fragment(original, chunkSize: chunk, fragmentID: 0xF00D)
        #expect(pieces.count == (original.encodedSize + chunk - 1) / chunk)
        for (i, piece) in pieces.enumerated() {
            #expect(piece.type == .fragment)
            #expect(piece.version == 1)
            #expect(piece.senderID == aliceID && piece.recipientID == bobID)
            #expect(piece.timestamp == sampleTime && piece.ttl == 7 && piece.isRSR)
            #expect(piece.signature == nil)
            if chunk > 64 { #expect(try piece.encoded().count <= linkLimit) }
            let f = try Fragment(decoding: piece.payload)
            #expect(Int(f.index) == i && Int(f.total) == pieces.count)
            #expect(f.originalType == .fileTransfer)
        }
    }

    @Test func routedFragmentsAreV2() throws {
        var original = Self.bigFile(2_000)
        original.route = [bobID]
        let pieces = try Fragmenter.fragment(original, chunkSize: 469, fragmentID: 1)
        #expect(pieces.allSatisfy { $0.version == 2 && $0.route == [bobID] })
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func reassemblesInAnyOrderWithDuplicates(seed: UInt64) throws {
        let original = Self.bigFile(64 * 1024, seed: seed)
        let pieces = try Fragmenter.fragment(original, chunkSize: 469, fragmentID: seed)
        var rng = SeededRandom(seed: seed)
        var arrivals = pieces + pieces.shuffled(using: &rng).prefix(20) // 20 duplicates
        arrivals.shuffle(using: &rng)
        var r = Reassembler()
        var done: [UInt8]?
        var duplicates = 0
        for (i, p) in arrivals.enumerated() {
            let event = try r.receive(Fragment(decoding: p.payload), from: aliceID, now: UInt64(i))
            switch event {
            case .complete(let bytes): done = bytes
            case .duplicate: duplicates += 1
            case .waiting: break
            }
        }
        #expect(duplicates >= 1)
        let back = try Packet(decoding: #require(done))
        #expect(back == original)
        #expect(r.inProgressCount == 0)
    }

    @Test func limitsAreEnforced() throws {
        var r = Reassembler()
        let tooMany = Fragment(fragmentID: 1, index: 0, total: 257, originalType: .fileTransfer, data: [1])
        #expect(throws: ReassemblyError.tooManyFragments(total: 257, limit: 256)) {
            try r.receive(tooMany, from: aliceID, now: 0)
        }
        // 1 MiB per message.
        let big = repeated(0, 600_000)
        _ = try r.receive(Fragment(fragmentID: 2, index: 0, total: 3, originalType: .fileTransfer, data: big), from: aliceID, now: 0)
        #expect(throws: ReassemblyError.tooLarge(bytes: 1_200_000, limit: 1 << 20)) {
            try r.receive(Fragment(fragmentID: 2, index: 1, total: 3, originalType: .fileTransfer, data: big), from: aliceID, now: 1)
        }
        #expect(r.inProgressCount == 0)
        // Inconsistent totals are refused without losing the earlier pieces.
        _ = try r.receive(Fragment(fragmentID: 3, index: 0, total: 3, originalType: .message, data: [1]), from: aliceID, now: 2)
        #expect(throws: ReassemblyError.inconsistent(field: "total")) {
            try r.receive(Fragment(fragmentID: 3, index: 1, total: 4, originalType: .message, data: [2]), from: aliceID, now: 3)
        }
        #expect(r.inProgressCount == 1)
    }

    @Test func timeoutAfterThirtySeconds() throws {
        var r = Reassembler()
        _ = try r.receive(Fragment(fragmentID: 9, index: 0, total: 2, originalType: .message, data: [1]), from: aliceID, now: 1_000)
        r.expire(now: 31_000)
        #expect(r.inProgressCount == 1)
        r.expire(now: 31_001)
        #expect(r.inProgressCount == 0)
        #expect(r.dropped == 1)
        // The late second half starts a new, incomplete message.
        let late = try r.receive(Fragment(fragmentID: 9, index: 1, total: 2, originalType: .message, data: [2]), from: aliceID, now: 31_002)
        #expect(late == .waiting(received: 1, total: 2))
    }

    @Test func atMost128InProgressOldestDropped() throws {
        var r = Reassembler()
        for id in 0..<200 {
            _ = try r.receive(Fragment(fragmentID: UInt64(id), index: 0, total: 2, originalType: .message, data: [1]),
                              from: aliceID, now: UInt64(id))
        }
        #expect(r.inProgressCount == 128)
        #expect(r.dropped == 72)
        // The oldest (ID 0) is gone; the newest (ID 199) completes.
        #expect(try r.receive(Fragment(fragmentID: 0, index: 1, total: 2, originalType: .message, data: [2]), from: aliceID, now: 300)
                == .waiting(received: 1, total: 2))
        #expect(try r.receive(Fragment(fragmentID: 199, index: 1, total: 2, originalType: .message, data: [2]), from: aliceID, now: 301)
                == .complete([1, 2]))
    }

    @Test func sameFragmentIDFromDifferentSendersDoesNotMix() throws {
        var r = Reassembler()
        _ = try r.receive(Fragment(fragmentID: 5, index: 0, total: 2, originalType: .message, data: [0xA]), from: aliceID, now: 0)
        _ = try r.receive(Fragment(fragmentID: 5, index: 0, total: 2, originalType: .message, data: [0xB]), from: bobID, now: 0)
        #expect(try r.receive(Fragment(fragmentID: 5, index: 1, total: 2, originalType: .message, data: [0xC]), from: bobID, now: 1)
                == .complete([0xB, 0xC]))
    }

    @Test func fragmenterRefusesWhatNoReceiverAccepts() {
        let huge = Self.bigFile(200_000)
        #expect(throws: EncodingError.self) { try Fragmenter.fragment(huge, chunkSize: 469, fragmentID: 1) }
    }
}
