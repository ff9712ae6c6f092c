import Foundation
import StarlingCrypto
import StarlingMesh
import StarlingMessengerCore
import StarlingNode
import StarlingNodeCore
import StarlingNostr
import StarlingStately
import StarlingWire
import StarlingYaOK
import StarlingStore

/// What a face asks of the messenger and its node, wherever they run: in
/// this process (``LocalMessengerClient``) or in a daemon reached through its
/// API (`APIMessengerClient`). A face written against this protocol works
/// both ways and decides nothing itself; the two implementations are held
/// to the same answers by tests.
public protocol MessengerClient: Sendable {
    /// The messenger's events from now on, until the node stops (or the daemon goes).
    func events() async throws -> AsyncThrowingStream<MessengerEvent, any Error>
    func summary() async throws -> NodeSummary
    func peers() async throws -> [PeerView]
    /// A peer the node knows only by its session (not here by announce): its key and name, when known.
    func identity(ofPeer peer: PeerID) async throws -> PeerIdentity?
    func contacts() async throws -> [Contact]
    /// Adds a contact from their card (`replace`: one with the same user ID goes); a conflict says who is there.
    func addContact(_ card: ContactCard, replace: Bool) async throws
    /// Adds a contact known by an npub alone, reached over Nostr (standard NIP-17).
    func addNostrContact(npub: String, name: String) async throws
    /// Removes a card contact and the conversation with them.
    func removeContact(_ conversation: UserID) async throws
    /// Every trust decision kept (also about peers who are not contacts).
    func trust() async throws -> [Fingerprint: TrustRecord]
    func conversations() async throws -> [Messenger.Summary]
    /// One conversation's name and key (a name for an unknown ID: its start).
    func conversation(_ id: UserID) async throws -> Messenger.Summary
    func conversation(withPeer peer: PeerID) async throws -> UserID?
    func conversation(withKey fingerprint: Fingerprint) async throws -> UserID
    func resolve(_ name: String) async throws -> Messenger.Resolution
    func history(_ conversation: UserID, limit: Int) async throws -> [MessageRecord]
    /// A page: the `limit` messages stored before `position` (the newest when nil), with their positions.
    func history(_ conversation: UserID, limit: Int, before position: Int64?) async throws -> [HistoryEntry]
    /// The messages whose text holds `text` (any case), oldest first: the newest `limit` stored before `position`.
    func search(_ conversation: UserID, for text: String, limit: Int, before position: Int64?) async throws -> [HistoryEntry]
    func send(_ text: String, to conversation: UserID) async throws -> MessageRecord
    func sendPublic(_ text: String) async throws
    /// The mesh board's live posts, urgent first, then the newest.
    func boardPosts() async throws -> [BoardEntry]
    /// Posts on the mesh's board for `days` (1 to 7).
    func postToBoard(_ text: String, urgent: Bool, days: Int) async throws -> BoardPost
    /// Deletes one of our posts (its ID, hex, or its first digits).
    func deleteBoardPost(_ postID: String) async throws
    /// The private groups this node belongs to (docs/PROTOCOL.md, "Groups"), by name.
    func groups() async throws -> [GroupSummary]
    /// Makes a group (we are its creator) and invites each of `members`
    /// (nicknames of peers here); a group is named by its name or ID's first digits.
    func createGroup(_ name: String, members: [String]) async throws -> GroupSummary
    func inviteToGroup(_ group: String, member nickname: String) async throws
    func removeFromGroup(_ group: String, member nickname: String) async throws
    func leaveGroup(_ group: String) async throws
    /// Sends to a group; the record kept in the group's conversation.
    func sendToGroup(_ group: String, text: String) async throws -> MessageRecord
    /// Strangers' messages over Nostr waiting for an answer, the most recent first (docs/NOSTR.md, "Requests").
    func requests() async throws -> [StrangerRequest]
    /// Accepts a request (by npub): a contact named `name`, its messages in their conversation.
    func acceptRequest(_ npub: String, name: String) async throws
    /// Blocks a request's sender (by npub): nothing from them is shown again.
    func blockRequest(_ npub: String) async throws
    /// A file, privately; its transfer ID (its receipts and `fileSent` name it).
    func sendFile(name: String, content: [UInt8], to peer: PeerID) async throws -> String
    /// A file from disk: over the mesh when it fits, else offered over the
    /// network (`--bulk` on both sides); its transfer ID.
    func sendFile(at url: URL, to peer: PeerID) async throws -> String
    /// The person saw the conversation, through the message `through` (its
    /// record ID; nil: everything in it): read receipts go for those.
    /// Offers of large files waiting for an answer (``NodeEvent/fileOffered(from:transferID:name:size:mimeType:)``).
    func fileOffers() async throws -> [MeshNode.FileOffer]
    /// Accepts (the file is fetched) or declines (its sender reads so) an offer.
    func answerFileOffer(_ transferID: String, accept: Bool) async throws
    func markSeen(_ conversation: UserID, through last: UserID?) async throws
    func decide(_ change: MessengerCore.TrustChange, about fingerprint: Fingerprint, nickname: String?) async throws
    func setNostrVariant(_ variant: GiftWrap.Variant, for fingerprint: Fingerprint) async throws -> Bool
    func lock() async throws
    /// A person did something in this face: the messenger's auto-lock waits again.
    func noteActivity() async throws
    /// Changes what protects the store (given the current PIN or passphrase, when it has one).
    func changeProtection(current: String?, to new: StoreProtection) async throws
    /// Backs the store up now: the backup's path, and how many are kept (7 at most).
    func backup() async throws -> (path: String, kept: Int)
    /// Replaces the store with a backup (the newest good one, or the file `from`), given its
    /// PIN or passphrase when it has one: the backup's file name. Messages after it are lost.
    func restore(from: String?, secret: String?) async throws -> String
    /// Opens the store with its PIN or passphrase (nil: the key file).
    func unlock(secret: String?) async throws
    func join(channel name: String) async throws -> String
    /// The location channels joined (lowercase geohashes, sorted).
    func channels() async throws -> [String]
    func say(_ text: String, in geohash: String) async throws
    func leave(channel geohash: String) async throws
    func ping(_ peer: PeerID) async throws
    func rename(_ nickname: String) async throws
    func statistics() async throws -> NodeStatistics
    /// Our contact card (what our QR code carries).
    func card() async throws -> ContactCard
    /// The mesh as announces draw it: each peer's neighbours, ours among them.
    func mesh() async throws -> [PeerID: Set<PeerID>]
    func stately() async throws -> StatelyView
    func setState(_ state: StateKind) async throws
    func clearSOS() async throws
}

