import Foundation
import Testing
import StarlingCrypto
import StarlingMessenger
import StarlingMessengerCore
import StarlingNostr
import StarlingWire
import StarlingYaOK
import StarlingStore

/// What older versions kept outside the encrypted store moves in: the
/// plain-text `nostr-contacts` file becomes trust records, then is removed.
@Suite struct StoreMigrationTests {
    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("starling-migrate-\(UUID().uuidString)")
    }

    @Test func nostrContactsMoveIntoTheStoreAndTheFileIsRemoved() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let identity = Identity.generate()
        let store = try MessengerStore.open(directory: dir, protection: .keyFile(identity), now: 1_000, iterations: 2_000)
        let bob = Fingerprint(noiseStaticKey: [UInt8](repeating: 1, count: 32))
        let carol = Fingerprint(noiseStaticKey: [UInt8](repeating: 2, count: 32))
        let bobNpub = Bech32.npub(Secp256k1.PrivateKey.random().publicKey)
        let carolNpub = Bech32.npub(Secp256k1.PrivateKey.random().publicKey)
        // The format older versions wrote: fingerprint, npub, an optional variant, the nickname
        // (one that itself begins with "variant=" had the variant written before it).
        let file = """
        \(bob.hex) \(bobNpub) bob the builder
        \(carol.hex) \(carolNpub) variant=standard carol
        not-a-fingerprint npub1nothing junk

        """
        try Data(file.utf8).write(to: dir.appendingPathComponent(NostrContactsFile.name))
        // A trust decision already in the store is kept (bob was verified).
        try store.setTrust(TrustRecord(fingerprint: bob.hex, nickname: "bob", verified: true, updatedAt: 10))
        try NostrContactsFile.migrate(from: dir, into: store, now: 2_000)
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent(NostrContactsFile.name).path))
        let b = try #require(try store.trust(fingerprint: bob.hex))
        #expect(b.npub == bobNpub && b.nostrVariant == "bitchat" && b.verified && b.favoritesUs == true && b.nickname == "bob")
        let c = try #require(try store.trust(fingerprint: carol.hex))
        #expect(c.npub == carolNpub && c.nostrVariant == "standard" && c.nickname == "carol")
        #expect(try store.trust().count == 2) // the junk line is not a contact
        // Control: with no file there is nothing to do, and what moved stays.
        try NostrContactsFile.migrate(from: dir, into: store, now: 3_000)
        #expect(try store.trust().count == 2)
    }

    /// Issue 52, item 12: the favourites file (fingerprints in clear beside
    /// the encrypted store) becomes trust records, then is overwritten and removed.
    @Test func favouritesMoveIntoTheStoreAndTheClearFileIsRemoved() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try MessengerStore.open(directory: dir, protection: .keyFile(Identity.generate()), now: 1_000, iterations: 2_000)
        let bob = Fingerprint(noiseStaticKey: [UInt8](repeating: 1, count: 32))
        let carol = Fingerprint(noiseStaticKey: [UInt8](repeating: 2, count: 32))
        let dave = Fingerprint(noiseStaticKey: [UInt8](repeating: 3, count: 32))
        try Data("\(bob.hex)\n\(carol.hex.uppercased())\nnot a fingerprint\n".utf8).write(to: dir.appendingPathComponent(FavoritesFile.name))
        // Bob was already verified in the store: the decision is kept, the favourite added.
        try store.setTrust(TrustRecord(fingerprint: bob.hex, nickname: "bob", verified: true, updatedAt: 10))
        try store.setTrust(TrustRecord(fingerprint: dave.hex, nickname: "dave", blocked: true, updatedAt: 10))
        try FavoritesFile.migrate(from: dir, into: store, now: 2_000)
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent(FavoritesFile.name).path))
        let b = try #require(try store.trust(fingerprint: bob.hex))
        #expect(b.favorite && b.verified && b.nickname == "bob")
        #expect(try store.trust(fingerprint: carol.hex)?.favorite == true)
        // The control: a trust record not in the file is no favourite.
        #expect(try store.trust(fingerprint: dave.hex)?.favorite == false && store.trust(fingerprint: dave.hex)?.blocked == true)
        #expect(try store.trust().count == 3)
        // Nothing in clear names them any more: no file of the directory holds bob's fingerprint as text.
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) {
            let data = (try? Data(contentsOf: dir.appendingPathComponent(name))) ?? Data()
            #expect(!String(decoding: data, as: UTF8.self).contains(bob.hex), "\(name) names bob in clear")
        }
    }

    /// The real store moves a conversation's messages into another, re-sealed
    /// under their new rows, keeps a message already there once, and drops the
    /// old conversation's record.
    @Test func theStoreMergesOneConversationIntoAnother() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try MessengerStore.open(directory: dir, protection: .keyFile(Identity.generate()), now: 1_000, iterations: 2_000)
        let old = UserID.random(), new = UserID.random(), other = UserID.random()
        let shared = UserID.random()
        func message(_ id: UserID, _ c: UserID, _ text: String, _ t: UInt64) -> MessageRecord {
            MessageRecord(id: id, contact: c, outgoing: false, text: text, timestamp: t, recordedAt: Double(t), transport: "mesh")
        }
        try store.insertMessages([message(.random(), old, "one", 1), message(shared, old, "two", 2), message(.random(), new, "three", 3),
                                  message(shared, new, "two", 2), message(.random(), other, "elsewhere", 4)])
        try store.setConversation(ConversationRecord(id: old, fingerprint: String(repeating: "ab", count: 32), nickname: "bob", updatedAt: 1))
        #expect(try store.mergeConversation(old, into: new) == 1)
        #expect(try store.conversation(with: new).map(\.text) == ["one", "two", "three"])
        #expect(try store.conversation(with: old).isEmpty)
        #expect(try store.conversation(with: other).map(\.text) == ["elsewhere"], "the control: another conversation untouched")
        #expect(try store.conversations().isEmpty)
        #expect(try store.messageCount() == 4)
        // Each moved message is found under its new conversation by its ID.
        #expect(try store.message(shared, contact: new) != nil && store.message(shared, contact: old) == nil)
    }

    /// A contact is one record, whatever tables hold it: a card, a Nostr-only
    /// contact, a favourite who told us their npub.
    @Test func contactsAreOneRecordEach() throws {
        let me = Identity.generate(), bob = Identity.generate()
        var core = MessengerCore(identity: me)
        let card = try ContactCard(identity: bob, userID: .random(), displayName: "bob")
        let carolNpub = Bech32.npub(Secp256k1.PrivateKey.random().publicKey)
        var contents = MessengerCore.StoreContents()
        contents.contacts = [ContactRecord(card: card, verified: true, addedAt: 1)]
        contents.trust = [
            TrustRecord(fingerprint: card.meshFingerprint.hex, favorite: true, updatedAt: 1, npub: Bech32.npub(Secp256k1.PrivateKey.random().publicKey)),
            try NostrContacts.record(npub: carolNpub, name: "carol", now: 1),
            TrustRecord(fingerprint: Fingerprint(noiseStaticKey: [9]).hex, nickname: "dave", blocked: true, updatedAt: 1),
        ]
        core.storeOpened(contents, peers: [:], now: 2)
        let list = core.contactList
        #expect(list.map(\.name) == ["bob", "carol"]) // dave is only blocked: a decision, not a contact
        #expect(list[0].kind == .card && list[0].verified && list[0].favorite && list[0].npub != nil && list[0].conversation == card.userID)
        #expect(list[1].kind == .nostr && list[1].nostrVariant == "standard" && list[1].favorite && list[1].card == nil)
        // Added by npub: our favourite, and nothing claimed of them (they never said they favour us).
        #expect(!list[1].favoritesUs && list[0].favoritesUs == false)
        #expect(try NostrContacts.record(npub: carolNpub, name: "carol", now: 1).favoritesUs == nil)
    }
}
