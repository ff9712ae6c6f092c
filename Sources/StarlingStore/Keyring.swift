import Crypto
import CryptoExtras
import Foundation
import StarlingCrypto
import StarlingWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store's data key, sealed: `store.keyring` in the data directory.
///
/// A random 32-byte data key encrypts every value in the store. The keyring
/// holds it sealed (ChaCha20-Poly1305) under a key-encryption key made one of
/// three ways:
///
/// - **key file** (no PIN): HKDF-SHA256 of the identity's private keys. The
///   store is as safe as `identity.key` (seal that with a passphrase).
/// - **PIN** (4–6 digits) or **passphrase** (10 or more characters):
///   PBKDF2-HMAC-SHA256 with `iterations` (600,000 by default: OWASP's 2023
///   figure for this hash; the seed's 100,000 is dated).
///
/// ```
/// "SYKR" ‖ version 0x01 ‖ protection u8 (0 key file, 1 PIN, 2 passphrase)
/// ‖ iterations u32 ‖ salt 16 ‖ nonce 12 ‖ sealed data key 32 ‖ tag 16
/// AD of the seal = the 38 bytes before the sealed key
/// ```
///
/// What a PIN does and does not do: it stops someone who holds the running
/// machine from reading the store (5 wrong PINs lock entry for 30 s, and the
/// count survives a restart). It does not stop someone who copies the files:
/// a 6-digit PIN has 10^6 values; one core tries them all in 10^6 times one
/// derivation (hours; `starling-bench store` prints the figure), a GPU in
/// minutes. Against a copied disk, use a long passphrase (or seal
/// `identity.key` with one and keep the key-file mode).
public struct Keyring: Sendable {
    public static let magic = Array("SYKR".utf8)
    public static let version: UInt8 = 1
    public static let defaultIterations = 600_000
    public static let byteCount = 38 + 48

    public enum Protection: Sendable, Hashable {
        case keyFile(Identity)
        case pin(String)
        case passphrase(String)

        var code: UInt8 {
            switch self {
            case .keyFile: 0
            case .pin: 1
            case .passphrase: 2
            }
        }

        public static func == (a: Protection, b: Protection) -> Bool {
            switch (a, b) {
            case let (.keyFile(x), .keyFile(y)): x.noisePublicKey == y.noisePublicKey
            case let (.pin(x), .pin(y)), let (.passphrase(x), .passphrase(y)): x == y
            default: false
            }
        }

        public func hash(into h: inout Hasher) { h.combine(code) }
    }

    public enum Kind: UInt8, Sendable, Codable {
        case keyFile = 0, pin = 1, passphrase = 2
    }

    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case badPIN
        case badPassphrase
        case wrongSecret(attemptsLeft: Int)
        case lockedOut(secondsLeft: Int)
        case corrupt(String)
        case needsSecret(Kind)

