/// BLAKE3 (the 2020 specification by O'Connor, Aumasson, Neves and
/// Wilcox-O'Hearn): the hash, the keyed hash and key derivation, with
/// extendable output. No Swift package or Debian library provides it here, so
/// it is written from the specification and tested against the official test
/// vectors and the Python `blake3` package.
///
/// A portable implementation: one compression at a time on sixteen scalars;
/// `starling-bench store` prints its speed.
/// Ya OK uses it for fingerprints, safety numbers, packet hashes and the store's
/// sub-keys and lookups, never for bulk data.
///
/// ```swift
/// let digest = BLAKE3.hash(bytes)                      // 32 bytes
/// var hasher = BLAKE3(key: key32); hasher.update(a); hasher.update(b)
/// let mac = hasher.finalize()
/// let subkey = BLAKE3.deriveKey(context: "app 2026-11-24 purpose", material: secret)
/// ```
public struct BLAKE3: Sendable {
    /// The default output length in bytes.
    public static let outputByteCount = 32
    static let blockLength = 64
    static let chunkLength = 1024

    enum Flag {
        static let chunkStart: UInt32 = 1 << 0
        static let chunkEnd: UInt32 = 1 << 1
        static let parent: UInt32 = 1 << 2
        static let root: UInt32 = 1 << 3
        static let keyedHash: UInt32 = 1 << 4
        static let deriveKeyContext: UInt32 = 1 << 5
        static let deriveKeyMaterial: UInt32 = 1 << 6
    }