/// What protects the store at rest: the identity's key file, a PIN (4–6 digits) or a passphrase (10 or more characters).
public enum StoreProtection: Sendable, Hashable {
    case keyFile
    case pin(String)
    case passphrase(String)

    /// Its name in the API: none, pin, passphrase.
    public var name: String {
        switch self {
        case .keyFile: "none"
        case .pin: "pin"
        case .passphrase: "passphrase"
        }
    }
}

/// Who this node is and what it holds now.
public struct NodeSummary: Sendable, Hashable {
    public var peerID: PeerID
    public var fingerprint: Fingerprint
    public var nickname: String
    public var peers: Int
    public var sessions: Int
    public var storeOpen: Bool
    public var trustKnown: Bool
    /// Our messages waiting for a route (nil: the store is locked).
    public var pending: Int?
    /// The Ya OK server's name, when the node has one.
    public var server: String?
    /// Whether location channels (Nostr) can be joined.
    public var nostr: Bool
    public var udpPort: UInt16?
    /// This person's Nostr public key: a contact on Amethyst or 0xchat writes to it.
    public var npub: String?
    /// Seconds with no activity after which a store with a PIN or passphrase closes (0: never).
    public var lockAfter: Double
    public init(peerID: PeerID, fingerprint: Fingerprint, nickname: String, peers: Int, sessions: Int, storeOpen: Bool, trustKnown: Bool,
                pending: Int?, server: String?, nostr: Bool, udpPort: UInt16?, npub: String? = nil, lockAfter: Double = 0) {
        self.lockAfter = lockAfter
        self.npub = npub
        self.peerID = peerID
        self.fingerprint = fingerprint
        self.nickname = nickname
        self.peers = peers
        self.sessions = sessions
        self.storeOpen = storeOpen
        self.trustKnown = trustKnown
        self.pending = pending
        self.server = server
        self.nostr = nostr
        self.udpPort = udpPort
    }
}

