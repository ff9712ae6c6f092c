import Crypto
import CryptoExtras
import StarlingWire

/// The bytes of a key file: an identity's two private keys, in the clear or
/// sealed with a passphrase (scrypt, then ChaCha20-Poly1305). Reading and
/// writing the file itself, with 0600 permissions, is the node's job.
///
/// ```
/// "SKEY" ‖ version 0x01 ‖ mode u8
/// mode 0x00 (clear):  noise private key 32 ‖ signing private key 32
/// mode 0x01 (sealed): log2 N u8 ‖ r u8 ‖ p u8 ‖ salt 16 ‖ ChaChaPoly(key, nonce 0,
///                     AD = the 25 header bytes, noise key ‖ signing key) = 64 + 16
/// ```
public enum KeyFile {
    public static let magic: [UInt8] = Array("SKEY".utf8)
    public static let version: UInt8 = 1

    /// scrypt cost: N = 2^logN, r, p. The default takes about 32 MiB and 0.1 s.
    public struct ScryptCost: Hashable, Sendable {
        public var logN: UInt8
        public var r: UInt8
        public var p: UInt8
        public init(logN: UInt8 = 15, r: UInt8 = 8, p: UInt8 = 1) {
            self.logN = logN
            self.r = r
            self.p = p
        }
        public static let standard = ScryptCost()
    }

    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case notAKeyFile
        case unsupportedVersion(UInt8)
        case passphraseRequired
        case wrongPassphrase
        case corrupt(String)

        public var description: String {
            switch self {
            case .notAKeyFile: "not a Starling key file"
            case let .unsupportedVersion(v): "key file version \(v) is not supported"
            case .passphraseRequired: "the key file is sealed: a passphrase is required"
            case .wrongPassphrase: "wrong passphrase (or the key file was altered)"
            case let .corrupt(why): "corrupt key file: \(why)"
            }
        }
    }

    public static func encode(_ identity: Identity, passphrase: String? = nil, cost: ScryptCost = .standard) throws -> [UInt8] {
        let secret = Array(identity.noiseKey.rawRepresentation) + Array(identity.signingKey.rawRepresentation)
        guard let passphrase else { return magic + [version, 0x00] + secret }
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let header = magic + [version, 0x01, cost.logN, cost.r, cost.p] + salt
        let key = try derive(passphrase, salt: salt, cost: cost)
        let box = try ChaChaPoly.seal(secret, using: key, nonce: ChaChaPoly.Nonce(data: [UInt8](repeating: 0, count: 12)),
                                      authenticating: header)
        return header + Array(box.ciphertext) + Array(box.tag)
    }

    /// Whether the bytes are a sealed key file (so a passphrase must be asked for).
    public static func isSealed(_ bytes: [UInt8]) -> Bool {
        bytes.count > 5 && Array(bytes.prefix(4)) == magic && bytes[5] == 0x01
    }

    public static func decode(_ bytes: [UInt8], passphrase: String? = nil) throws -> Identity {
        guard bytes.count >= 6, Array(bytes.prefix(4)) == magic else { throw Error.notAKeyFile }
        guard bytes[4] == version else { throw Error.unsupportedVersion(bytes[4]) }
        let secret: [UInt8]
        switch bytes[5] {
        case 0x00:
            guard bytes.count == 6 + 64 else { throw Error.corrupt("clear key file of \(bytes.count) bytes") }
            secret = Array(bytes[6...])
        case 0x01:
            guard bytes.count == 25 + 64 + 16 else { throw Error.corrupt("sealed key file of \(bytes.count) bytes") }
            guard let passphrase else { throw Error.passphraseRequired }
            let cost = ScryptCost(logN: bytes[6], r: bytes[7], p: bytes[8])
            guard (10...22).contains(cost.logN), (1...32).contains(cost.r), (1...4).contains(cost.p) else {
                throw Error.corrupt("scrypt cost out of range")
            }
            let header = Array(bytes[0..<25])
            let key = try derive(passphrase, salt: Array(bytes[9..<25]), cost: cost)
            do {
                let box = try ChaChaPoly.SealedBox(nonce: ChaChaPoly.Nonce(data: [UInt8](repeating: 0, count: 12)),
                                                   ciphertext: bytes[25..<89], tag: bytes[89...])
                secret = Array(try ChaChaPoly.open(box, using: key, authenticating: header))
            } catch {
                throw Error.wrongPassphrase
            }
        default:
            throw Error.corrupt("unknown mode \(bytes[5])")
        }
        do {
            return Identity(noiseKey: try .init(rawRepresentation: secret[0..<32]),
                            signingKey: try .init(rawRepresentation: secret[32..<64]))
        } catch {
            throw Error.corrupt("invalid key bytes")
        }
    }

    static func derive(_ passphrase: String, salt: [UInt8], cost: ScryptCost) throws -> SymmetricKey {
        try KDF.Scrypt.deriveKey(from: Array(passphrase.utf8), salt: salt, outputByteCount: 32,
                                 rounds: 1 << Int(cost.logN), blockSize: Int(cost.r), parallelism: Int(cost.p))
    }
}
