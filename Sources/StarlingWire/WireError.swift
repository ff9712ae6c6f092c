/// Everything that can be wrong with bytes from the network, said precisely:
/// which field, at which byte offset of the input, and what was wrong with it.
///
/// Every decoder in StarlingWire throws only this type. No decoder traps on any input.
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        /// The field needs `needed` bytes but only `available` remain.
        case truncated(needed: Int, available: Int)
        /// A header version other than 1 or 2.
        case unsupportedVersion(UInt8)
        /// Flag bits that are undefined, or a combination that cannot occur
        /// (for example hasRoute in a v1 header).
        case invalidFlags(UInt8)
        /// A length or count beyond what the format or a configured limit allows.
        case lengthOutOfRange(declared: Int, limit: Int)
        /// Bytes after the packet that are not valid PKCS#7 padding.
        case trailingBytes(count: Int)
        /// A value the format does not allow (explained in the text).
        case invalidValue(String)
        /// Text that is not valid UTF-8.
        case invalidUTF8
        /// A required TLV is absent.
        case missingField
        /// A TLV that may appear once appears twice.
        case duplicateField
        /// The DEFLATE stream is corrupt or does not inflate to the declared size.
        case decompressionFailed
        /// Declared original size / compressed size above the 50,000:1 limit.
        case compressionRatioTooHigh(originalSize: Int, compressedSize: Int)
    }

    public var reason: Reason
    /// The name of the field being read, e.g. `payloadLength` or `announce.nickname`.
    public var field: String
    /// Byte offset of that field in the input handed to the decoder.
    public var offset: Int

    public init(_ reason: Reason, field: String, offset: Int) {
        self.reason = reason
        self.field = field
        self.offset = offset
    }

    public var description: String {
        let what: String
        switch reason {
        case let .truncated(needed, available):
            what = "truncated: needs \(needed) byte\(needed == 1 ? "" : "s"), \(available) available"
        case let .unsupportedVersion(v):
            what = "unsupported version \(v) (only 1 and 2 exist)"
        case let .invalidFlags(f):
            what = "invalid flags 0x\(String(f, radix: 16, uppercase: false))"
        case let .lengthOutOfRange(declared, limit):
            what = "length \(declared) out of range (limit \(limit))"
        case let .trailingBytes(count):
            what = "\(count) trailing byte\(count == 1 ? "" : "s") that are not valid padding"
        case let .invalidValue(text):
            what = "invalid value: \(text)"
        case .invalidUTF8:
            what = "not valid UTF-8"
        case .missingField:
            what = "required field missing"
        case .duplicateField:
            what = "field appears more than once"
        case .decompressionFailed:
            what = "DEFLATE data is corrupt or does not match the declared size"
        case let .compressionRatioTooHigh(original, compressed):
            what = "compression ratio \(original):\(compressed) exceeds 50000:1"
        }
        return "\(field) at byte \(offset): \(what)"
    }
}

/// Why an encoder refused a value (values that cannot be put on the wire).
public struct EncodingError: Error, Hashable, Sendable, CustomStringConvertible {
    public var field: String
    public var problem: String

    public init(field: String, problem: String) {
        self.field = field
        self.problem = problem
    }

    public var description: String { "cannot encode \(field): \(problem)" }
}