/// A peer here (a verified announce), with what we decided about it.
public struct PeerView: Sendable, Hashable {
    public var id: PeerID
    public var nickname: String
    public var fingerprint: Fingerprint
    public var hops: Int
    /// What its announce says it can do (nil: it says nothing).
    public var capabilities: [String]?
    /// One hop away (a neighbour, not heard through a relay).
    public var neighbour: Bool
    public var blocked: Bool
    public var favorite: Bool
    public var verified: Bool
    /// The names of the peers we verified who vouch that they verified it
    /// (Noise 0x12): one hop from our own verifications, never a verification.
    public var vouchedBy: [String]
    public init(id: PeerID, nickname: String, fingerprint: Fingerprint, hops: Int, capabilities: [String]?, neighbour: Bool,
                blocked: Bool, favorite: Bool, verified: Bool, vouchedBy: [String] = []) {
        self.vouchedBy = vouchedBy
        self.id = id
        self.nickname = nickname
        self.fingerprint = fingerprint
        self.hops = hops
        self.capabilities = capabilities
        self.neighbour = neighbour
        self.blocked = blocked
        self.favorite = favorite
        self.verified = verified
    }
}

/// A peer known by its key: the name it is kept under, and whether it is verified.
public struct PeerIdentity: Sendable, Hashable {
    public var fingerprint: Fingerprint
    public var conversation: UserID
    public var name: String
    public var verified: Bool
    public init(fingerprint: Fingerprint, conversation: UserID, name: String, verified: Bool) {
        self.fingerprint = fingerprint
        self.conversation = conversation
        self.name = name
        self.verified = verified
    }
}

/// The node's counters: the mesh's and what was refused before relaying.
public struct NodeStatistics: Sendable, Hashable, Codable {
    public var mesh: MeshStatistics
    public var refusals: NodeCore.Refusals
    public init(mesh: MeshStatistics, refusals: NodeCore.Refusals) {
        self.mesh = mesh
        self.refusals = refusals
    }
}

/// Stately: our state, how often it goes out, and everyone's.
public struct StatelyView: Sendable, Hashable {
    public var state: StateKind
    /// Milliseconds between our state's broadcasts.
    public var interval: UInt64
    public var powerMode: String
    public var board: [StatelyEngine.PeerState]
    public init(state: StateKind, interval: UInt64, powerMode: String, board: [StatelyEngine.PeerState]) {
        self.state = state
        self.interval = interval
        self.powerMode = powerMode
        self.board = board
    }
}

/// Why a face's request was not done, in one sentence for the person.
public struct MessengerClientError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        case badRequest, notFound, conflict, locked, forbidden, unavailable, failed
    }
    public var kind: Kind
    public var description: String
    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}

/// The messenger and its node in this process: what the chat runs when no
/// daemon does, and what the daemon's API serves.
public struct LocalMessengerClient: MessengerClient {
    public let messenger: Messenger
    /// The identity store (nickname and favourites kept across runs).
    public let identityStore: IdentityStore
    public var node: MeshNode { messenger.node }

