import ArgumentParser
import Foundation
import StarlingCrypto
import StarlingMessenger
import StarlingMessengerCore
import StarlingNode
import StarlingNostr
import StarlingNostrTransport
import StarlingYaOKClient
import StarlingTransport
import StarlingWire
import StarlingYaOKStore

/// What a command that runs a node holds: the node (trust unknown until the
/// store opens), its mailboxes (Nostr with --nostr, the Ya OK server with
/// --server), the encrypted store, and the messenger over them. Every face
/// (chat, listen, send, relay) starts here: one set of rules.
struct NodeSession {
    let node: MeshNode
    let messenger: Messenger
    let nostr: NostrTransport?
    let server: YaOKServerMailbox?
    let identityStore: IdentityStore
    /// The settings the node runs with: the data directory's, with the command line's over them.
    let settings: NodeSettings
    /// Which of them the command line set (a saved change to those has no effect).
    let setOnCommandLine: Set<String>

    var directory: URL { identityStore.directory.url }
    /// The messenger and node as a face uses them (the daemon's API serves the same).
    var client: LocalMessengerClient { LocalMessengerClient(messenger: messenger, identityStore: identityStore) }

    /// Makes the node and opens the store (asking for its PIN on a terminal);
    /// the messenger has the store's trust decisions before the node runs.
    /// `asks`: a person is there to answer offers of large files (chat, the daemon).
    static func start(_ o: NodeOptions, server address: String? = nil, background: Bool = false,
                      tellsFavourites: Bool = true, asks: Bool = false, storeMayWait: Bool = false) async throws -> NodeSession {
        let ids = IdentityStore(directory: DataDirectory(explicit: o.dataDir))
        try UserError.writableDirectory(ids.directory) // said in words before any key file is tried
        let key = try NostrKeyFile.loadOrCreate(ids.directory.url)
        var settings: NodeSettings
        do { settings = try NodeSettings.load(from: ids.directory.url) ?? NodeSettings() } catch {
            throw RuntimeFailure("\(error)")
        }
        var setOnCommandLine: Set<String> = []
        if let address { settings.server = address; setOnCommandLine.insert("server") }
        if o.nostr.nostr || !o.nostr.gateway.isEmpty || o.nostr.bridge != nil { settings.nostr = true; setOnCommandLine.insert("nostr") }
        let bridgeCell = o.nostr.bridgeCell
        let geoSeed = try NostrKeyFile.geoSeed(ids.directory.url)
        let gatewayChannels = o.nostr.gateway.map { $0.lowercased() }
        if let proxy = o.nostr.proxy { settings.proxy = proxy; setOnCommandLine.insert("proxy") }
        let chosen = settings
        var nostr: NostrTransport?
        var server: YaOKServerMailbox?
        var courierMailbox: CourierMailboxClient?
        let node = try o.makeNode { options, identity in
            options.core.trustKnown = false
            // A receipt means the message is in the store: it survives a crash.
            options.core.receiptsAfterStored = true
            options.bulk?.ask = asks
            options.core.crossesBridges = o.nostr.crossBridges
            options.core.bridgeSeed = geoSeed
            if chosen.nostr {
                var n = try o.nostr.transportOptions(proxy: chosen.proxy)
                n.openedFile = ids.directory.url.appendingPathComponent("nostr-opened")
                n.geoSeed = geoSeed
                let t = NostrTransport(key: key, meshPeerID: identity.peerID, options: n)
                options.mailboxes.append(t)
                nostr = t
                if !gatewayChannels.isEmpty { options.core.gateway = true }
                options.core.bridge = bridgeCell
                if !gatewayChannels.isEmpty || bridgeCell != nil {
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
            if let mailbox = o.courierMailbox {
                let address: UDPAddress
                do { address = try UDPAddress.resolving(mailbox) } catch { throw RuntimeFailure("--courier-mailbox \(error)") }
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
            if let text = chosen.server {
                let address: UDPAddress
                do { address = try UDPAddress.resolving(text) } catch { throw RuntimeFailure("the Ya OK server \(error)") }
                // A host name is looked up again when the server stops answering (it may have moved).
                let client = try YaOKClient(server: address, userID: try ids.userID(), signingKey: identity.signingKey,
                                             configuration: background ? .background : .init(), name: UDPAddress(text) == nil ? text : nil)
                let s = YaOKServerMailbox(client: client, identity: identity, userID: try ids.userID(),
                                          shownAs: UDPAddress(text) != nil ? address.description : "\(text) (\(address))")
                options.mailboxes.append(s)
                server = s
            }
        }
        if let client = courierMailbox {
            await client.start()
            Task { for await e in client.drops { await node.dropFromMailbox(e) } }
            // Said once when the mailbox does not answer (a person would otherwise think drops go there), and once when it does again.
            Task {
                for await answers in client.answering {
                    let at = await client.address
                    StandardError.write(Data((answers ? "starling: the courier mailbox at \(at) answers now\n"
                        : "starling: the courier mailbox at \(at) does not answer; drops still go to couriers, and to it once it answers\n").utf8))
                }
            }
        }
        // A daemon with a PIN or passphrase and no one to type it (no terminal, no STARLING_PIN)
        // starts with the store locked: a face opens it (the page asks, the chat's /unlock).
        // (Found in a person's pass: a PIN set through the daemon kept it from starting again.)
        let waits = storeMayWait && YaOKStore.protection(in: ids.directory.url).map { $0 != .keyFile } == true
            && (ProcessInfo.processInfo.environment["STARLING_PIN"] ?? "").isEmpty && isatty(STDIN_FILENO) != 1
        let store = waits ? nil : try StoreAccess.open(directory: ids.directory.url, identity: node.identity)
        if waits { StandardError.write(Data("starling: the store has a PIN or passphrase: it stays locked until a face opens it (the page asks; /unlock in a chat)\n".utf8)) }
        var c = MessengerCore.Configuration()
        c.npub = Bech32.npub(key.publicKey)
        c.tellsFavourites = tellsFavourites
        let messenger = Messenger(node: node, directory: ids.directory.url, nostr: nostr, server: server, configuration: c,
                                  gatewayChannels: gatewayChannels, bridgeCell: nostr == nil ? nil : bridgeCell, geoSeed: geoSeed)
        if let store { try await messenger.open(store) }
        return NodeSession(node: node, messenger: messenger, nostr: nostr, server: server, identityStore: ids,
                           settings: settings, setOnCommandLine: setOnCommandLine)
    }
}
