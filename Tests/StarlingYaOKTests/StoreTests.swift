import Foundation
import StarlingCrypto
import StarlingWire
import StarlingYaOK
@testable import StarlingStore
import GRDB
import Testing

/// The encrypted store on real files in a temporary directory.
@Suite struct StoreTests {
    /// PBKDF2 iterations for tests (the default 600,000 costs ~0.3 s a try).
    static let fast = 2_000
    let identity = ContactCardTests.alice

    func contact(_ name: String, _ n: UInt8) throws -> ContactCard {
        try ContactCard(identity: exampleIdentity(n, n &+ 1), userID: .random(), displayName: name)
    }

    @Test func contactsAndTrustSurviveReopening() throws {
        let dir = temporaryDirectory("store")
        defer { try? FileManager.default.removeItem(at: dir) }
        let bob = try contact("bob", 0x10)
        do {
            let store = try MessengerStore.open(directory: dir, protection: .keyFile(identity), now: 1_000, iterations: Self.fast)
            var record = try store.addContact(bob, now: 1_000)
            #expect(throws: MessengerStore.Error.contactExists(name: "bob")) { try store.addContact(bob, now: 1_001) }
            record.verified = true
            record.blocked = true
            try store.updateContact(record)
            try store.setTrust(TrustRecord(fingerprint: String(repeating: "ab", count: 32), nickname: "carol",
                                           verified: true, blocked: true, updatedAt: 1_000))
        }
        let store = try MessengerStore.open(directory: dir, protection: .keyFile(identity), now: 2_000)
        let contacts = try store.contacts()
        #expect(contacts.count == 1)
        #expect(contacts.first?.card == bob)
        #expect(contacts.first?.verified == true)
        #expect(contacts.first?.blocked == true)
        let trust = try store.trust(fingerprint: String(repeating: "AB", count: 32))
        #expect(trust?.blocked == true && trust?.verified == true && trust?.nickname == "carol")
        // Replacing a card with new keys drops the old trust decisions.
        let newKeys = try ContactCard(identity: exampleIdentity(0x20, 0x21), userID: bob.userID, displayName: "bob")
        let replaced = try store.addContact(newKeys, replace: true, now: 2_001)
        #expect(!replaced.verified && !replaced.blocked)
        #expect(try store.removeContact(bob.userID))
        #expect(try store.contacts().isEmpty)
        // Another identity's key does not open this store.
        #expect(throws: (any Error).self) {
            try MessengerStore.open(directory: dir, protection: .keyFile(ContactCardTests.bob), now: 2_002)
        }
    }

    /// Nothing identifying or readable in the database, its journal or its
    /// backups: no name, no message text, no fingerprint or key, no user ID.
    @Test func rawFilesRevealNothing() throws {
        let dir = temporaryDirectory("store-raw")
        defer { try? FileManager.default.removeItem(at: dir) }
        let name = "Zebediah Quux", text = "the meeting point is the old mill at noon"
        let bob = try ContactCard(identity: exampleIdentity(0x30, 0x31), userID: .random(), displayName: name)
        let meshFingerprint = bob.meshFingerprint.hex
        do {
            let store = try MessengerStore.open(directory: dir, protection: .pin("482916"), now: 1_000, iterations: Self.fast)
            try store.addContact(bob, now: 1_000)
            try store.setTrust(TrustRecord(fingerprint: meshFingerprint, nickname: name, verified: true, updatedAt: 1_000))
            for i in 0..<20 {
                try store.insertMessage(MessageRecord(id: .random(), contact: bob.userID, outgoing: i % 2 == 0,
                                                      text: "\(text) #\(i)", timestamp: 1_795_000_000_000, recordedAt: 1_000))
            }
            try store.recordIncident(Incident(sender: bob.userID.description, kind: .badSignature, packet: [1, 2, 3], at: 1_000))
            try store.backup(now: 1_000)
            try store.close()
        }
        let files = try FileManager.default.subpathsOfDirectory(atPath: dir.path)
            .map { dir.appendingPathComponent($0) }
            .filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
        #expect(files.contains { $0.lastPathComponent == "store.sqlite" })
        #expect(files.contains { $0.path.contains("/backups/store-") })
        let needles: [(String, [UInt8])] = [
            ("name", Array(name.utf8)), ("name, lowercase", Array(name.lowercased().utf8)),
            ("text", Array("old mill".utf8)), ("mesh fingerprint, hex", Array(meshFingerprint.utf8)),
            ("mesh fingerprint, bytes", bob.meshFingerprint.bytes), ("fingerprint", bob.fingerprint),
            ("X25519 key", bob.agreementKey), ("Ed25519 key", bob.signingKey),
            ("user ID, bytes", bob.userID.bytes), ("user ID, text", Array(bob.userID.description.utf8)),
            ("PIN", Array("482916".utf8)),
        ]
        for file in files {
            let bytes = Array(try Data(contentsOf: file))
            for (what, needle) in needles {
                #expect(!contains(bytes, needle), "\(what) found in \(file.lastPathComponent)")
            }
        }
    }

    func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count, let first = needle.first else { return false }
        var i = 0
        while i <= haystack.count - needle.count {
            if haystack[i] == first, Array(haystack[i..<i + needle.count]) == needle { return true }
            i += 1
        }
        return false
    }

    /// 5 wrong PINs lock entry for 30 s, and the lockout holds for a new
    /// process (a new `open`) too; the right PIN after it opens.
    @Test func pinLockoutSurvivesARestart() throws {
        let dir = temporaryDirectory("store-pin")
        defer { try? FileManager.default.removeItem(at: dir) }
        _ = try MessengerStore.open(directory: dir, protection: .pin("1234"), now: 1_000, iterations: Self.fast)
        #expect(MessengerStore.protection(in: dir) == .pin)
        for attempt in 1...4 {
            #expect(throws: Keyring.Error.wrongSecret(attemptsLeft: 5 - attempt)) {
                try MessengerStore.open(directory: dir, protection: .pin("0000"), now: 1_000 + Double(attempt))
            }
        }
        #expect(throws: Keyring.Error.lockedOut(secondsLeft: 30)) {
            try MessengerStore.open(directory: dir, protection: .pin("0000"), now: 1_005)
        }
        // Even the right PIN waits; the state is on disk, not in this process.
        #expect(throws: Keyring.Error.lockedOut(secondsLeft: 20)) {
            try MessengerStore.open(directory: dir, protection: .pin("1234"), now: 1_015)
        }
        #expect(KeyringFile(url: dir.appendingPathComponent("store.keyring")).lockoutRemaining(now: 1_015) == 20)
        _ = try MessengerStore.open(directory: dir, protection: .pin("1234"), now: 1_036)
        // The count starts again.
        #expect(throws: Keyring.Error.wrongSecret(attemptsLeft: 4)) {
            try MessengerStore.open(directory: dir, protection: .pin("9999"), now: 1_040)
        }
        #expect(throws: Keyring.Error.badPIN) { try Keyring.validate(.pin("12a4")) }
        #expect(throws: Keyring.Error.badPIN) { try Keyring.validate(.pin("1234567")) }
        #expect(throws: Keyring.Error.badPassphrase) { try Keyring.validate(.passphrase("short")) }
    }

    /// From a PIN to a passphrase and back to the key file: the data stays.
    @Test func changingTheProtection() throws {
        let dir = temporaryDirectory("store-change")
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try MessengerStore.open(directory: dir, protection: .keyFile(identity), now: 1, iterations: Self.fast)
        try store.addContact(try contact("dora", 0x40), now: 1)
        try store.changeProtection(to: .passphrase("correct horse battery"), iterations: Self.fast)
        #expect(MessengerStore.protection(in: dir) == .passphrase)
        #expect(throws: Keyring.Error.needsSecret(.passphrase)) {
            try MessengerStore.open(directory: dir, protection: .keyFile(identity), now: 2)
        }
        let reopened = try MessengerStore.open(directory: dir, protection: .passphrase("correct horse battery"), now: 3)
        #expect(try reopened.contacts().map { $0.card?.displayName } == ["dora"])
    }

    /// A damaged database is detected at open, and restored from the backup.
    @Test func corruptionIsDetectedAndRestoredFromABackup() throws {
        let dir = temporaryDirectory("store-corrupt")
        defer { try? FileManager.default.removeItem(at: dir) }
        let protection = Keyring.Protection.keyFile(identity)
        let eve = try contact("eve", 0x50)
        do {
            let store = try MessengerStore.open(directory: dir, protection: protection, now: 86_400 * 10, iterations: Self.fast)
            try store.addContact(eve, now: 1)
            try store.insertMessages((0..<200).map { i in
                MessageRecord(id: .random(), contact: eve.userID, outgoing: false,
                              text: String(repeating: "x", count: 200) + "\(i)", timestamp: UInt64(i), recordedAt: 1)
            })
            try store.backup(now: 86_400 * 10)
            try store.close()
        }
        // Scribble over the middle of the file (past the header page).
        let database = dir.appendingPathComponent("store.sqlite")
        var bytes = Array(try Data(contentsOf: database))
        #expect(bytes.count > 20_000)
        for i in 4_096..<min(bytes.count, 40_960) { bytes[i] = UInt8(truncatingIfNeeded: i &* 131) }
        try Data(bytes).write(to: database)
        #expect(throws: MessengerStore.Error.self) { try MessengerStore.open(directory: dir, protection: protection, now: 86_400 * 11) }
        let used = try MessengerStore.restore(directory: dir, protection: protection, now: 86_400 * 11)
        #expect(used.lastPathComponent == "store-1970-01-11.sqlite")
        let store = try MessengerStore.open(directory: dir, protection: protection, now: 86_400 * 11)
        #expect(try store.conversation(with: eve.userID, limit: 1_000).count == 200)
        // A garbage file is "damaged" too, not a crash.
        try store.close()
        try Data("not a database at all".utf8).write(to: database)
        #expect(throws: MessengerStore.Error.self) { try MessengerStore.open(directory: dir, protection: protection, now: 86_400 * 12) }
    }

    /// A zero-byte database beside its keyring is a store lost, never a new
    /// empty one (it opened as one, silently, before).
    @Test func anEmptyDatabaseFileIsDamagedNotNew() throws {
        let dir = temporaryDirectory("store-empty")
        defer { try? FileManager.default.removeItem(at: dir) }
        let protection = Keyring.Protection.keyFile(identity)
        do {
            let store = try MessengerStore.open(directory: dir, protection: protection, now: 1_000, iterations: Self.fast)
            try store.addContact(try contact("eve", 0x50), now: 1_000)
            try store.close()
        }
        // Control: the store opens with its contact.
        #expect(try MessengerStore.open(directory: dir, protection: protection, now: 1_001).contacts().count == 1)
        try Data().write(to: dir.appendingPathComponent("store.sqlite"))
        #expect(throws: MessengerStore.Error.corrupt("store.sqlite is empty")) {
            try MessengerStore.open(directory: dir, protection: protection, now: 1_002)
        }
    }

    /// Conversations with peers who are not contacts are kept, at most
    /// `maxConversations`, the least recently active going with its messages.
    @Test func conversationsWithPeersAreKeptAndBounded() throws {
        let dir = temporaryDirectory("store-conversations")
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try MessengerStore.open(directory: dir, protection: .keyFile(identity), now: 1_000, iterations: Self.fast)
        let first = UserID.random()
        try store.setConversation(ConversationRecord(id: first, fingerprint: String(repeating: "cd", count: 32), nickname: "dave", updatedAt: 1))
        try store.insertMessage(MessageRecord(id: .random(), contact: first, outgoing: false, text: "hi", timestamp: 1, recordedAt: 1))
        #expect(try store.conversations().map(\.nickname) == ["dave"])
        for i in 0..<MessengerStore.maxConversations {
            try store.setConversation(ConversationRecord(id: .random(), fingerprint: String(repeating: "ef", count: 32),
                                                         nickname: "peer \(i)", updatedAt: Double(10 + i)))
        }
        let kept = try store.conversations()
        #expect(kept.count == MessengerStore.maxConversations)
        #expect(!kept.contains { $0.id == first })
        #expect(try store.conversation(with: first).isEmpty)
    }

    /// Daily backups, the 7 newest kept; reset keeps nothing of the store.
    @Test func backupsAreDailyAndKeptSevenDays() throws {
        let dir = temporaryDirectory("store-backups")
        defer { try? FileManager.default.removeItem(at: dir) }
        for day in 0..<10 {
            let store = try MessengerStore.open(directory: dir, protection: .keyFile(identity), now: Double(day) * 86_400 + 5,
                                           iterations: Self.fast)
            try store.close()
        }
        let names = MessengerStore.backups(in: dir).map(\.lastPathComponent)
        #expect(names.count == 7)
        #expect(names.first == "store-1970-01-10.sqlite")
        #expect(names.last == "store-1970-01-04.sqlite")
        try MessengerStore.reset(directory: dir)
        #expect(MessengerStore.backups(in: dir).isEmpty)
        #expect(MessengerStore.protection(in: dir) == nil)
    }

    /// Messages keep their states; duplicates are refused; pending ones are
    /// found; the history is bounded and never drops a pending message.
    @Test func messagesStatesAndBounds() throws {
        let dir = temporaryDirectory("store-messages")
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try MessengerStore.open(directory: dir, protection: .keyFile(identity), now: 1, iterations: Self.fast)
        let bob = try contact("bob", 0x60)
        var progress = MessageProgress(at: 1)
        try progress.move(to: .encrypting, at: 1)
        try progress.move(to: .routing, at: 1)
        var pending = MessageRecord(id: .random(), contact: bob.userID, outgoing: true, text: "are you there?",
                                    timestamp: 1_000, recordedAt: 1, progress: progress)
        #expect(try store.insertMessage(pending))
        #expect(try !store.insertMessage(pending), "a duplicate ID is refused")
        #expect(try store.pendingMessages().map(\.id) == [pending.id])
        let many = (0..<(MessengerStore.maxMessages + 5)).map { i in
            MessageRecord(id: .random(), contact: bob.userID, outgoing: false, text: "m\(i)",
                          timestamp: UInt64(2_000 + i), recordedAt: 2)
        }
        #expect(try store.insertMessages(Array(many[0..<6_000])) == 6_000)
        #expect(try store.insertMessages(Array(many[5_000...])) == MessengerStore.maxMessages + 5 - 6_000, "duplicates skipped")
        #expect(try store.messageCount() == MessengerStore.maxMessages)
        #expect(try store.message(pending.id, contact: bob.userID) != nil, "the pending message was kept")
        try pending.progress!.attempt(on: 0, at: 3)
        try pending.progress!.move(to: .sent, at: 4)
        pending.progress!.receipt(.delivered, at: 5)
        try store.updateMessage(pending)
        #expect(try store.pendingMessages().isEmpty)
        #expect(try store.message(pending.id, contact: bob.userID)?.progress?.state == .delivered)
        let recent = try store.conversation(with: bob.userID, limit: 3)
        #expect(recent.map(\.text) == ["m10002", "m10003", "m10004"])
    }

    /// A fresh store with bob's `mine` messages ("m0", "m1" …, a third of them
    /// outgoing) and carol's `theirs` ("c0" …) stored between, after bob's
    /// first `after` (the positions are the store's, shared by all conversations).
    private func interleaved(_ label: String, mine count: Int, theirs other: Int,
                             after split: Int) throws -> (MessengerStore, URL, bob: ContactCard, carol: ContactCard, mine: [MessageRecord]) {
        let dir = temporaryDirectory(label)
        let store = try MessengerStore.open(directory: dir, protection: .keyFile(identity), now: 1, iterations: Self.fast)
        let bob = try contact("bob", 0x61), carol = try contact("carol", 0x63)
        let mine = (0..<count).map { i in
            MessageRecord(id: .random(), contact: bob.userID, outgoing: i % 3 == 0, text: "m\(i)", timestamp: UInt64(10_000 + i), recordedAt: 2)
        }
        let theirs = (0..<other).map { i in
            MessageRecord(id: .random(), contact: carol.userID, outgoing: false, text: "c\(i)", timestamp: UInt64(10_000 + i), recordedAt: 2)
        }
        #expect(try store.insertMessages(Array(mine[..<split]) + theirs + Array(mine[split...])) == count + other)
        return (store, dir, bob, carol, mine)
    }

    /// A long conversation in pages (issue 56): each page the `limit` stored
    /// before the smallest position held; together the pages are the whole
    /// conversation, each message once, and none of another conversation's.
    @Test func aConversationIsReadInPagesBackToItsStart() throws {
        let (store, dir, bob, _, mine) = try interleaved("store-pages", mine: 9_000, theirs: 500, after: 4_000)
        defer { try? FileManager.default.removeItem(at: dir) }
        var seen: [String] = [], before: Int64? = nil, pages = 0
        while pages < 100 {
            let page = try store.conversation(with: bob.userID, limit: 1_000, before: before)
            if page.isEmpty { break }
            pages += 1
            #expect(page.map(\.record.timestamp) == page.map(\.record.timestamp).sorted(), "each page oldest first")
            seen = page.map(\.record.text) + seen
            before = page.map(\.position).min()
        }
        #expect(pages == 9, "\(pages) pages of 1,000")
        #expect(seen == mine.map(\.text), "the pages are the conversation, in order, each message once")
        // The control: without `before`, the newest page (as the one-call history gives it).
        #expect(try store.conversation(with: bob.userID, limit: 3, before: nil).map(\.record.text) == ["m8997", "m8998", "m8999"])
        #expect(try store.conversation(with: bob.userID, limit: 3).map(\.text) == ["m8997", "m8998", "m8999"])

    }

    /// Search opens a conversation back from its newest, across pages of 500,
    /// and finds only its own lines (1,300 of bob's with 200 of carol's between).
    @Test func aSearchReadsTheConversationBackAcrossPages() throws {
        let (store, dir, bob, carol, mine) = try interleaved("store-search", mine: 1_300, theirs: 200, after: 600)
        defer { try? FileManager.default.removeItem(at: dir) }
        // "m1": m1, m10–m19, m100–m199, m1000–m1299, from all three pages.
        let ones = try store.search(bob.userID, for: "M1", limit: 5_000, before: nil).map(\.record.text)
        let allOfThem = ones == mine.map(\.text).filter { $0.hasPrefix("m1") }
        #expect(allOfThem && ones.count == 411, "\(ones.count) found: \(ones.prefix(3)) … \(ones.suffix(3))")
        #expect(try store.search(bob.userID, for: "M1", limit: 300, before: nil).map(\.record.text) == Array(ones.suffix(300)), "the newest, at most the limit")
        #expect(try store.search(bob.userID, for: "m1", limit: 3, before: nil).map(\.record.text) == ["m1297", "m1298", "m1299"])
        let at = try #require(try store.search(bob.userID, for: "m1299", limit: 1, before: nil).first?.position)
        #expect(try store.search(bob.userID, for: "m1", limit: 2, before: at).map(\.record.text) == ["m1297", "m1298"], "the page before a position")
        #expect(try store.search(bob.userID, for: "c1", limit: 10, before: nil).isEmpty, "carol's lines are hers")
        #expect(try store.search(carol.userID, for: "c1", limit: 1_000, before: nil).count == 111, "the control: they are found in hers")
    }

    /// More than 3 incidents from one sender in 24 h alert, across reopening.
    @Test func incidentsAlertAfterThree() throws {
        let dir = temporaryDirectory("store-incidents")
        defer { try? FileManager.default.removeItem(at: dir) }
        let sender = UserID.random().description
        var alerts = [Bool]()
        for i in 0..<5 {
            let store = try MessengerStore.open(directory: dir, protection: .keyFile(identity), now: 1, iterations: Self.fast)
            alerts.append(try store.recordIncident(Incident(sender: sender, kind: .decryptionFailed, packet: [UInt8(i)],
                                                            at: 1_000 + Double(i))))
            try store.close()
        }
        #expect(alerts == [false, false, false, true, true])
        let store = try MessengerStore.open(directory: dir, protection: .keyFile(identity), now: 1)
        #expect(try store.incidents().map(\.packetHash) == (0..<5).map { BLAKE3.hash([UInt8($0)]).hexString })
        #expect(try !store.recordIncident(Incident(sender: sender, kind: .badSignature, packet: [9], at: 1_000 + 2 * 86_400)))
    }

    /// What someone who can write the file (but has no key) can and cannot do.
    @Test func tamperingWithClearColumnsChangesNothingAPersonSees() throws {
        let dir = temporaryDirectory("store-tamper")
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try MessengerStore.open(directory: dir, protection: .keyFile(identity), now: 1, iterations: Self.fast)
        let bob = try contact("bob", 0x70), carol = try contact("carol", 0x72)
        let delivered = MessageRecord(id: .random(), contact: bob.userID, outgoing: true, text: "old news", timestamp: 1,
                                      recordedAt: 1, progress: {
                                          var p = MessageProgress(at: 1)
                                          try? p.move(to: .encrypting, at: 1); try? p.move(to: .routing, at: 1)
                                          try? p.attempt(on: 0, at: 1); p.receipt(.delivered, at: 2)
                                          return p
                                      }())
        try store.insertMessage(delivered)
        // Mark it pending and move it into carol's conversation, in the clear columns.
        try store.queue.write { db in
            try db.execute(sql: "UPDATE messages SET pending = 1, conversation = ?", arguments: [Data(store.conversationLookup(carol.userID))])
        }
        #expect(try store.pendingMessages().isEmpty, "the sealed state says delivered")
        #expect(try store.conversation(with: carol.userID).isEmpty, "the sealed record says bob")
        // The same message ID from two contacts: two messages.
        let shared = UserID.random()
        #expect(try store.insertMessage(MessageRecord(id: shared, contact: bob.userID, outgoing: false, text: "from bob", timestamp: 2, recordedAt: 2)))
        #expect(try store.insertMessage(MessageRecord(id: shared, contact: carol.userID, outgoing: false, text: "from carol", timestamp: 2, recordedAt: 2)))
        #expect(try store.message(shared, contact: bob.userID)?.text == "from bob")
        #expect(try store.message(shared, contact: carol.userID)?.text == "from carol")
        // A removed contact is not brought back by an update.
        var record = try store.addContact(bob, now: 3)
        try store.removeContact(bob.userID)
        record.blocked = true
        #expect(throws: MessengerStore.Error.self) { try store.updateContact(record) }
        #expect(try store.contacts().isEmpty)
    }

    /// A backup must be this store's: an empty or foreign file is refused and
    /// the database is left as it was.
    @Test func restoreRefusesWhatIsNotABackupOfThisStore() throws {
        let dir = temporaryDirectory("store-restore")
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try MessengerStore.open(directory: dir, protection: .keyFile(identity), now: 1, iterations: Self.fast)
        try store.addContact(try contact("zed", 0x74), now: 1)
        try store.close()
        let empty = dir.appendingPathComponent("empty.sqlite")
        try Data().write(to: empty)
        #expect(throws: (any Error).self) { try MessengerStore.restore(directory: dir, protection: .keyFile(identity), from: empty, now: 2) }
        let other = temporaryDirectory("store-other")
        defer { try? FileManager.default.removeItem(at: other) }
        let foreign = try MessengerStore.open(directory: other, protection: .keyFile(identity), now: 1, iterations: Self.fast)
        let foreignBackup = try foreign.backup(now: 1)
        #expect(throws: (any Error).self) { try MessengerStore.restore(directory: dir, protection: .keyFile(identity), from: foreignBackup, now: 2) }
        let reopened = try MessengerStore.open(directory: dir, protection: .keyFile(identity), now: 3)
        #expect(try reopened.contacts().map { $0.card?.displayName } == ["zed"])
    }

    /// An attempts file with absurd values is read within the rules.
    @Test func aDoctoredAttemptsFileIsClamped() throws {
        let dir = temporaryDirectory("store-attempts")
        defer { try? FileManager.default.removeItem(at: dir) }
        _ = try MessengerStore.open(directory: dir, protection: .pin("2580"), now: 1, iterations: Self.fast)
        try Data(#"{"failures": 9223372036854775807, "lockedUntil": 1e300}"#.utf8).write(to: dir.appendingPathComponent("store.attempts"))
        #expect(throws: Keyring.Error.lockedOut(secondsLeft: 30)) { try MessengerStore.open(directory: dir, protection: .pin("2580"), now: 10) }
        try Data(#"{"failures": -5, "lockedUntil": -1}"#.utf8).write(to: dir.appendingPathComponent("store.attempts"))
        _ = try MessengerStore.open(directory: dir, protection: .pin("2580"), now: 10)
    }

    /// Pins are kept across reopening; the first pin for a fingerprint wins.
    @Test func pinsAreKept() throws {
        let dir = temporaryDirectory("store-pins")
        defer { try? FileManager.default.removeItem(at: dir) }
        do {
            let store = try MessengerStore.open(directory: dir, protection: .keyFile(identity), now: 1, iterations: Self.fast)
            try store.setPin(fingerprint: String(repeating: "AB", count: 32), signingKey: [UInt8](repeating: 1, count: 32), at: 1)
            try store.setPin(fingerprint: String(repeating: "ab", count: 32), signingKey: [UInt8](repeating: 2, count: 32), at: 2)
            try store.setPin(fingerprint: String(repeating: "cd", count: 32), signingKey: [UInt8](repeating: 3, count: 32), at: 3)
        }
        let store = try MessengerStore.open(directory: dir, protection: .keyFile(identity), now: 4)
        let pins = try store.pins()
        #expect(pins.map(\.0) == [String(repeating: "ab", count: 32), String(repeating: "cd", count: 32)])
        #expect(pins.map(\.1) == [[UInt8](repeating: 1, count: 32), [UInt8](repeating: 3, count: 32)])
    }
}

/// Sealed messages into the store: stored once, receipts move states,
/// forgeries and tampering are logged with their hash and alert after three.
@Suite struct InboxTests {
    @Test func receiveSealedMessages() throws {
        let dir = temporaryDirectory("inbox")
        defer { try? FileManager.default.removeItem(at: dir) }
        let alice = ContactCardTests.alice, bob = ContactCardTests.bob
        let aliceID = ContactCardTests.aliceID, bobID = ContactCardTests.bobID
        let store = try MessengerStore.open(directory: dir, protection: .keyFile(bob), now: 1, iterations: StoreTests.fast)
        let aliceCard = try ContactCard(identity: alice, userID: aliceID, displayName: "alice")
        // From a stranger first: unread.
        let early = try SealedMessage.seal(.text("hi"), id: .random(), timestamp: 1, from: alice, senderID: aliceID, to: bobID,
                                           recipientAgreementKey: bob.noisePublicKey)
        #expect(try store.receive(sealed: early, as: bobID, identity: bob, now: 2) == .unknownSender(aliceID))
        try store.addContact(aliceCard, now: 2)
        guard case let .message(m) = try store.receive(sealed: early, as: bobID, identity: bob, now: 3) else {
            Issue.record("not stored"); return
        }
        #expect(m.text == "hi" && m.contact == aliceID && !m.outgoing)
        #expect(try store.receive(sealed: early, as: bobID, identity: bob, now: 4) == .duplicate, "a replay")
        #expect(try store.conversation(with: aliceID).map(\.text) == ["hi"])

        // A receipt from alice for our message moves it.
        var progress = MessageProgress(at: 5)
        try progress.move(to: .encrypting, at: 5); try progress.move(to: .routing, at: 5); try progress.attempt(on: 0, at: 5)
        let ours = MessageRecord(id: .random(), contact: aliceID, outgoing: true, text: "hello alice", timestamp: 5, recordedAt: 5,
                                 progress: progress)
        try store.insertMessage(ours)
        let receipt = try SealedMessage.seal(.read(ours.id), id: .random(), timestamp: 6, from: alice, senderID: aliceID, to: bobID,
                                             recipientAgreementKey: bob.noisePublicKey)
        guard case let .receipt(moved) = try store.receive(sealed: receipt, as: bobID, identity: bob, now: 6) else {
            Issue.record("receipt not applied"); return
        }
        #expect(moved.progress?.state == .read)

        // Four tampered copies: each logged with its BLAKE3 hash; the fourth alerts.
        var alerts: [Bool] = []
        for i in 0..<4 {
            var bad = try SealedMessage.seal(.text("x\(i)"), id: .random(), timestamp: 7, from: alice, senderID: aliceID, to: bobID,
                                             recipientAgreementKey: bob.noisePublicKey)
            bad[SealedMessageBytes.headerByteCount + 3] ^= 1 // in the sealed box
            guard case let .refused(incident, alert) = try store.receive(sealed: bad, as: bobID, identity: bob, now: 10 + Double(i)) else {
                Issue.record("tampering not refused"); return
            }
            #expect(incident.packetHash == BLAKE3.hash(bad).hexString)
            #expect(incident.kind == .badSignature)
            alerts.append(alert)
        }
        #expect(alerts == [false, false, false, true])
        #expect(try store.incidents().count == 4)
        #expect(try store.conversation(with: aliceID).count == 2, "nothing forged was stored")
    }
}