    public init(messenger: Messenger, identityStore: IdentityStore) {
        self.messenger = messenger
        self.identityStore = identityStore
    }

    /// The messenger's own stream: one consumer only (the face, or the API's event log).
    public func events() async throws -> AsyncThrowingStream<MessengerEvent, any Error> {
        let source = messenger.events
        return AsyncThrowingStream { continuation in
            let task = Task {
                for await e in source { continuation.yield(e) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func summary() async throws -> NodeSummary {
        let m = messenger
        // (Asked on every status call and after every event a face shows: from memory, not
        // by decrypting the store's queue each time.)
        let pending: Int? = await m.isStoreOpen ? await m.pendingCount : nil
        return NodeSummary(peerID: node.identity.peerID, fingerprint: node.identity.fingerprint, nickname: await node.currentNickname,
                           peers: await node.peers.count, sessions: await node.sessionCount, storeOpen: await m.isStoreOpen,
                           trustKnown: await m.trustKnown, pending: pending, server: m.server?.name, nostr: m.nostr != nil,
                           udpPort: await node.port, npub: await m.npub, lockAfter: await m.autoLockSeconds)
    }

    public func peers() async throws -> [PeerView] {
        let peers = await node.peers
        let neighbours = await node.neighborPeers
        var out: [PeerView] = []
        for (id, info) in peers {
            var vouchers: [String] = []
            for f in await node.vouchers(of: info.fingerprint) {
                if let here = peers.values.first(where: { $0.fingerprint == f }) { vouchers.append(here.nickname) }
                else { vouchers.append(await messenger.knownName(of: f)) }
            }
            out.append(PeerView(id: id, nickname: info.nickname, fingerprint: info.fingerprint, hops: info.hops,
                                capabilities: info.capabilities?.names, neighbour: neighbours.contains(id),
                                blocked: await messenger.isBlocked(info.fingerprint), favorite: await messenger.isFavorite(info.fingerprint),
                                verified: await messenger.isVerified(info.fingerprint),
                                vouchedBy: vouchers.sorted()))
        }
        return out.sorted { ($0.nickname, $0.id) < ($1.nickname, $1.id) }
    }

    public func identity(ofPeer peer: PeerID) async throws -> PeerIdentity? {
        let m = messenger
        guard let f = await m.fingerprint(ofPeer: peer) else { return nil }
        let c = await m.conversation(for: f)
        return PeerIdentity(fingerprint: f, conversation: c, name: await m.name(of: c), verified: await m.isVerified(f))
    }

    public func contacts() async throws -> [Contact] {
        await messenger.reloadContacts() // `starling contact add` may have run meanwhile
        return await messenger.contactList
    }

    public func trust() async throws -> [Fingerprint: TrustRecord] { await messenger.trust }

    public func addContact(_ card: ContactCard, replace: Bool) async throws {
        guard card.meshFingerprint != node.identity.fingerprint else { throw MessengerClientError(.badRequest, "this is your own contact code") }
        do { try await messenger.addContact(card, replace: replace) } catch let e as MessengerStore.Error {
            if case .contactExists = e { throw MessengerClientError(.conflict, e.description) }
            throw MessengerClientError(.failed, e.description)
        } catch let e as Messenger.StoreError {
            throw MessengerClientError(.locked, e.description)
        }
    }

    public func addNostrContact(npub: String, name: String) async throws {
        guard (try? NostrContacts.key(npub: npub)) != nil else { throw MessengerClientError(.badRequest, "not an npub: \(npub)") }
        do { try await messenger.addNostrContact(npub: npub, name: name) } catch let e as Messenger.StoreError {
            throw MessengerClientError(.locked, e.description)
        } catch {
            throw MessengerClientError(.failed, "\(error)")
        }
    }

    public func removeContact(_ conversation: UserID) async throws {
        let removed: Bool
        do { removed = try await messenger.removeContact(conversation) } catch let e as Messenger.StoreError {
            throw MessengerClientError(.locked, e.description)
        } catch {
            throw MessengerClientError(.failed, "the contact was not removed: \(error)")
        }
        guard removed else { throw MessengerClientError(.notFound, "no contact has the conversation \(conversation)") }
    }

    public func conversations() async throws -> [Messenger.Summary] { await messenger.conversations(groups: await node.groups) }

    public func conversation(_ id: UserID) async throws -> Messenger.Summary {
        let m = messenger
        return Messenger.Summary(id: id, name: await m.name(of: id), unread: await m.unreadCount(id), fingerprint: await m.fingerprint(of: id),
                                 last: nil)
    }

    public func conversation(withPeer peer: PeerID) async throws -> UserID? { await messenger.conversation(withPeer: peer) }

    public func conversation(withKey fingerprint: Fingerprint) async throws -> UserID { await messenger.conversation(withKey: fingerprint) }

    public func resolve(_ name: String) async throws -> Messenger.Resolution { await messenger.resolve(name) }

    public func history(_ conversation: UserID, limit: Int) async throws -> [MessageRecord] {
        guard await messenger.isStoreOpen else { throw MessengerClientError(.locked, Messenger.StoreError.locked.description) }
        do { return try await messenger.history(conversation, limit: limit) } catch {
            throw MessengerClientError(.failed, "the history did not open: \(error)")
        }
    }

    public func history(_ conversation: UserID, limit: Int, before position: Int64?) async throws -> [HistoryEntry] {
        guard await messenger.isStoreOpen else { throw MessengerClientError(.locked, Messenger.StoreError.locked.description) }
        do { return try await messenger.history(conversation, limit: limit, before: position) } catch {
            throw MessengerClientError(.failed, "the history did not open: \(error)")
        }
    }

    public func search(_ conversation: UserID, for text: String, limit: Int, before position: Int64?) async throws -> [HistoryEntry] {
        guard await messenger.isStoreOpen else { throw MessengerClientError(.locked, Messenger.StoreError.locked.description) }
        do { return try await messenger.search(conversation, for: text, limit: limit, before: position) } catch {
            throw MessengerClientError(.failed, "the history did not open: \(error)")
        }
    }

    public func send(_ text: String, to conversation: UserID) async throws -> MessageRecord {
        do { return try await messenger.send(text, to: conversation) } catch let e as MessengerCore.SendError {
            throw MessengerClientError(.badRequest, e.description)
        }
    }

    public func sendPublic(_ text: String) async throws {
        guard !text.isEmpty else { throw MessengerClientError(.badRequest, "an empty message is not sent") }
        do { try await node.sendPublic(text) } catch { throw MessengerClientError(.badRequest, "\(error)") }
    }

    public func boardPosts() async throws -> [BoardEntry] { await node.boardPosts }

    public func postToBoard(_ text: String, urgent: Bool, days: Int) async throws -> BoardPost {
        guard (1...7).contains(days) else { throw MessengerClientError(.badRequest, "a board post lives 1 to 7 days") }
        do { return try await node.postToBoard(text, urgent: urgent, lifetime: UInt64(days) * 86_400_000) } catch {
            throw MessengerClientError(.badRequest, "\(error)")
        }
    }

    public func deleteBoardPost(_ postID: String) async throws {
        let matching = await node.boardPosts.filter { $0.ours && $0.post.postID.hexString.hasPrefix(postID.lowercased()) }.map(\.post)
        guard let post = matching.first, !postID.isEmpty else { throw MessengerClientError(.notFound, "no post of ours starts \(postID)") }
        guard matching.count == 1 else { throw MessengerClientError(.conflict, "\(matching.count) of our posts start \(postID): give more of the ID") }
        do { try await node.deleteBoardPost(post.postID) } catch { throw MessengerClientError(.badRequest, "\(error)") }
    }

    public func sendFile(at url: URL, to peer: PeerID) async throws -> String {
        guard await node.peers[peer] != nil else { throw MessengerClientError(.notFound, "no peer \(peer) here: files go over the mesh only") }
        let id: String
        do { id = try await node.sendFile(at: url, to: peer) } catch {
            throw MessengerClientError(.badRequest, "\(error)")
        }
        // (The node read its size to choose the way; a size unreadable now is recorded as 0, the file went.)
        let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
        await messenger.fileSent(FileAttachment(name: url.lastPathComponent, size: size, transferID: id), to: peer)
        return id
    }

    public func sendFile(name: String, content: [UInt8], to peer: PeerID) async throws -> String {
        guard await node.peers[peer] != nil else { throw MessengerClientError(.notFound, "no peer \(peer) here: files go over the mesh only") }
        let id: String
        do { id = try await node.sendFile(name: name, mimeType: nil, content: content, to: peer) } catch {
            throw MessengerClientError(.badRequest, "\(error)")
        }
        await messenger.fileSent(FileAttachment(name: name, size: content.count, transferID: id), to: peer)
        return id
    }

    public func markSeen(_ conversation: UserID, through last: UserID?) async throws {
        await messenger.markSeen(conversation, through: last)
    }

    public func fileOffers() async throws -> [MeshNode.FileOffer] { await node.fileOffers }

    public func answerFileOffer(_ transferID: String, accept: Bool) async throws {
        do { try await node.answerFileOffer(transferID, accept: accept) } catch {
            throw MessengerClientError(.notFound, error.description)
        }
    }

    /// Decides. Favourites are trust records in the encrypted store, as every
    /// decision about another person is (nothing about them outside it).
    public func decide(_ change: MessengerCore.TrustChange, about fingerprint: Fingerprint, nickname: String?) async throws {
        await messenger.decide(change, about: fingerprint, nickname: nickname)
    }

    public func setNostrVariant(_ variant: GiftWrap.Variant, for fingerprint: Fingerprint) async throws -> Bool {
        await messenger.setNostrVariant(variant, for: fingerprint)
    }

    public func lock() async throws {
        do { try await messenger.lock() } catch { throw MessengerClientError(.failed, "the store did not close cleanly: \(error)") }
    }

    public func noteActivity() async throws { await messenger.noteActivity() }

    public func backup() async throws -> (path: String, kept: Int) {
        do {
            let (url, kept) = try await messenger.backup()
            return (url.path, kept)
        } catch let e as Messenger.StoreError {
            throw MessengerClientError(.locked, e.description)
        } catch {
            throw MessengerClientError(.failed, "the backup was not made: \(error)")
        }
    }

    public func changeProtection(current: String?, to new: StoreProtection) async throws {
        let identity = node.identity
        let now: Keyring.Protection = switch MessengerStore.protection(in: messenger.directory) {
        case .pin?: .pin(current ?? "")
        case .passphrase?: .passphrase(current ?? "")
        case nil, .keyFile?: .keyFile(identity)
        }
        let next: Keyring.Protection = switch new {
        case .keyFile: .keyFile(identity)
        case let .pin(p): .pin(p)
        case let .passphrase(p): .passphrase(p)
        }
        do { try Keyring.validate(next) } catch { throw MessengerClientError(.badRequest, "\(error)") }
        do { try await messenger.changeProtection(from: now, to: next) } catch let e as Keyring.Error {
            switch e {
            case .wrongSecret, .lockedOut: throw MessengerClientError(.forbidden, e.description)
            default: throw MessengerClientError(.failed, e.description)
            }
        } catch let e as Messenger.StoreError {
            throw MessengerClientError(.locked, e.description)
        } catch {
            throw MessengerClientError(.failed, "the store's protection did not change: \(error)")
        }
    }

    /// What opens the store now, given the secret a person typed (the key file when it has no PIN).
    func protection(_ secret: String?) -> Keyring.Protection {
        switch MessengerStore.protection(in: messenger.directory) {
        case .pin?: .pin(secret ?? "")
        case .passphrase?: .passphrase(secret ?? "")
        case nil, .keyFile?: .keyFile(node.identity)
        }
    }

    public func restore(from: String?, secret: String?) async throws -> String {
        if let from, !FileManager.default.fileExists(atPath: from) {
            throw MessengerClientError(.notFound, "\(from) does not exist: give a backup file (the data directory's backups/), or none for the newest")
        }
        do {
            return try await messenger.restore(from: from.map { URL(fileURLWithPath: $0) }, protection: protection(secret)).lastPathComponent
        } catch let e as Keyring.Error {
            switch e {
            case .wrongSecret, .lockedOut, .badPIN, .badPassphrase: throw MessengerClientError(.forbidden, e.description)
            default: throw MessengerClientError(.failed, e.description)
            }
        } catch let e as MessengerStore.Error {
            throw MessengerClientError(.failed, e.description)
        } catch {
            throw MessengerClientError(.failed, "the store was not restored: \(error)")
        }
    }

    public func unlock(secret: String?) async throws {
        guard await !messenger.isStoreOpen else { return }
        let directory = messenger.directory
        let protection = protection(secret)
        do {
            try await messenger.open(try MessengerStore.open(directory: directory, protection: protection))
        } catch let e as Keyring.Error {
            throw MessengerClientError(.forbidden, e.description)
        } catch {
            throw MessengerClientError(.failed, "\(error)")
        }
    }

    public func join(channel name: String) async throws -> String {
        do { return try await messenger.join(channel: name) } catch { throw MessengerClientError(.badRequest, "\(error)") }
    }

    public func say(_ text: String, in geohash: String) async throws {
        do { try await messenger.say(text, in: geohash) } catch { throw MessengerClientError(.badRequest, "\(error)") }
    }

    public func leave(channel geohash: String) async throws { await messenger.leave(channel: geohash) }

    public func channels() async throws -> [String] { await messenger.joinedChannels }

    public func ping(_ peer: PeerID) async throws {
        guard await node.peers[peer] != nil else { throw MessengerClientError(.notFound, "no peer \(peer) here") }
        await node.ping(peer)
    }

    public func rename(_ nickname: String) async throws {
        do { try identityStore.setNickname(nickname) } catch { throw MessengerClientError(.badRequest, "\(error)") } // refuses what an announce cannot carry
        await node.rename(nickname)
    }

    public func statistics() async throws -> NodeStatistics {
        NodeStatistics(mesh: await node.statistics, refusals: await node.refusals)
    }

    public func card() async throws -> ContactCard {
        let nickname = await node.currentNickname
        let name = DisplayName.problem(nickname) == nil ? nickname : String(nickname.prefix(64))
        do { return try ContactCard(identity: node.identity, userID: try identityStore.userID(), displayName: name) } catch {
            throw MessengerClientError(.failed, "our contact card could not be made: \(error)")
        }
    }

    public func mesh() async throws -> [PeerID: Set<PeerID>] {
        var lists = await node.neighborLists
        lists[node.identity.peerID] = await node.neighborPeers
        return lists
    }

    public func stately() async throws -> StatelyView {
        StatelyView(state: await node.status, interval: await node.statusInterval, powerMode: await node.powerMode.rawValue,
                    board: await node.statusBoard)
    }

    public func setState(_ state: StateKind) async throws { await node.setStatus(state) }

    public func clearSOS() async throws { await node.clearSOS() }
}

extension MessengerClient {
    /// Through a client that carries bytes only (a daemon's API): read, then sent as content.
    public func sendFile(at url: URL, to peer: PeerID) async throws -> String {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw MessengerClientError(.badRequest, "cannot read \(url.path)")
        }
        return try await sendFile(name: url.lastPathComponent, content: [UInt8](data), to: peer)
    }
}
