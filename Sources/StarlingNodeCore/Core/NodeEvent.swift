import StarlingCrypto
import StarlingMesh
import StarlingStately
import StarlingWire

/// What a node tells its application. The node core produces most of these;
/// the runtime adds the ones that only it can know (``started``, links with
/// their addresses, where a file was saved).
///
/// Faces see them as the API's events (StarlingAPIContract's `APIEvent`,
/// docs/API.md): `starling listen --json` prints those.
public enum NodeEvent: Sendable {
    case started(port: UInt16?, peerID: PeerID, nickname: String)
    case linkUp(String)
    case linkDown(String)
    /// A verified announce from a peer not seen before (or renamed).
    case peer(PeerID, nickname: String, hops: Int)
    /// What a peer's verified announce says it can do (TLV 0x05), when first
    /// heard or changed; nil: its announce carries no capabilities.
    case capabilities(PeerID, Capabilities?)
    /// A public message, signed by the key the sender's verified announce
    /// carries (docs/PROTOCOL.md, "Public messages"). `history`: replayed by a
    /// neighbour's gossip sync (sent before we heard it live; `hops` is then 1,
    /// the neighbour, as the path it first took is not known). `from` may be
    /// our own peer ID for history: one of ours, signed with our key.
    case message(from: PeerID, nickname: String?, text: String, hops: Int, timestamp: UInt64, history: Bool = false)
    /// A private message, decrypted; a delivered receipt went back already.
    /// `via`: the off-mesh transport it came through ("nostr"); nil: the mesh.
    case privateMessage(from: PeerID, nickname: String?, text: String, messageID: String, hops: Int, via: String? = nil)
    case sessionEstablished(PeerID, fingerprint: String)
    /// A courier drop for us (0x04), opened with our key: a private message
    /// sealed one-way (Noise X) by the holder of `noiseKey` (its fingerprint
    /// `fingerprint`, which the seal proves), wherever that sender is now.
    /// The messenger says it as its `privateMessage` (`"via": "courier"`,
    /// the sender's fingerprint).
    case dropOpened(from: PeerID, fingerprint: String, noiseKey: [UInt8], nickname: String?, text: String, messageID: String, hops: Int)
    /// Our private message for someone away, sealed as a courier drop and
    /// handed to `couriers` neighbours (0: none here to carry it), who hand
    /// it on when they meet the recipient.
    case dropDeposited(messageID: String, to: PeerID, couriers: Int)
    /// Our private message reached its recipient.
    case delivered(messageID: String, by: PeerID)
    /// Our private message went off the mesh (the peer had no mesh route):
    /// the off-mesh transport `via` ("nostr") has it; its receipts follow.
    case sentOffMesh(messageID: String, to: PeerID, via: String)
    /// Our private message was not acknowledged within its retry budget.
    case failed(messageID: String, to: PeerID)
    /// Our message to a favourite was not acknowledged within the retry
    /// budget: it is held, and sent again when the favourite returns.
    case held(messageID: String, for: PeerID)
    /// A file for us is arriving, `received` of `total` fragments (bytes, for
    /// a file over the network: docs/BULK.md).
    case fileProgress(from: PeerID, received: Int, total: Int)
    /// Our file went out to the links (after the session it needed), in
    /// `fragments` pieces; its delivered receipt names `transferID`. 0
    /// fragments: offered over the network, and the peer has the offer.
    case fileSent(transferID: String, to: PeerID, fragments: Int)
    /// Our file over the network: `sent` of `total` bytes are on the peer's disk.
    case fileSending(transferID: String, to: PeerID, sent: Int, total: Int)
    /// A peer offers a file over the network larger than this node takes
    /// without asking: a face asks its person, then accepts or declines it
    /// (``MeshNode/answerFileOffer(_:accept:)``) before it is withdrawn.
    case fileOffered(from: PeerID, transferID: String, name: String, size: Int, mimeType: String?)
    /// A new post on the mesh board (0x23), signed by the key it carries
    /// (`post.authorKey`), with who wrote it as far as the node can tell
    /// (``BoardEntry/author``); `from`: the packet's sender, not proven to be its author.
    case boardPost(BoardEntry, from: PeerID, hops: Int)
    /// A post was deleted by its author (a signed tombstone).
    case boardPostDeleted(postID: [UInt8], authorKey: [UInt8])
    /// A live voice burst came (public, or privately to us), saved as an
    /// audio file (AAC in ADTS) at `path`, `size` bytes; `id` names it (the
    /// burst's ID, hex, and the sender: a face fetches the file by it).
    case voiceNote(from: PeerID, path: String, durationMillis: Int, isPrivate: Bool, id: String, size: Int)
    /// A message in a group we belong to, opened with the group's key and
    /// signed by a member of its roster (docs/PROTOCOL.md, "Groups").
    case groupMessage(GroupMessage)
    /// A group we belong to changed: made by us, joined (`by` its creator's
    /// name), a new epoch or roster, or we were removed or left. The state's
    /// key never leaves the node core in an event.
    case groupChanged(GroupSummary, change: GroupChange, by: String?)
    /// An announce v2 (0x2C) whose recognition tag is the one this peer (by
    /// its Noise key's fingerprint) would make for us: it made it for this
    /// rotating ID within the hour; not proof that it is here now.
    case recognized(PeerID, fingerprint: String, nickname: String?, epoch: UInt32)
    /// A peer we verified vouches (Noise 0x12, signed) that it verified this
    /// fingerprint: one hop from our own verifications, not a verification.
    case vouched(String, by: String, voucherName: String?)
    /// A location channel's message a gateway carried into the mesh (0x28
    /// fromGateway), signed by its author's Nostr key. JSON: `"event":
    /// "gatewayMessage"` with `geohash`, `eventID`, `pubkey`, `nickname`
    /// (the `n` tag's claim), `text`, `createdAt`, `hops`.
    case gatewayMessage(GatewayMessage)
    /// A public message from another mesh that the bridges on a cell carried
    /// (0x28 fromBridge, or our own bridge's relays), signed by its author's
    /// Nostr key; not shown when its radio copy was heard here. JSON:
    /// `"event": "bridgedMessage"` with `cell`, `eventID`, `pubkey`,
    /// `nickname` (the `n` tag's claim), `text`, `createdAt`, `radioID`, `hops`.
    case bridgedMessage(BridgedMessage)
    /// A file arrived, was saved at `path`, and a delivered receipt went back.
    case fileReceived(from: PeerID, name: String, size: Int, path: String, transferID: String)
    /// Our private message was displayed to its recipient.
    case read(messageID: String, by: PeerID)
    case left(PeerID)
    /// Something from the network (or a transport) was refused, and why.
    case rejected(Rejection)
    /// A peer's Stately state is new or changed.
    case state(StatelyEngine.PeerState)
    /// An SOS arrived.
    case sos(StatelyEngine.PeerState)
    /// A peer's state expired (or it went invisible).
    case stateExpired(PeerID)
    /// A pong answered our ping: the round trip and how many hops it came.
    case pong(from: PeerID, rttMillis: UInt64, hops: Int)
    /// A peer made us a favourite, or no longer (its private message
    /// `[FAVORITED]:npub1…` / `[UNFAVORITED]:npub1…`), with its Nostr key when it gave one.
    case favorited(by: PeerID, nickname: String?, on: Bool, npub: String?)
    /// A signing key was pinned to a Noise key on first use (a verified
    /// announce): an application that keeps pins across restarts stores it
    /// and hands it back with `NodeCore.pinSigningKey`.
    case pinned(fingerprint: Fingerprint, signingKey: [UInt8])
    /// Something a person should know from a transport (a relay connected or
    /// lost, the proxy down): words only.
    case notice(String)
}

