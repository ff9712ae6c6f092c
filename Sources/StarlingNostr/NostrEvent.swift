import Crypto
import Foundation
import StarlingWire

/// A Nostr event (NIP-01): its ID is the SHA-256 of the canonical
/// serialisation `[0, pubkey, created_at, kind, tags, content]`, signed with
/// BIP-340. A rumor (NIP-59's unsigned inner event) has no signature, and
/// iOS bitchat gives it an empty ID.
public struct NostrEvent: Codable, Hashable, Sendable {
    public var id: String
    public var pubkey: String
    public var created_at: Int64
    public var kind: Int
    public var tags: [[String]]
    public var content: String
    public var sig: String?

    public init(pubkey: String, createdAt: Int64, kind: Int, tags: [[String]] = [], content: String) {
        id = ""
        self.pubkey = pubkey
        created_at = createdAt
        self.kind = kind
        self.tags = tags
        self.content = content
        sig = nil
    }

    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case notJSON
        case tooLarge(Int)
        case badID
        case badSignature
        case key(Secp256k1.Error)

        public var description: String {
            switch self {
            case .notJSON: "not a Nostr event (JSON with id, pubkey, created_at, kind, tags, content)"
            case let .tooLarge(n): "a Nostr event of \(n) bytes is over the 64 KiB limit"
            case .badID: "the event's ID is not the hash of its fields"
            case .badSignature: "the event's signature does not verify"
            case let .key(e): "\(e)"
            }
        }
    }

    /// The largest event JSON taken in (bitchat's limit for each layer).
    public static let maxBytes = 64 * 1024

    /// Decodes an event from JSON (at most 64 KiB).
    public static func decode(_ json: String) throws(Error) -> NostrEvent {
        let bytes = Array(json.utf8)
        guard bytes.count <= maxBytes else { throw .tooLarge(bytes.count) }
        guard let event = try? JSONDecoder().decode(NostrEvent.self, from: Data(bytes)) else { throw .notJSON }
        return event
    }

    /// The canonical serialisation NIP-01 hashes.
    public var canonical: String {
        "[0,\(Self.quote(pubkey)),\(created_at),\(kind),[" + tags.map { "[" + $0.map(Self.quote).joined(separator: ",") + "]" }
            .joined(separator: ",") + "],\(Self.quote(content))]"
    }

    /// The ID its fields give.
    public var computedID: String { Array(SHA256.hash(data: Array(canonical.utf8))).hexString }

    /// Fills in the ID and signs it with `key` (whose x-only key must be `pubkey`).
    public mutating func sign(with key: Secp256k1.PrivateKey) throws(Error) {
        pubkey = key.publicKey.hexString
        id = computedID
        guard let message = try? [UInt8](hex: id) else { throw .badID }
        switch Result(catching: { () throws(Secp256k1.Error) -> [UInt8] in try key.sign(message) }) {
        case let .success(signature): sig = signature.hexString
        case let .failure(e): throw .key(e)
        }
    }

    /// The ID is the hash of the fields, and the signature is the pubkey's.
    public func verify() throws(Error) {
        guard id == computedID else { throw .badID }
        // NIP-01's spelling only: one key written in capitals, with spaces or a 0x is not another signer.
        guard let sig, Self.isLowercaseHex(pubkey, count: 64), Self.isLowercaseHex(sig, count: 128) else { throw .badSignature }
        guard let signature = try? [UInt8](hex: sig), let message = try? [UInt8](hex: id), let key = try? [UInt8](hex: pubkey),
              Secp256k1.verify(signature, message: message, publicKey: key) else { throw .badSignature }
    }

    static func isLowercaseHex(_ text: String, count: Int) -> Bool {
        text.utf8.count == count && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The event as JSON (keys in a fixed order; `sig` left out when nil).
    public var json: String {
        var fields = ["\"id\":\(Self.quote(id))", "\"pubkey\":\(Self.quote(pubkey))", "\"created_at\":\(created_at)", "\"kind\":\(kind)",
                      "\"tags\":[" + tags.map { "[" + $0.map(Self.quote).joined(separator: ",") + "]" }.joined(separator: ",") + "]",
                      "\"content\":\(Self.quote(content))"]
        if let sig { fields.append("\"sig\":\(Self.quote(sig))") }
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// NIP-01's string escaping: `\n \" \\ \r \t \b \f` escaped, other
    /// control characters as \u00XX, everything else as UTF-8.
    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case _ where scalar.value < 0x20:
                out += "\\u" + String(format: "%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
