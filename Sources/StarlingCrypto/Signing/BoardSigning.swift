import Crypto
import StarlingWire

/// Ed25519 over the mesh board's posts and tombstones (docs/PROTOCOL.md,
/// "Board"): signed by the author's signing key, which each carries; checked
/// against that key alone, as iOS checks them (a board post is
/// self-authenticating; who relayed it does not matter).
public enum BoardSigning {
    /// Signs a post with `key`, which becomes its author key.
    public static func sign(_ post: inout BoardPost, with key: Curve25519.Signing.PrivateKey) throws {
        post.authorKey = Array(key.publicKey.rawRepresentation)
        post.signature = Array(try key.signature(for: post.signingBytes))
    }

    public static func sign(_ tombstone: inout BoardTombstone, with key: Curve25519.Signing.PrivateKey) throws {
        tombstone.authorKey = Array(key.publicKey.rawRepresentation)
        tombstone.signature = Array(try key.signature(for: tombstone.signingBytes))
    }

    /// Whether the packet's signature holds under the key it carries.
    public static func isValid(_ packet: BoardPacket) -> Bool {
        guard packet.signature.count == BoardPacket.signatureLength,
              let key = try? Curve25519.Signing.PublicKey(rawRepresentation: packet.authorKey) else { return false }
        return key.isValidSignature(packet.signature, for: packet.signingBytes)
    }
}
