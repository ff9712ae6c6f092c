import Crypto
import StarlingWire

/// Public location channels as the bitchat apps run them: a geohash names a
/// place (7 characters: a block; 5: a town; 2: a region); its channel is the
/// Nostr events tagged `["g", geohash]`: kind 20000 messages (`["n", nickname]`
/// optional) and kind 20001 presence (content empty, no nickname). Each
/// geohash gets its own identity, derived from a seed the device keeps, so
/// that a person is not linked across places (docs/research/nostr.md §7).
public enum LocationChannel {
    public static let messageKind = 20_000
    public static let presenceKind = 20_001
    /// How far back a channel is read when joined (the apps': an hour).
    public static let lookback: Int64 = 3_600
    /// The longest message text shown.
    public static let maxText = 4_096

    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case badGeohash(String)
        case tooLong(Int)
        /// The event could not be signed (not expected with a valid key).
        case unsigned(String)

        public var description: String {
            switch self {
            case let .badGeohash(g): "\(g.prefix(20)) is not a geohash (1 to 12 of 0-9 b-h j k m n p-z)"
            case let .tooLong(n): "\(n) bytes: a channel message is at most \(LocationChannel.maxText)"
            case let .unsigned(why): "the channel event could not be signed: \(why)"
            }
        }
    }

    static let alphabet = Set("0123456789bcdefghjkmnpqrstuvwxyz")

    /// The geohash, lower-cased and checked (1 to 12 base-32 characters).
    public static func geohash(_ text: String) throws(Error) -> String {
        let g = text.lowercased()
        guard (1...12).contains(g.count), g.allSatisfy({ alphabet.contains($0) }) else { throw .badGeohash(text) }
        return g
    }

    /// The identity for a geohash: HMAC-SHA256(seed, geohash ‖ u32 BE i) for
    /// the first i in 0..<10 that is a valid key, else SHA-256(seed ‖ geohash)
    /// (as iOS derives it).
    public static func identity(seed: [UInt8], geohash: String) -> Secp256k1.PrivateKey {
        let key = SymmetricKey(data: seed)
        for i in UInt32(0)..<10 {
            let message = Array(geohash.utf8) + [UInt8(i >> 24), UInt8(i >> 16 & 0xFF), UInt8(i >> 8 & 0xFF), UInt8(i & 0xFF)]
            let candidate = Array(HMAC<SHA256>.authenticationCode(for: message, using: key))
            if let k = try? Secp256k1.PrivateKey(bytes: candidate) { return k }
        }
        let fallback = Array(SHA256.hash(data: seed + Array(geohash.utf8)))
        return (try? Secp256k1.PrivateKey(bytes: fallback)) ?? .random()
    }

    /// A message for a channel, signed by the geohash's identity.
    public static func message(_ text: String, nickname: String?, geohash: String, key: Secp256k1.PrivateKey,
                               now: Int64) throws(Error) -> NostrEvent {
        guard text.utf8.count <= maxText else { throw .tooLong(text.utf8.count) }
        var tags = [["g", geohash]]
        if let nickname, !nickname.isEmpty { tags.append(["n", nickname]) }
        var event = NostrEvent(pubkey: "", createdAt: now, kind: messageKind, tags: tags, content: text)
        do { try event.sign(with: key) } catch { throw .unsigned("\(error)") }
        return event
    }

    /// Presence in a channel: content empty, tags exactly `[["g", geohash]]`.
    public static func presence(geohash: String, key: Secp256k1.PrivateKey, now: Int64) throws(Error) -> NostrEvent {
        var event = NostrEvent(pubkey: "", createdAt: now, kind: presenceKind, tags: [["g", geohash]], content: "")
        do { try event.sign(with: key) } catch { throw .unsigned("\(error)") }
        return event
    }

    /// The subscription for a channel: both kinds, its geohash, the last hour.
    public static func filter(geohash: String, now: Int64, limit: Int = 1_000) -> NostrFilter {
        NostrFilter(kinds: [messageKind, presenceKind], g: [geohash], since: now - lookback, limit: limit)
    }
}