/// Why something was refused: a kind a program can switch on, the peer it
/// came from when known, and the words for a person.
public struct Rejection: Hashable, Sendable, Error, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable, Codable, CaseIterable {
        /// An announce that does not verify (signature, key binding, age).
        case badAnnounce
        /// A public message whose payload is not UTF-8 text.
        case notText
        /// A Noise transport frame that no session of ours opens.
        case undecryptable
        /// A Noise handshake message that failed, or was rate-limited.
        case handshakeFailed
        /// A decrypted private payload that does not decode.
        case malformedPrivatePayload
        /// A file we do not accept (no download directory).
        case fileRefused
        /// A file we accepted but could not write.
        case fileNotSaved
        /// A Stately packet refused.
        case stately
        /// A transport failed (Bluetooth unreachable, adapter off …).
        case transport
        /// A group state refused (not the creator's, not signed, older than the one held).
        case group
    }

    public var kind: Kind
    public var peer: PeerID?
    public var detail: String

    public init(_ kind: Kind, peer: PeerID? = nil, _ detail: String) {
        self.kind = kind
        self.peer = peer
        self.detail = detail
    }

    public var description: String { detail }
}

extension NodeEvent {
    /// What a person is told of the events the node words itself (group
    /// changes, recognized IDs, vouches); the same in JSON `"text"` and in lines.
    public var sentence: String? {
        switch self {
        case let .recognized(peer, fingerprint, nickname, _):
            "\(nickname.map(DisplayText.clean) ?? String(fingerprint.prefix(16))) made rotating ID \(peer) (announce v2, recognized by its tag; not proof that they are here now)"
        case let .vouched(vouchee, voucher, name):
            "\(name.map(DisplayText.clean) ?? String(voucher.prefix(16))), whom you verified, vouches for \(vouchee.prefix(16))… (vouched, not verified by you)"
        case let .groupChanged(g, change, by):
            change.sentence(group: g.name, by: by, members: g.members.map(\.nickname))
        default:
            nil
        }
    }

