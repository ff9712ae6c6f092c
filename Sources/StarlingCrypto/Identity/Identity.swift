import Crypto
import StarlingWire

/// SHA-256 of `bytes`, as lowercase hex (transfer IDs and the like).
public func sha256Hex(_ bytes: [UInt8]) -> String {
    Array(SHA256.hash(data: bytes)).hexString
}

/// SHA-256 of a Noise static public key: the identity people compare.
public struct Fingerprint: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init(noiseStaticKey: [UInt8]) {
        bytes = Array(SHA256.hash(data: noiseStaticKey))
    }

    /// A fingerprint as 32 raw bytes (a group roster carries them so).
    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    public init?(hex: String) {
        guard hex.utf8.count == 64, let b = try? [UInt8](hex: hex) else { return nil }
        bytes = b
    }

    /// 64 lowercase hex digits.
    public var hex: String { bytes.hexString }
    public var description: String { hex }

    /// In 16 groups of 4 digits, 4 groups to a line: easy to read aloud and compare.
    public var grouped: String {
        let h = Array(hex)
        let groups = stride(from: 0, to: h.count, by: 4).map { String(h[$0..<$0 + 4]) }
        return stride(from: 0, to: groups.count, by: 4).map { groups[$0..<$0 + 4].joined(separator: " ") }
            .joined(separator: "\n")
    }

    /// The peer ID: the first 8 bytes.
    public var peerID: PeerID { PeerID(bytes: bytes.prefix(8))! }

    public static func < (a: Fingerprint, b: Fingerprint) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}

/// A peer's long-term keys: a Curve25519 static key for Noise and a separate
/// Ed25519 key for signatures.
public struct Identity: Sendable {
    public let noiseKey: Curve25519.KeyAgreement.PrivateKey
    public let signingKey: Curve25519.Signing.PrivateKey

    public init(noiseKey: Curve25519.KeyAgreement.PrivateKey, signingKey: Curve25519.Signing.PrivateKey) {
        self.noiseKey = noiseKey
        self.signingKey = signingKey
    }

    /// Fresh keys from the system's random generator.
    public static func generate() -> Identity {
        Identity(noiseKey: .init(), signingKey: .init())
    }

    public var noisePublicKey: [UInt8] { Array(noiseKey.publicKey.rawRepresentation) }
    public var signingPublicKey: [UInt8] { Array(signingKey.publicKey.rawRepresentation) }
    public var fingerprint: Fingerprint { Fingerprint(noiseStaticKey: noisePublicKey) }
    public var peerID: PeerID { fingerprint.peerID }
}
