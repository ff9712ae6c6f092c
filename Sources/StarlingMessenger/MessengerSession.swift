import Foundation
import StarlingCrypto
import StarlingMessengerCore
import StarlingNode
import StarlingNodeCore
import StarlingNostr
import StarlingNostrTransport
import StarlingTransport
import StarlingWire
import StarlingYaOKClient
import StarlingStore

/// What a data directory starts: the node (its trust unknown until the store
/// opens), its off-mesh transports (Nostr, the Ya OK server), a courier mailbox, the
/// encrypted store, and the messenger over them, with the directory's settings
/// (`settings.json`) under what the caller sets. The composition root: the
/// daemon, every command that runs a node and an app that embeds Starling
/// start the same node this way (docs/MESSENGER.md, "Starting a messenger").
public struct MessengerSession: Sendable {
    public let node: MeshNode
    public let messenger: Messenger
    public let nostr: NostrTransport?
    public let server: YaOKServerTransport?
    public let identityStore: IdentityStore
    /// The settings the node runs with: the data directory's, with the configuration's over them.
    public let settings: NodeSettings
    /// Which of them the configuration set (a saved change to those has no effect until it no longer does).
    public let setByConfiguration: Set<String>

    public var directory: URL { identityStore.directory.url }
    /// The messenger and node as a face uses them (the daemon's API serves the same).
    public var client: LocalMessengerClient { LocalMessengerClient(messenger: messenger, identityStore: identityStore) }

