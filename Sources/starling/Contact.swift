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
import StarlingStore

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
            if let npub = uri?.lowercased(), npub.hasPrefix("npub1") {
                return try await OneShot.withMessenger(dataDir: options.dataDir) { client, _ in try await addNostrContact(npub, through: client) }
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
            try await OneShot.withMessenger(dataDir: options.dataDir) { client, daemon in try await add(card, through: client, daemon: daemon) }
        }
    }

    struct List: AsyncParsableCommand {
        // (Nostr-only contacts are listed after the Ya OK ones.)
        static let configuration = CommandConfiguration(abstract: "List contacts (✓ verified, ★ favourite, ⊘ blocked).")

        @OptionGroup var options: Options
        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            try await OneShot.withMessenger(dataDir: options.dataDir) { client, _ in try await list(client) }
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
            try await OneShot.withMessenger(dataDir: options.dataDir) { client, daemon in try await verify(client, daemon: daemon) }
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
            try await OneShot.withMessenger(dataDir: options.dataDir) { client, _ in try await remove(client) }
        }
    }
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
