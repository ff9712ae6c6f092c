import CSecp256k1
import Foundation
import StarlingWire

/// secp256k1 for Nostr through Debian's libsecp256k1 (its extrakeys,
/// schnorrsig and ecdh modules): BIP-340 keys and signatures, and the two
/// shared secrets Nostr uses — NIP-44's unhashed x coordinate, and the
/// 33-byte compressed point bitchat's private envelopes feed to HKDF.
public enum Secp256k1 {
    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case invalidPrivateKey
        case invalidPublicKey
        case signingFailed
        case agreementFailed

        public var description: String {
            switch self {
            case .invalidPrivateKey: "not a secp256k1 private key (32 bytes, 0 < k < n)"
            case .invalidPublicKey: "not an x-only secp256k1 public key (32 bytes on the curve)"
            case .signingFailed: "the Schnorr signature could not be made"
            case .agreementFailed: "the shared secret could not be computed"
            }
        }
    }

    /// One context for the process: libsecp256k1 contexts are safe to share
    /// for signing, verifying and ECDH once randomised.
    nonisolated(unsafe) static let context: OpaquePointer = {
        let ctx = secp256k1_context_create(UInt32(SECP256K1_CONTEXT_NONE))!
        var seed = [UInt8](repeating: 0, count: 32)
        var rng = SystemRandomNumberGenerator()
        for i in seed.indices { seed[i] = UInt8.random(in: 0...255, using: &rng) }
        _ = secp256k1_context_randomize(ctx, seed)
        return ctx
    }()

    /// A private key (32 bytes); its x-only public key.
    public struct PrivateKey: Sendable, Hashable {
        public let bytes: [UInt8]

        public init(bytes: [UInt8]) throws(Error) {
            guard bytes.count == 32, secp256k1_ec_seckey_verify(Secp256k1.context, bytes) == 1 else { throw .invalidPrivateKey }
            self.bytes = bytes
        }

        /// A fresh random key.
        public static func random() -> PrivateKey {
            var rng = SystemRandomNumberGenerator()
            while true {
                let b = (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
                if let k = try? PrivateKey(bytes: b) { return k }
            }
        }

        /// The 32-byte x-only public key (BIP-340).
        public var publicKey: [UInt8] {
            var keypair = secp256k1_keypair()
            _ = secp256k1_keypair_create(Secp256k1.context, &keypair, bytes)
            var xonly = secp256k1_xonly_pubkey()
            _ = secp256k1_keypair_xonly_pub(Secp256k1.context, &xonly, nil, &keypair)
            var out = [UInt8](repeating: 0, count: 32)
            _ = secp256k1_xonly_pubkey_serialize(Secp256k1.context, &out, &xonly)
            return out
        }

        /// A BIP-340 signature of a 32-byte message (an event ID).
        public func sign(_ message: [UInt8], auxiliary: [UInt8]? = nil) throws(Error) -> [UInt8] {
            guard message.count == 32 else { throw .signingFailed }
            var keypair = secp256k1_keypair()
            guard secp256k1_keypair_create(Secp256k1.context, &keypair, bytes) == 1 else { throw .invalidPrivateKey }
            var aux = auxiliary ?? {
                var rng = SystemRandomNumberGenerator()
                return (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
            }()
            guard aux.count == 32 else { throw .signingFailed }
            var signature = [UInt8](repeating: 0, count: 64)
            guard secp256k1_schnorrsig_sign32(Secp256k1.context, &signature, message, &keypair, &aux) == 1 else { throw .signingFailed }
            return signature
        }
    }

    /// Whether `signature` is `publicKey`'s BIP-340 signature of `message`.
    public static func verify(_ signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == 64, publicKey.count == 32 else { return false }
        var xonly = secp256k1_xonly_pubkey()
        guard secp256k1_xonly_pubkey_parse(context, &xonly, publicKey) == 1 else { return false }
        return secp256k1_schnorrsig_verify(context, signature, message, message.count, &xonly) == 1
    }

    /// The point of an x-only key, lifted with the even (0x02) or odd (0x03) Y.
    static func lift(_ xOnly: [UInt8], odd: Bool) throws(Error) -> secp256k1_pubkey {
        guard xOnly.count == 32 else { throw .invalidPublicKey }
        var point = secp256k1_pubkey()
        guard secp256k1_ec_pubkey_parse(context, &point, [odd ? 0x03 : 0x02] + xOnly, 33) == 1 else { throw .invalidPublicKey }
        return point
    }

    /// NIP-44's shared secret: the x coordinate of `priv × pub`, unhashed.
    public static func sharedX(_ privateKey: PrivateKey, _ publicKey: [UInt8]) throws(Error) -> [UInt8] {
        var point = try lift(publicKey, odd: false)
        var out = [UInt8](repeating: 0, count: 32)
        let copyX: secp256k1_ecdh_hash_function = { output, x, _, _ in
            guard let output, let x else { return 0 }
            output.update(from: x, count: 32)
            return 1
        }
        guard secp256k1_ecdh(context, &out, &point, privateKey.bytes, copyX, nil) == 1 else { throw .agreementFailed }
        return out
    }

    /// bitchat's shared secret: the compressed shared point (33 bytes: the Y
    /// parity byte, then X), with the peer's x-only key lifted as `oddY` says.
    public static func sharedCompressed(_ privateKey: PrivateKey, _ publicKey: [UInt8], oddY: Bool = false) throws(Error) -> [UInt8] {
        var point = try lift(publicKey, odd: oddY)
        var out = [UInt8](repeating: 0, count: 33)
        let compressed: secp256k1_ecdh_hash_function = { output, x, y, _ in
            guard let output, let x, let y else { return 0 }
            output[0] = (y[31] & 1) == 1 ? 0x03 : 0x02
            (output + 1).update(from: x, count: 32)
            return 1
        }
        guard secp256k1_ecdh(context, &out, &point, privateKey.bytes, compressed, nil) == 1 else { throw .agreementFailed }
        return out
    }
}
