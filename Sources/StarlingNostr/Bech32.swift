/// BIP-173 bech32 (not bech32m), as NIP-19 uses it for `npub1…` and
/// `nsec1…`: a human-readable part, "1", the data in 5-bit groups, a 6-letter
/// checksum. All lower case or all upper case; the padding bits must be zero.
public enum Bech32 {
    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case mixedCase
        case noSeparator
        case badCharacter
        case badChecksum
        case badPadding
        case wrongPrefix(expected: String, got: String)
        case wrongLength(Int)

        public var description: String {
            switch self {
            case .mixedCase: "bech32 mixes upper and lower case"
            case .noSeparator: "bech32 needs a prefix, \"1\" and at least 6 letters"
            case .badCharacter: "not a bech32 character"
            case .badChecksum: "the bech32 checksum does not match (a typo?)"
            case .badPadding: "bech32 padding bits are not zero"
            case let .wrongPrefix(expected, got): "expected \(expected)1…, got \(got)1…"
            case let .wrongLength(n): "expected 32 bytes, got \(n)"
            }
        }
    }

    static let charset = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)
    static let values: [Int8] = {
        var t = [Int8](repeating: -1, count: 128)
        for (i, c) in charset.enumerated() { t[Int(c)] = Int8(i) }
        return t
    }()

    static func polymod(_ values: [UInt8]) -> UInt32 {
        let generator: [UInt32] = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3]
        var chk: UInt32 = 1
        for v in values {
            let top = chk >> 25
            chk = (chk & 0x1ffffff) << 5 ^ UInt32(v)
            for i in 0..<5 where (top >> i) & 1 == 1 { chk ^= generator[i] }
        }
        return chk
    }

    static func expand(_ hrp: [UInt8]) -> [UInt8] { hrp.map { $0 >> 5 } + [0] + hrp.map { $0 & 31 } }

    /// Regroups bits (8 → 5 with padding, 5 → 8 requiring zero padding).
    static func convert(_ data: [UInt8], from: Int, to: Int, pad: Bool) throws(Error) -> [UInt8] {
        var acc = 0, bits = 0, out: [UInt8] = []
        let maxv = (1 << to) - 1
        for v in data {
            acc = (acc << from) | Int(v)
            bits += from
            while bits >= to {
                bits -= to
                out.append(UInt8((acc >> bits) & maxv))
            }
        }
        if pad {
            if bits > 0 { out.append(UInt8((acc << (to - bits)) & maxv)) }
        } else if bits >= from || (acc << (to - bits)) & maxv != 0 {
            throw .badPadding
        }
        return out
    }

    /// `hrp` and `data` (bytes) as bech32, lower case.
    public static func encode(hrp: String, data: [UInt8]) -> String {
        let h = Array(hrp.lowercased().utf8)
        let five = (try? convert(data, from: 8, to: 5, pad: true)) ?? []
        let check = polymod(expand(h) + five + [0, 0, 0, 0, 0, 0]) ^ 1
        let checksum = (0..<6).map { UInt8((check >> (5 * (5 - $0))) & 31) }
        return String(decoding: h + [UInt8(ascii: "1")] + (five + checksum).map { charset[Int($0)] }, as: UTF8.self)
    }

    /// The prefix and the bytes of a bech32 string.
    public static func decode(_ text: String) throws(Error) -> (hrp: String, data: [UInt8]) {
        let raw = Array(text.utf8)
        guard raw.count <= 1_000 else { throw .badCharacter }
        let hasLower = raw.contains { $0 >= 97 && $0 <= 122 }, hasUpper = raw.contains { $0 >= 65 && $0 <= 90 }
        guard !(hasLower && hasUpper) else { throw .mixedCase }
        let s = raw.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }
        guard let sep = s.lastIndex(of: UInt8(ascii: "1")), sep >= 1, s.count - sep - 1 >= 6 else { throw .noSeparator }
        let hrp = Array(s[..<sep])
        guard hrp.allSatisfy({ $0 >= 33 && $0 <= 126 }) else { throw .badCharacter }
        var five: [UInt8] = []
        for c in s[(sep + 1)...] {
            guard c < 128, values[Int(c)] >= 0 else { throw .badCharacter }
            five.append(UInt8(values[Int(c)]))
        }
        guard polymod(expand(hrp) + five) == 1 else { throw .badChecksum }
        let data = try convert(Array(five.dropLast(6)), from: 5, to: 8, pad: false)
        return (String(decoding: hrp, as: UTF8.self), data)
    }

    /// An x-only public key as `npub1…`.
    public static func npub(_ publicKey: [UInt8]) -> String { encode(hrp: "npub", data: publicKey) }

    /// The 32-byte key in an `npub1…`.
    public static func publicKey(npub: String) throws(Error) -> [UInt8] {
        let (hrp, data) = try decode(npub)
        guard hrp == "npub" else { throw .wrongPrefix(expected: "npub", got: hrp) }
        guard data.count == 32 else { throw .wrongLength(data.count) }
        return data
    }
}
