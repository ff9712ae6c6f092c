/// BLAKE3 (the 2020 specification by O'Connor, Aumasson, Neves and
/// Wilcox-O'Hearn): the hash, the keyed hash and key derivation, with
/// extendable output. No Swift package or Debian library provides it here, so
/// it is written from the specification and tested against the official test
/// vectors and the Python `blake3` package.
///
/// A portable implementation: one compression at a time, four columns in a
/// `SIMD4`; `starling-bench store` prints its speed.
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
    static func rotateRight(_ x: SIMD4<UInt32>, _ n: UInt32) -> SIMD4<UInt32> {
        (x &>> n) | (x &<< (32 - n))
    }

    /// G on four columns (or four diagonals) at once.
    @inline(__always)
    static func g(_ a: inout SIMD4<UInt32>, _ b: inout SIMD4<UInt32>, _ c: inout SIMD4<UInt32>, _ d: inout SIMD4<UInt32>,
                  _ mx: SIMD4<UInt32>, _ my: SIMD4<UInt32>) {
        a = a &+ b &+ mx
        d = rotateRight(d ^ a, 16)
        c = c &+ d
        b = rotateRight(b ^ c, 12)
        a = a &+ b &+ my
        d = rotateRight(d ^ a, 8)
        c = c &+ d
        b = rotateRight(b ^ c, 7)
    }

    static func compress(_ cv: SIMD8<UInt32>, _ block: SIMD16<UInt32>, counter: UInt64, blockLength: UInt32,
                         flags: UInt32) -> SIMD16<UInt32> {
        var r0 = cv.lowHalf, r1 = cv.highHalf
        var r2 = iv.lowHalf
        var r3 = SIMD4<UInt32>(UInt32(truncatingIfNeeded: counter), UInt32(truncatingIfNeeded: counter >> 32),
                               blockLength, flags)
        var m = block
        for round in 0..<7 {
            // Columns: G(0,4,8,12) G(1,5,9,13) G(2,6,10,14) G(3,7,11,15).
            g(&r0, &r1, &r2, &r3, SIMD4(m[0], m[2], m[4], m[6]), SIMD4(m[1], m[3], m[5], m[7]))
            // Diagonals: turn rows 1–3 so that each lane holds one diagonal.
            r1 = SIMD4(r1[1], r1[2], r1[3], r1[0])
            r2 = SIMD4(r2[2], r2[3], r2[0], r2[1])
            r3 = SIMD4(r3[3], r3[0], r3[1], r3[2])
            g(&r0, &r1, &r2, &r3, SIMD4(m[8], m[10], m[12], m[14]), SIMD4(m[9], m[11], m[13], m[15]))
            r1 = SIMD4(r1[3], r1[0], r1[1], r1[2])
            r2 = SIMD4(r2[2], r2[3], r2[0], r2[1])
            r3 = SIMD4(r3[1], r3[2], r3[3], r3[0])
            if round < 6 {
                m = SIMD16(m[2], m[6], m[3], m[10], m[7], m[0], m[4], m[13],
                           m[1], m[11], m[12], m[5], m[9], m[14], m[15], m[8])
            }
        }
        let low = SIMD8(lowHalf: r0 ^ r2, highHalf: r1 ^ r3)
        let high = SIMD8(lowHalf: r2, highHalf: r3) ^ cv
        return SIMD16(lowHalf: low, highHalf: high)
    }

    static func words8(_ bytes: [UInt8]) -> SIMD8<UInt32> {
        var w = SIMD8<UInt32>()
        for i in 0..<8 { w[i] = word(bytes, at: 4 * i) }
        return w
    }

    static func words16(_ bytes: [UInt8]) -> SIMD16<UInt32> {
        var w = SIMD16<UInt32>()
        for i in 0..<16 { w[i] = word(bytes, at: 4 * i) }
        return w
    }

    @inline(__always)
    static func word(_ b: [UInt8], at i: Int) -> UInt32 {
        UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }
}
