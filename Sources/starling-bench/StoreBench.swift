import Crypto
import CryptoExtras
import Foundation
import GRDB
import StarlingCrypto
import StarlingWire
import StarlingYaOK
import StarlingStore

/// `starling-bench store`: the Ya OK store with `synchronous = FULL`, against
/// plain SQLite rows of the same size written the same way (the cost of the
/// per-value encryption as a ratio), and the primitives under it.
enum StoreBench {
    static func run() {
        print("starling-bench store (release; SQLite with a rollback journal, synchronous = FULL, secure_delete)\n")
        primitives()
        database()
    }

    static func primitives() {
        print("primitives")
        let block = [UInt8](repeating: 0x5A, count: 65_536)
        let sha = Timer.measure("SHA-256, 64 KiB (swift-crypto)") { blackHole(SHA256.hash(data: block)) }
        let blake = Timer.measure("BLAKE3, 64 KiB (ours)") { blackHole(BLAKE3.hash(block)) }
        Timer.report(sha)
        Timer.report(blake)
        print("  BLAKE3 \(format1(65_536 / blake.nanosPerOp * 1e3)) MB/s, SHA-256 \(format1(65_536 / sha.nanosPerOp * 1e3)) MB/s")
        Timer.ratio("BLAKE3 speed vs SHA-256", baseline: sha, ours: blake)
        let small = [UInt8](repeating: 1, count: 64)
        Timer.report(Timer.measure("BLAKE3, 64 bytes (a fingerprint)") { blackHole(BLAKE3.hash(small)) })

        let key = [UInt8](repeating: 7, count: 32), nonce = [UInt8](repeating: 9, count: 24)
        let kib = [UInt8](repeating: 3, count: 1024)
        let symmetric = SymmetricKey(data: key)
        let chacha = Timer.measure("ChaCha20-Poly1305 seal, 1 KiB (swift-crypto)") {
            blackHole(try? ChaChaPoly.seal(kib, using: symmetric, nonce: ChaChaPoly.Nonce(data: nonce.prefix(12))))
        }
        let xchacha = Timer.measure("XChaCha20-Poly1305 seal, 1 KiB (ours on it)") {
            blackHole(try? XChaCha20Poly1305.seal(kib, key: key, nonce: nonce))
        }
        Timer.report(chacha)
        Timer.report(xchacha)
        Timer.ratio("XChaCha20 vs ChaCha20 (HChaCha20's cost)", baseline: chacha, ours: xchacha)

        let alice = Identity.generate(), bob = Identity.generate()
        let aliceID = UserID.random(), bobID = UserID.random()
        let sealed = try! SealedMessage.seal(.text("see you at the mill at noon"), id: .random(), timestamp: 1, from: alice,
                                             senderID: aliceID, to: bobID, recipientAgreementKey: bob.noisePublicKey)
        Timer.report(Timer.measure("sealed message: seal (X25519, HKDF, AEAD, Ed25519)") {
            blackHole(try? SealedMessage.seal(.text("see you at the mill at noon"), id: .random(), timestamp: 1, from: alice,
                                              senderID: aliceID, to: bobID, recipientAgreementKey: bob.noisePublicKey))
        })
        Timer.report(Timer.measure("sealed message: open (verify, X25519, AEAD)") {
            blackHole(try? SealedMessage.open(sealed, as: bobID, with: bob, senderSigningKey: alice.signingPublicKey))
        })

        let clock = ContinuousClock()
        let t = clock.measure {
            _ = try? KDF.Insecure.PBKDF2.deriveKey(from: Array("123456".utf8), salt: [UInt8](repeating: 1, count: 16),
                                                   using: .sha256, outputByteCount: 32, unsafeUncheckedRounds: Keyring.defaultIterations)
        }
        let seconds = Double(t.components.seconds) + Double(t.components.attoseconds) / 1e18
        print("  PBKDF2-HMAC-SHA256 × \(Keyring.defaultIterations): \(format1(seconds * 1000)) ms per unlock; all 10^6 six-digit PINs on one core: \(format1(seconds * 1e6 / 3600)) h")
        print("")
    }

