import ArgumentParser
import Foundation
import StarlingCrypto
import StarlingMessenger
import StarlingNode
import StarlingWire
import StarlingYaOK
import StarlingNostr

struct Id: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show this node's identity: nickname, fingerprint and peer ID (created on first run).",
        discussion: """
        The keys (a Curve25519 key for Noise and an Ed25519 key for signatures) live in \
        identity.key in the data directory ($XDG_DATA_HOME/starling, else \
        ~/.local/share/starling), readable by you only. Read the fingerprint aloud to \
        the person you are verifying; they compare it with what their device shows.

        A sealed key file asks for its passphrase, or reads STARLING_PASSPHRASE.
        """
    )

    @Option(name: .long, help: "Set the nickname others see.")
    var name: String?

    @Option(name: .long, help: "The data directory (default: $XDG_DATA_HOME/starling).")
    var dataDir: String?

    @Flag(help: "Seal the key file with a passphrase (asked for, or STARLING_PASSPHRASE).")
    var seal = false

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let store = IdentityStore(directory: DataDirectory(explicit: dataDir))
        let passphrase: String?
        if let existing = try Passphrase.forStoredKey(store) {
            passphrase = existing
        } else if seal {
            passphrase = try Passphrase.read(prompt: "New passphrase (10 or more characters): ", confirm: true)
        } else {
            passphrase = nil
        }
        var (identity, created) = try store.loadOrCreate(passphrase: passphrase)
        if seal, !created, let passphrase, !(try store.isSealed()) {
            try store.save(identity, passphrase: passphrase)
            identity = try store.load(passphrase: passphrase)
        }
        if let name { try store.setNickname(name) }
        let nickname = store.nickname(or: identity)
        let sealed = try store.isSealed()
        // The Nostr key (made on first use, as every node does): a contact on a NIP-17 client writes to its npub.
        let npub = Bech32.npub(try NostrKeyFile.loadOrCreate(store.directory.url).publicKey)
        if json {
            let object: [String: Any] = [
                "nickname": nickname,
                "peerID": identity.peerID.description,
                "fingerprint": identity.fingerprint.hex,
                "noisePublicKey": identity.noisePublicKey.hexString,
                "signingPublicKey": identity.signingPublicKey.hexString,
                "keyFile": store.keyFile.path,
                "sealed": sealed,
                "created": created,
                "npub": npub,
            ]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            print(String(decoding: data, as: UTF8.self))
        } else {
            if created { print("created a new identity in \(store.keyFile.path)\n") }
            let lines = identity.fingerprint.grouped.split(separator: "\n")
            print("nickname:    \(nickname)")
            print("peer ID:     \(identity.peerID)")
            print("fingerprint: \(lines[0])")
            for line in lines.dropFirst() { print("             \(line)") }
            print("             (the mesh's: what /verify compares, on the mesh)")
            // The Ya OK contact card is another key's fingerprint: named apart, shown together.
            if let userID = try? store.userID(),
               let card = try? ContactCard(identity: identity, userID: userID,
                                           displayName: DisplayName.problem(nickname) == nil ? nickname : String(nickname.prefix(64))) {
                print("card:        \(groupedHex(card.fingerprint))")
                print("             (your Ya OK contact card's, which `contact qr` carries; with a contact, compare the safety number: `contact verify`)")
            }
            print("npub:        \(npub)")
            print("             (your Nostr key: someone on Amethyst or 0xchat adds it and writes to you; over Nostr with --nostr)")
            print("key file:    \(store.keyFile.path)\(sealed ? " (sealed)" : "")")
        }
    }
}

enum Passphrase {
    /// The passphrase of the stored key file when it is sealed; nil when there is
    /// none or it is in the clear.
    static func forStoredKey(_ store: IdentityStore) throws -> String? {
        guard store.exists, try store.isSealed() else { return nil }
        return try read(prompt: "Passphrase for \(store.keyFile.path): ")
    }

    /// STARLING_PASSPHRASE, else a prompt on the terminal without echo.
    /// Why a new passphrase has 10 characters or more (the store's rule too: `pin --passphrase`).
    static let why = ": a copy of the file can be guessed at offline, and a short passphrase falls first"

    /// A new passphrase (`confirm`) is judged at its first entry: 10 characters or more.
    static func read(prompt: String, confirm: Bool = false) throws -> String {
        func judged(_ p: String) throws -> String {
            if confirm, p.count < 10 { throw RuntimeFailure("a passphrase is 10 or more characters" + why) }
            return p
        }
        if let env = ProcessInfo.processInfo.environment["STARLING_PASSPHRASE"], !env.isEmpty { return try judged(env) }
        guard isatty(STDIN_FILENO) == 1, let first = getpass(prompt).map({ String(cString: $0) }) else {
            throw RuntimeFailure("a passphrase is needed: run in a terminal or set STARLING_PASSPHRASE")
        }
        if confirm { _ = try judged(first) }
        if confirm {
            guard let again = getpass("Again: ").map({ String(cString: $0) }), again == first else {
                throw RuntimeFailure("the passphrases differ")
            }
        }
        guard !first.isEmpty else { throw RuntimeFailure("an empty passphrase seals nothing") }
        return first
    }
}