    /// The event's name, as the JSON `"event"` field gives it.
    public var name: String {
        switch self {
        case .started: "started"
        case .linkUp: "linkUp"
        case .linkDown: "linkDown"
        case .peer: "peer"
        case .capabilities: "capabilities"
        case .message: "message"
        case .privateMessage, .dropOpened: "privateMessage"
        case .dropDeposited: "dropDeposited"
        case .gatewayMessage: "gatewayMessage"
        case .bridgedMessage: "bridgedMessage"
        case .sessionEstablished: "session"
        case .delivered: "delivered"
        case .sentOffMesh: "sentOffMesh"
        case .failed: "failed"
        case .held: "held"
        case .fileProgress: "fileProgress"
        case .fileSending: "fileSending"
        case .fileSent: "fileSent"
        case .fileOffered: "fileOffered"
        case .fileReceived: "fileReceived"
        case .read: "read"
        case .left: "left"
        case .rejected: "rejected"
        case .state: "state"
        case .sos: "sos"
        case .stateExpired: "stateExpired"
        case .pong: "pong"
        case .favorited: "favorited"
        case .pinned: "pinned"
        case .notice: "notice"
        case .boardPost: "board"
        case .boardPostDeleted: "boardDeleted"
        case .voiceNote: "voice"
        case .groupMessage: "groupMessage"
        case .groupChanged: "group"
        case .recognized: "recognized"
        case .vouched: "vouched"
        }
    }
}

/// How a group we belong to changed (``NodeEvent/groupChanged(_:change:by:)``).
public enum GroupChange: String, Hashable, Sendable, Codable {
    case created, joined, updated, removed, left

    /// What a person is told.
    public func sentence(group name: String, by: String?, members: [String] = []) -> String {
        let group = "'\(DisplayText.clean(name))'"
        let who = members.isEmpty ? "" : ": " + members.map(DisplayText.clean).joined(separator: ", ")
        switch self {
        case .created: return "you made group \(group)"
        case .joined: return "you were added to group \(group)" + (by.map { " by \(DisplayText.clean($0))" } ?? "") + who
        case .updated: return "group \(group) has a new key" + (members.isEmpty ? "" : " and is now" + who.dropFirst())
        case .removed: return "you were removed from group \(group)"
        case .left: return "you left group \(group)"
        }
    }
}
