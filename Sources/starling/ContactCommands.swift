import ArgumentParser
import Foundation
import StarlingCrypto
import StarlingMessenger
import StarlingMessengerCore
import StarlingMessengerAPI
import StarlingNode
import StarlingNodeCore
import StarlingNostr
import StarlingWire
import StarlingYaOK
import StarlingStore

// `starling contact` as a client of the messenger (``OneShot``): a running daemon's
// (its API), or one in this process; never behind it into the store, so that
// every face sees the change at once (issue 54: `contact verify` in a shell
// shows ✓ on the open page).

extension Contact.Options {
    /// The daemon's messenger for this data directory, when one runs.
    func daemon() async -> APIMessengerClient? {
        await APIClient.find(directory: DataDirectory(explicit: dataDir).url).map(APIMessengerClient.init)
    }

    /// A call whose refusal is said as the messenger words it.
    func call<T>(_ body: () async throws -> T) async throws -> T { try await OneShot.call(body) }
}

/// A contact as a daemon lists it, with its card (a card contact).
private func cardContacts(_ client: any MessengerClient, _ options: Contact.Options) async throws -> [(contact: StarlingMessengerCore.Contact, card: ContactCard)] {
    try await options.call { try await client.contacts() }.compactMap { c in c.card.map { (c, $0) } }
}

extension Contact.Add {
    func add(_ card: ContactCard, through client: any MessengerClient, daemon: Bool) async throws {
        do {
            try await client.addContact(card, replace: replace)
        } catch let e as MessengerClientError where e.kind == .conflict {
            guard isatty(STDIN_FILENO) == 1 else { throw RuntimeFailure("\(e.description): use --replace to replace it") }
            print("\(e.description). Replace it with \(card.displayName)? [y/N] ", terminator: "")
            guard readLine()?.lowercased().hasPrefix("y") == true else {
                print("cancelled")
                throw ExitCode(1)
            }
            try await options.call { try await client.addContact(card, replace: true) }
        } catch let e as MessengerClientError {
            throw RuntimeFailure(e.description)
        }
        let safety = SafetyNumber(try await options.call { try await client.card() }, card)
        if json {
            struct Out: Encodable { let userID: String, displayName: String, fingerprint: String, safetyNumber: String }
            try printJSON(Out(userID: card.userID.description, displayName: card.displayName,
                              fingerprint: card.fingerprint.hexString, safetyNumber: safety.groups.joined(separator: " ")))
            return
        }
        print("added \(card.displayName)" + (daemon ? " (through the daemon, which every face sees)" : ""))
        print("fingerprint: \(groupedHex(card.fingerprint))")
        print("Compare safety numbers with \(card.displayName) to verify: starling contact verify \(shellQuoted(card.displayName))")
    }

    func addNostrContact(_ npub: String, through client: any MessengerClient) async throws {
        let shown = name ?? String(npub.prefix(12)) + "…"
        guard DisplayName.problem(shown) == nil else { throw ValidationError("--name \(shown): \(DisplayName.problem(shown)!)") }
        let key = try NostrContacts.key(npub: npub)
        if let old = try await options.call({ try await client.trust() })[key], old.npub != nil, !replace {
            throw RuntimeFailure("\(npub) is already a contact (\(old.nickname ?? "?")): use --replace to rename it")
        }
        try await options.call { try await client.addNostrContact(npub: npub, name: shown) }
        if json {
            try printJSON(["npub": npub, "displayName": shown, "variant": "standard"])
            return
        }
        print("added \(shown) (\(npub)): reached over Nostr with --nostr, as standard NIP-17 (plain text, no receipts)")
    }
}

extension Contact.List {
    func list(_ client: any MessengerClient) async throws {
        let all = try await options.call { try await client.contacts() }
        let cards = all.compactMap { c in c.card.map { (c, $0) } }
        if json {
            struct Out: Encodable {
                let userID: String, displayName: String, fingerprint: String, verified: Bool, favorite: Bool, blocked: Bool
            }
            try printJSON(cards.map { c, card in
                Out(userID: card.userID.description, displayName: card.displayName, fingerprint: card.fingerprint.hexString,
                    verified: c.verified, favorite: c.favorite, blocked: c.blocked)
            })
            return
        }
        let nostr = all.filter { $0.kind == .nostr }
        if cards.isEmpty, nostr.isEmpty { print("no contacts yet: add one with `starling contact add yaok://…`") }
        for (c, card) in cards {
            let marks = (c.verified ? "✓" : "") + (c.favorite ? "★" : "") + (c.blocked ? "⊘" : "")
            print("\(card.displayName) \(marks)".trimmingCharacters(in: .whitespaces) + "  \(card.userID.description.prefix(8))  \(card.fingerprint.hexString.prefix(16))")
        }
        for c in nostr.sorted(by: { $0.name < $1.name }) {
            print("\(DisplayText.clean(c.name))\(c.blocked ? " ⊘" : "")  nostr  \(c.npub ?? "")")
        }
    }
}

extension Contact.Verify {
    func verify(_ client: any MessengerClient, daemon: Bool) async throws {
        let (contact, card) = try resolve(name, among: try await cardContacts(client, options)) { $0.contact.verified } favorite: { $0.contact.favorite } card: { $0.card }
        try await confirm(card, verified: contact.verified, safety: SafetyNumber(try await options.call { try await client.card() }, card)) { verified in
            guard contact.verified != verified else { return }
            try await options.call { try await client.decide(verified ? .verify : .unverify, about: card.meshFingerprint, nickname: nil) }
            // Locked, the daemon holds the decision in memory until a face opens the store: said, so that
            // nobody stops it meanwhile believing it kept (found in a person's pass: lost at a restart).
            if daemon, try await !options.call({ try await client.summary() }).storeOpen {
                StandardError.write(Data("starling: the store is locked: the daemon keeps this when a face opens it (the page, /unlock); stopped before then, it forgets it\n".utf8))
            }
        }
    }
}

extension Contact.Remove {
    func remove(_ client: any MessengerClient) async throws {
        let (_, card) = try resolve(name, among: try await cardContacts(client, options)) { $0.contact.verified } favorite: { $0.contact.favorite } card: { $0.card }
        if !yes {
            guard isatty(STDIN_FILENO) == 1 else {
                throw RuntimeFailure("removing \(card.displayName) deletes your conversation with them too: confirm with --yes")
            }
            print("Remove \(card.displayName) and your conversation with them? [y/N] ", terminator: "")
            guard readLine()?.lowercased().hasPrefix("y") == true else { throw ExitCode(1) }
        }
        try await options.call { try await client.removeContact(card.userID) }
        print("removed \(card.displayName)")
    }
}
