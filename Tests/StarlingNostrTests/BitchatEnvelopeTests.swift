import Foundation
import StarlingTestSupport
@testable import StarlingNostr
import Testing

/// bitchat's private envelopes: upstream's frozen fixtures (an iOS one and an
/// Android one, from docs/research/nostr.md §9) open layer by layer, and
/// their seals' IDs and BIP-340 signatures check; ours open the same way.
@Suite struct BitchatEnvelopeTests {
    struct Fixture: Decodable { let priv: String; let wrap_pubkey: String; let content: String }

    static func fixtures() throws -> [String: Fixture] {
        let url = try #require(Bundle.module.url(forResource: "Vectors/bitchat-fixtures", withExtension: "json"))
        return try JSONDecoder().decode([String: Fixture].self, from: Data(contentsOf: url))
    }

    @Test func upstreamFixturesOpenLayerByLayer() throws {
        let fixtures = try Self.fixtures()
        #expect(fixtures.count == 2)
        for (name, f) in fixtures.sorted(by: { $0.key < $1.key }) {
            let me = try Secp256k1.PrivateKey(bytes: try [UInt8](hex: f.priv))
            // The gift wrap's content opens to the seal (kind 13, signed by the sender).
            let sealJSON = try BitchatEnvelope.open(f.content, from: try [UInt8](hex: f.wrap_pubkey), with: me)
            let seal = try NostrEvent.decode(sealJSON)
            #expect(seal.kind == 13, "\(name)")
            #expect(seal.tags.isEmpty, "\(name)")
            try seal.verify() // its ID is the hash of its fields, and the signature the sender's
            // The seal opens to the rumor (kind 14, unsigned), by the same pubkey.
            let rumorJSON = try BitchatEnvelope.open(seal.content, from: try [UInt8](hex: seal.pubkey), with: me)
            let rumor = try NostrEvent.decode(rumorJSON)
            #expect(rumor.kind == 14 && rumor.sig == nil, "\(name)")
            #expect(rumor.pubkey == seal.pubkey, "\(name): seal.pubkey == rumor.pubkey")
            // The text upstream's generators froze in them (docs/research/nostr.md §9).
            #expect(rumor.content == (name.hasPrefix("ios") ? "legacy fixture from 733098bb" : "legacy fixture from Android b7f0b33d"),
                    "\(name)")
            // iOS rumors carry no tags and an empty ID; Android's a p tag and their real ID.
            if name.hasPrefix("ios") {
                #expect(rumor.tags.isEmpty && rumor.id.isEmpty, "\(rumor)")
            } else {
                #expect(rumor.tags == [["p", me.publicKey.hexString]] && rumor.id == rumor.computedID, "\(rumor)")
            }
        }
    }

    @Test func oursOpenAndAnythingElseIsRefused() throws {
        let alice = Secp256k1.PrivateKey.random(), bob = Secp256k1.PrivateKey.random()
        let sealed = try BitchatEnvelope.seal("hello over nostr", from: alice, to: bob.publicKey)
        #expect(sealed.hasPrefix("v2:") && !sealed.contains("=") && !sealed.contains("+") && !sealed.contains("/"))
        #expect(try BitchatEnvelope.open(sealed, from: alice.publicKey, with: bob) == "hello over nostr")
        #expect(throws: BitchatEnvelope.Error.undecryptable) {
            try BitchatEnvelope.open(sealed, from: alice.publicKey, with: Secp256k1.PrivateKey.random())
        }
        var tampered = Array(sealed)
        tampered[10] = tampered[10] == "A" ? "B" : "A"
        #expect(throws: BitchatEnvelope.Error.self) { try BitchatEnvelope.open(String(tampered), from: alice.publicKey, with: bob) }
        for junk in ["", "v2:", "v1:abcd", "v2:!!!!", "v2:AAAA", String(repeating: "v2:A", count: 40_000)] {
            #expect(throws: BitchatEnvelope.Error.self) { try BitchatEnvelope.open(junk, from: alice.publicKey, with: bob) }
        }
    }

    @Test func eventsSignVerifyAndSerialiseAsNIP01Says() throws {
        let key = Secp256k1.PrivateKey.random()
        var event = NostrEvent(pubkey: "", createdAt: 1_795_000_000, kind: 1, tags: [["p", "ab"], ["e", "cd", "wss://x"]],
                               content: "line\nquote\" backslash\\ tab\t bell\u{07} é ☕")
        try event.sign(with: key)
        try event.verify()
        #expect(event.canonical.hasPrefix("[0,\"\(key.publicKey.hexString)\",1795000000,1,[[\"p\",\"ab\"],[\"e\",\"cd\",\"wss://x\"]],"))
        #expect(event.canonical.hasSuffix(#""line\nquote\" backslash\\ tab\t bell\u0007 é ☕"]"#))
        let again = try NostrEvent.decode(event.json)
        #expect(again == event)
        try again.verify()
        var changed = event
        changed.content += "!"
        #expect(throws: NostrEvent.Error.badID) { try changed.verify() }
        changed.id = changed.computedID
        #expect(throws: NostrEvent.Error.badSignature) { try changed.verify() }
        #expect(throws: NostrEvent.Error.self) { try NostrEvent.decode("{\"kind\":1}") }
        #expect(throws: NostrEvent.Error.self) { try NostrEvent.decode(String(repeating: " ", count: 70_000)) }
    }
}

