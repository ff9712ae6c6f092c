import Crypto
import Foundation
import StarlingCrypto
import StarlingTransport
import StarlingWire
import StarlingYaOK
import StarlingYaOKServerCore

/// The Ya OK server (seed 002 §4.3) as an off-mesh transport, beside Nostr: the
/// node hands it the Noise payloads for a contact with no mesh route, and it
/// carries them as sealed messages (signed by us, sealed to the contact's
/// card): a private message as text, delivered and read receipts as the
/// seed's receipts. What comes from the server is opened with the sender's
/// card and handed to the node as the payload it is, from the contact's peer.
///
/// A sealed message that came is acknowledged to the server once the node
/// has it (the node acknowledges a message as it takes it, on the mesh too).
public final class YaOKServerTransport: OffMeshTransport, Sendable {
    public static let defaultName = "yaok-server"
    public let name: String
    public let events: AsyncStream<OffMeshEvent>
    private let continuation: AsyncStream<OffMeshEvent>.Continuation
    /// Whether the server has registered us (true) or the session is gone (false).
    public let registrations: AsyncStream<Bool>
    private let registrationsContinuation: AsyncStream<Bool>.Continuation

    /// What the server said of each message handed to it, in more words than
    /// the node needs (a one-shot sender reports them).
    public enum Outcome: Hashable, Sendable {
        case queued(ticket: String, online: Bool)
        case refused(ticket: String, reason: String)
        case unanswered(ticket: String)
    }
    public let outcomes: AsyncStream<Outcome>
    private let outcomesContinuation: AsyncStream<Outcome>.Continuation
    public let client: YaOKClient
    private let state: State

    /// The contacts it reaches (by the peer ID their Noise key derives), and
    /// the tickets of what it carries.
    actor State {
        var cards: [PeerID: ContactCard] = [:]
        var tickets: [UserID: String] = [:]
        var ticketOrder: [UserID] = []
        var registered = false

        func card(for peer: PeerID) -> ContactCard? { cards[peer] }
        func card(for user: UserID) -> ContactCard? { cards.values.first { $0.userID == user } }
        func set(_ peer: PeerID, _ card: ContactCard?) -> Bool {
            let was = cards[peer] != nil
            if let card {
                guard cards[peer] != nil || cards.count < 4_096 else { return false }
                cards[peer] = card
            } else {
                cards[peer] = nil
            }
            return was != (card != nil)
        }
        func remember(_ id: UserID, _ ticket: String) {
            if tickets[id] == nil {
                ticketOrder.append(id)
                if ticketOrder.count > 10_000 { tickets[ticketOrder.removeFirst()] = nil }
            }
            tickets[id] = ticket
        }
        func ticket(_ id: UserID) -> String? { tickets[id] }

        /// Messages handed to the node and not yet acknowledged by it, by the
        /// node's message ID: the server's ID and how often it was offered
        /// (1,024 at most; the oldest is let go: the server offers it again).
        private var held: [String: (id: UserID, offers: Int)] = [:]
        private var heldOrder: [String] = []
        /// Holds it; true when it was offered 5 times unacknowledged (let it go).
        func hold(_ key: String, _ id: UserID) -> Bool {
            if var h = held[key] {
                h.offers += 1
                if h.offers >= 5 { held[key] = nil; return true }
                held[key] = h
                return false
            }
            held[key] = (id, 1)
            heldOrder.append(key)
            if heldOrder.count > 1_024 { held[heldOrder.removeFirst()] = nil }
            return false
        }
        func takeHeld(_ key: String) -> UserID? { held.removeValue(forKey: key)?.id }
        var heldCount: Int { held.count }
        func setRegistered(_ on: Bool) -> [PeerID] {
            registered = on
            return Array(cards.keys)
        }
    }

    let identity: Identity
    let userID: UserID

    /// The server as the person named it: "relay.example.org:41641 (203.0.113.7:41641)" for a
    /// host name, the address alone for an address.
    public let shownAs: String

    public init(client: YaOKClient, identity: Identity, userID: UserID, name: String = YaOKServerTransport.defaultName, shownAs: String? = nil) {
        self.shownAs = shownAs ?? client.server.description
        self.client = client
        self.identity = identity
        self.userID = userID
        self.name = name
        state = State()
        (events, continuation) = AsyncStream.makeStream(of: OffMeshEvent.self, bufferingPolicy: .bufferingNewest(10_000))
        (registrations, registrationsContinuation) = AsyncStream.makeStream(of: Bool.self, bufferingPolicy: .bufferingNewest(16))
        (outcomes, outcomesContinuation) = AsyncStream.makeStream(of: Outcome.self, bufferingPolicy: .bufferingNewest(1_000))
    }

    /// The contact (its card) the server reaches at this peer ID, or no longer.
    public func setContact(_ peer: PeerID, card: ContactCard?) async {
        let changed = await state.set(peer, card)
        if changed, await state.registered { continuation.yield(.reachable(peer, card != nil)) }
    }

    public func start() async throws {
        let events = client.events
        Task { [weak self] in
            for await event in events {
                guard let self else { return }
                await self.handle(event)
            }
            self?.continuation.finish()
            self?.registrationsContinuation.finish()
            self?.outcomesContinuation.finish()
        }
        await client.start()
    }

    public func stop() async {
        await client.leave()
    }

    /// The node stored the message: the server may drop it now.
    public func acknowledged(_ messageID: String) {
        let state = self.state, client = self.client
        Task {
            if let id = await state.takeHeld(messageID) { await client.acknowledge(id) }
        }
    }

    public func send(_ payload: NoisePayload, to peer: PeerID, ticket: String) {
        Task { await self.carry(payload, to: peer, ticket: ticket) }
    }

