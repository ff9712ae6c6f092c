import Crypto
import StarlingWire

/// The cryptography of private groups (docs/PROTOCOL.md, "Groups"), as iOS
/// 1.7 does it (bitchat GroupProtocol.swift):
/// - a group's state is signed by its creator's Ed25519 key and checked
///   against the key the roster itself gives the creator;
/// - a message is signed by its sender's Ed25519 key (inside the ciphertext,
///   so that a copy handed on by gossip sync still proves its author), then
///   sealed with ChaCha20-Poly1305 (IETF, 12-byte random nonce) under the
///   group's key of the epoch, the AAD binding group ID and epoch.
public enum GroupSealing {
    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// The key or the AAD is not the one it was sealed with, or the bytes were changed.
        case decryptionFailed
        /// It opened, but to no message.
        case malformed
        /// The sender's signature does not hold under the key it carries.
        case badSignature

        public var description: String {
            switch self {
            case .decryptionFailed: "the group message does not open with the group's key of its epoch"
            case .malformed: "the group message opened to no message"
            case .badSignature: "the group message's signature does not hold under its sender's key"
            }
        }
    }

    /// Signs a state with the creator's key (who must be in its roster for it to verify).
    public static func sign(_ state: inout GroupState, with creator: Curve25519.Signing.PrivateKey) throws {
        state.signature = Array(try creator.signature(for: state.signingBytes))
    }

    /// Whether the creator the roster names signed this state.
    public static func isValid(_ state: GroupState) -> Bool {
        guard state.signature.count == 64, let creator = state.creator,
              let key = try? Curve25519.Signing.PublicKey(rawRepresentation: creator.signingKey) else { return false }
        return key.isValidSignature(state.signature, for: state.signingBytes)
    }

    /// Signs `body` with the sender's key (its `senderSigningKey` set to that
    /// key's public half) and seals it for `groupID` at `epoch`. `nonce`: 12
    /// bytes for a test vector; random otherwise.
    public static func seal(_ body: GroupMessageBody, groupID: [UInt8], epoch: UInt32, key: [UInt8],
                            sender: Curve25519.Signing.PrivateKey, nonce: [UInt8]? = nil) throws -> GroupEnvelope {
        var signed = body
        signed.senderSigningKey = Array(sender.publicKey.rawRepresentation)
        signed.signature = Array(try sender.signature(for: signed.signingBytes(groupID: groupID, epoch: epoch)))
        let aad = GroupEnvelope.aad(groupID: groupID, epoch: epoch)
        let box = try ChaChaPoly.seal(try signed.encoded(), using: SymmetricKey(data: key),
                                      nonce: try nonce.map { try ChaChaPoly.Nonce(data: $0) } ?? ChaChaPoly.Nonce(), authenticating: aad)
        return GroupEnvelope(groupID: groupID, epoch: epoch, nonce: Array(box.nonce), ciphertext: Array(box.ciphertext) + Array(box.tag))
    }

    /// Opens an envelope with the group's key of its epoch and checks the
    /// sender's signature under the key the message carries. Whether that key
    /// is a member's is the caller's to check (the roster).
    public static func open(_ envelope: GroupEnvelope, key: [UInt8]) throws(Failure) -> GroupMessageBody {
        guard envelope.ciphertext.count > 16, key.count == 32, let nonce = try? ChaChaPoly.Nonce(data: envelope.nonce),
              let box = try? ChaChaPoly.SealedBox(nonce: nonce, ciphertext: envelope.ciphertext.dropLast(16), tag: envelope.ciphertext.suffix(16)),
              let plain = try? ChaChaPoly.open(box, using: SymmetricKey(data: key), authenticating: envelope.aad)
        else { throw .decryptionFailed }
        guard let body = try? GroupMessageBody(decoding: Array(plain)[...]) else { throw .malformed }
        guard let sender = try? Curve25519.Signing.PublicKey(rawRepresentation: body.senderSigningKey),
              sender.isValidSignature(body.signature, for: body.signingBytes(groupID: envelope.groupID, epoch: envelope.epoch))
        else { throw .badSignature }
        return body
    }
}
