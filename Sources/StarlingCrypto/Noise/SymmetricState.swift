import Crypto

/// A Noise SymmetricState (§5.2) for SHA256: chaining key, handshake hash and a CipherState.
struct SymmetricState: Sendable {
    private(set) var ck: [UInt8]
    private(set) var h: [UInt8]
    var cipher = CipherState()

    init(protocolName: String) {
        let name = Array(protocolName.utf8)
        if name.count <= 32 {
            h = name + [UInt8](repeating: 0, count: 32 - name.count)
        } else {
            h = Array(SHA256.hash(data: name))
        }
        ck = h
    }

    /// HKDF(ck, ikm) with 2 or 3 outputs of 32 bytes (RFC 5869, empty info).
    static func hkdf(_ ck: [UInt8], _ ikm: [UInt8], outputs: Int) -> [[UInt8]] {
        let okm = try! HKDFSHA256.derive(inputKeyMaterial: ikm, salt: ck, info: [], outputByteCount: 32 * outputs)
        return (0..<outputs).map { Array(okm[($0 * 32)..<($0 * 32 + 32)]) }
    }

    mutating func mixKey(_ ikm: [UInt8]) {
        let out = Self.hkdf(ck, ikm, outputs: 2)
        ck = out[0]
        cipher = CipherState(key: out[1])
    }

    mutating func mixHash(_ data: [UInt8]) {
        var hasher = SHA256()
        hasher.update(data: h)
        hasher.update(data: data)
        h = Array(hasher.finalize())
    }

    mutating func mixKeyAndHash(_ ikm: [UInt8]) {
        let out = Self.hkdf(ck, ikm, outputs: 3)
        ck = out[0]
        mixHash(out[1])
        cipher = CipherState(key: out[2])
    }

    mutating func encryptAndHash(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let ciphertext = try cipher.encrypt(ad: h, plaintext: plaintext)
        mixHash(ciphertext)
        return ciphertext
    }

    mutating func decryptAndHash(_ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let plaintext = try cipher.decrypt(ad: h, ciphertext: ciphertext)
        mixHash(ciphertext)
        return plaintext
    }

    func split() -> (CipherState, CipherState) {
        let out = Self.hkdf(ck, [], outputs: 2)
        return (CipherState(key: out[0]), CipherState(key: out[1]))
    }
}
