import Crypto
import Foundation
import Testing
@testable import StarlingWire

struct GCSVector: Decodable, Sendable {
    let count: Int
    let budget: Int
    let p: UInt8
    let m: UInt32
    let data: String
}

/// The filter against vectors from an independent Python implementation
/// (Tests/vectors/gcs_reference.py), and its false-positive behaviour.
@Suite struct GCSFilterTests {
    static func referenceID(_ i: Int) -> PacketID {
        // sha256("starling-gcs-i")[:16], as the reference script computes.
        let digest = Array(SHA256.hash(data: Array("starling-gcs-\(i)".utf8)))
        return PacketID(bytes: digest.prefix(16))!
    }

    static let vectors: [GCSVector] = {
        let url = Bundle.module.url(forResource: "gcs_vectors", withExtension: "json")!
        return try! JSONDecoder().decode([GCSVector].self, from: Data(contentsOf: url))
    }()

    @Test(arguments: vectors)
    func matchesIndependentImplementation(vector: GCSVector) throws {
        let ids = (0..<vector.count).map(Self.referenceID)
        let filter = GCSFilter(ids: ids, budget: vector.budget)
        #expect(filter.p == vector.p)
        #expect(filter.m == vector.m)
        #expect(filter.data.hexString == vector.data)
        #expect(filter.data.count <= vector.budget)
        // Every ID that made it into the filter (the newest N) is found.
        let n = Int(filter.m) >> Int(filter.p)
        let values = filter.values()
        for id in ids.prefix(n) {
            #expect(GCSFilter.contains(sortedValues: values, id, m: filter.m))
        }
    }

    @Test func parameterFromFalsePositiveRate() {
        #expect(GCSFilter.parameter(falsePositiveRate: 0.01) == 7)
        #expect(GCSFilter.parameter(falsePositiveRate: 0.001) == 10)
        #expect(GCSFilter.parameter(falsePositiveRate: 0.05) == 5)
        #expect(GCSFilter.parameter(falsePositiveRate: 0.5) == 2) // clamped to 0.25
        #expect(GCSFilter.parameter(falsePositiveRate: 0.125) == 3)
    }

    @Test func falsePositiveRateIsNearTarget() {
        var rng = SeededRandom(seed: 42)
        let members = (0..<300).map { _ in PacketID(high: rng.next(), low: rng.next()) }
        let filter = GCSFilter(ids: members)
        let values = filter.values()
        #expect(members.allSatisfy { GCSFilter.contains(sortedValues: values, $0, m: filter.m) })
        var hits = 0
        let trials = 20_000
        for _ in 0..<trials {
            if GCSFilter.contains(sortedValues: values, PacketID(high: rng.next(), low: rng.next()), m: filter.m) { hits += 1 }
        }
        let rate = Double(hits) / Double(trials)
        #expect(rate > 0.002 && rate < 0.02, "false positive rate \(rate)")
    }

    @Test func overBudgetDropsTheOldest() {
        var rng = SeededRandom(seed: 7)
        let ids = (0..<1000).map { _ in PacketID(high: rng.next(), low: rng.next()) }
        let filter = GCSFilter(ids: ids, budget: 64)
        #expect(filter.data.count <= 64)
        let n = Int(filter.m) >> Int(filter.p)
        #expect(n > 0 && n <= 64 * 8 / 9)
        let values = filter.values()
        #expect(ids.prefix(n).allSatisfy { GCSFilter.contains(sortedValues: values, $0, m: filter.m) })
    }

    /// A requester spreads M from one request to the next: an ID that is a
    /// false positive of one filter is, almost always, not one of the next
    /// (the receiver maps with the M it is given).
    @Test func spreadMovesFalsePositives() throws {
        var rng = SeededRandom(seed: 11)
        let members = (0..<40).map { _ in PacketID(high: rng.next(), low: rng.next()) }
        let plain = GCSFilter(ids: members)
        #expect(plain.m == 40 << 7)
        let values = plain.values()
        // Find outsiders that the plain filter wrongly holds (about 1 in 128).
        var falsePositives: [PacketID] = []
        for _ in 0..<20_000 where falsePositives.count < 20 {
            let x = PacketID(high: rng.next(), low: rng.next())
            if GCSFilter.contains(sortedValues: values, x, m: plain.m) { falsePositives.append(x) }
        }
        #expect(falsePositives.count == 20)
        let spread = GCSFilter(ids: members, spread: 1)
        #expect(spread.m == plain.m + 1 && spread.p == plain.p)
        let spreadValues = spread.values()
        #expect(members.allSatisfy { GCSFilter.contains(sortedValues: spreadValues, $0, m: spread.m) })
        let still = falsePositives.filter { GCSFilter.contains(sortedValues: spreadValues, $0, m: spread.m) }
        #expect(still.count <= 2, "\(still.count) of 20 false positives repeat")
    }

    /// Fewer IDs than the budget holds buy a larger P (fewer false positives),
    /// up to 16, within the same budget; a full budget keeps P.
    @Test func aSpareBudgetBuysALargerP() {
        var rng = SeededRandom(seed: 12)
        let few = (0..<40).map { _ in PacketID(high: rng.next(), low: rng.next()) }
        let sharp = GCSFilter(ids: few, spendSpareBudget: true)
        #expect(sharp.p == 16 && sharp.m == 40 << 16)
        #expect(sharp.data.count <= GCSFilter.defaultBudget)
        let values = sharp.values()
        #expect(few.allSatisfy { GCSFilter.contains(sortedValues: values, $0, m: sharp.m) })
        var hits = 0
        for _ in 0..<20_000 where GCSFilter.contains(sortedValues: values, PacketID(high: rng.next(), low: rng.next()), m: sharp.m) {
            hits += 1
        }
        #expect(hits <= 3, "\(hits) false positives in 20,000 at P = 16")
        // 200 IDs: 400 × 8 / 200 = 16 bits a value, P + 3 of them: P = 13, and all 200 kept.
        let many = (0..<200).map { _ in PacketID(high: rng.next(), low: rng.next()) }
        let fuller = GCSFilter(ids: many, spendSpareBudget: true)
        #expect(fuller.p == 13 && fuller.m == 200 << 13 && fuller.data.count <= GCSFilter.defaultBudget)
        let full = (0..<1000).map { _ in PacketID(high: rng.next(), low: rng.next()) }
        #expect(GCSFilter(ids: full, spendSpareBudget: true) == GCSFilter(ids: full))
    }

    @Test func emptyAndDegenerateFilters() {
        let empty = GCSFilter(ids: [])
        #expect(empty.data.isEmpty)
        #expect(empty.values().isEmpty)
        #expect(!empty.contains(PacketID(high: 1, low: 1)))
        // Garbage data decodes to a bounded, increasing set below M.
        let junk = GCSFilter(p: 7, m: 1000, data: repeated(0xFF, 50) + repeated(0x00, 50))
        let v = junk.values()
        #expect(v.allSatisfy { $0 < 1000 })
        #expect(zip(v, v.dropFirst()).allSatisfy { $0 < $1 })
    }
}
