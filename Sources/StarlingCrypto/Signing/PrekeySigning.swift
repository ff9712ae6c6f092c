import Crypto
import StarlingWire

/// Ed25519 over prekey bundles (docs/PROTOCOL.md, "Prekey bundles (0x24)"):
/// signed by the owner's announce signing key, and checked against the key
/// the owner's verified announce carries, never a key the bundle names.
public enum PrekeySigning {
    public static func sign(_ bundle: inout PrekeyBundle, with key: Curve25519.Signing.PrivateKey) throws {
        bundle.signature = Array(try key.signature(for: bundle.signingBytes))
    }

    public static func isValid(_ bundle: PrekeyBundle, signingKey: [UInt8]) -> Bool {
        guard bundle.signature.count == 64, let key = try? Curve25519.Signing.PublicKey(rawRepresentation: signingKey) else { return false }
        return key.isValidSignature(bundle.signature, for: bundle.signingBytes)
    }
}
