/// Ya OK's contact card (seed 002 §2.2): what a contact QR code carries.
///
/// ```
/// yaok://contact?v=1&d=<data, base64url without padding>
///
/// data = version 0x01 ‖ user ID 16 ‖ name length u8 ‖ name (UTF-8)
///        ‖ X25519 public key 32 ‖ Ed25519 public key 32 ‖ signature 64
/// ```
///
/// The signature is Ed25519, by the card's own Ed25519 key, over every byte
/// before it. This type knows only the bytes; StarlingYaOK signs and verifies.
public struct ContactCardBytes: Hashable, Sendable {
    public static let version: UInt8 = 0x01
    public static let scheme = "yaok"
    /// A display name: 1 to 64 characters, at most 255 bytes of UTF-8, no
    /// control or bidirectional-override characters.
    public static let maxNameCharacters = 64
    /// The seed's QR data limit (§10.4): longer input is refused unread.
    public static let maxURIBytes = 2048

    public var userID: UserID
    public var displayName: String
    public var agreementKey: [UInt8]
    public var signingKey: [UInt8]
    public var signature: [UInt8]

    public init(userID: UserID, displayName: String, agreementKey: [UInt8], signingKey: [UInt8],
                signature: [UInt8] = [UInt8](repeating: 0, count: 64)) {
        self.userID = userID
        self.displayName = displayName
        self.agreementKey = agreementKey
        self.signingKey = signingKey
        self.signature = signature
    }

    /// The bytes the signature covers: everything before it.
    public func signedBytes() throws(WireError) -> [UInt8] {
        try Self.checkName(displayName, offset: 17)
        guard agreementKey.count == 32 else {
            throw WireError(.lengthOutOfRange(declared: agreementKey.count, limit: 32), field: "x25519Key", offset: 0)
        }
        guard signingKey.count == 32 else {
            throw WireError(.lengthOutOfRange(declared: signingKey.count, limit: 32), field: "ed25519Key", offset: 0)
        }
        let name = Array(displayName.utf8)
        return [Self.version] + userID.bytes + [UInt8(name.count)] + name + agreementKey + signingKey
    }

    public func encode() throws(WireError) -> [UInt8] {
        guard signature.count == 64 else {
            throw WireError(.lengthOutOfRange(declared: signature.count, limit: 64), field: "signature", offset: 0)
        }
        return try signedBytes() + signature
    }

    public static func decode(_ bytes: [UInt8]) throws(WireError) -> ContactCardBytes {
        var r = ByteReader(bytes)
        let version = try r.u8("version")
        guard version == Self.version else { throw WireError(.unsupportedVersion(version), field: "version", offset: 0) }
        let id = try r.read(16, "userID")
        let nameLength = Int(try r.u8("nameLength"))
        guard nameLength > 0 else {
            throw WireError(.invalidValue("an empty name"), field: "name", offset: r.position)
        }
        let nameOffset = r.position
        let name = try r.utf8(nameLength, "name")
        try checkName(name, offset: nameOffset)
        let agreement = try r.read(32, "x25519Key")
        let signing = try r.read(32, "ed25519Key")
        let signature = try r.read(64, "signature")
        guard r.isAtEnd else { throw WireError(.trailingBytes(count: r.remaining), field: "signature", offset: r.position) }
        return ContactCardBytes(userID: UserID(bytes: id)!, displayName: name, agreementKey: agreement,
                                signingKey: signing, signature: signature)
    }

    static func checkName(_ name: String, offset: Int) throws(WireError) {
        if let problem = DisplayName.problem(name) {
            throw WireError(.invalidValue(problem), field: "name", offset: offset)
        }
    }

    // MARK: The URI

    public func uri() throws(WireError) -> String {
        "\(Self.scheme)://contact?v=1&d=\(Base64.encode(try encode(), url: true, padded: false))"
    }

    /// Parses a `yaok://contact?v=1&d=…` URI (the parameters in any order;
    /// `d` in base64url or standard base64, padded or not).
    public static func parse(uri text: String) throws(WireError) -> ContactCardBytes {
        let trimmed = text.trimmingWhitespace()
        guard trimmed.utf8.count <= maxURIBytes else {
            throw WireError(.lengthOutOfRange(declared: trimmed.utf8.count, limit: maxURIBytes), field: "uri", offset: 0)
        }
        let prefix = "\(scheme)://contact?"
        guard trimmed.lowercased().hasPrefix(prefix) else {
            throw WireError(.invalidValue("not a Ya OK contact (it must start with \(prefix))"), field: "uri", offset: 0)
        }
        var version: Substring?, data: Substring?
        for pair in trimmed.dropFirst(prefix.count).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            switch parts[0] {
            case "v": version = parts[1]
            case "d": data = parts[1]
            default: continue
            }
        }
        guard let version else { throw WireError(.missingField, field: "v", offset: 0) }
        guard version == "1" else {
            throw WireError(.invalidValue("version \(version) (this software reads version 1)"), field: "v", offset: 0)
        }
        guard let data else { throw WireError(.missingField, field: "d", offset: 0) }
        guard let bytes = Base64.decode(String(data)) else {
            throw WireError(.invalidValue("not base64"), field: "d", offset: 0)
        }
        return try decode(bytes)
    }
}

