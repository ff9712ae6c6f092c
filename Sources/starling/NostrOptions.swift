import ArgumentParser
import Foundation
import StarlingCrypto
import StarlingMessenger
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
    @Option(help: "The SOCKS5 proxy that Nostr traffic goes through (default: the data directory's settings, else Tor's, 127.0.0.1:9050). Nothing reaches a relay without it.")
    var proxy: String?
    @Flag(name: .customLong("nostr-without-proxy-for-development"),
          help: ArgumentHelp("Connect to Nostr relays directly, showing them this machine's address (development against a local relay only).",
                             visibility: .hidden))
    var withoutProxy = false
    @Option(name: .customLong("gateway"), parsing: .singleValue,
            help: ArgumentHelp("Be a gateway for the location channel GEOHASH (repeatable): publish what mesh peers with no relay hand us, each event as its author signed it, and carry the channel's events into the mesh (capability bit 2; Nostr through --proxy, as --nostr).",
                               valueName: "GEOHASH"))
    var gateway: [String] = []
    @Option(name: .customLong("bridge"),
            help: ArgumentHelp("Be a mesh bridge on the cell GEOHASH (its first 6 characters, about 1.2 km): public messages of this mesh whose authors let them cross (--cross-bridges, or a bridge's own) go to the relays, and those of the other meshes bridged on the cell and the eight around it come in, each once (capability bit 7; Nostr through --proxy, as --nostr).",
                               valueName: "GEOHASH"))
    var bridge: String?
    @Flag(name: .customLong("cross-bridges"),
          help: "Let your public messages cross to other meshes through a bridge on this mesh: each is signed with a key for the bridge's cell that links to none of yours, and names your mesh ID and its time (as the bitchat apps' do, so that a mesh that heard it on the radio shows it once). Without it nothing you say leaves the mesh, unless you run the bridge.")
    var crossBridges = false

    /// The bridge's rendezvous cell: the first 6 characters of --bridge.
    var bridgeCell: String? { bridge.map { String($0.lowercased().prefix(MeshBridge.cellLength)) } }

    func validate() throws {
        if let bridge, !(NostrCarrier.isValidGeohash(bridge.lowercased()) && bridge.count >= MeshBridge.cellLength) {
            throw ValidationError("--bridge \(bridge): a geohash of 6 to 12 characters of 0123456789bcdefghjkmnpqrstuvwxyz (its first 6 name the cell)")
        }
        for g in gateway where !NostrCarrier.isValidGeohash(g.lowercased()) {
            throw ValidationError("--gateway \(g): a geohash of 1 to 12 characters of 0123456789bcdefghjkmnpqrstuvwxyz")
        }
        guard let proxy else { return }
        let parts = proxy.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]), (1...65_535).contains(port) else {
            throw ValidationError("--proxy \(proxy): expected HOST:PORT")
        }
    }

    /// What these options start beside the node (over the data directory's settings).
    func configure(_ c: inout MessengerSession.Configuration) {
        c.nostr = nostr
        c.proxy = proxy
        c.nostrRelays = nostrRelay
        c.nostrWithoutProxy = withoutProxy
        c.gatewayChannels = gateway
        c.bridgeCell = bridgeCell
        c.crossesBridges = crossBridges
    }
}
