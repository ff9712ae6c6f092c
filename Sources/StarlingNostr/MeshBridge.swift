import Crypto
import Foundation
import StarlingWire

/// The mesh bridge's Nostr events (docs/PROTOCOL.md, "Mesh bridges";
/// docs/research/bitchat-gateway.md §3; bitchat BridgeService.swift): a
/// public mesh message that crosses to another mesh through Nostr is a kind
/// 20000 event tagged `["r", cell]` (never `g`: location channels do not see
/// it), `["n", nickname]` when there is one, and one flat `["m", stableID,
/// senderIDHex, ms]` naming the radio message, so that a mesh that heard the
/// radio copy shows it once. A bridge says it is there with kind 20001
/// presence tagged exactly `[["r", cell]]`.
public enum MeshBridge {
    /// A bridge's rendezvous cell: 6 characters (about 1.2 km).
    public static let cellLength = 6
    /// The longest message that crosses, UTF-8 bytes (trimmed).
    public static let maxContent = 16_000
    /// How far back a bridge reads the relays when it subscribes, s.
    public static let lookback: Int64 = 900

    /// Text without its leading and trailing whitespace and line breaks (as Swift's `.whitespacesAndNewlines`).
    public static func trimmed(_ text: String) -> String { text.trimmingCharacters(in: .whitespacesAndNewlines) }

    /// The first 32 hex digits of SHA-256 of `lowercase(senderID hex) | ms |
    /// content trimmed of whitespace and line breaks` (iOS's stableID).
    public static func stableID(senderIDHex: String, timestampMs: UInt64, content: String) -> String {
        let trimmed = content.trimmingCharacters(in: .whitespacesAndNewlines)
        let text = "\(senderIDHex.lowercased())|\(timestampMs)|\(trimmed)"
        return String(Array(SHA256.hash(data: Array(text.utf8))).hexString.prefix(32))
    }

    /// The key a node signs its bridged messages with in `cell`: the
    /// location-channel derivation over `"bridge|" + cell` (so it links to
    /// none of its channel keys, and stays the same across restarts).
    public static func identity(seed: [UInt8], cell: String) -> Secp256k1.PrivateKey {
        LocationChannel.identity(seed: seed, geohash: "bridge|" + cell)
    }

    /// A public mesh message for the other meshes on `cell`, signed with `key`:
    /// nil when its trimmed text is empty or over ``maxContent``.
    public static func message(_ text: String, nickname: String?, cell: String, senderIDHex: String, timestampMs: UInt64,
                               key: Secp256k1.PrivateKey, now: Int64) -> NostrEvent? {
        let content = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !content.isEmpty, content.utf8.count <= maxContent else { return nil }
        var tags = [["r", cell]]
        if let n = nickname?.trimmingCharacters(in: .whitespacesAndNewlines), !n.isEmpty { tags.append(["n", n]) }
        tags.append(["m", stableID(senderIDHex: senderIDHex, timestampMs: timestampMs, content: content), senderIDHex.lowercased(), String(timestampMs)])
        var event = NostrEvent(pubkey: "", createdAt: now, kind: LocationChannel.messageKind, tags: tags, content: content)
        guard (try? event.sign(with: key)) != nil else { return nil }
        return event
    }

    /// A bridge's presence on `cell`: content empty, tags exactly `[["r", cell]]`.
    public static func presence(cell: String, key: Secp256k1.PrivateKey, now: Int64) -> NostrEvent? {
        var event = NostrEvent(pubkey: "", createdAt: now, kind: LocationChannel.presenceKind, tags: [["r", cell]], content: "")
        guard (try? event.sign(with: key)) != nil else { return nil }
        return event
    }

    /// The cells a bridge on `cell` follows: it and its ring of eight.
    public static func cells(around cell: String) -> [String] { [cell] + Geohash.neighbours(of: cell) }

    /// What a bridge reads: both kinds on its cells, the last 15 minutes.
    public static func filter(cells: [String], now: Int64, limit: Int = 200) -> NostrFilter {
        NostrFilter(kinds: [LocationChannel.messageKind, LocationChannel.presenceKind], r: cells, since: now - lookback, limit: limit)
    }

    // MARK: Board posts across bridges (a Starling extension)

    /// A board post or tombstone crossing between meshes: a stored event
    /// (relays keep it until its NIP-40 expiration), so that a bridge that
    /// comes up later still finds the notices of the last days. Not in
    /// bitchat 1.7, whose bridges carry chat only.
    public static let boardKind = 1402
    /// How far back a bridge reads board events: a post lives at most 7 days, s.
    public static let boardLookback: Int64 = 604_800
    /// The largest board payload that crosses, bytes (a post is at most about 760).
    public static let maxBoardPayload = 2_048

    /// A board post or tombstone (its 0x23 payload, signed inside by its
    /// author) for the other meshes on `cell`, signed with `key`: content the
    /// payload in base64, tags `["r", cell]`, `["b", postID hex]` and
    /// `["expiration", s]` (the post's expiry; a tombstone's deletion + 7 days).
    public static func board(_ packet: BoardPacket, cell: String, key: Secp256k1.PrivateKey, now: Int64) -> NostrEvent? {
        let payload = packet.encoded()
        guard payload.count <= maxBoardPayload else { return nil }
        let expiresMs: UInt64
        switch packet {
        case let .post(p): expiresMs = p.expiresAt
        case let .tombstone(t): expiresMs = t.deletedAt.addingReportingOverflow(BoardPacket.maxLifetime).overflow ? .max : t.deletedAt + BoardPacket.maxLifetime
        }
        let tags = [["r", cell], ["b", packet.postID.hexString], ["expiration", String(expiresMs / 1_000)]]
        var event = NostrEvent(pubkey: "", createdAt: now, kind: boardKind, tags: tags, content: Data(payload).base64EncodedString())
        guard (try? event.sign(with: key)) != nil else { return nil }
        return event
    }

    /// The board packet a board event carries: its content decoded from
    /// base64 (at most ``maxBoardPayload`` bytes) and read as a board post or
    /// tombstone whose ID its `b` tag names. Neither signature is checked.
    public static func boardPacket(of event: NostrEvent) -> BoardPacket? {
        guard event.kind == boardKind, event.content.utf8.count <= (maxBoardPayload + 2) / 3 * 4,
              let data = Data(base64Encoded: event.content), data.count <= maxBoardPayload,
              let packet = try? BoardPacket(decoding: Array(data)[...]),
              let b = event.tags.first(where: { $0.count >= 2 && $0[0] == "b" }), b[1] == packet.postID.hexString else { return nil }
        return packet
    }

    /// What a bridge reads of the board: board events on its cells, the last 7 days.
    public static func boardFilter(cells: [String], now: Int64, limit: Int = 200) -> NostrFilter {
        NostrFilter(kinds: [boardKind], r: cells, since: now - boardLookback, limit: limit)
    }

    /// The radio message a bridged event names, recomputed from its `m` tag
    /// and content (the first `m` of two or more values; it must have four,
    /// a 16-hex-digit sender and decimal ms): the sender's own stable ID is
    /// never taken on trust.
    public static func radioHint(of event: NostrEvent) -> String? {
        guard let m = event.tags.first(where: { $0.count >= 2 && $0[0] == "m" }), m.count >= 4,
              m[2].utf8.count == 16, m[2].allSatisfy(\.isHexDigit), let ms = UInt64(m[3]) else { return nil }
        return stableID(senderIDHex: m[2], timestampMs: ms, content: event.content)
    }
}
