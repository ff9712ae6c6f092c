/// A type-length-value record kept as it was received, for TLV types a decoder
/// does not know. Re-encoding writes it back unchanged.
public struct UnknownTLV: Hashable, Sendable {
    public var type: UInt8
    public var value: [UInt8]

    public init(type: UInt8, value: [UInt8]) {
        self.type = type
        self.value = value
    }
}

/// The known TLV types a decoder has read so far, to refuse a second copy.
struct SeenTLVTypes {
    private var bits: UInt64 = 0

    /// Records `type` (below 64); throws `duplicateField` when it was already seen.
    mutating func insert(_ type: UInt8, context: StaticString, offset: Int) throws(WireError) {
        let bit = UInt64(1) << UInt64(type & 63)
        guard bits & bit == 0 else {
            throw WireError(.duplicateField, field: "\(context)[0x0\(String(type, radix: 16))]", offset: offset)
        }
        bits |= bit
    }
}

/// The width of a TLV length field.
enum TLVLength {
    case u8, u16, u32

    var size: Int {
        switch self {
        case .u8: 1
        case .u16: 2
        case .u32: 4
        }
    }

    var max: Int {
        switch self {
        case .u8: Int(UInt8.max)
        case .u16: Int(UInt16.max)
        case .u32: Int(UInt32.max)
        }
    }
}

extension ByteReader {
    /// Reads one TLV header and value. The value length is checked against the
    /// remaining bytes before anything is read.
    mutating func tlv(_ context: StaticString, length: (UInt8) -> TLVLength) throws(WireError)
        -> (type: UInt8, valueOffset: Int, value: ArraySlice<UInt8>)
    {
        let type = try u8("\(context).type")
        let width = length(type)
        let count: Int
        switch width {
        case .u8: count = Int(try u8("\(context).length"))
        case .u16: count = Int(try u16("\(context).length"))
        case .u32: count = Int(try u32("\(context).length"))
        }
        let at = position
        let value = try slice(count, "\(context)[0x" + String(type, radix: 16) + "].value")
        return (type, at, value)
    }
}

extension Array where Element == UInt8 {
    mutating func appendTLV(_ type: UInt8, _ value: some Collection<UInt8>, length: TLVLength) {
        append(type)
        switch length {
        case .u8: append(UInt8(value.count))
        case .u16: appendBE(UInt16(value.count))
        case .u32: appendBE(UInt32(value.count))
        }
        append(contentsOf: value)
    }
}

func checkLength(_ count: Int, _ width: TLVLength, field: String) throws(EncodingError) {
    guard count <= width.max else {
        throw EncodingError(field: field, problem: "\(count) bytes; at most \(width.max)")
    }
}

func utf8Value(_ value: ArraySlice<UInt8>, field: String, offset: Int) throws(WireError) -> String {
    guard let s = String(validating: value, as: UTF8.self) else {
        throw WireError(.invalidUTF8, field: field, offset: offset)
    }
    return s
}