        public var description: String {
            switch self {
            case .badPIN: "a PIN is 4 to 6 digits"
            case .badPassphrase: "a passphrase has at least 10 characters"
            case let .wrongSecret(left):
                "wrong PIN or passphrase (\(left) attempt\(left == 1 ? "" : "s") left before a 30 s lockout)"
            case let .lockedOut(s): "too many wrong attempts: locked for \(s) more second\(s == 1 ? "" : "s")"
            case let .corrupt(why): "the store's keyring is damaged: \(why)"
            case .needsSecret(.pin): "the store is locked with a PIN: give it (STARLING_PIN for scripts)"
            case .needsSecret(.passphrase): "the store is locked with a passphrase: give it (STARLING_PIN for scripts)"
            case .needsSecret(.keyFile): "the store is sealed with the identity key"
            }
        }
    }

    public let kind: Kind
    public let iterations: Int
    let salt: [UInt8]
    let nonce: [UInt8]
    let sealed: [UInt8]

    public static func validate(_ protection: Protection) throws(Error) {
        switch protection {
        case let .pin(pin):
            guard (4...6).contains(pin.count), pin.allSatisfy({ ("0"..."9").contains($0) }) else { throw .badPIN }
        case let .passphrase(p):
            guard p.count >= 10 else { throw .badPassphrase }
        case .keyFile:
            break
        }
    }

    /// Seals `dataKey` under `protection`.
    public static func seal(_ dataKey: [UInt8], under protection: Protection,
                            iterations: Int = defaultIterations) throws(Error) -> Keyring {
        try validate(protection)
        var rng = SystemRandomNumberGenerator()
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let nonce = (0..<12).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let rounds: Int
        if case .keyFile = protection { rounds = 0 } else { rounds = iterations }
        let header = Self.header(kind: protection.code, iterations: rounds, salt: salt, nonce: nonce)
        let kek = try Self.kek(protection, salt: salt, iterations: rounds)
        guard let box = try? ChaChaPoly.seal(dataKey, using: kek, nonce: ChaChaPoly.Nonce(data: nonce), authenticating: header)
        else { throw .corrupt("could not seal") }
        return Keyring(kind: Kind(rawValue: protection.code)!, iterations: rounds, salt: salt, nonce: nonce,
                       sealed: Array(box.ciphertext) + Array(box.tag))
    }

    /// The data key, or `wrongSecret` (the attempt counting is `KeyringFile`'s).
    public func open(_ protection: Protection) throws(Error) -> [UInt8] {
        guard protection.code == kind.rawValue else { throw .needsSecret(kind) }
        let kek = try Self.kek(protection, salt: salt, iterations: iterations)
        guard let box = try? ChaChaPoly.SealedBox(nonce: ChaChaPoly.Nonce(data: nonce), ciphertext: sealed.prefix(32),
                                                  tag: sealed.suffix(16)),
              let key = try? ChaChaPoly.open(box, using: kek, authenticating: header) else {
            throw .wrongSecret(attemptsLeft: 0)
        }
        return Array(key)
    }

    var header: [UInt8] { Self.header(kind: kind.rawValue, iterations: iterations, salt: salt, nonce: nonce) }

    static func header(kind: UInt8, iterations: Int, salt: [UInt8], nonce: [UInt8]) -> [UInt8] {
        let n = UInt32(iterations)
        return magic + [version, kind, UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
            + salt + nonce
    }

    public var bytes: [UInt8] { header + sealed }

    public init(bytes: [UInt8]) throws(Error) {
        guard bytes.count == Self.byteCount, Array(bytes.prefix(4)) == Self.magic else {
            throw .corrupt("not a keyring (\(bytes.count) bytes)")
        }
        guard bytes[4] == Self.version else { throw .corrupt("version \(bytes[4])") }
        guard let kind = Kind(rawValue: bytes[5]) else { throw .corrupt("protection \(bytes[5])") }
        let iterations = Int(bytes[6]) << 24 | Int(bytes[7]) << 16 | Int(bytes[8]) << 8 | Int(bytes[9])
        guard kind == .keyFile ? iterations == 0 : (1_000...100_000_000).contains(iterations) else {
            throw .corrupt("\(iterations) iterations")
        }
        self.init(kind: kind, iterations: iterations, salt: Array(bytes[10..<26]), nonce: Array(bytes[26..<38]),
                  sealed: Array(bytes[38...]))
    }

    init(kind: Kind, iterations: Int, salt: [UInt8], nonce: [UInt8], sealed: [UInt8]) {
        self.kind = kind
        self.iterations = iterations
        self.salt = salt
        self.nonce = nonce
        self.sealed = sealed
    }

    static func kek(_ protection: Protection, salt: [UInt8], iterations: Int) throws(Error) -> SymmetricKey {
        switch protection {
        case let .keyFile(identity):
            let secret = Array(identity.noiseKey.rawRepresentation) + Array(identity.signingKey.rawRepresentation)
            guard let key = try? HKDFSHA256.derive(inputKeyMaterial: secret, salt: salt,
                                                   info: Array("starling store keyring v1".utf8), outputByteCount: 32)
            else { throw .corrupt("key derivation") }
            return SymmetricKey(data: key)
        case let .pin(secret), let .passphrase(secret):
            guard let key = try? KDF.Insecure.PBKDF2.deriveKey(from: Array(secret.utf8), salt: salt, using: .sha256,
                                                                outputByteCount: 32, unsafeUncheckedRounds: iterations)
            else { throw .corrupt("key derivation") }
            return key
        }
    }
}

