import ArgumentParser
import Foundation
import StarlingCrypto
import StarlingNode
import StarlingNostr
import StarlingNostrTransport
import StarlingTransport
import StarlingWire

/// The Nostr options of the commands that run a node.
struct NostrOptions: ParsableArguments {
    @Flag(help: "Reach mutual favourites that have no mesh route through Nostr relays, via --proxy (the mesh first, always).")
    var nostr = false
    @Option(name: .customLong("nostr-relay"), parsing: .singleValue,
            help: "A Nostr relay, ws:// or wss:// (repeatable; default: the bitchat apps' relays).")
    var nostrRelay: [String] = []
    @Option(help: "The SOCKS5 proxy that Nostr traffic goes through: Tor's is 127.0.0.1:9050. Nothing reaches a relay without it.")
    var proxy = "127.0.0.1:9050"
    @Flag(name: .customLong("nostr-without-proxy-for-development"),
          help: ArgumentHelp("Connect to Nostr relays directly, showing them this machine's address (development against a local relay only).",
                             visibility: .hidden))
    var withoutProxy = false

    func transportOptions() throws -> NostrTransport.Options {
        var o = NostrTransport.Options()
        if !nostrRelay.isEmpty { o.relays = nostrRelay }
        if withoutProxy {
            o.proxy = .directForDevelopment
        } else {
            let parts = proxy.split(separator: ":")
            guard parts.count == 2, let port = Int(parts[1]), (1...65_535).contains(port) else {
                throw ValidationError("--proxy \(proxy): expected HOST:PORT")
            }
            o.proxy = .socks5(host: String(parts[0]), port: port)
        }
        return o
    }
}

/// Our Nostr key (`nostr.key` in the data directory, 64 hex digits, 0600),
/// made on first use: its npub goes to the peers we make favourites.
enum NostrKeyFile {
    static func loadOrCreate(_ directory: URL) throws -> Secp256k1.PrivateKey {
        let bytes = try secret(directory.appendingPathComponent("nostr.key"), fresh: Secp256k1.PrivateKey.random().bytes)
        guard let key = try? Secp256k1.PrivateKey(bytes: bytes) else { throw ValidationError("nostr.key is not a Nostr key") }
        return key
    }

    /// The seed of our location-channel identities (`nostr-geo-seed`, 0600).
    static func geoSeed(_ directory: URL) throws -> [UInt8] {
        try secret(directory.appendingPathComponent("nostr-geo-seed"), fresh: (0..<32).map { _ in UInt8.random(in: 0...255) })
    }

    /// 32 bytes as hex in an owner-only file, written with `fresh` the first time.
    static func secret(_ file: URL, fresh: [UInt8]) throws -> [UInt8] {
        if let text = try? String(contentsOf: file, encoding: .utf8) {
            let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
            let mode = (attributes[.posixPermissions] as? Int) ?? 0
            guard mode & 0o077 == 0 else { throw IdentityStore.Error.insecurePermissions(path: file.path, mode: mode) }
            guard let bytes = try? [UInt8](hex: text.trimmingCharacters(in: .whitespacesAndNewlines)), bytes.count == 32 else {
                throw ValidationError("\(file.path) does not hold 64 hex digits")
            }
            return bytes
        }
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: file.path, contents: Data((fresh.hexString + "\n").utf8), attributes: [.posixPermissions: 0o600])
        return fresh
    }
}

/// The favourites who told us their Nostr key (`[FAVORITED]:npub1…` over
/// their Noise session), in `nostr-contacts`: one per line, fingerprint,
/// npub, `variant=standard` when the user chose standard NIP-17 for them
/// (`/nostr NICK standard`; bitchat's variant otherwise), nickname.
struct NostrContact: Hashable, Sendable {
    var fingerprint: Fingerprint
    var npub: String
    var nickname: String
    var variant: GiftWrap.Variant = .bitchat