    private func carry(_ payload: NoisePayload, to peer: PeerID, ticket: String) async {
        guard let card = await state.card(for: peer) else {
            continuation.yield(.failed(ticket: ticket, reason: "not a contact the Ya OK server reaches"))
            return
        }
        let body: SealedBody, id: UserID
        switch payload {
        case let .privateMessage(m):
            guard let messageID = UserID(string: m.messageID) else {
                continuation.yield(.failed(ticket: ticket, reason: "a message ID the Ya OK server cannot carry"))
                return
            }
            body = .text(m.content)
            id = messageID
        case let .delivered(messageID):
            guard let m = UserID(string: messageID) else { return }
            body = .delivered(m)
            id = .random()
        case let .readReceipt(messageID):
            guard let m = UserID(string: messageID) else { return }
            body = .read(m)
            id = .random()
        default:
            continuation.yield(.failed(ticket: ticket, reason: "the Ya OK server carries messages and receipts only"))
            return
        }
        do {
            let sealed = try SealedMessage.seal(body, id: id, timestamp: UInt64(Date().timeIntervalSince1970 * 1000), from: identity,
                                                senderID: userID, to: card.userID, recipientAgreementKey: card.agreementKey)
            await state.remember(id, ticket)
            try await client.send(sealed: sealed)
        } catch {
            continuation.yield(.failed(ticket: ticket, reason: "not handed to the Ya OK server: \(error)"))
        }
    }

    static func seconds(_ ms: UInt64) -> String { ms % 1_000 == 0 ? "\(ms / 1_000)" : String(format: "%.1f", Double(ms) / 1_000) }

    private func handle(_ event: YaOKClient.Event) async {
        switch event {
        case .registered:
            for peer in await state.setRegistered(true) { continuation.yield(.reachable(peer, true)) }
            // With several addresses, which one took us.
            let several = await client.addresses.count > 1, at = await client.address
            continuation.yield(.notice(several ? "registered with the Ya OK server at \(at) (\(shownAs))" : "registered with the Ya OK server \(shownAs)"))
            registrationsContinuation.yield(true)
        case let .queued(id, online):
            if let t = await state.ticket(id) {
                continuation.yield(.accepted(ticket: t))
                outcomesContinuation.yield(.queued(ticket: t, online: online))
            }
        case let .failed(id):
            if let t = await state.ticket(id) {
                continuation.yield(.failed(ticket: t, reason: "the Ya OK server did not answer"))
                outcomesContinuation.yield(.unanswered(ticket: t))
            }
        case let .rejected(why, id?):
            if let t = await state.ticket(id) {
                continuation.yield(.failed(ticket: t, reason: "the Ya OK server refused it: \(why)"))
                outcomesContinuation.yield(.refused(ticket: t, reason: "\(why)"))
            }
        case let .rejected(why, nil):
            continuation.yield(.notice("the Ya OK server: \(why)"))
        case .lost:
            for peer in await state.setRegistered(false) { continuation.yield(.reachable(peer, false)) }
            let several = await client.addresses.count > 1, now = await client.address
            continuation.yield(.notice("lost the Ya OK server \(shownAs): no answer for \(Self.seconds(client.configuration.lostAfter + client.configuration.lastPingWait)) s; "
                                       + (several ? "registering at \(now), the next address (messages wait for it)" : "registering again (messages wait for it)")))
            registrationsContinuation.yield(false)
        case .unreachable:
            let several = await client.addresses.count > 1, now = await client.address
            continuation.yield(.notice("the Ya OK server \(shownAs) does not answer: "
                                       + (several ? "trying its addresses in turn, \(now) now, " : "trying again, ")
                                       + "at most a minute apart (is it running, and is the address right?)"))
        case .relayReceipt:
            break // the recipient's own sealed delivered receipt says more, and is what counts
        case let .message(sender, bytes):
            await receive(sender: sender, bytes: bytes)
        }
    }

    private func receive(sender: UserID, bytes: [UInt8]) async {
        guard let header = try? SealedMessage.peek(bytes) else { return }
        guard let card = await state.card(for: sender) else {
            // Not a contact: no key to check it with. Acknowledged (the server
            // would offer it forever) and said.
            await client.acknowledge(header.messageID)
            continuation.yield(.notice("a sealed message through the Ya OK server from \(sender), who is not a contact: dropped"))
            return
        }
        let opened = Result { () throws(SealedMessage.Error) -> (SealedMessageBytes, SealedBody) in
            try SealedMessage.open(bytes, as: userID, with: identity, senderSigningKey: card.signingKey)
        }
        guard case let .success((_, body)) = opened else {
            await client.acknowledge(header.messageID)
            continuation.yield(.notice("a sealed message in \(card.displayName)'s name through the Ya OK server did not verify: dropped"))
            return
        }
        // A message stays on the server until the node has stored it (its
        // receipt went: ``acknowledged(_:)``); receipts are taken at once. One the
        // node never takes (a blocked sender) is let go after 5 offers.
        if case .text = body {
            if await state.hold(header.messageID.description.uppercased(), header.messageID) { await client.acknowledge(header.messageID) }
        } else {
            await client.acknowledge(header.messageID)
        }
        let payload: NoisePayload
        switch body {
        case let .text(text):
            payload = .privateMessage(PrivateMessage(messageID: header.messageID.description.uppercased(), content: text))
        case let .delivered(id):
            payload = .delivered(messageID: id.description.uppercased())
        case let .read(id):
            payload = .readReceipt(messageID: id.description.uppercased())
        }
        continuation.yield(.received(payload, from: card.meshFingerprint.peerID))
    }
}
