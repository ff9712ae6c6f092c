/// PKCS#7-style padding to fixed block sizes, as the deployed bitchat apps apply it.
///
/// The target is the smallest block of 256, 512, 1024 or 2048 bytes that is at
/// least `length + 16` (room the apps reserve for an AEAD tag). Padding is applied
/// only when 1 to 255 bytes are needed: every pad byte holds the pad length.
/// Otherwise the bytes go out unpadded.
public enum Padding {
    public static let blockSizes = [256, 512, 1024, 2048]

    /// The block a message of `count` bytes is padded to, or nil when it goes unpadded.
    @inline(__always)
    public static func paddedSize(for count: Int) -> Int? {
        let total = count + 16
        for block in blockSizes where total <= block {
            let needed = block - count
            return needed <= 255 ? block : nil
        }
        return nil
    }

    /// Appends padding in place when the rule above calls for it.
    public static func pad(_ bytes: inout [UInt8]) {
        guard let size = paddedSize(for: bytes.count) else { return }
        let n = size - bytes.count
        bytes.append(contentsOf: repeatElement(UInt8(n), count: n))
    }

    public static func padded(_ bytes: [UInt8]) -> [UInt8] {
        var copy = bytes
        pad(&copy)
        return copy
    }

    /// The number of verified padding bytes at the end of `bytes`: the last byte
    /// n must be 1...255, at most the count, and the last n bytes must all equal n.
    /// Returns nil when the tail is not valid padding.
    public static func verifiedPadLength(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard let last = bytes.last, last > 0, Int(last) <= bytes.count else { return nil }
        let n = Int(last)
        let start = bytes.endIndex - n
        for i in start..<bytes.endIndex where bytes[i] != last { return nil }
        return n
    }

    /// `bytes` without verified padding; the bytes unchanged when the tail is not padding.
    public static func unpadded(_ bytes: [UInt8]) -> [UInt8] {
        guard let n = verifiedPadLength(bytes[...]) else { return bytes }
        return Array(bytes.dropLast(n))
    }
}
