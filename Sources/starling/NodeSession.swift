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
import StarlingStore

/// What a command that runs a node holds: the library's composition root
/// (``MessengerSession``: the node, its off-mesh transports, the store and the messenger)
/// started from the command line's flags, the store opened as a terminal does
/// (asking for its PIN, or STARLING_PIN). Every face (chat, listen, send, the
/// daemon) starts here: one set of rules, the same an app embeds.
struct NodeSession {
    let session: MessengerSession

    var node: MeshNode { session.node }
    var messenger: Messenger { session.messenger }
    var nostr: NostrTransport? { session.nostr }
    var server: YaOKServerTransport? { session.server }
    var identityStore: IdentityStore { session.identityStore }
    var settings: NodeSettings { session.settings }
    /// Which settings the command line set (a saved change to those has no effect).
    var setOnCommandLine: Set<String> { session.setByConfiguration }
    var directory: URL { session.directory }
    var client: LocalMessengerClient { session.client }

    /// Makes the node and opens the store (asking for its PIN on a terminal);
    /// the messenger has the store's trust decisions before the node runs.
    /// `asks`: a person is there to answer offers of large files (chat, the daemon).
    /// `storeMayWait`: with a PIN and no one to type it, the store stays locked for a face to open.
    static func start(_ o: NodeOptions, server address: String? = nil, background: Bool = false,
                      tellsFavourites: Bool = true, asks: Bool = false, storeMayWait: Bool = false) async throws -> NodeSession {
        let (ids, identity, options) = try o.nodeParts()
        var c = MessengerSession.Configuration()
        o.nostr.configure(&c)
        c.server = address
        c.courierMailbox = o.courierMailbox
        c.background = background
        c.asks = asks
        c.tellsFavourites = tellsFavourites
        c.notice = { StandardError.write(Data("starling: \($0)\n".utf8)) }
        do {
            let session = try await MessengerSession.start(identityStore: ids, identity: identity, options: options, configuration: c) { directory, identity in
                // A daemon with a PIN or passphrase and no one to type it (no terminal, no STARLING_PIN)
                // starts with the store locked: a face opens it (the page asks, the chat's /unlock).
                // (Found in a person's pass: a PIN set through the daemon kept it from starting again.)
                let waits = storeMayWait && MessengerStore.protection(in: directory).map { $0 != .keyFile } == true
                    && (ProcessInfo.processInfo.environment["STARLING_PIN"] ?? "").isEmpty && isatty(STDIN_FILENO) != 1
                if waits {
                    StandardError.write(Data("starling: the store has a PIN or passphrase: it stays locked until a face opens it (the page asks; /unlock in a chat)\n".utf8))
                    return nil
                }
                return try StoreAccess.open(directory: directory, identity: identity)
            }
            return NodeSession(session: session)
        } catch let e as MessengerSession.StartError {
            throw RuntimeFailure(e.description)
        }
    }
}
