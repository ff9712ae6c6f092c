/// The ChaCha20 stream cipher of RFC 8439 §2.4 (32-byte key, 12-byte nonce,
/// a 32-bit block counter), without Poly1305: NIP-44 v2 pairs it with
/// HMAC-SHA256. swift-crypto offers ChaCha20 only inside its AEAD.
public enum ChaCha20 {
    /// XORs `data` with the key stream from block `counter`.
    public static func xor(_ data: [UInt8], key: [UInt8], nonce: [UInt8], counter: UInt32 = 0) -> [UInt8] {
        precondition(key.count == 32 && nonce.count == 12, "ChaCha20 takes a 32-byte key and a 12-byte nonce")
        func word(_ b: [UInt8], _ i: Int) -> UInt32 {
            UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
        }
        var state: [UInt32] = [0x6170_7865, 0x3320_646E, 0x7962_2D32, 0x6B20_6574]
        state += (0..<8).map { word(key, 4 * $0) }
        state += [counter] + (0..<3).map { word(nonce, 4 * $0) }
        var out = data
        var block = counter
        var offset = 0
        while offset < data.count {
            state[12] = block
            var x = state
            @inline(__always) func quarter(_ a: Int, _ b: Int, _ c: Int, _ d: Int) {
                x[a] = x[a] &+ x[b]; x[d] ^= x[a]; x[d] = x[d] << 16 | x[d] >> 16
                x[c] = x[c] &+ x[d]; x[b] ^= x[c]; x[b] = x[b] << 12 | x[b] >> 20
                x[a] = x[a] &+ x[b]; x[d] ^= x[a]; x[d] = x[d] << 8 | x[d] >> 24
                x[c] = x[c] &+ x[d]; x[b] ^= x[c]; x[b] = x[b] << 7 | x[b] >> 25
            }
            for _ in 0..<10 {
                quarter(0, 4, 8, 12); quarter(1, 5, 9, 13); quarter(2, 6, 10, 14); quarter(3, 7, 11, 15)
                quarter(0, 5, 10, 15); quarter(1, 6, 11, 12); quarter(2, 7, 8, 13); quarter(3, 4, 9, 14)
            }
            for i in 0..<16 {
                let w = x[i] &+ state[i]
                for j in 0..<4 where offset + 4 * i + j < data.count {
                    out[offset + 4 * i + j] ^= UInt8(truncatingIfNeeded: w >> (8 * UInt32(j)))
                }
            }
            offset += 64
            block &+= 1
        }
        return out
    }
}
