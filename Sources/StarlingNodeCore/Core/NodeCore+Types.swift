import StarlingCrypto
import StarlingMesh
import StarlingNostr
import StarlingStately
import StarlingWire

/// The node's configuration, what it refuses, and what comes out of it.
extension NodeCore {
    public struct Configuration: Sendable {
        public var nickname: String
        public var announceInterval: Millis = 10_000
        /// A link with nothing heard for this long is dropped.
        public var linkTimeout: Millis = 15_000
        /// Largest frame of a link that gives none (BLE's default).
        public var maxFrame = 512
        /// How private messages and files are retried (2 s ×2 ≤ 60 s, 5 minutes;
        /// favourites' messages are then held until they return).
        public var retry = DeliveryTracker<String>.Schedule()
        /// Favourites, by fingerprint: their messages are held while they are
        /// away, and this node holds packets relayed for them (store-and-forward).
        public var favorites: Set<Fingerprint> = []
        /// Whether private files are accepted (the runtime saves them).
        public var acceptsFiles = true
        /// Whether files too large for the mesh are taken over TCP (the
        /// runtime runs the transfers): announced as `wifiBulk`.
        public var bulk = false
        public var policy: any RelayPolicy = nodeRelayPolicy()
        public var router: MeshRouter.Configuration = {
            var c = MeshRouter.Configuration()
            var sync = GossipStore.Configuration()
            // Public messages are kept 6 hours for sync, as the apps keep them
            // (within the store's 1,000 packets and 4 MiB).
            sync.messageRetention = 6 * 3_600_000
            // Broadcast fragments 15 minutes (as iOS), for a neighbour's stalled reassembly.
            sync.fragmentRetention = 900_000
            c.sync = sync
            c.stalledFragments = (stall: 5_000, again: 10_000)
            return c
        }()
        public var sessions = SessionManager.Configuration()
        /// Stately: the key states are sealed with, and the power mode (nil: from
        /// the battery readings handed in).
        public var stateKey: StateKey = .broadcast
        public var powerMode: PowerMode?
        /// How often the housekeeping runs (link health, peers' expiry, stalled
        /// handshakes): the node's idle wake-up rate.
        public var housekeepingInterval: Millis = 1_000
        /// Packets stamped further than this from our clock are refused, except
        /// sync answers (isRSR) on a link we asked within `syncAnswerWindow`
        /// (the deployed apps' rule: ±120 s, 30 s).
        public var freshness: Millis = 120_000
        public var syncAnswerWindow: Millis = 30_000
        /// Peers present at most (the stalest goes past it).
        public var maxPeers = 4_096
        /// Noise first messages answered per minute, all senders together:
        /// from peers we know (a verified announce), and from strangers.
        public var handshakesPerMinute = 120
        public var strangerHandshakesPerMinute = 30
        /// A public message longer than this (bytes of UTF-8) is relayed but not
        /// shown (the iOS app shows at most 65,535).
        public var maxShownText = 65_535
        /// Public text shown per sender: a burst of this many bytes, refilled at
        /// `shownBytesPerSecond` (the iOS app rate-limits senders in its UI too).
        /// Past it a sender's messages are relayed but not shown: a flooder
        /// cannot fill the screen, or the application's memory, with text.
        public var shownBytesBurst = 262_144
        public var shownBytesPerSecond = 65_536
        /// The off-mesh transports in the order they are tried for a peer with
        /// no mesh route (names, e.g. ["nostr", "yaok-server"]); others after them.
        public var offMeshOrder: [String] = []
        /// Whether the application knows its trust decisions (blocks) yet: while
        /// false, private messages and files wait unacknowledged
        /// (``trustDecided(now:)``), so that a block loaded later still holds.
        public var trustKnown = true
        /// Whether a private message's delivery receipt waits for the
        /// application to say it is stored (``stored(_:now:)``): a receipt then
        /// means the message survives a crash. Off, it goes on arrival.
        public var receiptsAfterStored = false
        /// Messages shown and not yet said stored: at most this many (the oldest
        /// is let go unacknowledged) for at most `storeTimeout` (then a retried
        /// copy is acknowledged as on arrival).
        public var maxAwaitingStore = 1_024
        public var storeTimeout: Millis = 60_000
        /// The mesh board kept (docs/PROTOCOL.md, "Board (0x23)") and its bounds;
        /// nil: board posts are relayed unread, as any unknown type.
        public var board: BoardStore.Configuration? = BoardStore.Configuration()
        /// The board's own sync round (REQUEST_SYNC naming type bit 8 only), as iOS asks.
        public var boardSyncInterval: Millis = 60_000
        /// Private groups (docs/PROTOCOL.md, "Groups"): their bounds, and the
        /// sync round of their messages (type bit 10); nil: none kept, their
        /// messages relayed unread, and the announce does not say groups.
        public var groups: GroupTable.Configuration? = GroupTable.Configuration()
        public var groupSyncInterval: Millis = 30_000
        /// How often a node holding `fromBridge` carriers asks its links for those it lacks.
        public var carrierSyncInterval: Millis = 15_000
        /// Publish our own prekey bundle (0x24, hourly) and open courier drops
        /// sealed to its prekeys; announces capability bit 0. The runtime keeps
        /// the prekeys (``Output/savePrekeys(_:)``, ``adoptPrekeys(_:)``).
        public var publishesPrekeys = false
        /// Act as a gateway for location channels (docs/PROTOCOL.md, "Nostr
        /// carriers (0x28)"): take deposits from mesh peers for the relays
        /// (``Output/publishNostr(_:)``), and carry the channels' events into
        /// the mesh (``gatewayDownlink(_:geohash:now:)``); announces capability bit 2.
        public var gateway = false
        public var gatewayLimits = GatewayCore.Limits()
        /// Be a mesh bridge on this rendezvous cell (6 characters; docs/PROTOCOL.md,
        /// "Mesh bridges"): our public messages, and those mesh peers hand us
        /// (`toBridge`), go to the relays (``Output/publishNostr(_:)``); what the
        /// relays bring from the other meshes on the cell and its ring is shown and
        /// carried into the mesh (``bridgeFromRelay(_:now:)``). Announces
        /// capability bit 7 and the cell (TLV 0x06). Needs ``bridgeSeed``.
        public var bridge: String? = nil
        /// Our public messages also cross to other meshes through a bridge peer
        /// (the nearest whose announce says bridge), each signed by us with our
        /// key for its cell. Off by default: nothing leaves the mesh unless its
        /// author asks. Needs ``bridgeSeed``.
        public var crossesBridges = false
        /// The seed our bridge keys come from (``MeshBridge/identity(seed:cell:)``).
        public var bridgeSeed: [UInt8]? = nil
        public var bridgeLimits = BridgeCore.Limits()
        /// A courier mailbox is reachable (a Ya OK server over the LAN,
        /// docs/PROTOCOL.md "The courier mailbox"): each drop we seal or take
        /// to carry goes there too (``Output/postToMailbox(_:)``), and the drops
        /// for our tags and our direct peers' are fetched from it
        /// (``Output/followDrops(_:)``, ``dropFromMailbox(_:now:)``).
        public var courierMailbox = false
        public init(nickname: String) { self.nickname = nickname }
    }

