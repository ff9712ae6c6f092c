/// A bounds-checked cursor over bytes received from the network.
///
/// Every read checks the remaining length first and throws a ``WireError`` that
/// names the field and its offset, so a length field can never make a decoder read
/// past, or allocate more than, the input it was given.
public struct ByteReader: Sendable {
    public let bytes: [UInt8]
    /// Index of the next byte to read.
    public private(set) var offset: Int
    /// One past the last readable index.
    public let end: Int
    /// Added to offsets in errors, so that nested decoders report positions in
    /// the outermost input.
    public let errorBase: Int

    public init(_ bytes: [UInt8], errorBase: Int = 0) {
        self.bytes = bytes
        self.offset = 0
        self.end = bytes.count
        self.errorBase = errorBase
    }

    public var remaining: Int { end - offset }
    public var isAtEnd: Bool { offset >= end }
    /// Offset of the cursor as reported in errors.
    public var position: Int { offset + errorBase }

    public func error(_ reason: WireError.Reason, _ field: @autoclosure () -> String, at absolute: Int? = nil) -> WireError {
        WireError(reason, field: field(), offset: absolute ?? position)
    }

    @inline(__always)
    public func require(_ count: Int, _ field: @autoclosure () -> String) throws(WireError) {
        if count > end - offset || count < 0 {
            throw error(.truncated(needed: count, available: end - offset), field())
        }
    }

    @inline(__always)
    public mutating func u8(_ field: @autoclosure () -> String) throws(WireError) -> UInt8 {
        try require(1, field())
        defer { offset += 1 }
        return bytes[offset]
    }

    @inline(__always)
    public mutating func u16(_ field: @autoclosure () -> String) throws(WireError) -> UInt16 {
        try require(2, field())
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    @inline(__always)
    public mutating func u32(_ field: @autoclosure () -> String) throws(WireError) -> UInt32 {
        try require(4, field())
        defer { offset += 4 }
        var v: UInt32 = 0
        for i in 0..<4 { v = v << 8 | UInt32(bytes[offset + i]) }
        return v
    }

    @inline(__always)
    public mutating func u64(_ field: @autoclosure () -> String) throws(WireError) -> UInt64 {
        try require(8, field())
        defer { offset += 8 }
        var v: UInt64 = 0
        for i in 0..<8 { v = v << 8 | UInt64(bytes[offset + i]) }
        return v
    }

    /// Reads `count` bytes into a new array. The count is checked before allocating.
    public mutating func read(_ count: Int, _ field: @autoclosure () -> String) throws(WireError) -> [UInt8] {
        try require(count, field())
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// Reads `count` bytes without copying.
    public mutating func slice(_ count: Int, _ field: @autoclosure () -> String) throws(WireError) -> ArraySlice<UInt8> {
        try require(count, field())
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    /// Reads `count` bytes as UTF-8 text; invalid UTF-8 is an error, not a replacement.
    public mutating func utf8(_ count: Int, _ field: @autoclosure () -> String) throws(WireError) -> String {
        let start = position
        let raw = try slice(count, field())
        guard let text = String(validating: raw, as: UTF8.self) else {
            throw error(.invalidUTF8, field(), at: start)
        }
        return text
    }

    public mutating func skip(_ count: Int, _ field: @autoclosure () -> String) throws(WireError) {
        try require(count, field())
        offset += count
    }

    /// The unread bytes, without moving the cursor.
    public var rest: ArraySlice<UInt8> { bytes[offset..<end] }
}

extension Array where Element == UInt8 {
    @inline(__always) mutating func appendBE(_ v: UInt16) {
        append(UInt8(truncatingIfNeeded: v >> 8))
        append(UInt8(truncatingIfNeeded: v))
    }

    @inline(__always) mutating func appendBE(_ v: UInt32) {
        append(UInt8(truncatingIfNeeded: v >> 24))
        append(UInt8(truncatingIfNeeded: v >> 16))
        append(UInt8(truncatingIfNeeded: v >> 8))
        append(UInt8(truncatingIfNeeded: v))
    }

    @inline(__always) mutating func appendBE(_ v: UInt64) {
        var i = 56
        while i >= 0 {
            append(UInt8(truncatingIfNeeded: v >> UInt64(i)))
            i -= 8
        }
    }
}

// MARK: - Hex

extension Array where Element == UInt8 {
    /// Parses hexadecimal text. Whitespace, `:` and a leading `0x` are ignored, so
    /// dumps copied from tools such as `xxd -p` or Wireshark paste as they are.
    public init(hex text: some StringProtocol) throws(WireError) {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count / 2)
        var high: UInt8? = nil
        var index = 0
        var utf8 = Array(text.utf8)
        if utf8.count >= 2, utf8[0] == UInt8(ascii: "0"), utf8[1] | 0x20 == UInt8(ascii: "x") {
            utf8.removeFirst(2)
            index = 2
        }
        for c in utf8 {
            defer { index += 1 }
            let nibble: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = c - UInt8(ascii: "A") + 10
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: ":"):
                continue
            default:
                throw WireError(.invalidValue("character '\(Character(Unicode.Scalar(c)))' is not hexadecimal"),
                                field: "hex", offset: index)
            }
            if let h = high {
                out.append(h << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        if high != nil {
            throw WireError(.invalidValue("odd number of hex digits"), field: "hex", offset: index)
        }
        self = out
    }

    /// Lowercase hexadecimal, two digits per byte.
    public var hexString: String { ArraySlice(self).hexString }
}

extension ArraySlice where Element == UInt8 {
    public var hexString: String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(count * 2)
        for b in self {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
