import Foundation
import GRDB
import StarlingCrypto
import StarlingWire
import StarlingYaOK

/// Ya OK's encrypted store (seed 002 §8.3, §10): contacts, conversations and
/// their messages, trust decisions about mesh peers, and security incidents,
/// in SQLite through GRDB.
///
/// Debian's SQLCipher is too old for GRDB, so the encryption is per value:
/// every field that says who or what is sealed with XChaCha20-Poly1305 under
/// a key derived from the data key, with a random nonce, and the row's table
/// and lookup key as associated data (a value moved to another row does not
/// open). Rows are found by keyed BLAKE3 hashes, never by a readable value.
/// What the file shows without the key: how many rows each table has, their
/// sizes, and which outgoing messages are still pending (one bit per message).
///
/// SQLite runs with a rollback journal (no WAL), `synchronous = FULL` and
/// `secure_delete = ON`; `PRAGMA integrity_check` runs at every open. A daily
/// backup (a copy of the file: its values stay sealed under the same key) is
/// kept for 7 days.
public final class MessengerStore: Sendable {
    public static let databaseName = "store.sqlite"
    public static let keyringName = "store.keyring"
    public static let backupFolder = "backups"
    public static let maxMessages = 10_000
    public static let maxContacts = 1_000
    public static let maxTrust = 4_096
    public static let maxPins = 4_096
    public static let maxConversations = 1_024
    public static let backupsKept = 7

    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case corrupt(String)
        case wrongKey
        case noKeyring
        case contactExists(name: String)
        case notFound(String)
        case full(String)
        case noBackup

