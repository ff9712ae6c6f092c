import Crypto
import StarlingCrypto
import StarlingWire

/// Sealing and opening Ya OK's store-and-forward messages (the layout is
/// `SealedMessageBytes`, docs/PROTOCOL.md "Ya OK sealed message"): a fresh
/// X25519 key per message against the recipient's static key, HKDF-SHA256,
/// XChaCha20-Poly1305 with a random 24-byte nonce, and the sender's Ed25519
/// signature over the whole.
///
/// What it gives: only the recipient reads it; the recipient knows who sent
/// it; a relay that holds it learns the two user IDs, the time and the padded
/// size, nothing else. What it does not: if the recipient's static key is
/// stolen later, messages sealed to it can be read (no forward secrecy on the
/// recipient's side; the mesh's Noise sessions have it).
public enum SealedMessage {
    public static let info = Array("yaok sealed message v1".utf8)

    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case format(WireError)
        /// Not addressed to us.
        case wrongRecipient(UserID)
        /// The signature does not verify with the claimed sender's key.
        case badSignature
        /// The sealed box does not open: altered, or sealed to another key.
        case decryptionFailed
        /// The recipient's key is not a valid X25519 key (or a low-order one).
        case badKey

        public var description: String {
            switch self {
            case let .format(e): "not a valid sealed message: \(e.field): \(e)"
            case let .wrongRecipient(id): "the message is for \(id), not for us"
            case .badSignature: "the sender's signature does not verify"
            case .decryptionFailed: "the message does not decrypt (altered, or sealed to another key)"
            case .badKey: "the recipient's key is not a usable X25519 key"
            }
        }
    }

    /// Seals `body` for a recipient. `ephemeral` and `nonce` are fresh random
    /// values unless a test hands them in.
    public static func seal(_ body: SealedBody, id: UserID, timestamp: UInt64, from sender: Identity, senderID: UserID,
                            to recipientID: UserID, recipientAgreementKey: [UInt8],
                            ephemeral: Curve25519.KeyAgreement.PrivateKey = .init(),
                            nonce: [UInt8] = XChaCha20Poly1305.randomNonce()) throws(Error) -> [UInt8] {
        let plain: [UInt8]
        do { plain = try body.encode() } catch { throw Error.format(error) }
        let ephemeralPublic = Array(ephemeral.publicKey.rawRepresentation)
        var message = SealedMessageBytes(messageID: id, timestamp: timestamp, sender: senderID, recipient: recipientID,
                                         ephemeralKey: ephemeralPublic, nonce: nonce)
        let key = try messageKey(ephemeral, recipientAgreementKey, ephemeralPublic: ephemeralPublic,
                                 recipientPublic: recipientAgreementKey)
        let header = message.header(sealedLength: plain.count + XChaCha20Poly1305.tagByteCount)
        do {
            message.sealed = try XChaCha20Poly1305.seal(plain, key: key, nonce: nonce, authenticating: header)
            message.signature = Array(try sender.signingKey.signature(for: message.signedBytes()))
        } catch {
            throw Error.badKey
        }
        return message.encode()
    }

    /// Reads the clear part (who, to whom, when) without opening anything.
    public static func peek(_ bytes: [UInt8]) throws(Error) -> SealedMessageBytes {
        do { return try SealedMessageBytes.decode(bytes) } catch { throw Error.format(error) }
    }

    /// Checks that the message is for `me`, verifies the sender's signature
    /// with `senderSigningKey`, then decrypts: in that order, so that no
    /// decryption work is spent on forged messages.
    public static func open(_ bytes: [UInt8], as me: UserID, with identity: Identity,
                            senderSigningKey: [UInt8]) throws(Error) -> (SealedMessageBytes, SealedBody) {
        let message = try peek(bytes)
        guard message.recipient == me else { throw Error.wrongRecipient(message.recipient) }
        guard let signer = try? Curve25519.Signing.PublicKey(rawRepresentation: senderSigningKey),
              signer.isValidSignature(message.signature, for: message.signedBytes()) else { throw Error.badSignature }
        let key = try messageKey(identity.noiseKey, message.ephemeralKey, ephemeralPublic: message.ephemeralKey,
                                 recipientPublic: identity.noisePublicKey)
        let plain: [UInt8]
        do {
            plain = try XChaCha20Poly1305.open(message.sealed, key: key, nonce: message.nonce,
                                               authenticating: message.header(sealedLength: message.sealed.count))
        } catch {
            throw Error.decryptionFailed
        }
        do { return (message, try SealedBody.decode(plain)) } catch { throw Error.format(error) }
    }

    static func messageKey(_ privateKey: Curve25519.KeyAgreement.PrivateKey, _ publicKey: [UInt8],
                           ephemeralPublic: [UInt8], recipientPublic: [UInt8]) throws(Error) -> [UInt8] {
        guard let shared = try? X25519.sharedSecret(privateKey, publicKey),
              let key = try? HKDFSHA256.derive(inputKeyMaterial: shared, salt: ephemeralPublic + recipientPublic,
                                               info: info, outputByteCount: 32) else { throw Error.badKey }
        return key
    }
}