    /// What the node refused before the router saw it, by reason
    /// (docs/MESH.md, "Bounds"): none of these is shown, relayed or answered.
    public struct Refusals: Hashable, Sendable, Codable {
        /// Larger than the link's frame (or 512 bytes): refused unparsed.
        public var oversized = 0
        /// Claiming our own sender ID, and not a copy of a packet of ours.
        public var ownID = 0
        /// Stamped more than `freshness` from our clock, not an answer to our sync request.
        public var stale = 0
        /// A public message, leave or broadcast file from a peer we know,
        /// unsigned or with a signature that is not its key's.
        public var forged = 0
        /// A public message, leave or broadcast file from a sender with no
        /// verified announce: nothing to check its signature against.
        public var unverifiable = 0
        /// A Noise first message past the handshake budget.
        public var handshakeBudget = 0
        /// A public message we showed already (a replay after the duplicate window).
        public var replayed = 0
        /// A public message too long to show.
        public var tooLong = 0
        /// A public message past its sender's budget of text shown.
        public var flooding = 0
        /// An announce whose signing key is not the one pinned to its Noise key.
        public var pinMismatch = 0
        /// A ping past the budget of its link (5 in 10 s).
        public var pings = 0
        /// A verified announce older than the last one taken from its peer (a
        /// replay, or one overtaken on the way): it changed nothing.
        public var outdatedAnnounce = 0
        /// A board post or tombstone that does not decode, is not signed by
        /// the key it carries, or that the board refuses (expired, too far
        /// ahead, deleted): not kept, not relayed.
        public var board = 0
        /// A prekey bundle that does not decode, is not its sender's own, or
        /// whose signatures do not hold under the sender's announced key.
        public var prekeys = 0
        /// A live voice burst packet (public or private) that does not decode:
        /// not kept (a signed public one is still relayed, as iOS does).
        public var voice = 0
        /// A group message that does not decode, or of a group we are in that
        /// does not open or is signed by no member; a group state not from the
        /// group's creator, not signed by them, or older than the one held.
        public var groups = 0
        /// An announce v2 (0x2C) that does not decode, or past the 10 a second examined.
        public var announceV2 = 0
        /// A vouch whose signature does not hold under its voucher's key.
        public var vouches = 0
        /// A courier drop refused: malformed, expired, not from the neighbour
        /// that sent it, unsigned by its depositor, past the store's quotas, or
        /// addressed to us and not opening.
        public var courier = 0
        /// A Nostr carrier (0x28) refused: malformed; a deposit unsigned by its
        /// depositor's announced key, for a node that is no gateway, or that
        /// the gateway's rules refuse (``GatewayCore/Refusal``).
        public var carriers = 0
        public init() {}
        public var total: Int {
            oversized + ownID + stale + forged + unverifiable + handshakeBudget + replayed + tooLong + pinMismatch + pings + flooding
                + outdatedAnnounce + board + prekeys + voice + groups + announceV2 + vouches + courier + carriers
        }
    }