        public var description: String {
            switch self {
            case let .corrupt(why):
                "the store is damaged (\(why)): `starling restore` brings back the newest backup; `starling reset` starts an empty store and keeps the identity"
            case .wrongKey: "the store does not open with this key (it belongs to another identity or keyring)"
            case .noKeyring: "the store has no keyring (store.keyring is missing): restore it, or `starling reset`"
            case let .contactExists(name): "a contact with this user ID is already here (\(name))"
            case let .notFound(what): "\(what) not found"
            case let .full(what): "\(what) is full"
            case .noBackup: "no usable backup was found"
            }
        }
    }

    public let directory: URL
    let queue: DatabaseQueue
    let cipher: FieldCipher

    /// Opens the store in `directory`, creating it (and its keyring, under
    /// `protection`) when it is new. Wrong secrets count toward the lockout.
    public static func open(directory: URL, protection: Keyring.Protection, now: Double = Date().timeIntervalSince1970,
                            iterations: Int = Keyring.defaultIterations) throws -> MessengerStore {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let keyringFile = KeyringFile(url: directory.appendingPathComponent(keyringName))
        let database = directory.appendingPathComponent(databaseName)
        let dataKey: [UInt8]
        if keyringFile.exists {
            // A keyring means a store was made here: an empty database file is a
            // store lost (truncated), never a new one.
            if let size = (try? FileManager.default.attributesOfItem(atPath: database.path))?[.size] as? Int, size == 0 {
                throw Error.corrupt("store.sqlite is empty")
            }
            dataKey = try keyringFile.unlock(protection, now: now)
        } else {
            guard !FileManager.default.fileExists(atPath: database.path) else { throw Error.noKeyring }
            var rng = SystemRandomNumberGenerator()
            dataKey = (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
            try keyringFile.write(try Keyring.seal(dataKey, under: protection, iterations: iterations))
        }
        let store = try MessengerStore(directory: directory, database: database, dataKey: dataKey)
        _ = try? store.backupIfDue(now: now) // a backup that fails now is tried again at the next open
        return store
    }

    /// What protects the store now, without opening it (nil: no store yet).
    public static func protection(in directory: URL) -> Keyring.Kind? {
        try? KeyringFile(url: directory.appendingPathComponent(keyringName)).read().kind
    }

    init(directory: URL, database: URL, dataKey: [UInt8]) throws {
        self.directory = directory
        cipher = FieldCipher(dataKey: dataKey)
        queue = try Self.openChecked(path: database.path, cipher: cipher)
    }

    static func configuration() -> Configuration {
        var config = Configuration()
        config.journalMode = .default
        // The chat and a `starling contact` command may write at once: wait.
        config.busyMode = .timeout(10)
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = DELETE")
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        return config
    }

    /// Opens a database file, runs the integrity check and the migrations,
    /// and checks that `cipher`'s key is the one the file was written with.
    static func openChecked(path: String, cipher: FieldCipher, requireCheck: Bool = false) throws -> DatabaseQueue {
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration())
            let result = try queue.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
            guard result == ["ok"] else { throw Error.corrupt(result.prefix(3).joined(separator: "; ")) }
            try migrator.migrate(queue)
        } catch let error as DatabaseError {
            throw Error.corrupt(error.message ?? "\(error.resultCode)")
        }
        try queue.write { db in
            let check = try Data.fetchOne(db, sql: "SELECT value FROM meta WHERE name = 'check'")
            if let check {
                guard (try? cipher.open(Array(check), table: "meta", row: Array("check".utf8))) == Self.checkValue else {
                    throw Error.wrongKey
                }
            } else {
                // A new store gets its check value; a backup must already have one.
                guard !requireCheck else { throw Error.wrongKey }
                try db.execute(sql: "INSERT INTO meta (name, value) VALUES ('check', ?)",
                               arguments: [Data(cipher.seal(Self.checkValue, table: "meta", row: Array("check".utf8)))])
            }
        }
        return queue
    }

    static let checkValue = Array("starling store v1".utf8)

    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE meta (name TEXT PRIMARY KEY, value BLOB NOT NULL);
                CREATE TABLE contacts (id INTEGER PRIMARY KEY, lookup BLOB NOT NULL UNIQUE, data BLOB NOT NULL);
                CREATE TABLE trust (id INTEGER PRIMARY KEY, lookup BLOB NOT NULL UNIQUE, data BLOB NOT NULL);
                CREATE TABLE messages (id INTEGER PRIMARY KEY, lookup BLOB NOT NULL UNIQUE,
                                       conversation BLOB NOT NULL, pending INTEGER NOT NULL, data BLOB NOT NULL);
                CREATE INDEX messages_by_conversation ON messages (conversation, id);
                CREATE INDEX messages_pending ON messages (pending) WHERE pending = 1;
                CREATE TABLE incidents (id INTEGER PRIMARY KEY, sender BLOB NOT NULL, at INTEGER NOT NULL,
                                        data BLOB NOT NULL);
                CREATE INDEX incidents_by_sender ON incidents (sender, at);
                """)
        }
        m.registerMigration("v2 pins") { db in
            try db.execute(sql: "CREATE TABLE pins (id INTEGER PRIMARY KEY, lookup BLOB NOT NULL UNIQUE, data BLOB NOT NULL)")
        }
        m.registerMigration("v3 conversations") { db in
            // Private conversations with mesh peers who are not contacts.
            try db.execute(sql: "CREATE TABLE conversations (id INTEGER PRIMARY KEY, lookup BLOB NOT NULL UNIQUE, data BLOB NOT NULL)")
        }
        m.registerMigration("v4 groups") { db in
            // Private groups (their state, key included) and groups left.
            try db.execute(sql: "CREATE TABLE groups (id INTEGER PRIMARY KEY, lookup BLOB NOT NULL UNIQUE, data BLOB NOT NULL)")
        }
        return m
    }

    // MARK: Contacts

    func contactLookup(_ id: UserID) throws -> [UInt8] { try cipher.lookup("contact", id.bytes) }

    /// Adds a contact; a contact with the same user ID throws `contactExists`
    /// unless `replace` (then the old card is replaced and the trust
    /// decisions are kept only if the keys did not change).
    @discardableResult
    public func addContact(_ card: ContactCard, replace: Bool = false, now: Double) throws -> ContactRecord {
        let lookup = try contactLookup(card.userID)
        return try queue.write { db in
            var record = ContactRecord(card: card, addedAt: now)
            if let old = try self.readContact(db, lookup: lookup) {
                guard replace else { throw Error.contactExists(name: old.card?.displayName ?? "?") }
                if let oldCard = old.card, oldCard.agreementKey == card.agreementKey, oldCard.signingKey == card.signingKey {
                    record.verified = old.verified
                    record.favorite = old.favorite
                    record.blocked = old.blocked
                }
            } else {
                let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM contacts") ?? 0
                guard count < Self.maxContacts else { throw Error.full("the contact list (\(Self.maxContacts))") }
            }
            try self.writeContact(db, record, lookup: lookup)
            return record
        }
    }

    /// Replaces a stored contact's record; a contact removed meanwhile stays
    /// removed (`notFound`).
    public func updateContact(_ record: ContactRecord) throws {
        guard let card = record.card else { throw Error.corrupt("a contact card that does not verify") }
        let lookup = try contactLookup(card.userID)
        try queue.write { db in
            let data = try self.cipher.seal(JSONEncoder().encode(record), table: "contacts", row: lookup)
            try db.execute(sql: "UPDATE contacts SET data = ? WHERE lookup = ?", arguments: [Data(data), Data(lookup)])
            guard db.changesCount == 1 else { throw Error.notFound("contact \(card.displayName)") }
        }
    }

    func writeContact(_ db: Database, _ record: ContactRecord, lookup: [UInt8]) throws {
        let data = try cipher.seal(JSONEncoder().encode(record), table: "contacts", row: lookup)
        try db.execute(sql: "INSERT INTO contacts (lookup, data) VALUES (?, ?) ON CONFLICT (lookup) DO UPDATE SET data = excluded.data",
                       arguments: [Data(lookup), Data(data)])
    }

    func readContact(_ db: Database, lookup: [UInt8]) throws -> ContactRecord? {
        guard let data = try Data.fetchOne(db, sql: "SELECT data FROM contacts WHERE lookup = ?", arguments: [Data(lookup)])
        else { return nil }
        return try cipher.decode(ContactRecord.self, Array(data), table: "contacts", row: lookup)
    }

    public func contact(_ id: UserID) throws -> ContactRecord? {
        try queue.read { db in try self.readContact(db, lookup: self.contactLookup(id)) }
    }

    /// Every contact, sorted by name.
    public func contacts() throws -> [ContactRecord] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT lookup, data FROM contacts").map { row in
                try self.cipher.decode(ContactRecord.self, Array(row["data"] as Data), table: "contacts",
                                       row: Array(row["lookup"] as Data))
            }
        }.sorted { ($0.card?.displayName ?? "") < ($1.card?.displayName ?? "") }
    }

    /// Removes a contact and its conversation.
    @discardableResult
    public func removeContact(_ id: UserID) throws -> Bool {
        try queue.write { db in
            try db.execute(sql: "DELETE FROM messages WHERE conversation = ?", arguments: [Data(self.conversationLookup(id))])
            try db.execute(sql: "DELETE FROM contacts WHERE lookup = ?", arguments: [Data(self.contactLookup(id))])
            return db.changesCount > 0
        }
    }

    // MARK: Trust decisions about mesh peers

    func trustLookup(_ fingerprint: String) throws -> [UInt8] { try cipher.lookup("trust", Array(fingerprint.lowercased().utf8)) }

    /// Stores a decision; one with nothing decided (not verified, favourite
    /// or blocked) is removed.
    public func setTrust(_ record: TrustRecord) throws {
        let lookup = try trustLookup(record.fingerprint)
        try queue.write { db in
            guard record.verified || record.favorite || record.blocked || record.npub != nil else {
                try db.execute(sql: "DELETE FROM trust WHERE lookup = ?", arguments: [Data(lookup)])
                return
            }
            let exists = try Bool.fetchOne(db, sql: "SELECT 1 FROM trust WHERE lookup = ?", arguments: [Data(lookup)]) ?? false
            if !exists {
                let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM trust") ?? 0
                guard count < Self.maxTrust else { throw Error.full("the trust list (\(Self.maxTrust))") }
            }
            let data = try self.cipher.seal(JSONEncoder().encode(record), table: "trust", row: lookup)
            try db.execute(sql: "INSERT INTO trust (lookup, data) VALUES (?, ?) ON CONFLICT (lookup) DO UPDATE SET data = excluded.data",
                           arguments: [Data(lookup), Data(data)])
        }
    }

    public func trust() throws -> [TrustRecord] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT lookup, data FROM trust").map { row in
                try self.cipher.decode(TrustRecord.self, Array(row["data"] as Data), table: "trust",
                                       row: Array(row["lookup"] as Data))
            }
        }
    }

    public func trust(fingerprint: String) throws -> TrustRecord? {
        let lookup = try trustLookup(fingerprint)
        return try queue.read { db in
            guard let data = try Data.fetchOne(db, sql: "SELECT data FROM trust WHERE lookup = ?", arguments: [Data(lookup)])
            else { return nil }
            return try self.cipher.decode(TrustRecord.self, Array(data), table: "trust", row: lookup)
        }
    }

    // MARK: Conversations with peers who are not contacts

    func conversationRecordLookup(_ id: UserID) throws -> [UInt8] { try cipher.lookup("conversation-record", id.bytes) }

    /// Keeps (or updates) a conversation's record; past `maxConversations`
    /// the one least recently active goes, with its messages.
    public func setConversation(_ record: ConversationRecord) throws {
        let lookup = try conversationRecordLookup(record.id)
        try queue.write { db in
            let data = try self.cipher.seal(JSONEncoder().encode(record), table: "conversations", row: lookup)
            try db.execute(sql: "INSERT INTO conversations (lookup, data) VALUES (?, ?) ON CONFLICT (lookup) DO UPDATE SET data = excluded.data",
                           arguments: [Data(lookup), Data(data)])
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM conversations") ?? 0
            guard count > Self.maxConversations else { return }
            let all = try Row.fetchAll(db, sql: "SELECT lookup, data FROM conversations").map { row in
                try self.cipher.decode(ConversationRecord.self, Array(row["data"] as Data), table: "conversations",
                                       row: Array(row["lookup"] as Data))
            }
            for old in all.sorted(by: { $0.updatedAt < $1.updatedAt }).prefix(count - Self.maxConversations) {
                try db.execute(sql: "DELETE FROM messages WHERE conversation = ?", arguments: [Data(self.conversationLookup(old.id))])
                try db.execute(sql: "DELETE FROM conversations WHERE lookup = ?", arguments: [Data(self.conversationRecordLookup(old.id))])
            }
        }
    }

    /// Every kept conversation with a peer who is not a contact.
    /// One person, one conversation: every message of conversation `old`
    /// moves to `new` (re-sealed under its new row), and `old`'s record goes,
    /// in one transaction. A message already in `new` (the same ID) is kept
    /// once. Returns how many moved.
    @discardableResult
    public func mergeConversation(_ old: UserID, into new: UserID) throws -> Int {
        guard old != new else { return 0 }
        return try queue.write { db in
            let rows = try Row.fetchAll(db, sql: "SELECT id, lookup, pending, data FROM messages WHERE conversation = ?",
                                        arguments: [Data(self.conversationLookup(old))])
            var moved = 0
            let encoder = JSONEncoder()
            for row in rows {
                var m = try self.cipher.decode(MessageRecord.self, Array(row["data"] as Data), table: "messages", row: Array(row["lookup"] as Data))
                guard m.contact == old else { continue } // the clear column only finds rows
                m.contact = new
                let lookup = try self.messageLookup(m.id, contact: new)
                let data = try self.cipher.seal(encoder.encode(m), table: "messages", row: lookup)
                // The row keeps its place (its id: the order of arrival); a copy already in `new` wins.
                if try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM messages WHERE lookup = ?", arguments: [Data(lookup)]) ?? 0 > 0 {
                    try db.execute(sql: "DELETE FROM messages WHERE id = ?", arguments: [row["id"] as Int64])
                } else {
                    try db.execute(sql: "UPDATE messages SET lookup = ?, conversation = ?, data = ? WHERE id = ?",
                                   arguments: [Data(lookup), Data(self.conversationLookup(new)), Data(data), row["id"] as Int64])
                    moved += 1
                }
            }
            try db.execute(sql: "DELETE FROM conversations WHERE lookup = ?", arguments: [Data(self.conversationRecordLookup(old))])
            return moved
        }
    }

    public func conversations() throws -> [ConversationRecord] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT lookup, data FROM conversations").map { row in
                try self.cipher.decode(ConversationRecord.self, Array(row["data"] as Data), table: "conversations",
                                       row: Array(row["lookup"] as Data))
            }
        }
    }

    // MARK: Groups

    /// Replaces the groups kept with these (each sealed, as every row is): the
    /// groups we belong to, key included, and those we left.
    public func setGroups(_ records: [GroupRecord]) throws {
        try queue.write { db in
            try db.execute(sql: "DELETE FROM groups")
            for r in records {
                let lookup = try self.cipher.lookup("group", r.groupID)
                let data = try self.cipher.seal(JSONEncoder().encode(r), table: "groups", row: lookup)
                try db.execute(sql: "INSERT INTO groups (lookup, data) VALUES (?, ?) ON CONFLICT (lookup) DO UPDATE SET data = excluded.data",
                               arguments: [Data(lookup), Data(data)])
            }
        }
    }

    public func groups() throws -> [GroupRecord] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT lookup, data FROM groups").map { row in
                try self.cipher.decode(GroupRecord.self, Array(row["data"] as Data), table: "groups", row: Array(row["lookup"] as Data))
            }
        }
    }

    // MARK: Pins

    struct Pin: Codable { let fingerprint: String; let signingKey: [UInt8]; let at: Double }

    /// Keeps the signing key pinned to a mesh fingerprint (first pin wins; at
    /// most 4,096, the oldest goes).
    public func setPin(fingerprint: String, signingKey: [UInt8], at: Double) throws {
        try setPins([(fingerprint, signingKey)], at: at)
    }

    /// Keeps several pins in one transaction (one commit: a crowd of new
    /// identities costs one write a batch, not one each); a fingerprint
    /// pinned already keeps its first key. Past ``maxPins`` the oldest go.
    public func setPins(_ pins: [(fingerprint: String, signingKey: [UInt8])], at: Double) throws {
        guard !pins.isEmpty else { return }
        let rows = try pins.map { p in (p, try cipher.lookup("pin", Array(p.fingerprint.lowercased().utf8))) }
        try queue.write { db in
            for (p, lookup) in rows {
                guard !(try Bool.fetchOne(db, sql: "SELECT 1 FROM pins WHERE lookup = ?", arguments: [Data(lookup)]) ?? false) else { continue }
                let data = try self.cipher.seal(JSONEncoder().encode(Pin(fingerprint: p.fingerprint.lowercased(), signingKey: p.signingKey, at: at)),
                                                table: "pins", row: lookup)
                try db.execute(sql: "INSERT INTO pins (lookup, data) VALUES (?, ?)", arguments: [Data(lookup), Data(data)])
            }
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM pins") ?? 0
            if count > Self.maxPins {
                try db.execute(sql: "DELETE FROM pins WHERE id IN (SELECT id FROM pins ORDER BY id LIMIT ?)", arguments: [count - Self.maxPins])
            }
        }
    }

    /// Every kept pin: fingerprint (hex) and signing key.
    public func pins() throws -> [(String, [UInt8])] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT lookup, data FROM pins ORDER BY id").map { row in
                let pin = try self.cipher.decode(Pin.self, Array(row["data"] as Data), table: "pins", row: Array(row["lookup"] as Data))
                return (pin.fingerprint, pin.signingKey)
            }
        }
    }

    // MARK: Messages

    /// A message is known by its sender's conversation and its ID: another
    /// contact reusing an ID cannot shadow it.
    func messageLookup(_ id: UserID, contact: UserID) throws -> [UInt8] { try cipher.lookup("message", contact.bytes + id.bytes) }
    func conversationLookup(_ id: UserID) throws -> [UInt8] { try cipher.lookup("conversation", id.bytes) }

    /// Records a message. Returns false when a message with its ID is already
    /// stored (a replay or a duplicate delivery). Past `maxMessages`, the
    /// oldest messages that are not pending are deleted.
    @discardableResult
    public func insertMessage(_ message: MessageRecord) throws -> Bool {
        try insertMessages([message]) == 1
    }

    /// Records messages in one transaction (one disk sync); returns how many
    /// were new.
    @discardableResult
    public func insertMessages(_ messages: [MessageRecord]) throws -> Int {
        try queue.write { db in
            var added = 0
            let encoder = JSONEncoder()
            for message in messages {
                let lookup = try self.messageLookup(message.id, contact: message.contact)
                let data = try self.cipher.seal(encoder.encode(message), table: "messages", row: lookup)
                // A message ID already stored (a replay, a duplicate delivery) is ignored.
                try db.execute(sql: "INSERT OR IGNORE INTO messages (lookup, conversation, pending, data) VALUES (?, ?, ?, ?)",
                               arguments: [Data(lookup), Data(self.conversationLookup(message.contact)), message.isPending,
                                           Data(data)])
                added += db.changesCount
            }
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM messages") ?? 0
            if count > Self.maxMessages {
                try db.execute(sql: "DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE pending = 0 ORDER BY id LIMIT ?)",
                               arguments: [count - Self.maxMessages])
            }
            return added
        }
    }

    /// Replaces a stored message (its state moved).
    public func updateMessage(_ message: MessageRecord) throws {
        let lookup = try messageLookup(message.id, contact: message.contact)
        try queue.write { db in
            let data = try self.cipher.seal(JSONEncoder().encode(message), table: "messages", row: lookup)
            try db.execute(sql: "UPDATE messages SET pending = ?, data = ? WHERE lookup = ?",
                           arguments: [message.isPending, Data(data), Data(lookup)])
            guard db.changesCount == 1 else { throw Error.notFound("message \(message.id)") }
        }
    }

    public func message(_ id: UserID, contact: UserID) throws -> MessageRecord? {
        let lookup = try messageLookup(id, contact: contact)
        return try queue.read { db in
            guard let data = try Data.fetchOne(db, sql: "SELECT data FROM messages WHERE lookup = ?", arguments: [Data(lookup)])
            else { return nil }
            return try self.cipher.decode(MessageRecord.self, Array(data), table: "messages", row: lookup)
        }
    }

    /// The newest `limit` messages with a contact, oldest first by the
    /// sender's timestamp.
    public func conversation(with contact: UserID, limit: Int = 200) throws -> [MessageRecord] {
        try conversation(with: contact, limit: limit, before: nil).map(\.record)
    }

    /// A page of a conversation: the `limit` messages stored before
    /// `position` (the newest when nil), oldest first by the sender's
    /// timestamp, each with its position (the next page's `before` is the
    /// smallest). Through the (conversation, id) index: a page costs the
    /// same at the end of 10,000 messages as at their start.
    public func conversation(with contact: UserID, limit: Int, before position: Int64?) throws -> [HistoryEntry] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT id, lookup, data FROM messages WHERE conversation = ? AND id < ? ORDER BY id DESC LIMIT ?",
                             arguments: [Data(self.conversationLookup(contact)), position ?? Int64.max, limit]).map { row in
                HistoryEntry(position: row["id"], record: try self.cipher.decode(MessageRecord.self, Array(row["data"] as Data), table: "messages",
                                                                                 row: Array(row["lookup"] as Data)))
            }
        }
        // The clear conversation column only finds rows; the sealed record decides.
        .filter { $0.record.contact == contact }
        .sorted { ($0.record.timestamp, $0.record.recordedAt) < ($1.record.timestamp, $1.record.recordedAt) }
    }

    /// The messages of a conversation whose text holds `text` (any case),
    /// oldest first: the newest `limit` of them stored before `position`. The
    /// records are sealed, so this opens the conversation from its newest, 500
    /// at a time, until it has `limit` (the store holds 10,000 in all).
    public func search(_ contact: UserID, for text: String, limit: Int, before position: Int64?) throws -> [HistoryEntry] {
        guard !text.isEmpty, limit > 0 else { return [] }
        var found: [HistoryEntry] = [], before = position
        for _ in 0..<1_000 { // (bounded: 500,000 messages)
            let page = try conversation(with: contact, limit: 500, before: before)
            found = page.filter { $0.record.text.localizedCaseInsensitiveContains(text) } + found
            guard found.count < limit, page.count == 500, let oldest = page.map(\.position).min() else { break }
            before = oldest
        }
        return Array(found.suffix(limit))
    }

    /// Outgoing messages not yet sent (waiting for a transport or retrying).
    public func pendingMessages() throws -> [MessageRecord] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT lookup, data FROM messages WHERE pending = 1 ORDER BY id").map { row in
                try self.cipher.decode(MessageRecord.self, Array(row["data"] as Data), table: "messages",
                                       row: Array(row["lookup"] as Data))
            }
        }.filter(\.isPending) // the clear flag only finds rows; the sealed state decides
    }

    public func messageCount() throws -> Int {
        try queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM messages") ?? 0 }
    }

    // MARK: Incidents

    /// Logs an incident and says whether its sender now has more than 3 in
    /// 24 hours (the seed's alert). Incidents older than 30 days are dropped.
    @discardableResult
    public func recordIncident(_ incident: Incident, threshold: Int = 3, window: Double = 24 * 3600) throws -> Bool {
        let sender = try cipher.lookup("incident", Array(incident.sender.utf8))
        return try queue.write { db in
            var rng = SystemRandomNumberGenerator()
            let rowKey = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let data = try self.cipher.seal(JSONEncoder().encode(incident), table: "incidents", row: rowKey)
            try db.execute(sql: "INSERT INTO incidents (sender, at, data) VALUES (?, ?, ?)",
                           arguments: [Data(sender), Int(incident.at), Data(rowKey + data)])
            try db.execute(sql: "DELETE FROM incidents WHERE at < ?", arguments: [Int(incident.at - 30 * 86400)])
            let recent = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM incidents WHERE sender = ? AND at > ?",
                                          arguments: [Data(sender), Int(incident.at - window)]) ?? 0
            return recent > threshold
        }
    }

    public func incidents() throws -> [Incident] {
        try queue.read { db in
            try Data.fetchAll(db, sql: "SELECT data FROM incidents ORDER BY id").map { data in
                let bytes = Array(data)
                guard bytes.count > 16 else { throw Error.corrupt("an incident row") }
                return try self.cipher.decode(Incident.self, Array(bytes[16...]), table: "incidents", row: Array(bytes[0..<16]))
            }
        }
    }

    // MARK: Protection

    /// Seals the data key under new protection (a PIN, a passphrase, or the
    /// key file again). The data itself does not change.
    /// Changes a store's protection, open or closed, only with its current one
    /// (the PIN's wrong attempts count toward the lockout, as at an unlock).
    public static func changeProtection(directory: URL, from current: Keyring.Protection, to protection: Keyring.Protection,
                                        now: Double = Date().timeIntervalSince1970, iterations: Int = Keyring.defaultIterations) throws {
        let file = KeyringFile(url: directory.appendingPathComponent(keyringName))
        let dataKey = try file.unlock(current, now: now)
        try file.write(try Keyring.seal(dataKey, under: protection, iterations: iterations))
    }

    public func changeProtection(to protection: Keyring.Protection, iterations: Int = Keyring.defaultIterations) throws {
        let file = KeyringFile(url: directory.appendingPathComponent(Self.keyringName))
        try file.write(try Keyring.seal(cipher.dataKey, under: protection, iterations: iterations))
    }
}

/// Per-value encryption and keyed lookups under sub-keys of the data key.
struct FieldCipher: Sendable {
    let dataKey: [UInt8]
    let valueKey: [UInt8]
    let lookupKey: [UInt8]

    init(dataKey: [UInt8]) {
        self.dataKey = dataKey
        valueKey = BLAKE3.deriveKey(context: "starling 2026-11-24 ya ok store values", material: dataKey)
        lookupKey = BLAKE3.deriveKey(context: "starling 2026-11-24 ya ok store lookups", material: dataKey)
    }

    /// A keyed hash that finds a row without saying what is in it.
    func lookup(_ domain: String, _ value: [UInt8]) throws -> [UInt8] {
        try BLAKE3.keyedHash(key: lookupKey, Array(domain.utf8) + [0] + value, byteCount: 16)
    }

    /// nonce 24 ‖ ciphertext ‖ tag, bound to its table and row.
    /// A value that could not be sealed is an error, never stored as its nonce alone (issue 55 item 6).
    func seal(_ plain: some Collection<UInt8>, table: String, row: [UInt8]) throws -> [UInt8] {
        let nonce = XChaCha20Poly1305.randomNonce()
        return nonce + (try XChaCha20Poly1305.seal(Array(plain), key: valueKey, nonce: nonce, authenticating: Array(table.utf8) + [0] + row))
    }

    func open(_ data: [UInt8], table: String, row: [UInt8]) throws -> [UInt8] {
        guard data.count >= 24 + 16 else { throw MessengerStore.Error.corrupt("a value in \(table) is too short") }
        do {
            return try XChaCha20Poly1305.open(Array(data[24...]), key: valueKey, nonce: Array(data[0..<24]),
                                              authenticating: Array(table.utf8) + [0] + row)
        } catch {
            throw MessengerStore.Error.corrupt("a value in \(table) does not decrypt")
        }
    }

    func decode<T: Decodable>(_ type: T.Type, _ data: [UInt8], table: String, row: [UInt8]) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(try open(data, table: table, row: row)))
    }
}
