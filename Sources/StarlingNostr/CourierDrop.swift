import Foundation
import StarlingWire

/// Courier drops online (docs/PROTOCOL.md, "Courier drops online"; bitchat
/// BridgeCourierService.swift): a courier envelope for someone on no mesh
/// we reach, posted to Nostr relays as a kind 1401 event so that a bridge
/// on whatever mesh they turn up in can fetch it for them. Content: the
/// whole envelope (TLVs, copies 1) in standard base64 with padding; tags
/// exactly `["x", recipient tag hex]` and `["expiration", expiry in s]`
/// (NIP-40); signed by a throwaway key (the seal inside says who sent it).
public enum CourierDrop {
    public static let kind = 1_401
    /// The largest envelope posted or taken, bytes.
    public static let maxEnvelope = 20 * 1_024
    /// How far back a bridge reads drops when it subscribes, s (an envelope lives 24 h).
    public static let lookback: Int64 = 86_400

    /// The drop event of `envelope` (forced to one copy), signed by `key` (a
    /// fresh one each time unless given): nil when the envelope is too large.
    public static func event(_ envelope: CourierEnvelope, key: Secp256k1.PrivateKey = .random(), now: Int64) -> NostrEvent? {
        var e = envelope
        e.copies = 1
        guard let bytes = try? e.encoded(), bytes.count <= maxEnvelope else { return nil }
        var event = NostrEvent(pubkey: "", createdAt: now, kind: kind,
                               tags: [["x", e.recipientTag.hexString], ["expiration", String(e.expiry / 1_000)]],
                               content: Data(bytes).base64EncodedString())
        guard (try? event.sign(with: key)) != nil else { return nil }
        return event
    }

    /// The envelope a drop event carries, when it is one to take at `wall`
    /// (Unix ms): kind 1401, base64 of at most 20 KiB that decodes as an
    /// envelope not expired by its own expiry, and an `x` tag naming the
    /// envelope's own recipient tag (a mislabelled drop is refused). The
    /// event's signature is the caller's to check.
    public static func envelope(of event: NostrEvent, wall: UInt64) -> CourierEnvelope? {
        guard event.kind == kind, event.content.utf8.count <= (maxEnvelope + 2) / 3 * 4,
              let data = Data(base64Encoded: event.content), data.count <= maxEnvelope,
              let e = try? CourierEnvelope(decoding: Array(data)[...]), !e.isExpired(at: wall),
              event.tags.contains(where: { $0.count >= 2 && $0[0] == "x" && $0[1] == e.recipientTag.hexString }) else { return nil }
        return e
    }

    /// What a bridge reads: drops for these recipient tags (hex), the last 24 hours.
    public static func filter(tags: [String], now: Int64, limit: Int = 100) -> NostrFilter {
        NostrFilter(kinds: [kind], x: tags, since: now - lookback, limit: limit)
    }
}