    static func database() {
        let rows = 2_000, single = 200
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("starling-bench-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        let identity = Identity.generate()
        let contact = UserID.random()
        func message(_ i: Int) -> MessageRecord {
            MessageRecord(id: .random(), contact: contact, outgoing: i % 2 == 0,
                          text: "message \(i): the water point at the school is open until six", timestamp: UInt64(i),
                          recordedAt: Double(i))
        }
        let messages = (0..<(rows + single)).map(message)

        // Ours.
        let store = try! MessengerStore.open(directory: base.appendingPathComponent("ours"), protection: .keyFile(identity),
                                        iterations: 1_000)
        let clock = ContinuousClock()
        func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
        let oursSingle = seconds(clock.measure { for m in messages[0..<single] { _ = try! store.insertMessage(m) } }) / Double(single)
        let oursBatch = seconds(clock.measure { _ = try! store.insertMessages(Array(messages[single...])) }) / Double(rows)
        let oursRead = seconds(clock.measure { blackHole(try! store.conversation(with: contact, limit: rows + single)) })
            / Double(rows + single)

        // Plain SQLite: the same rows (the JSON in the clear, encoded in the
        // timed loop as ours is; the message ID as the lookup), the same PRAGMAs.
        try! FileManager.default.createDirectory(at: base.appendingPathComponent("plain"), withIntermediateDirectories: true)
        var config = Configuration()
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = DELETE")
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        let plain = try! DatabaseQueue(path: base.appendingPathComponent("plain/plain.sqlite").path, configuration: config)
        try! plain.write { db in
            try db.execute(sql: """
                CREATE TABLE messages (id INTEGER PRIMARY KEY, lookup BLOB NOT NULL UNIQUE, conversation BLOB NOT NULL,
                                       pending INTEGER NOT NULL, data BLOB NOT NULL);
                CREATE INDEX messages_by_conversation ON messages (conversation, id);
                """)
        }
        let conversation = Data(contact.bytes)
        let encoder = JSONEncoder()
        func insert(_ db: Database, _ i: Int) throws {
            try db.execute(sql: "INSERT OR IGNORE INTO messages (lookup, conversation, pending, data) VALUES (?, ?, 0, ?)",
                           arguments: [Data(messages[i].id.bytes), conversation, try encoder.encode(messages[i])])
        }
        let plainSingle = seconds(clock.measure { for i in 0..<single { try! plain.write { try insert($0, i) } } }) / Double(single)
        let plainBatch = seconds(clock.measure { try! plain.write { db in for i in single..<(rows + single) { try insert(db, i) } } })
            / Double(rows)
        let plainRead = seconds(clock.measure {
            blackHole(try! plain.read { db in
                try Data.fetchAll(db, sql: "SELECT data FROM messages WHERE conversation = ? ORDER BY id DESC", arguments: [conversation])
                    .map { try JSONDecoder().decode(MessageRecord.self, from: $0) }
            })
        }) / Double(rows + single)

        func line(_ what: String, _ ours: Double, _ plain: Double) {
            print("  \(what.padding(44)) ours \(format1(1 / ours).leftPadding(9))/s   plain SQLite \(format1(1 / plain).leftPadding(9))/s   encryption costs \(format2(ours / plain))×")
        }
        print("messages (\(rows + single) rows of ~150 bytes of text; one conversation)")
        line("write, one transaction each (\(single))", oursSingle, plainSingle)
        line("write, one transaction for \(rows)", oursBatch, plainBatch)
        line("read a conversation (decrypt + decode)", oursRead, plainRead)
        let size = (try? FileManager.default.attributesOfItem(atPath: base.appendingPathComponent("ours/store.sqlite").path)[.size] as? Int) ?? 0
        let plainSize = (try? FileManager.default.attributesOfItem(atPath: base.appendingPathComponent("plain/plain.sqlite").path)[.size] as? Int) ?? 0
        print("  file size: ours \(size / 1024) KiB, plain \(plainSize / 1024) KiB")
    }
}
