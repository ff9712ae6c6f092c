import Crypto
import CryptoExtras

/// The AES-256-GCM key that seals Stately state reports.
///
/// - ``broadcast``: the shared key every Stately node has, derived with
///   HKDF-SHA256 from "StateBeacon2024" (seed 000). It keeps states from
///   anyone without the software, and from nobody with it: anyone can read
///   and forge states under it.
/// - ``group(passphrase:)``: a key from a passphrase (the seed's "Group
///   States"), for a group that reads and broadcasts only its own states. As
///   strong as the passphrase: scrypt makes each guess cost, but a fixed salt
///   (every member must derive the same key) lets guesses be shared.
public struct StateKey: Sendable {
    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case emptyPassphrase
        case nonceSize(Int)
        /// The box does not open under this key: another key (another group), or altered bytes.
        case authenticationFailed
        case boxTooShort(Int)

        public var description: String {
            switch self {
            case .emptyPassphrase: "a group passphrase cannot be empty"
            case let .nonceSize(n): "an AES-GCM nonce has 12 bytes, not \(n)"
            case .authenticationFailed: "the state does not open under this key (another group's, or altered)"
            case let .boxTooShort(n): "a sealed state has at least 28 bytes (nonce and tag), not \(n)"
            }
        }
    }

    let key: SymmetricKey

    public init(bytes: [UInt8]) {
        precondition(bytes.count == 32, "an AES-256 key has 32 bytes")
        key = SymmetricKey(data: bytes)
    }

    /// HKDF-SHA256(ikm "StateBeacon2024", salt empty, info "stately broadcast key v1"), 32 bytes.
    public static let broadcast = StateKey(bytes: try! HKDFSHA256.derive(
        inputKeyMaterial: Array("StateBeacon2024".utf8), salt: [], info: Array("stately broadcast key v1".utf8),
        outputByteCount: 32))

    /// scrypt(passphrase, salt "stately group v1", N = 2^15, r = 8, p = 1), 32 bytes.
    public static func group(passphrase: String) throws -> StateKey {
        guard !passphrase.isEmpty else { throw Error.emptyPassphrase }
        let derived = try KDF.Scrypt.deriveKey(from: Array(passphrase.utf8), salt: Array("stately group v1".utf8),
                                               outputByteCount: 32, rounds: 1 << 15, blockSize: 8, parallelism: 1)
        return StateKey(bytes: derived.withUnsafeBytes { Array($0) })
    }

    /// nonce ‖ ciphertext ‖ tag (AES-GCM's combined form), no associated data.
    public func seal(_ plaintext: [UInt8], nonce: [UInt8]) throws -> [UInt8] {
        guard nonce.count == 12 else { throw Error.nonceSize(nonce.count) }
        let box = try AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(data: nonce))
        return Array(box.combined!)
    }

    public func open(_ combined: [UInt8]) throws(Error) -> [UInt8] {
        guard combined.count >= 28 else { throw .boxTooShort(combined.count) }
        do {
            let box = try AES.GCM.SealedBox(combined: combined)
            return Array(try AES.GCM.open(box, using: key))
        } catch {
            throw .authenticationFailed
        }
    }
}