/// Gift wraps, both variants: they open for their recipient only, with the
/// sender, the true time and the text; every layer's rules hold.
@Suite struct GiftWrapTests {
    @Test(arguments: GiftWrap.Variant.allCases)
    func aWrapOpensForItsRecipientOnly(variant: GiftWrap.Variant) throws {
        let alice = Secp256k1.PrivateKey.random(), bob = Secp256k1.PrivateKey.random()
        let wrap = try GiftWrap.wrap("meet at the bridge", from: alice, to: bob.publicKey.hexString, variant: variant, now: 1_795_000_000)
        #expect(wrap.kind == 1059 && wrap.tags == [["p", bob.publicKey.hexString]] && wrap.pubkey != alice.publicKey.hexString)
        try wrap.verify()
        #expect(variant == .bitchat ? wrap.content.hasPrefix("v2:") : !wrap.content.hasPrefix("v2:"))
        // Decoded from its JSON, as a relay hands it over.
        let opened = try GiftWrap.open(try NostrEvent.decode(wrap.json), with: bob)
        #expect(opened == GiftWrap.Opened(sender: alice.publicKey.hexString, createdAt: 1_795_000_000, content: "meet at the bridge",
                                          variant: variant))
        #expect(throws: GiftWrap.Error.notForUs) { try GiftWrap.open(wrap, with: alice) }
        var retagged = wrap
        retagged.tags = [["p", alice.publicKey.hexString]]
        #expect(throws: GiftWrap.Error.self) { try GiftWrap.open(retagged, with: alice) } // the wrap's signature covers its tags
        var changed = wrap
        changed.content = String(changed.content.dropLast(4)) + "AAAA"
        changed.id = changed.computedID
        #expect(throws: GiftWrap.Error.self) { try GiftWrap.open(changed, with: bob) }
    }

    /// Mallory seals a rumor that names alice as its author: refused.
    @Test func aSealByOneAuthorOverAnothersMessageIsRefused() throws {
        let alice = Secp256k1.PrivateKey.random(), bob = Secp256k1.PrivateKey.random(), mallory = Secp256k1.PrivateKey.random()
        let bobKey = try [UInt8](hex: bob.publicKey.hexString)
        let rumor = NostrEvent(pubkey: alice.publicKey.hexString, createdAt: 1, kind: 14, content: "I am alice")
        var seal = NostrEvent(pubkey: "", createdAt: 1, kind: 13, content: try BitchatEnvelope.seal(rumor.json, from: mallory, to: bobKey))
        try seal.sign(with: mallory)
        let one = Secp256k1.PrivateKey.random()
        var wrap = NostrEvent(pubkey: "", createdAt: 1, kind: 1059, tags: [["p", bob.publicKey.hexString]],
                              content: try BitchatEnvelope.seal(seal.json, from: one, to: bobKey))
        try wrap.sign(with: one)
        #expect(throws: GiftWrap.Error.impersonation) { try GiftWrap.open(wrap, with: bob) }
    }
}

/// nostr-sdk (rust-nostr, from PyPI) opens our standard gift wraps, and we
/// open its: the standard variant is NIP-17/44/59 as others implement it.
@Suite(.usesProcesses) struct NostrSDKInteropTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func reference(_ requests: [[String: String]]) throws -> [[String: Any]] {
        let python = try PythonEnvironment.require()
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("nostr-\(UUID().uuidString).jsonl")
        try Data(requests.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }.joined(separator: "\n").utf8
            + Data("\n".utf8)).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let p = Process()
        p.executableURL = python
        p.arguments = [Self.root.appendingPathComponent("Tests/interop/nostr_reference.py").path]
        p.standardInput = try FileHandle(forReadingFrom: input)
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        return try String(decoding: data, as: UTF8.self).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    @Test func nostrSDKOpensOursAndWeOpenIts() throws {
        let alice = Secp256k1.PrivateKey.random(), bob = Secp256k1.PrivateKey.random()
        let ours = try GiftWrap.wrap("from starling, ☕ and all", from: alice, to: bob.publicKey.hexString, variant: .standard,
                                     now: Int64(Date().timeIntervalSince1970))
        let answers = try reference([
            ["op": "open", "secret": bob.bytes.hexString, "wrap": ours.json],
            ["op": "wrap", "secret": bob.bytes.hexString, "to": alice.publicKey.hexString, "content": "from nostr-sdk, ✓"],
        ])
        #expect(answers.count == 2)
        #expect(answers.first?["sender"] as? String == alice.publicKey.hexString)
        #expect(answers.first?["content"] as? String == "from starling, ☕ and all")
        #expect(answers.first?["kind"] as? Int == 14)
        let theirs = try NostrEvent.decode(try #require(answers.last?["wrap"] as? String))
        let opened = try GiftWrap.open(theirs, with: alice)
        #expect(opened.sender == bob.publicKey.hexString && opened.content == "from nostr-sdk, ✓" && opened.variant == .standard)
    }
}

@Suite struct NostrDocumentationTests {
    @Test func theEnvelopeExample() throws {
        let doc = try String(contentsOf: NostrSDKInteropTests.root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
        let marker = try #require(doc.range(of: "<!-- example: nostr-bitchat-envelope -->"))
        let open = try #require(doc[marker.upperBound...].range(of: "```text\n"))
        let close = try #require(doc[open.upperBound...].range(of: "```"))
        let documented = doc[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
        let one = try Secp256k1.PrivateKey(bytes: [UInt8](repeating: 0, count: 31) + [1])
        let two = try Secp256k1.PrivateKey(bytes: [UInt8](repeating: 0, count: 31) + [2])
        #expect(two.publicKey.hexString == "c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5")
        let sealed = try BitchatEnvelope.seal("hi", from: one, to: two.publicKey, nonce: (0..<24).map { UInt8($0) })
        #expect(sealed == documented, "computed: \(sealed)")
        #expect(try BitchatEnvelope.open(documented, from: one.publicKey, with: two) == "hi")
    }
}
