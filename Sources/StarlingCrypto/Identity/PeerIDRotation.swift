import Crypto
import StarlingWire

/// Peer ID rotation as iOS 1.7 specifies it (bitchat PeerIDRotation.swift,
/// docs/PEER-ID-ROTATION.md; neither app rotates yet): an hourly peer ID
/// derived from the Noise static key, and the recognition tags of an
/// announce v2 (0x2C) by which a peer who knows our Noise key, and only one,
/// can tell it is us (docs/PROTOCOL.md, "Announce v2 (0x2C) and vouches").
public enum PeerIDRotation {
    static func hkdf(_ ikm: [UInt8], info: String) -> [UInt8] {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: ikm), info: Array(info.utf8), outputByteCount: 32)
            .withUnsafeBytes { Array($0) }
    }

    /// The hour since 1970: an epoch.
    public static func epoch(unixSeconds: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: unixSeconds / 3_600) }

    /// HKDF-SHA256(ikm = the Noise static private key, info "bitchat-peer-rotation-v1").
    public static func rotationSecret(noiseStaticPrivate: [UInt8]) -> [UInt8] { hkdf(noiseStaticPrivate, info: "bitchat-peer-rotation-v1") }

    /// HMAC-SHA256(secret, "bitchat-peer-id-v2" ‖ u32be(epoch)), its first 8 bytes.
    public static func peerID(secret: [UInt8], epoch: UInt32) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array("bitchat-peer-id-v2".utf8) + epoch.bigEndianBytes, using: SymmetricKey(data: secret)).prefix(8))
    }

    /// K_AB = HKDF-SHA256(ikm = X25519(ours, theirs), info "bitchat-recognition-v1"): the same on both sides.
    public static func recognitionKey(sharedSecret: [UInt8]) -> [UInt8] { hkdf(sharedSecret, info: "bitchat-recognition-v1") }

    public static func recognitionKey(ours: Curve25519.KeyAgreement.PrivateKey, theirs: [UInt8]) -> [UInt8]? {
        guard let pub = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: theirs),
              let shared = try? ours.sharedSecretFromKeyAgreement(with: pub) else { return nil }
        let bytes = shared.withUnsafeBytes { Array($0) }
        guard bytes.contains(where: { $0 != 0 }) else { return nil } // a low-order key
        return recognitionKey(sharedSecret: bytes)
    }

    /// tag A→B = HMAC-SHA256(K_AB, u32be(epoch) ‖ A's Noise key ‖ B's Noise key ‖ the announced peer ID), first 8 bytes.
    public static func tag(key: [UInt8], epoch: UInt32, from a: [UInt8], to b: [UInt8], peerID: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: epoch.bigEndianBytes + a + b + peerID, using: SymmetricKey(data: key)).prefix(8))
    }

    /// Whether `announce` (from `peerID`) carries the tag its sender, whose
    /// Noise key is `sender`, would make for us (`me`), at its epoch or the
    /// hour either side; every slot is compared, in constant time.
    public static func recognizes(_ announce: AnnounceV2, peerID: [UInt8], key: [UInt8], sender: [UInt8], me: [UInt8]) -> Bool {
        var found = false
        for e in [announce.epoch &- 1, announce.epoch, announce.epoch &+ 1] {
            let want = tag(key: key, epoch: e, from: sender, to: me, peerID: peerID)
            for slot in announce.tags {
                var diff: UInt8 = slot.count == want.count ? 0 : 1
                for (x, y) in zip(slot, want) { diff |= x ^ y }
                found = found || diff == 0
            }
        }
        return found
    }
}

/// Ed25519 over vouches (iOS VouchAttestation.swift): signed by the voucher's
/// announce key, checked against the key pinned to the Noise session that carried it.
public enum VouchSigning {
    public static func sign(_ a: inout VouchAttestation, with key: Curve25519.Signing.PrivateKey) throws {
        a.signature = Array(try key.signature(for: a.signingBytes))
    }

    public static func isValid(_ a: VouchAttestation, voucherKey: [UInt8]) -> Bool {
        guard a.signature.count == 64, let key = try? Curve25519.Signing.PublicKey(rawRepresentation: voucherKey) else { return false }
        return key.isValidSignature(a.signature, for: a.signingBytes)
    }
}
