import StarlingWire

/// Bytes from hex written with spaces and line breaks for reading.
func h(_ text: String) -> [UInt8] {
    try! [UInt8](hex: text)
}

func repeated(_ byte: UInt8, _ count: Int) -> [UInt8] {
    [UInt8](repeating: byte, count: count)
}

/// SplitMix64: a small deterministic generator, so property tests replay exactly.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }

    mutating func text(maxBytes: Int) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz ÄéЖ中🙂")
        var s = ""
        while true {
            let c = alphabet.randomElement(using: &self)!
            if s.utf8.count + String(c).utf8.count > maxBytes || Int.random(in: 0..<20, using: &self) == 0 { return s }
            s.append(c)
        }
    }
}

let aliceID = PeerID(hex: "a1b2c3d4e5f60718")!
let bobID = PeerID(hex: "0102030405060708")!
/// 2025-11-22T08:26:40Z
let sampleTime: UInt64 = 1_763_800_000_000
let sampleTimeHex = "0000019aaaac2600"