    static func load(_ directory: URL) -> [Fingerprint: NostrContact] {
        guard let text = try? String(contentsOf: directory.appendingPathComponent("nostr-contacts"), encoding: .utf8) else { return [:] }
        var out: [Fingerprint: NostrContact] = [:]
        for line in text.split(whereSeparator: \.isNewline) {
            var parts = line.split(separator: " ", maxSplits: 2).map(String.init)
            guard parts.count == 3, let f = Fingerprint(hex: parts[0]), (try? Bech32.publicKey(npub: parts[1])) != nil else { continue }
            var variant = GiftWrap.Variant.bitchat
            if parts[2].hasPrefix("variant="), let space = parts[2].firstIndex(of: " "),
               let v = GiftWrap.Variant(rawValue: String(parts[2][..<space].dropFirst("variant=".count))) {
                variant = v
                parts[2] = String(parts[2][space...].dropFirst())
            }
            out[f] = NostrContact(fingerprint: f, npub: parts[1], nickname: parts[2], variant: variant)
        }
        return out
    }

    static func save(_ contacts: [Fingerprint: NostrContact], _ directory: URL) throws {
        let text = contacts.values.sorted { $0.fingerprint < $1.fingerprint }
            .map { (c: NostrContact) -> String in
                // The variant is written when it is not the default, and always before a
                // nickname that itself begins with "variant=" (a peer chooses its nickname).
                let variant = c.variant != .bitchat || c.nickname.hasPrefix("variant=") ? "variant=\(c.variant.rawValue) " : ""
                return "\(c.fingerprint.hex) \(c.npub) \(variant)\(c.nickname)\n"
            }.joined()
        try Data(text.utf8).write(to: directory.appendingPathComponent("nostr-contacts"), options: .atomic)
    }
}

