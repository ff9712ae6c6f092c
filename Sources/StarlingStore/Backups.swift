import Foundation
import GRDB
import StarlingCrypto

/// Daily backups (seed 002 §8.3): `backups/store-YYYY-MM-DD.sqlite`, copies
/// of the database made with SQLite's backup API; their values stay sealed
/// under the same data key. The 7 newest are kept.
extension MessengerStore {
    public var backupDirectory: URL { directory.appendingPathComponent(Self.backupFolder) }

    static func day(_ time: Double) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd"
        return f.string(from: Date(timeIntervalSince1970: time))
    }

    /// The backups, newest first.
    public static func backups(in directory: URL) -> [URL] {
        let folder = directory.appendingPathComponent(backupFolder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasPrefix("store-") && $0.hasSuffix(".sqlite") }.sorted(by: >)
            .map { folder.appendingPathComponent($0) }
    }

    public var backups: [URL] { Self.backups(in: directory) }

    /// Makes today's backup unless it exists.
    @discardableResult
    public func backupIfDue(now: Double) throws -> URL? {
        let target = backupDirectory.appendingPathComponent("store-\(Self.day(now)).sqlite")
        guard !FileManager.default.fileExists(atPath: target.path) else { return nil }
        return try backup(now: now)
    }

    /// Makes a backup now (replacing today's), then keeps the 7 newest.
    @discardableResult
    public func backup(now: Double) throws -> URL {
        try FileManager.default.createDirectory(at: backupDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let target = backupDirectory.appendingPathComponent("store-\(Self.day(now)).sqlite")
        let temporary = backupDirectory.appendingPathComponent(".partial-\(UUID().uuidString).sqlite")
        defer { try? FileManager.default.removeItem(at: temporary) }
        do {
            let destination = try DatabaseQueue(path: temporary.path, configuration: Self.configuration())
            try queue.backup(to: destination)
            try destination.close()
        }
        _ = try? FileManager.default.removeItem(at: target)
        try FileManager.default.moveItem(at: temporary, to: target)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: target.path)
        for old in backups.dropFirst(Self.backupsKept) { try? FileManager.default.removeItem(at: old) }
        return target
    }

    /// Replaces the database with a backup (the newest that passes the
    /// integrity check and opens with the data key, unless one is named).
    /// Returns the backup used.
    @discardableResult
    public static func restore(directory: URL, protection: Keyring.Protection, from chosen: URL? = nil,
                               now: Double = Date().timeIntervalSince1970) throws -> URL {
        let keyringFile = KeyringFile(url: directory.appendingPathComponent(keyringName))
        guard keyringFile.exists else { throw Error.noKeyring }
        let dataKey = try keyringFile.unlock(protection, now: now)
        let cipher = FieldCipher(dataKey: dataKey)
        let candidates = chosen.map { [$0] } ?? backups(in: directory)
        for candidate in candidates {
            // Check a copy, so that the backup itself is never written to.
            let probe = directory.appendingPathComponent(".restore-\(UUID().uuidString).sqlite")
            defer { try? FileManager.default.removeItem(at: probe) }
            do {
                try FileManager.default.copyItem(at: candidate, to: probe)
                let queue = try openChecked(path: probe.path, cipher: cipher, requireCheck: true)
                try queue.close()
            } catch {
                if chosen != nil { throw error }
                continue
            }
            let database = directory.appendingPathComponent(databaseName)
            for suffix in ["", "-journal", "-wal", "-shm"] {
                try? FileManager.default.removeItem(atPath: database.path + suffix)
            }
            try FileManager.default.moveItem(at: probe, to: database)
            return candidate
        }
        throw Error.noBackup
    }

    /// Deletes the store, its keyring and backups; the identity (key file,
    /// user ID, nickname) stays.
    public static func reset(directory: URL) throws {
        // The keyring first, overwritten: without it nothing left on the disk opens.
        let keyring = directory.appendingPathComponent(keyringName)
        if FileManager.default.fileExists(atPath: keyring.path) {
            try Data(repeating: 0, count: Keyring.byteCount).write(to: keyring)
        }
        for name in [databaseName, databaseName + "-journal", databaseName + "-wal", databaseName + "-shm", keyringName,
                     "store.attempts", backupFolder] {
            let url = directory.appendingPathComponent(name)
            if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
        }
    }

    /// Closes the database (auto-lock: the store must be opened again, with
    /// its secret, before it is read).
    public func close() throws {
        try queue.close()
    }
}
