import Crypto
import StarlingCrypto
import StarlingWire

/// A Ya OK identity as others see it: the node's own keys (X25519 = the Noise
/// static key, Ed25519 = the signing key), a user ID made once, and a display
/// name. Its QR card is signed by its Ed25519 key.
public struct ContactCard: Hashable, Sendable {
    public let userID: UserID
    public let displayName: String
    /// X25519: the Noise static key, and the key sealed messages are sealed to.
    public let agreementKey: [UInt8]
    /// Ed25519: the key that signs the card, announces and sealed messages.
    public let signingKey: [UInt8]
    public let signature: [UInt8]
    /// The card as it goes on the wire and into the store: encoded once, when the
    /// card is made or read, so that no later encoding can fail (issue 55 item 6).
    public let bytes: [UInt8]

    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        /// The bytes are not a contact card: which field, and why.
        case format(WireError)
        /// The card's signature does not verify: it was altered or forged.
        case badSignature

        public var description: String {
            switch self {
            case let .format(e): "not a valid contact code: \(e.field): \(e)"
            case .badSignature:
                "SECURITY WARNING: the contact code's signature does not verify. It was altered or forged; do not trust it."
            }
        }
    }

    /// Our own card, signed now.
    public init(identity: Identity, userID: UserID, displayName: String) throws {
        var bytes = ContactCardBytes(userID: userID, displayName: displayName, agreementKey: identity.noisePublicKey,
                                     signingKey: identity.signingPublicKey)
        do {
            bytes.signature = Array(try identity.signingKey.signature(for: try bytes.signedBytes()))
        } catch let e as WireError {
            throw Error.format(e)
        }
        try self.init(verified: bytes)
    }

    private init(verified card: ContactCardBytes) throws(Error) {
        userID = card.userID
        displayName = card.displayName
        agreementKey = card.agreementKey
        signingKey = card.signingKey
        signature = card.signature
        do { bytes = try card.encode() } catch { throw Error.format(error) }
    }

    /// Reads and verifies a card: a bad field throws `format`, a bad signature
    /// `badSignature`.
    public init(bytes: [UInt8]) throws(Error) {
        let card: ContactCardBytes
        do { card = try ContactCardBytes.decode(bytes) } catch { throw Error.format(error) }
        try self.init(checking: card)
    }

    /// Reads and verifies a `yaok://contact?…` URI.
    public init(uri: String) throws(Error) {
        let card: ContactCardBytes
        do { card = try ContactCardBytes.parse(uri: uri) } catch { throw Error.format(error) }
        try self.init(checking: card)
    }

    private init(checking card: ContactCardBytes) throws(Error) {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: card.signingKey),
              let signed = try? card.signedBytes(),
              key.isValidSignature(card.signature, for: signed) else { throw Error.badSignature }
        try self.init(verified: card)
    }

    public var wire: ContactCardBytes {
        ContactCardBytes(userID: userID, displayName: displayName, agreementKey: agreementKey, signingKey: signingKey,
                         signature: signature)
    }

    public var uri: String { "\(ContactCardBytes.scheme)://contact?v=1&d=\(Base64.encode(bytes, url: true, padded: false))" }

    /// The contact's own fingerprint (seed §3.1): BLAKE3(X25519 key ‖ Ed25519 key).
    public var fingerprint: [UInt8] { BLAKE3.hash(agreementKey + signingKey) }

    /// The bitchat fingerprint of the same identity (SHA-256 of the Noise
    /// static key): how the mesh knows this contact.
    public var meshFingerprint: Fingerprint { Fingerprint(noiseStaticKey: agreementKey) }
}

/// The number two people compare to know that no one sits between them
/// (seed §3.2): BLAKE3(X_A ‖ X_B ‖ V_A ‖ V_B), where A is the party whose
/// X25519 key is the smaller in byte order, so both sides compute the same
/// number. Shown as 16 groups of 4 uppercase hex digits.
public struct SafetyNumber: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init(agreementKey x1: [UInt8], signingKey v1: [UInt8], otherAgreementKey x2: [UInt8], otherSigningKey v2: [UInt8]) {
        let firstIsA = x1.lexicographicallyPrecedes(x2) || x1 == x2
        let (xa, va, xb, vb) = firstIsA ? (x1, v1, x2, v2) : (x2, v2, x1, v1)
        bytes = BLAKE3.hash(xa + xb + va + vb)
    }

    public init(_ me: ContactCard, _ other: ContactCard) {
        self.init(agreementKey: me.agreementKey, signingKey: me.signingKey,
                  otherAgreementKey: other.agreementKey, otherSigningKey: other.signingKey)
    }

    /// The 16 groups of 4 digits, separated by spaces.
    public var groups: [String] {
        let h = Array(bytes.hexString.uppercased())
        return stride(from: 0, to: 64, by: 4).map { String(h[$0..<$0 + 4]) }
    }

    /// Two lines of 8 groups, as the seed shows it.
    public var description: String {
        groups[0..<8].joined(separator: " ") + "\n" + groups[8..<16].joined(separator: " ")
    }
}