    public enum Output: Sendable {
        /// Send these bytes on these links, on this channel.
        case send([UInt8], channel: FrameChannel, links: [LinkID])
        case event(NodeEvent)
        /// The core gave up on this link (no announce, or silent): the transport
        /// should let it go. The core has forgotten it already.
        case closeLink(LinkID)
        /// A file for us arrived: save it (under a name of the runtime's choice
        /// if this one is taken), then report ``NodeEvent/fileReceived``.
        case saveFile(IncomingFile)
        /// A live voice burst came whole (or as whole as it will): save it as
        /// an audio file (``VoiceAssembler/Note/adts``), then report ``NodeEvent/voiceNote``.
        case saveVoice(VoiceAssembler.Note)
        /// Our own prekeys changed (made, used, dropped): keep them, before a
        /// bundle naming them goes out (they are private keys: 0600).
        case savePrekeys(LocalPrekeys)
        /// Send this payload to `peer` through the off-mesh transport named
        /// `via` (the peer has no mesh route); `ticket` names it when the
        /// transport answers (``offMeshAccepted(_:now:)``, ``offMeshFailed(_:reason:now:)``).
        case sendOffMesh(NoisePayload, to: PeerID, via: String, ticket: String)
        /// A private message's delivery receipt went (the first time, or again
        /// for a retried copy): an off-mesh transport that holds it for its server
        /// may let the server drop it now.
        case acknowledged(messageID: String)
        /// A peer offers a file over TCP (docs/PROTOCOL.md, "Bulk transfer"):
        /// the runtime accepts (connects) or declines (``sendBulkAnswer(_:to:now:)``).
        /// Once a transfer; its receipt (`bulk-` and the transfer ID in hex) went.
        case bulkOffered(BulkOffer, from: PeerID)
        /// A peer's answer to our offer.
        case bulkAnswered(BulkAnswer, from: PeerID)
        /// A deposit our gateway or bridge took (or our bridge's own event, or a
        /// courier drop it posts): publish the event, as it came, to the relays.
        case publishNostr(GatewayCore.Upload)
        /// Our bridge reads courier drops (kind 1401) for these recipient tags
        /// (hex, sorted): ours and our direct peers'; the courier mailbox
        /// (``Configuration/courierMailbox``) fetches them. Sent when the set changes.
        case followDrops([String])
        /// A drop for the courier mailbox to keep (``Configuration/courierMailbox``): once a seal.
        case postToMailbox(CourierEnvelope)
    }

    /// A private file that arrived, with a name safe to save under.
    public struct IncomingFile: Hashable, Sendable {
        public var from: PeerID
        /// A plain base name (never a path), cleaned of control characters.
        public var name: String
        public var mimeType: String?
        public var content: [UInt8]
        public var transferID: String
    }

    /// A file whose packet would need more fragments than receivers accept.
    public struct FileTooLarge: Error, Hashable, Sendable, CustomStringConvertible {
        public var bytes: Int
        /// The largest file (of this name) the links carry now.
        public var limit: Int
        public var description: String { "file too large: \(bytes) bytes; at most \(limit) over these links" }
    }

    /// What verified announces told about each peer.
    public struct PeerInfo: Hashable, Sendable {
        public var nickname: String
        public var fingerprint: Fingerprint
        public var hops: Int
        public var lastSeen: UInt64
        /// What its announce says it can do (nil: it says nothing).
        public var capabilities: Capabilities? = nil
        /// The Noise static key its verified announce carries (its fingerprint's
        /// preimage): what a courier drop for it is sealed to once it is away.
        public var noiseKey: [UInt8]? = nil
        /// The rendezvous cell it bridges (its announce's TLV 0x06, with bit 7), if any.
        public var bridgeGeohash: String? = nil
    }

    struct PeerCard: Sendable {
        var nickname: String
        var fingerprint: Fingerprint
        /// The Ed25519 key its verified announce carries: its public messages must be signed by it.
        var signingKey: [UInt8]
        var capabilities: Capabilities?
        /// The timestamp of the announce this card was taken from.
        var announcedAt: UInt64 = 0
        /// Its bridge's cell (only with capability bit 7).
        var bridgeGeohash: String? = nil
    }
}