    /// Runs the node and the messenger over it until the node stops (``MeshNode/stop()``):
    /// what a daemon runs, and an app that embeds Starling.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await messenger.run() }
            group.addTask { await node.run() }
        }
    }

    /// A session that could not start, in words that say what to do.
    public struct StartError: Error, CustomStringConvertible, Sendable {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// What to start beside the node. Left as it is, the data directory's settings decide.
    public struct Configuration: Sendable {
        /// Start the off-mesh transports the settings name (Nostr, the Ya OK server); false: none, whatever
        /// the settings say (a one-shot command that only changes the store).
        public var offMeshTransports = true
        /// The Ya OK server (HOST:PORT, a host name or a list the client moves along), over the saved one.
        public var server: String?
        /// Nostr on, whatever the saved setting says.
        public var nostr = false
        /// The SOCKS5 proxy for Nostr (HOST:PORT), over the saved one.
        public var proxy: String?
        /// Nostr relays (empty: the transport's defaults).
        public var nostrRelays: [String] = []
        /// Nostr without a proxy: for development against relays on this machine only.
        public var nostrWithoutProxy = false
        /// Location channels this node bridges to the mesh as a gateway (geohashes).
        public var gatewayChannels: [String] = []
        /// The rendezvous cell this node bridges its mesh through (a geohash).
        public var bridgeCell: String?
        /// Messages from other meshes' bridges are taken in.
        public var crossesBridges = false
        /// A courier mailbox (HOST:PORT) that keeps courier drops for peers who are away.
        public var courierMailbox: String?
        /// The Ya OK client polls as a phone in the background does.
        public var background = false
        /// A person answers offers of large files (the chat, the daemon); else they are taken up to the bound.
        public var asks = false
        /// Favourites are told our npub (off for one-shot commands).
        public var tellsFavourites = true
        /// Where the session's notices go (a courier mailbox that stops answering): a log, standard error.
        public var notice: @Sendable (String) -> Void = { _ in }
        public init() {}
    }

    /// How the store opens: with its key file when it has no PIN, else left
    /// locked (nil) for a face to open. A terminal asks for the PIN instead.
    public typealias StoreOpener = @Sendable (_ directory: URL, _ identity: Identity) throws -> MessengerStore?

    /// Opens a store that has no PIN or passphrase; one that has stays locked until a face opens it.
    public static let keyFileOrLocked: StoreOpener = { directory, identity in
        guard MessengerStore.protection(in: directory).map({ $0 == .keyFile }) ?? true else { return nil }
        return try MessengerStore.open(directory: directory, protection: .keyFile(identity))
    }

    /// Starts the node and its off-mesh transports on `identityStore`'s directory, with
    /// `options` (its links and transports, chosen by the caller) and
    /// `configuration`; opens the store with `openStore` so the messenger has
    /// the trust decisions before the node runs (the node is not yet running:
    /// ``run()`` is the caller's).
    public static func start(identityStore ids: IdentityStore, identity: Identity, options: MeshNode.Options,
                             configuration c: Configuration = Configuration(),
                             openStore: StoreOpener = keyFileOrLocked) async throws -> MessengerSession {
        let directory = ids.directory.url
        let key = try NostrKeyFile.loadOrCreate(directory)
        var settings: NodeSettings
        do { settings = try NodeSettings.load(from: directory) ?? NodeSettings() } catch {
            throw StartError("\(error)")
        }
        var setHere: Set<String> = []
        if let server = c.server { settings.server = server; setHere.insert("server") }
        if c.nostr || !c.gatewayChannels.isEmpty || c.bridgeCell != nil { settings.nostr = true; setHere.insert("nostr") }
        if let proxy = c.proxy { settings.proxy = proxy; setHere.insert("proxy") }
        let geoSeed = try NostrKeyFile.geoSeed(directory)
        let gatewayChannels = c.gatewayChannels.map { $0.lowercased() }

        var options = options
        options.core.trustKnown = false
        // A receipt means the message is in the store: it survives a crash.
        options.core.receiptsAfterStored = true
        options.bulk?.ask = c.asks
        options.core.crossesBridges = c.crossesBridges
        options.core.bridgeSeed = geoSeed
        var nostr: NostrTransport?
        if settings.nostr, c.offMeshTransports {
            let t = NostrTransport(key: key, meshPeerID: identity.peerID, options: try nostrOptions(c, proxy: settings.proxy, directory: directory, geoSeed: geoSeed))
            options.offMeshTransports.append(t)
            nostr = t
            if !gatewayChannels.isEmpty { options.core.gateway = true }
            options.core.bridge = c.bridgeCell
            if !gatewayChannels.isEmpty || c.bridgeCell != nil {
                // One task publishes, in the order the gateway took them (the queue's oldest first).
                let (uploads, publishing) = AsyncStream.makeStream(of: GatewayCore.Upload.self, bufferingPolicy: .bufferingNewest(1_000))
                Task { for await u in uploads { await t.publishSigned(u.event) } }
                options.nostrPublisher = { upload in publishing.yield(upload) }
                // The drops the bridge follows change with the peers here: the newest set wins.
                let (follows, following) = AsyncStream.makeStream(of: [String].self, bufferingPolicy: .bufferingNewest(1))
                Task { for await tags in follows { await t.followDrops(tags: tags) } }
                options.dropFollower = { tags in following.yield(tags) }
            }
        }
        var courierMailbox: CourierMailboxClient?
        if let mailbox = c.courierMailbox {
            let address: UDPAddress
            do { address = try UDPAddress.resolving(mailbox) } catch { throw StartError("the courier mailbox \(error)") }
            let client = try CourierMailboxClient(server: address, name: UDPAddress(mailbox) == nil ? mailbox : nil)
            options.core.courierMailbox = true
            options.mailboxPoster = { e in Task { await client.post(e) } }
            let nostrFollower = options.dropFollower
            options.dropFollower = { tags in
                nostrFollower?(tags)
                Task { await client.follow(hexTags: tags) }
            }
            courierMailbox = client
        }
        var server: YaOKServerTransport?
        if let text = settings.server, c.offMeshTransports {
            // One address or several (a list, a name with several records): the next is used when
            // the one in use is lost; names are looked up again when the server stops answering.
            let entries = UDPAddress.hostList(text) ?? [text]
            var addresses: [UDPAddress] = [], unresolved: [UDPAddress.ResolutionError] = []
            for entry in entries {
                do { for a in try UDPAddress.resolvingAll(entry) where !addresses.contains(a) { addresses.append(a) } } catch { unresolved.append(error) }
            }
            guard let address = addresses.first else { throw StartError("the Ya OK server \(unresolved.map(\.description).joined(separator: "; "))") }
            for e in unresolved { c.notice("the Ya OK server \(e): the other addresses are used") }
            let client = try YaOKClient(servers: entries, addresses: addresses, userID: try ids.userID(), signingKey: identity.signingKey,
                                        configuration: c.background ? .background : .init())
            let shown = entries.count == 1 && addresses.count == 1
                ? (UDPAddress(text) != nil ? address.description : "\(text) (\(address))")
                : "\(entries.joined(separator: ", ")) (\(addresses.count) addresses)"
            let s = YaOKServerTransport(client: client, identity: identity, userID: try ids.userID(), shownAs: shown)
            options.offMeshTransports.append(s)
            server = s
        }
        let node = try MeshNode(identity: identity, options: options)
        if let client = courierMailbox {
            await client.start()
            Task { for await e in client.drops { await node.dropFromMailbox(e) } }
            // Said once when the courier mailbox does not answer (a person would otherwise think drops go there), and once when it does again.
            let notice = c.notice
            Task {
                for await answers in client.answering {
                    let at = await client.address
                    notice(answers ? "the courier mailbox at \(at) answers now"
                        : "the courier mailbox at \(at) does not answer; drops still go to couriers, and to it once it answers")
                }
            }
        }
        let store = try openStore(directory, identity)
        var core = MessengerCore.Configuration()
        core.npub = Bech32.npub(key.publicKey)
        core.tellsFavourites = c.tellsFavourites
        let messenger = Messenger(node: node, directory: directory, nostr: nostr, server: server, configuration: core,
                                  gatewayChannels: gatewayChannels, bridgeCell: nostr == nil ? nil : c.bridgeCell, geoSeed: geoSeed)
        if let store { try await messenger.open(store) }
        return MessengerSession(node: node, messenger: messenger, nostr: nostr, server: server, identityStore: ids,
                                settings: settings, setByConfiguration: setHere)
    }

    static func nostrOptions(_ c: Configuration, proxy: String, directory: URL, geoSeed: [UInt8]) throws -> NostrTransport.Options {
        var o = NostrTransport.Options()
        if !c.nostrRelays.isEmpty { o.relays = c.nostrRelays }
        if c.nostrWithoutProxy {
            o.proxy = .directForDevelopment
        } else {
            let parts = proxy.split(separator: ":")
            guard parts.count == 2, let port = Int(parts[1]), (1...65_535).contains(port) else {
                throw StartError("the proxy \(proxy): expected HOST:PORT, for example \(NodeSettings.defaultProxy) (Tor's)")
            }
            o.proxy = .socks5(host: String(parts[0]), port: port)
        }
        o.openedFile = directory.appendingPathComponent("nostr-opened")
        o.geoSeed = geoSeed
        return o
    }
}

