import CZlib

/// Raw DEFLATE (RFC 1951, no zlib header) of packet payloads, through Debian's zlib.
///
/// The rule is bitchat iOS's, exactly, because an iPhone verifies a signed packet
/// by encoding the payload it decoded again (`toBinaryDataForSigning()`): its
/// signature holds only if the iPhone's encoder makes the bytes we signed.
/// A payload is tried only when it has at least 100 bytes and its distinct-byte
/// ratio (distinct byte values / min(count, 256)) is below 0.9; it is deflated
/// as Apple's `COMPRESSION_ZLIB` does (zlib level 5, window 15 bits, memLevel 8,
/// default strategy); the result is used when it is shorter than the payload,
/// the original-size prefix not counted (so a packet may grow by up to 1 byte
/// in v1 and 3 in v2: iOS does the same). docs/PROTOCOL.md, "Compression".
public enum Compression {
    public static let threshold = 100
    public static let maximumRatio = 50_000
    /// Apple's `COMPRESSION_ZLIB` is zlib's encoder at level 5 (Android's
    /// `Deflater` uses 6, but Android verifies with the bytes that came).
    public static let level: Int32 = 5

    /// Whether a payload should be tried at all.
    public static func isWorthTrying(_ payload: [UInt8]) -> Bool {
        guard payload.count >= threshold else { return false }
        // Bit set of the byte values seen; stop as soon as the ratio is reached.
        var seen = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        var distinct = 0
        let sample = Double(min(payload.count, 256))
        let limit = Int((0.9 * sample).rounded(.up))
        for b in payload {
            let bit = UInt64(1) << UInt64(b & 63)
            let isNew: Bool
            switch b >> 6 {
            case 0: isNew = seen.0 & bit == 0; seen.0 |= bit
            case 1: isNew = seen.1 & bit == 0; seen.1 |= bit
            case 2: isNew = seen.2 & bit == 0; seen.2 |= bit
            default: isNew = seen.3 & bit == 0; seen.3 |= bit
            }
            if isNew {
                distinct += 1
                if distinct >= limit { break }
            }
        }
        return Double(distinct) / sample < 0.9
    }

    /// Raw DEFLATE of `input`, or nil when zlib fails.
    public static func deflate(_ input: [UInt8], level: Int32 = Compression.level) -> [UInt8]? {
        var stream = z_stream()
        guard deflateInit2_(&stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY,
                            ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(input.count)))
        var output = [UInt8](repeating: 0, count: bound)
        let status: Int32 = input.withUnsafeBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
                stream.avail_in = uInt(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = uInt(outBuf.count)
                return CZlib.deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }

    /// The deflated payload when compressing pays off under the rule above:
    /// shorter than the payload, the original-size prefix not counted.
    public static func compressIfUseful(_ payload: [UInt8]) -> [UInt8]? {
        guard isWorthTrying(payload), let out = deflate(payload), out.count < payload.count else {
            return nil
        }
        return out
    }

    /// Inflates raw DEFLATE data that must expand to exactly `originalSize` bytes.
    ///
    /// The ratio limit is checked before any allocation, so the output buffer is at
    /// most 50,000 times the compressed input.
    public static func inflate(_ input: ArraySlice<UInt8>, originalSize: Int,
                               field: String, offset: Int) throws(WireError) -> [UInt8] {
        guard !input.isEmpty else {
            throw WireError(.lengthOutOfRange(declared: 0, limit: 1), field: field, offset: offset)
        }
        if originalSize > input.count * maximumRatio {
            throw WireError(.compressionRatioTooHigh(originalSize: originalSize, compressedSize: input.count),
                            field: field, offset: offset)
        }
        var stream = z_stream()
        guard inflateInit2_(&stream, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw WireError(.decompressionFailed, field: field, offset: offset)
        }
        defer { inflateEnd(&stream) }
        // One spare byte detects a stream that inflates to more than declared.
        var output = [UInt8](repeating: 0, count: originalSize + 1)
        let status: Int32 = input.withUnsafeBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress)
                stream.avail_in = uInt(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = uInt(outBuf.count)
                return CZlib.inflate(&stream, Z_FINISH)
            }
        }
        // The stream must end exactly at the end of the input and at the declared size.
        guard status == Z_STREAM_END, stream.avail_in == 0, Int(stream.total_out) == originalSize else {
            throw WireError(.decompressionFailed, field: field, offset: offset)
        }
        output.removeLast()
        return output
    }
}
