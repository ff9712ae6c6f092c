import Crypto

/// HKDF-SHA256 (RFC 5869) with its limits checked instead of trapping: the
/// output may be at most 255 × 32 = 8,160 bytes.
public enum HKDFSHA256 {
    public static let maxOutputByteCount = 255 * 32

    public struct OutputTooLarge: Error, Hashable, Sendable {
        public let requested: Int
    }

    public static func derive(inputKeyMaterial ikm: [UInt8], salt: [UInt8], info: [UInt8],
                              outputByteCount: Int) throws(OutputTooLarge) -> [UInt8] {
        guard outputByteCount >= 0, outputByteCount <= maxOutputByteCount else {
            throw OutputTooLarge(requested: outputByteCount)
        }
        if outputByteCount == 0 { return [] }
        let key = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: ikm), salt: salt, info: info,
                                         outputByteCount: outputByteCount)
        return key.withUnsafeBytes { Array($0) }
    }
}
