import ArgumentParser
import Foundation
import StarlingCrypto
import StarlingMessenger
import StarlingMessengerCore
import StarlingNode
import StarlingNostr
import StarlingQR
import StarlingWire
import StarlingYaOK
import StarlingYaOKStore

/// Ya OK contacts: our QR code, adding a contact from theirs, safety numbers.
struct Contact: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ya OK contacts: show your QR code, add a contact from theirs, compare safety numbers.",
        subcommands: [QR.self, Add.self, List.self, Verify.self, Remove.self]
    )

    struct Options: ParsableArguments {
        @Option(name: .long, help: "The data directory (default: $XDG_DATA_HOME/starling).")
        var dataDir: String?
    }

    struct QR: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show your contact QR code (and its yaok:// link) for others to scan.")

        @OptionGroup var options: Options
        @Option(name: .long, help: "Also write the code as a PNG picture to this file.")
        var png: String?
        @Flag(help: "For a terminal with a light background.")
        var light = false
        @Flag(help: "Print JSON: the URI and the card's fields.")
        var json = false

        func run() async throws {
            let card: ContactCard
            if let client = await options.daemon() { card = try await options.call { try await client.card() } } else { card = try StoreAccess(dataDir: options.dataDir).card() }
            let code = try QRCode(text: card.uri)
            if let png { try code.writePNG(to: png) }
            if json {
                struct Out: Encodable {
                    let uri: String, userID: String, displayName: String, x25519Key: String, ed25519Key: String
                    let signature: String, fingerprint: String, png: String?
                }
                try printJSON(Out(uri: card.uri, userID: card.userID.description, displayName: card.displayName,
                                  x25519Key: card.agreementKey.hexString, ed25519Key: card.signingKey.hexString,
                                  signature: card.signature.hexString, fingerprint: card.fingerprint.hexString, png: png))
                return
            }
            print(code.terminalText(border: 2, darkTerminal: !light))
            print("\n\(card.displayName): \(card.uri)")
            print("card fingerprint: \(groupedHex(card.fingerprint))  (the card's; `starling id` shows the mesh's beside it)")
            if let png { print("written to \(png)") }
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a contact from their yaok://contact link, a picture of their QR code, or their npub.",
            discussion: """
            An npub1… (someone on a standard NIP-17 client such as Amethyst or 0xchat) is a \
            contact reached over Nostr only (a chat or node with --nostr), messages going as \
            standard NIP-17; give it a name with --name. \

            The code is signed by the contact's key: a code that was altered is refused \
            with a security warning. Compare safety numbers afterwards (`starling contact \
            verify NAME`) to know that no one sits between you.
            """)

        @OptionGroup var options: Options
        @Argument(help: "The yaok://contact?v=1&d=… link, or an npub1… key.")
        var uri: String?
        @Option(help: "The name to call an npub contact by (default: the start of the npub).")
        var name: String?
        @Option(name: .long, help: "A PNG picture of the QR code.")
        var image: String?
        @Flag(help: "Replace a contact with the same user ID without asking.")
        var replace = false
        @Flag(help: "Print JSON.")
        var json = false

        func validate() throws {
            guard (uri == nil) != (image == nil) else { throw ValidationError("give either a yaok:// link, an npub1… key or --image FILE") }
            if let uri, uri.lowercased().hasPrefix("npub1"), (try? Bech32.publicKey(npub: uri.lowercased())) == nil {
                throw ValidationError("\(uri) is not an npub (bech32 of a Nostr public key)")
            }
            if name != nil, uri?.lowercased().hasPrefix("npub1") != true { throw ValidationError("--name is for an npub contact") }
        }

        func run() async throws {
            let client = await options.daemon()
            if let npub = uri?.lowercased(), npub.hasPrefix("npub1") {
                if let client { return try await addNostrContact(npub, through: client) }
                return try addNostrContact(npub)
            }
            var text = uri ?? ""
            if let image {
                do {
                    let found = try QRCode.scan(pngAt: image)
                    text = found.first { $0.lowercased().hasPrefix("yaok://") } ?? found[0]
                } catch {
                    throw RuntimeFailure("\(error)")
                }
            }
            let card: ContactCard
            do {
                card = try ContactCard(uri: text)
            } catch ContactCard.Error.badSignature {
                StandardError.write(Data("""
                SECURITY WARNING: this contact code's signature does not verify.
                It was altered or forged. The contact was NOT added.

                """.utf8))
                throw ExitCode(3)
            } catch {
                throw ValidationError("\(error)")
            }
            if let client { return try await add(card, through: client) }
            let access = try StoreAccess(dataDir: options.dataDir)
            guard card.userID != access.userID else { throw RuntimeFailure("this is your own contact code") }
            let store = try access.open()
            let now = Date().timeIntervalSince1970
            do {
                try store.addContact(card, replace: replace, now: now)
            } catch let YaOKStore.Error.contactExists(name) {
                guard isatty(STDIN_FILENO) == 1 else {
                    throw RuntimeFailure("a contact with this user ID is already here (\(name)): use --replace to replace it")
                }
                print("A contact with this user ID is already here (\(name)). Replace it with \(card.displayName)? [y/N] ",
                      terminator: "")
                guard readLine()?.lowercased().hasPrefix("y") == true else {
                    print("cancelled")
                    throw ExitCode(1)
                }
                try store.addContact(card, replace: true, now: now)
            }
            let safety = SafetyNumber(try access.card(), card)
            if json {
                struct Out: Encodable { let userID: String, displayName: String, fingerprint: String, safetyNumber: String }
                try printJSON(Out(userID: card.userID.description, displayName: card.displayName,
                                  fingerprint: card.fingerprint.hexString, safetyNumber: safety.groups.joined(separator: " ")))
                return
            }
            print("added \(card.displayName)")
            print("fingerprint: \(groupedHex(card.fingerprint))")
            print("Compare safety numbers with \(card.displayName) to verify: starling contact verify \(shellQuoted(card.displayName))")
        }

        /// An npub contact: kept in the store as a favourite reached over Nostr (standard NIP-17).
        func addNostrContact(_ npub: String) throws {
            let access = try StoreAccess(dataDir: options.dataDir)
            let store = try access.open()
            let shown = name ?? String(npub.prefix(12)) + "…"
            guard DisplayName.problem(shown) == nil else { throw ValidationError("--name \(shown): \(DisplayName.problem(shown)!)") }
            let key = try NostrContacts.key(npub: npub)
            if let old = try store.trust(fingerprint: key.hex), old.npub != nil, !replace {
                throw RuntimeFailure("\(npub) is already a contact (\(old.nickname ?? "?")): use --replace to rename it")
            }
            try store.setTrust(try NostrContacts.record(npub: npub, name: shown, now: Date().timeIntervalSince1970))
            if json {
                try printJSON(["npub": npub, "displayName": shown, "variant": "standard"])
                return
            }
            print("added \(shown) (\(npub)): reached over Nostr with --nostr, as standard NIP-17 (plain text, no receipts)")
        }
    }

    struct List: AsyncParsableCommand {
        // (Nostr-only contacts are listed after the Ya OK ones.)
        static let configuration = CommandConfiguration(abstract: "List contacts (✓ verified, ★ favourite, ⊘ blocked).")

        @OptionGroup var options: Options
        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            if let client = await options.daemon() { return try await listThrough(client) }
            let store = try StoreAccess(dataDir: options.dataDir).open()
            let contacts = try store.contacts().compactMap { record in record.card.map { (record, $0) } }
            if json {
                struct Out: Encodable {
                    let userID: String, displayName: String, fingerprint: String, verified: Bool, favorite: Bool, blocked: Bool
                }
                try printJSON(contacts.map { r, c in
                    Out(userID: c.userID.description, displayName: c.displayName, fingerprint: c.fingerprint.hexString,
                        verified: r.verified, favorite: r.favorite, blocked: r.blocked)
                })
                return
            }
            let nostr = try store.trust().filter { t in
                t.npub.map { (try? NostrContacts.key(npub: $0).hex) == t.fingerprint.lowercased() } == true
            }
            if contacts.isEmpty, nostr.isEmpty { print("no contacts yet: add one with `starling contact add yaok://…`") }
            for (record, card) in contacts {
                let marks = (record.verified ? "✓" : "") + (record.favorite ? "★" : "") + (record.blocked ? "⊘" : "")
                print("\(card.displayName) \(marks)".trimmingCharacters(in: .whitespaces)
                      + "  \(card.userID.description.prefix(8))  \(card.fingerprint.hexString.prefix(16))")
            }
            for t in nostr.sorted(by: { ($0.nickname ?? "") < ($1.nickname ?? "") }) {
                print("\(DisplayText.clean(t.nickname ?? "?"))\(t.blocked ? " ⊘" : "")  nostr  \(t.npub ?? "")")
            }
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the safety number you share with a contact, and mark them verified when it matches.",
            discussion: """
            Both of you see the same 64 digits. Compare them in person or on a call you \
            trust. If they match, no one has put their own keys between you.
            """)

        @OptionGroup var options: Options
        @Argument(help: "The contact's name (or the start of their user ID).")
        var name: String
        @Flag(help: "Mark verified without asking (the numbers were compared).")
        var yes = false
        @Flag(help: "Report that the numbers do not match.")
        var mismatch = false
        @Flag(help: "Print JSON (with a safetyNumber field); marks nothing unless --yes.")
        var json = false

        func run() async throws {
            if let client = await options.daemon() { return try await verifyThrough(client) }
            let access = try StoreAccess(dataDir: options.dataDir)
            let store = try access.open()
            var (record, card) = try resolve(name, in: store)
            try await confirm(card, verified: record.verified, safety: SafetyNumber(try access.card(), card)) { verified in
                guard record.verified != verified else { return }
                record.verified = verified
                try store.updateContact(record)
            }
        }

        /// The safety number shown (or printed as JSON), compared, and the
        /// answer marked by `mark`: in the store here, or through a daemon.
        func confirm(_ card: ContactCard, verified: Bool, safety: SafetyNumber, mark: (Bool) async throws -> Void) async throws {
            if mismatch {
                try await mark(false)
                return try reportMismatch(card)
            }
            if json {
                if yes { try await mark(true) }
                struct Out: Encodable { let displayName: String, userID: String, safetyNumber: String, verified: Bool }
                try printJSON(Out(displayName: card.displayName, userID: card.userID.description,
                                  safetyNumber: safety.groups.joined(separator: " "), verified: yes || verified))
                return
            }
            print("Safety number with \(card.displayName):\n")
            print(safety.description.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            print("")
            var confirmed = yes
            if !yes {
                guard isatty(STDIN_FILENO) == 1 else {
                    print(verified ? "\(card.displayName) is verified ✓" : "not verified: compare, then run again with --yes (or --mismatch)")
                    return
                }
                print("Does \(card.displayName)'s device show the same number? [y]es / [n]ot now / [m]ismatch: ", terminator: "")
                let answer = readLine()?.lowercased() ?? ""
                if answer.hasPrefix("m") {
                    try await mark(false)
                    return try reportMismatch(card)
                }
                confirmed = answer.hasPrefix("y")
            }
            if confirmed {
                try await mark(true)
                print("\(card.displayName) is verified ✓")
            } else {
                print("not verified")
            }
        }

        func reportMismatch(_ card: ContactCard) throws {
            StandardError.write(Data("""
            SECURITY WARNING: the safety numbers do not match.
            Someone may be intercepting your messages with \(card.displayName) (a man-in-the-middle), or one
            of you has new keys. Do not trust this contact: remove it (starling contact remove \(shellQuoted(card.displayName)))
            and add \(card.displayName) again from their QR code, in person.

            """.utf8))
            throw ExitCode(3)
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a contact and your conversation with them.")

        @OptionGroup var options: Options
        @Argument(help: "The contact's name (or the start of their user ID).")
        var name: String
        @Flag(help: "Do not ask.")
        var yes = false

        func run() async throws {
            if let client = await options.daemon() { return try await removeThrough(client) }
            let store = try StoreAccess(dataDir: options.dataDir).open()
            let (_, card) = try resolve(name, in: store)
            if !yes {
                // The conversation goes with them: asked, as restore and reset ask.
                guard isatty(STDIN_FILENO) == 1 else {
                    throw RuntimeFailure("removing \(card.displayName) deletes your conversation with them too: confirm with --yes")
                }
                print("Remove \(card.displayName) and your conversation with them? [y/N] ", terminator: "")
                guard readLine()?.lowercased().hasPrefix("y") == true else { throw ExitCode(1) }
            }
            try store.removeContact(card.userID)
            print("removed \(card.displayName)")
        }
    }
}

