import Foundation
import StarlingCrypto
import StarlingWire

/// The node's identity on disk: `identity.key` (0600) and `nickname` in the data
/// directory. Keys are created on first use; a passphrase seals them.
public struct IdentityStore: Sendable {
    public enum Error: Swift.Error, CustomStringConvertible {
        case insecurePermissions(path: String, mode: Int)
        case keyFile(KeyFile.Error)
        /// The key file is damaged (not a passphrase problem): where, and what to do.
        case damagedKeyFile(path: String, KeyFile.Error)
        /// The Ya OK user ID file holds no user ID: replacing it would make this
        /// person someone else to every contact.
        case damagedUserID(path: String)
        case invalidNickname

        public var description: String {
            switch self {
            case let .insecurePermissions(path, mode):
                "\(path) has permissions \(String(mode, radix: 8)); it must be readable by its owner only (chmod 600)"
            case let .keyFile(e): e.description
            case let .damagedKeyFile(path, e):
                "\(path): \(e). This is your identity: put back a copy from a backup (`starling restore`), or move the file away to start as someone new"
            case let .damagedUserID(path):
                "\(path) holds no user ID (it is damaged). It says who you are to your Ya OK contacts: put back a copy from a backup (`starling restore`); a new one would make you a stranger to them. To start as someone new, move it away"
            case .invalidNickname: "a nickname has 1 to 255 bytes of UTF-8 (it travels in an announce TLV)"
            }
        }
    }

    public let directory: DataDirectory
    public var scryptCost: KeyFile.ScryptCost

    public init(directory: DataDirectory, scryptCost: KeyFile.ScryptCost = .standard) {
        self.directory = directory
        self.scryptCost = scryptCost
    }

    public var keyFile: URL { directory.file("identity.key") }
    public var nicknameFile: URL { directory.file("nickname") }
    /// The Ya OK user ID (a UUID v4 as text), made once.
    public var userIDFile: URL { directory.file("user-id") }
    /// Favourites of earlier versions: one fingerprint (64 hex digits) per
    /// line. Read until the encrypted store takes them in (``favorites()``),
    /// never written any more.
    public var favoritesFile: URL { directory.file("favorites") }

    /// The favourites an earlier version left in clear; lines that are not fingerprints are skipped.
    public func favorites() -> Set<Fingerprint> {
        guard let text = try? String(contentsOf: favoritesFile, encoding: .utf8) else { return [] }
        return Set(text.split(whereSeparator: \.isNewline).compactMap { Fingerprint(hex: $0.trimmingCharacters(in: .whitespaces)) })
    }

    /// Writes a small file of this person's, readable by its owner only.
    func writePrivate(_ text: String, to file: URL) throws {
        try directory.create()
        try Data(text.utf8).write(to: file, options: .atomic)
        chmod(file.path, 0o600)
    }

    /// The nickname and user-ID files of earlier versions were 0644: made 0600.
    public func tightenPermissions() {
        for f in [nicknameFile, userIDFile] where FileManager.default.fileExists(atPath: f.path) { chmod(f.path, 0o600) }
    }

    public var exists: Bool { FileManager.default.fileExists(atPath: keyFile.path) }

    /// Whether the stored key file is sealed with a passphrase.
    public func isSealed() throws -> Bool {
        KeyFile.isSealed([UInt8](try Data(contentsOf: keyFile)))
    }

    /// The stored identity, created (and written with 0600) when there is none.
    /// Returns whether it was created.
    public func loadOrCreate(passphrase: String? = nil) throws -> (identity: Identity, created: Bool) {
        if exists { return (try load(passphrase: passphrase), false) }
        let identity = Identity.generate()
        try save(identity, passphrase: passphrase)
        return (identity, true)
    }

    public func load(passphrase: String? = nil) throws -> Identity {
        let attributes = try FileManager.default.attributesOfItem(atPath: keyFile.path)
        let mode = (attributes[.posixPermissions] as? Int) ?? 0
        guard mode & 0o077 == 0 else { throw Error.insecurePermissions(path: keyFile.path, mode: mode) }
        do {
            return try KeyFile.decode([UInt8](try Data(contentsOf: keyFile)), passphrase: passphrase)
        } catch let e as KeyFile.Error {
            switch e {
            case .notAKeyFile, .unsupportedVersion, .corrupt: throw Error.damagedKeyFile(path: keyFile.path, e)
            case .passphraseRequired, .wrongPassphrase: throw Error.keyFile(e)
            }
        }
    }

    /// Writes the key file atomically with 0600 permissions.
    public func save(_ identity: Identity, passphrase: String? = nil) throws {
        try directory.create()
        let bytes = try KeyFile.encode(identity, passphrase: passphrase, cost: scryptCost)
        let temporary = directory.file(".identity.key.\(getpid()).tmp")
        guard FileManager.default.createFile(atPath: temporary.path, contents: Data(bytes),
                                             attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: temporary.path])
        }
        guard rename(temporary.path, keyFile.path) == 0 else {
            let code = errno
            try? FileManager.default.removeItem(at: temporary)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
    }

    public func nickname() -> String? {
        guard let d = try? Data(contentsOf: nicknameFile) else { return nil }
        let s = String(decoding: d, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return s.isEmpty ? nil : s
    }

    /// The stored nickname, else bitchat's default: "anon" and 4 digits of the peer ID.
    public func nickname(or identity: Identity) -> String {
        nickname() ?? "anon\(identity.peerID.description.prefix(4))"
    }

    public func setNickname(_ name: String) throws {
        guard !name.isEmpty, name.utf8.count <= 255 else { throw Error.invalidNickname }
        try writePrivate(name + "\n", to: nicknameFile)
    }

    /// The Ya OK user ID, created (a random UUID v4) and kept on first use.
    public func userID() throws -> UserID {
        if FileManager.default.fileExists(atPath: userIDFile.path) {
            let data = try Data(contentsOf: userIDFile)
            guard let id = UserID(string: String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw Error.damagedUserID(path: userIDFile.path)
            }
            return id
        }
        let id = UserID.random()
        try writePrivate(id.description + "\n", to: userIDFile)
        return id
    }

    /// Deletes the key file and nickname (panic).
    public func wipe() throws {
        for f in [keyFile, nicknameFile, userIDFile] where FileManager.default.fileExists(atPath: f.path) {
            // Overwrite before unlinking, so the keys do not linger in the file's blocks.
            // A failure here is thrown: a wipe that may have left the keys must not look done.
            if let size = try FileManager.default.attributesOfItem(atPath: f.path)[.size] as? Int, size > 0 {
                try Data(repeating: 0, count: size).write(to: f)
            }
            try FileManager.default.removeItem(at: f)
        }
    }
}