/// Sixteen bytes held inline as two big-endian words: made, compared and
/// hashed without an allocation (a Ya OK server handles several a message).
public struct Bytes16: Hashable, Sendable, Comparable {
    /// Bytes 0–7 and 8–15, each read big-endian.
    public let high: UInt64, low: UInt64

    @inlinable
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    @inlinable
    public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        if let words = bytes.withContiguousStorageIfAvailable({ buffer in
            let raw = UnsafeRawBufferPointer(buffer)
            return (UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                    UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }) {
            (high, low) = words
        } else {
            var h: UInt64 = 0, l: UInt64 = 0
            for (i, b) in bytes.enumerated() {
                if i < 8 { h = h << 8 | UInt64(b) } else { l = l << 8 | UInt64(b) }
            }
            (high, low) = (h, l)
        }
    }

    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// The 16 bytes in order, without making an array.
    @inlinable
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: (high.bigEndian, low.bigEndian), body)
    }

    /// Byte order: the words compare as the bytes would, one by one.
    public static func < (a: Bytes16, b: Bytes16) -> Bool { (a.high, a.low) < (b.high, b.low) }
}

/// A Ya OK user ID: a UUID (v4 when we make one), 16 bytes.
public struct UserID: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    public let value: Bytes16

    public init(_ value: Bytes16) { self.value = value }

    @inlinable
    public init?(bytes: some Collection<UInt8>) {
        guard let value = Bytes16(bytes) else { return nil }
        self.value = value
    }

    public var bytes: [UInt8] { value.bytes }

    /// The 16 bytes in order, without making an array.
    @inlinable
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try value.withUnsafeBytes(body)
    }

    /// A random version-4 UUID (two draws of 8 bytes).
    public static func random() -> UserID {
        var rng = SystemRandomNumberGenerator()
        let high: UInt64 = rng.next(), low: UInt64 = rng.next()
        // Byte 6's high nibble is the version (4); byte 8's top bits the variant (10).
        return UserID(Bytes16(high: (high & ~0xF000) | 0x4000, low: (low & ~(0xC0 << 56)) | (0x80 << 56)))
    }

    /// From the textual form `8-4-4-4-12` hex digits (any case).
    public init?(string: String) {
        // Exactly 8-4-4-4-12 hex digits: nothing else is skipped or accepted.
        let chars = Array(string.utf8)
        guard chars.count == 36 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(16)
        var high: UInt8?
        for (i, c) in chars.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard c == UInt8(ascii: "-") else { return nil }
                continue
            }
            let v: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): v = c - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
        }
        guard out.count == 16, let value = Bytes16(out) else { return nil }
        self.value = value
    }

    /// Lowercase `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`.
    public var description: String {
        let h = bytes.hexString
        let c = Array(h)
        return [c[0..<8], c[8..<12], c[12..<16], c[16..<20], c[20..<32]].map { String($0) }.joined(separator: "-")
    }

    public static func < (a: UserID, b: UserID) -> Bool { a.value < b.value }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = UserID(string: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a UUID: \(text)"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}

/// The rules for a name a person reads (Ya OK display names).
public enum DisplayName {
    public static let maxCharacters = 64

    /// What is wrong with `name`, or nil when it is acceptable.
    public static func problem(_ name: String) -> String? {
        if name.isEmpty { return "an empty name" }
        if name.count > maxCharacters { return "\(name.count) characters (at most \(maxCharacters))" }
        if name.utf8.count > 255 { return "\(name.utf8.count) bytes of UTF-8 (at most 255)" }
        for scalar in name.unicodeScalars {
            let v = scalar.value
            if v < 0x20 || (0x7F...0x9F).contains(v) { return "a control character (U+\(hex4(v)))" }
            if (0x202A...0x202E).contains(v) || (0x2066...0x2069).contains(v) || v == 0x200E || v == 0x200F {
                return "a bidirectional-text control (U+\(hex4(v)))"
            }
        }
        return nil
    }

    private static func hex4(_ v: UInt32) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - s.count)) + s
    }
}

/// Base64 (RFC 4648 §4) and base64url (§5), with or without padding.
public enum Base64 {
    static let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    static let url = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func encode(_ bytes: [UInt8], url: Bool, padded: Bool) -> String {
        let alphabet = url ? Self.url : standard
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
            i += 3
        }
        let rest = bytes.count - i
        if rest > 0 {
            let n = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)]]
            if rest == 2 { out.append(alphabet[Int(n >> 6 & 63)]) }
            if padded { out += Array(repeating: UInt8(ascii: "="), count: 3 - rest) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes either alphabet (not mixed), padded or not; nil for anything else.
    public static func decode(_ text: String) -> [UInt8]? {
        var chars = Array(text.utf8)
        while chars.last == UInt8(ascii: "=") { chars.removeLast() }
        guard chars.count % 4 != 1, Array(text.utf8).count - chars.count <= 2 else { return nil }
        let usesURL = chars.contains { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
        let usesStandard = chars.contains { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") }
        guard !(usesURL && usesStandard) else { return nil }
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in (usesURL ? Self.url : standard).enumerated() { table[Int(c)] = UInt8(i) }
        var out = [UInt8]()
        out.reserveCapacity(chars.count * 3 / 4)
        var acc: UInt32 = 0, bits = 0
        for c in chars {
            let v = table[Int(c)]
            guard v != 0xFF else { return nil }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
            }
        }
        // Leftover bits must be zero (canonical encoding).
        guard acc & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[first...last])
    }
}