/// The keyring on disk and the count of wrong attempts beside it
/// (`store.attempts`: failures and the end of a lockout), so that the
/// lockout survives a restart. 5 wrong attempts lock entry for 30 s.
public struct KeyringFile: Sendable {
    public static let maxFailures = 5
    public static let lockoutSeconds = 30.0

    public let url: URL
    public var attemptsURL: URL { url.deletingLastPathComponent().appendingPathComponent("store.attempts") }

    public init(url: URL) { self.url = url }

    public var exists: Bool { FileManager.default.fileExists(atPath: url.path) }

    public func read() throws -> Keyring {
        try Keyring(bytes: Array(try Data(contentsOf: url)))
    }

    public func write(_ keyring: Keyring) throws {
        try Data(keyring.bytes).write(to: url, options: [.atomic])
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
    }

    struct Attempts: Codable {
        var failures = 0
        var lockedUntil = 0.0
    }

    func attempts() -> Attempts {
        guard let data = try? Data(contentsOf: attemptsURL),
              var value = try? JSONDecoder().decode(Attempts.self, from: data) else { return Attempts() }
        // Whatever the file says, within the rules' range.
        value.failures = min(max(value.failures, 0), Self.maxFailures)
        if !value.lockedUntil.isFinite || value.lockedUntil < 0 { value.lockedUntil = 0 }
        return value
    }

    /// Writes the count in place (the file is the one held locked). A count
    /// that cannot be written is an error: a wrong guess must never go uncounted.
    func save(_ a: Attempts) throws(Keyring.Error) {
        do {
            let data = try JSONEncoder().encode(a)
            let handle = try FileHandle(forWritingTo: attemptsURL)
            defer { try? handle.close() }
            try handle.truncate(atOffset: 0)
            try handle.write(contentsOf: data)
            try handle.synchronize()
        } catch {
            throw Keyring.Error.corrupt("cannot record the attempt in \(attemptsURL.path): \(error)")
        }
    }

    /// Seconds left in a lockout, 0 when none.
    public func lockoutRemaining(now: Double) -> Double {
        max(0, attempts().lockedUntil - now)
    }

    /// Opens the keyring with `protection`, counting wrong attempts. The
    /// count is read, the secret tried and the count written under an
    /// exclusive lock on the attempts file, so parallel processes cannot each
    /// take a free guess.
    public func unlock(_ protection: Protection, now: Double) throws -> [UInt8] {
        let fd = open(attemptsURL.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Keyring.Error.corrupt("cannot open \(attemptsURL.path)") }
        defer { close(fd) }
        guard flock(fd, LOCK_EX) == 0 else { throw Keyring.Error.corrupt("cannot lock \(attemptsURL.path)") }
        defer { flock(fd, LOCK_UN) }
        return try unlockLocked(protection, now: now)
    }

    private func unlockLocked(_ protection: Protection, now: Double) throws -> [UInt8] {
        var a = attempts()
        if a.lockedUntil > now {
            // A lockout never lasts longer than the rule, whatever the file says.
            let left = min(a.lockedUntil - now, Self.lockoutSeconds)
            throw Keyring.Error.lockedOut(secondsLeft: Int(left.rounded(.up)))
        }
        let keyring = try read()
        let result = Result { () throws(Keyring.Error) -> [UInt8] in try keyring.open(protection) }
        switch result {
        case let .success(key):
            if a.failures != 0 || a.lockedUntil != 0 { try save(Attempts()) }
            return key
        case let .failure(error):
            guard case .wrongSecret = error else { throw error }
            a.failures += 1
            if a.failures >= Self.maxFailures {
                a.failures = 0
                a.lockedUntil = now + Self.lockoutSeconds
                try save(a)
                throw Keyring.Error.lockedOut(secondsLeft: Int(Self.lockoutSeconds))
            }
            try save(a)
            throw Keyring.Error.wrongSecret(attemptsLeft: Self.maxFailures - a.failures)
        }
    }

    public typealias Protection = Keyring.Protection
}