/// The Nostr side of a running node: tells favourites our npub, keeps the
/// npubs they tell us, and makes the mutual favourites among them reachable
/// through the Nostr transport (when there is one).
actor NostrLink {
    let node: MeshNode
    let transport: NostrTransport?
    let npub: String
    let directory: URL
    private(set) var contacts: [Fingerprint: NostrContact]
    /// Favourites told our npub in this run.
    private var told: Set<PeerID> = []
    /// Whether a favourite that appears is told our npub (not for one-shot `send`).
    let tellsFavourites: Bool

    init(node: MeshNode, transport: NostrTransport?, key: Secp256k1.PrivateKey, directory: URL, tellsFavourites: Bool) {
        self.node = node
        self.transport = transport
        self.npub = Bech32.npub(key.publicKey)
        self.directory = directory
        self.contacts = NostrContact.load(directory)
        self.tellsFavourites = tellsFavourites
    }

    /// Makes the stored mutual favourites reachable.
    func start() async {
        for f in contacts.keys { await refresh(f) }
    }

    private func refresh(_ f: Fingerprint) async {
        guard let transport else { return }
        let mutual = await node.favoriteFingerprints.contains(f)
        let key = mutual ? contacts[f].flatMap { try? Bech32.publicKey(npub: $0.npub) } : nil
        await transport.setContact(f.peerID, publicKey: key, variant: contacts[f]?.variant ?? .bitchat)
    }

    /// Chooses how messages to the contact with this nickname are wrapped:
    /// bitchat's variant (the apps) or standard NIP-17 (any Nostr client).
    /// Nil when no contact has that name.
    func setVariant(_ variant: GiftWrap.Variant, named name: String) async -> NostrContact? {
        guard let c = contacts.values.filter({ $0.nickname == name }).min(by: { $0.fingerprint < $1.fingerprint }) else { return nil }
        contacts[c.fingerprint]?.variant = variant
        try? NostrContact.save(contacts, directory)
        await refresh(c.fingerprint)
        return contacts[c.fingerprint]
    }

    /// The mutual favourite with this nickname (for a peer not on the mesh).
    func contact(named name: String) async -> NostrContact? {
        let favourites = await node.favoriteFingerprints
        return contacts.values.filter { $0.nickname == name && favourites.contains($0.fingerprint) }.min { $0.fingerprint < $1.fingerprint }
    }

    func contact(for peer: PeerID) -> NostrContact? { contacts.values.first { $0.fingerprint.peerID == peer } }

    /// A private message that came off the mesh, with the contact's nickname
    /// (the core knows names only from announces).
    func named(_ event: NodeEvent) -> NodeEvent {
        guard case let .privateMessage(from, nil, text, id, hops, via?) = event, let c = contact(for: from) else { return event }
        return .privateMessage(from: from, nickname: c.nickname, text: text, messageID: id, hops: hops, via: via)
    }

    /// Tells `peer` that it is (or is no longer) a favourite, with our npub.
    func tell(_ peer: PeerID, favourite: Bool) async {
        told.insert(peer)
        _ = try? await node.sendPrivate((favourite ? "[FAVORITED]:" : "[UNFAVORITED]:") + npub, to: peer)
    }

    /// A favourite (un)made by the user: tell them, and re-check who is mutual.
    func favouriteChanged(_ peer: PeerID, fingerprint: Fingerprint, on: Bool) async {
        await tell(peer, favourite: on)
        await refresh(fingerprint)
    }

    /// Looks at every node event: favourite notices, favourites appearing.
    func handle(_ event: NodeEvent) async {
        switch event {
        case let .favorited(by, nickname, on, npub):
            // Whose notice it is: the key our Noise session with the sender authenticated
            // (over Nostr: the contact whose key signed it).
            guard let f = await node.sessionFingerprint(by) ?? contact(for: by)?.fingerprint else { return }
            if on, let npub, (try? Bech32.publicKey(npub: npub)) != nil {
                let name = DisplayText.clean(nickname ?? contacts[f]?.nickname ?? by.description).replacingOccurrences(of: "\n", with: " ")
                contacts[f] = NostrContact(fingerprint: f, npub: npub, nickname: name, variant: contacts[f]?.variant ?? .bitchat)
            } else {
                contacts[f] = nil
            }
            try? NostrContact.save(contacts, directory)
            await refresh(f)
        case let .peer(id, nickname, _):
            // A contact's name as its verified announce gives it (a notice can come first).
            if let f = await node.peers[id]?.fingerprint, var c = contacts[f] {
                let name = DisplayText.clean(nickname).replacingOccurrences(of: "\n", with: " ")
                if c.nickname != name {
                    c.nickname = name
                    contacts[f] = c
                    try? NostrContact.save(contacts, directory)
                }
            }
            guard tellsFavourites, !told.contains(id), let f = await node.peers[id]?.fingerprint,
                  await node.favoriteFingerprints.contains(f) else { return }
            await tell(id, favourite: true)
        default:
            break
        }
    }
}

extension NodeOptions {
    /// A node, with its Nostr transport when `--nostr` asks for one, and the
    /// link that keeps favourites' npubs (always: /fav tells our npub).
    func makeNodeWithNostr(tellsFavourites: Bool = true) async throws -> (MeshNode, NostrLink) {
        let store = IdentityStore(directory: DataDirectory(explicit: dataDir))
        try UserError.writableDirectory(store.directory) // said in words before any key file is tried
        let key = try NostrKeyFile.loadOrCreate(store.directory.url)
        var transport: NostrTransport?
        let node = try makeNode { options, identity in
            guard nostr.nostr else { return }
            var o = try nostr.transportOptions()
            o.openedFile = store.directory.url.appendingPathComponent("nostr-opened")
            o.geoSeed = try NostrKeyFile.geoSeed(store.directory.url)
            let t = NostrTransport(key: key, meshPeerID: identity.peerID, options: o)
            options.mailboxes.append(t)
            transport = t
        }
        let link = NostrLink(node: node, transport: transport, key: key, directory: store.directory.url, tellsFavourites: tellsFavourites)
        await link.start()
        return (node, link)
    }
}
