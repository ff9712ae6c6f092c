import Crypto
import Foundation
import StarlingWire

/// The mesh bridge's names for a message (docs/research/bitchat-gateway.md
/// §3; bitchat BridgeService.swift): a public mesh message that crosses to
/// another mesh through Nostr keeps one stable ID however many bridges carry
/// it, so that each mesh shows it once.
public enum MeshBridge {
    /// The first 32 hex digits of SHA-256 of `lowercase(senderID hex) | ms |
    /// content trimmed of whitespace and line breaks` (iOS's stableID).
    public static func stableID(senderIDHex: String, timestampMs: UInt64, content: String) -> String {
        let trimmed = content.trimmingCharacters(in: .whitespacesAndNewlines)
        let text = "\(senderIDHex.lowercased())|\(timestampMs)|\(trimmed)"
        return String(Array(SHA256.hash(data: Array(text.utf8))).hexString.prefix(32))
    }
}