/// Our Nostr key (`nostr.key` in the data directory, 64 hex digits, 0600),
/// made on first use: its npub goes to the peers we make favourites.
public enum NostrKeyFile {
    public static func loadOrCreate(_ directory: URL) throws -> Secp256k1.PrivateKey {
        let bytes = try secret(directory.appendingPathComponent("nostr.key"), fresh: Secp256k1.PrivateKey.random().bytes)
        guard let key = try? Secp256k1.PrivateKey(bytes: bytes) else { throw MessengerSession.StartError("nostr.key in \(directory.path) is not a Nostr key: move it away to make a new one (contacts who have your npub then need the new one)") }
        return key
    }

    /// The seed of our location-channel identities (`nostr-geo-seed`, 0600).
    public static func geoSeed(_ directory: URL) throws -> [UInt8] {
        try secret(directory.appendingPathComponent("nostr-geo-seed"), fresh: (0..<32).map { _ in UInt8.random(in: 0...255) })
    }

    /// 32 bytes as hex in an owner-only file, written with `fresh` the first time.
    public static func secret(_ file: URL, fresh: [UInt8]) throws -> [UInt8] {
        if let text = try? String(contentsOf: file, encoding: .utf8) {
            let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
            let mode = (attributes[.posixPermissions] as? Int) ?? 0
            guard mode & 0o077 == 0 else { throw IdentityStore.Error.insecurePermissions(path: file.path, mode: mode) }
            guard let bytes = try? [UInt8](hex: text.trimmingCharacters(in: .whitespacesAndNewlines)), bytes.count == 32 else {
                throw MessengerSession.StartError("\(file.path) does not hold 64 hex digits: move it away to make a new one")
            }
            return bytes
        }
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: file.path, contents: Data((fresh.hexString + "\n").utf8),
                                             attributes: [.posixPermissions: 0o600]) else {
            throw MessengerSession.StartError("\(file.path) could not be written: check the data directory's permissions and free space")
        }
        return fresh
    }
}