/// One contact by name (case-insensitive) or user-ID prefix; several matches
/// are refused and listed, never chosen silently.
func resolve(_ name: String, in store: YaOKStore) throws -> (ContactRecord, ContactCard) {
    try resolve(name, among: try store.contacts().compactMap { r in r.card.map { (r, $0) } }) { $0.0.verified } favorite: { $0.0.favorite } card: { $0.1 }
}

/// The same rule over any list (a daemon's contacts too): ``Names``'.
func resolve<T>(_ name: String, among all: [T], verified: (T) -> Bool, favorite: (T) -> Bool, card: (T) -> ContactCard) throws -> T {
    switch Names.contact(name, among: all, card: card) {
    case let .one(match): return match
    case .none: throw RuntimeFailure("no contact named \(name): `starling contact list` shows them")
    case let .several(matches):
        let list = matches.map { m in
            "  \(Names.label(card(m)))\(verified(m) ? " ✓" : "")\(favorite(m) ? "★" : "")"
        }.joined(separator: "\n")
        throw RuntimeFailure("\(matches.count) contacts are named \(name); say which:\n\(list)")
    }
}

func groupedHex(_ bytes: [UInt8]) -> String {
    let h = Array(bytes.hexString)
    return stride(from: 0, to: h.count, by: 4).map { String(h[$0..<min($0 + 4, h.count)]) }.joined(separator: " ")
}

func shellQuoted(_ s: String) -> String {
    s.allSatisfy { $0.isLetter || $0.isNumber || "-_.".contains($0) } ? s : "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
}

func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}