    static let iv = SIMD8<UInt32>(0x6A09_E667, 0xBB67_AE85, 0x3C6E_F372, 0xA54F_F53A,
                                  0x510E_527F, 0x9B05_688C, 0x1F83_D9AB, 0x5BE0_CD19)

    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case keyLength(Int)
        public var description: String {
            switch self {
            case let .keyLength(n): "a BLAKE3 key is 32 bytes, not \(n)"
            }
        }
    }

    private let key: SIMD8<UInt32>
    private let flags: UInt32
    private var chunk: ChunkState
    /// Chaining values of completed subtrees, at most one per level (54 levels
    /// cover 2^64 bytes).
    private var stack: [SIMD8<UInt32>] = []

    /// The plain hash.
    public init() {
        self.init(key: Self.iv, flags: 0)
    }

    /// The keyed hash (a MAC or a PRF) under a 32-byte key.
    public init(key: some Collection<UInt8>) throws {
        guard key.count == 32 else { throw Error.keyLength(key.count) }
        self.init(key: Self.words8(Array(key)), flags: Flag.keyedHash)
    }

    /// Key derivation: a hasher over key material, for a hard-coded, globally
    /// unique context string ("application, date, purpose").
    public init(deriveKeyContext context: String) {
        var contextHasher = BLAKE3(key: Self.iv, flags: Flag.deriveKeyContext)
        contextHasher.update(Array(context.utf8))
        let contextKey = contextHasher.finalize(byteCount: 32)
        self.init(key: Self.words8(contextKey), flags: Flag.deriveKeyMaterial)
    }

    private init(key: SIMD8<UInt32>, flags: UInt32) {
        self.key = key
        self.flags = flags
        chunk = ChunkState(key: key, counter: 0, flags: flags)
    }

    public mutating func update(_ input: some Collection<UInt8>) {
        let bytes = Array(input)
        var offset = 0
        while offset < bytes.count {
            if chunk.length == Self.chunkLength {
                let cv = chunk.output().chainingValue
                let total = chunk.counter + 1
                pushChunk(cv, totalChunks: total)
                chunk = ChunkState(key: key, counter: total, flags: flags)
            }
            let take = min(Self.chunkLength - chunk.length, bytes.count - offset)
            chunk.update(bytes[offset..<offset + take])
            offset += take
        }
    }

    /// The output so far, of any length (extendable output); the hasher may
    /// go on taking input.
    public func finalize(byteCount: Int = outputByteCount) -> [UInt8] {
        var output = chunk.output()
        for cv in stack.reversed() {
            output = Self.parent(left: cv, right: output.chainingValue, key: key, flags: flags)
        }
        return output.rootBytes(byteCount)
    }

    /// Merges completed subtrees: as many as there are trailing zero bits in
    /// the number of chunks so far.
    private mutating func pushChunk(_ newCV: SIMD8<UInt32>, totalChunks: UInt64) {
        var cv = newCV
        var total = totalChunks
        while total & 1 == 0, let left = stack.popLast() {
            cv = Self.parent(left: left, right: cv, key: key, flags: flags).chainingValue
            total >>= 1
        }
        stack.append(cv)
    }

    // MARK: One-shot forms

    public static func hash(_ input: some Collection<UInt8>, byteCount: Int = outputByteCount) -> [UInt8] {
        var hasher = BLAKE3()
        hasher.update(input)
        return hasher.finalize(byteCount: byteCount)
    }

    public static func keyedHash(key: some Collection<UInt8>, _ input: some Collection<UInt8>,
                                 byteCount: Int = outputByteCount) throws -> [UInt8] {
        var hasher = try BLAKE3(key: key)
        hasher.update(input)
        return hasher.finalize(byteCount: byteCount)
    }

    public static func deriveKey(context: String, material: some Collection<UInt8>,
                                 byteCount: Int = outputByteCount) -> [UInt8] {
        var hasher = BLAKE3(deriveKeyContext: context)
        hasher.update(material)
        return hasher.finalize(byteCount: byteCount)
    }

    // MARK: The tree

    struct Output {
        let inputCV: SIMD8<UInt32>
        let block: SIMD16<UInt32>
        let counter: UInt64
        let blockLength: UInt32
        let flags: UInt32

        var chainingValue: SIMD8<UInt32> {
            BLAKE3.compress(inputCV, block, counter: counter, blockLength: blockLength, flags: flags).lowHalf
        }

        func rootBytes(_ count: Int) -> [UInt8] {
            var out = [UInt8]()
            out.reserveCapacity(count + 64)
            var blockCounter: UInt64 = 0
            while out.count < count {
                let words = BLAKE3.compress(inputCV, block, counter: blockCounter,
                                            blockLength: blockLength, flags: flags | Flag.root)
                for i in 0..<16 {
                    let w = words[i]
                    out.append(UInt8(truncatingIfNeeded: w))
                    out.append(UInt8(truncatingIfNeeded: w >> 8))
                    out.append(UInt8(truncatingIfNeeded: w >> 16))
                    out.append(UInt8(truncatingIfNeeded: w >> 24))
                }
                blockCounter += 1
            }
            return Array(out.prefix(count))
        }
    }

    struct ChunkState {
        var cv: SIMD8<UInt32>
        let counter: UInt64
        let flags: UInt32
        var buffer = [UInt8](repeating: 0, count: 64)
        var bufferLength = 0
        var blocksCompressed = 0

        init(key: SIMD8<UInt32>, counter: UInt64, flags: UInt32) {
            cv = key
            self.counter = counter
            self.flags = flags
        }

        var length: Int { blocksCompressed * BLAKE3.blockLength + bufferLength }
        var startFlag: UInt32 { blocksCompressed == 0 ? Flag.chunkStart : 0 }

        mutating func update(_ input: ArraySlice<UInt8>) {
            var index = input.startIndex
            // Whole blocks straight from the input, while more input follows
            // them (the last block of a chunk must stay buffered).
            if bufferLength == 0 || bufferLength == BLAKE3.blockLength {
                if bufferLength == BLAKE3.blockLength {
                    cv = BLAKE3.compress(cv, BLAKE3.words16(buffer), counter: counter,
                                         blockLength: 64, flags: flags | startFlag).lowHalf
                    blocksCompressed += 1
                    bufferLength = 0
                }
                input.withUnsafeBytes { raw in
                    var offset = 0
                    while raw.count - offset > BLAKE3.blockLength {
                        cv = BLAKE3.compress(cv, BLAKE3.words16(raw, at: offset), counter: counter,
                                             blockLength: 64, flags: flags | startFlag).lowHalf
                        blocksCompressed += 1
                        offset += BLAKE3.blockLength
                    }
                    index += offset
                }
            }
            while index < input.endIndex {
                if bufferLength == BLAKE3.blockLength {
                    cv = BLAKE3.compress(cv, BLAKE3.words16(buffer), counter: counter,
                                         blockLength: 64, flags: flags | startFlag).lowHalf
                    blocksCompressed += 1
                    bufferLength = 0
                }
                let take = min(BLAKE3.blockLength - bufferLength, input.endIndex - index)
                for i in 0..<take { buffer[bufferLength + i] = input[index + i] }
                bufferLength += take
                index += take
            }
        }

        func output() -> Output {
            var block = buffer
            for i in bufferLength..<64 { block[i] = 0 }
            return Output(inputCV: cv, block: BLAKE3.words16(block), counter: counter,
                          blockLength: UInt32(bufferLength), flags: flags | startFlag | Flag.chunkEnd)
        }
    }

    static func parent(left: SIMD8<UInt32>, right: SIMD8<UInt32>, key: SIMD8<UInt32>, flags: UInt32) -> Output {
        Output(inputCV: key, block: SIMD16(lowHalf: left, highHalf: right), counter: 0, blockLength: 64,
               flags: flags | Flag.parent)
    }

    // MARK: The compression function

    @inline(__always)
    static func g(_ a: inout UInt32, _ b: inout UInt32, _ c: inout UInt32, _ d: inout UInt32, _ x: UInt32, _ y: UInt32) {
        a = a &+ b &+ x
        d = (d ^ a).rotatedRight(16)
        c = c &+ d
        b = (b ^ c).rotatedRight(12)
        a = a &+ b &+ y
        d = (d ^ a).rotatedRight(8)
        c = c &+ d
        b = (b ^ c).rotatedRight(7)
    }

    /// The compression function on sixteen scalars (the permutation of the
    /// message words between rounds is a renaming of locals).
    static func compress(_ cv: SIMD8<UInt32>, _ block: SIMD16<UInt32>, counter: UInt64, blockLength: UInt32,
                         flags: UInt32) -> SIMD16<UInt32> {
        var v0 = cv[0], v1 = cv[1], v2 = cv[2], v3 = cv[3], v4 = cv[4], v5 = cv[5], v6 = cv[6], v7 = cv[7]
        var v8 = iv[0], v9 = iv[1], v10 = iv[2], v11 = iv[3]
        var v12 = UInt32(truncatingIfNeeded: counter), v13 = UInt32(truncatingIfNeeded: counter >> 32)
        var v14 = blockLength, v15 = flags
        var m0 = block[0], m1 = block[1], m2 = block[2], m3 = block[3], m4 = block[4], m5 = block[5]
        var m6 = block[6], m7 = block[7], m8 = block[8], m9 = block[9], m10 = block[10], m11 = block[11]
        var m12 = block[12], m13 = block[13], m14 = block[14], m15 = block[15]
        for round in 0..<7 {
            g(&v0, &v4, &v8, &v12, m0, m1)
            g(&v1, &v5, &v9, &v13, m2, m3)
            g(&v2, &v6, &v10, &v14, m4, m5)
            g(&v3, &v7, &v11, &v15, m6, m7)
            g(&v0, &v5, &v10, &v15, m8, m9)
            g(&v1, &v6, &v11, &v12, m10, m11)
            g(&v2, &v7, &v8, &v13, m12, m13)
            g(&v3, &v4, &v9, &v14, m14, m15)
            if round < 6 {
                // MSG_PERMUTATION = 2 6 3 10 7 0 4 13 1 11 12 5 9 14 15 8
                (m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15) =
                    (m2, m6, m3, m10, m7, m0, m4, m13, m1, m11, m12, m5, m9, m14, m15, m8)
            }
        }
        return SIMD16(v0 ^ v8, v1 ^ v9, v2 ^ v10, v3 ^ v11, v4 ^ v12, v5 ^ v13, v6 ^ v14, v7 ^ v15,
                      v8 ^ cv[0], v9 ^ cv[1], v10 ^ cv[2], v11 ^ cv[3], v12 ^ cv[4], v13 ^ cv[5], v14 ^ cv[6], v15 ^ cv[7])
    }

    static func words8(_ bytes: [UInt8]) -> SIMD8<UInt32> {
        var w = SIMD8<UInt32>()
        for i in 0..<8 { w[i] = word(bytes, at: 4 * i) }
        return w
    }

    static func words16(_ bytes: [UInt8]) -> SIMD16<UInt32> {
        bytes.withUnsafeBytes { words16($0, at: 0) }
    }

    @inline(__always)
    static func words16(_ raw: UnsafeRawBufferPointer, at offset: Int) -> SIMD16<UInt32> {
        var w = SIMD16<UInt32>()
        for i in 0..<16 { w[i] = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 4 * i, as: UInt32.self)) }
        return w
    }

    @inline(__always)
    static func word(_ b: [UInt8], at i: Int) -> UInt32 {
        UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }
}

extension UInt32 {
    @inline(__always)
    func rotatedRight(_ n: UInt32) -> UInt32 { (self >> n) | (self << (32 - n)) }
}
