import Testing
import StarlingCrypto
import StarlingMesh
import StarlingMessenger
import StarlingMessengerCore
import StarlingEmbeddedNetwork
import StarlingNodeCore
import StarlingWire
import StarlingYaOK
import StarlingStore

/// Messengers over an embedded network: each node core with its messenger
/// and a store in memory, pumped on the network's virtual clock. A restart
/// makes a fresh node core and messenger over the same store.
final class MessengerNetwork {
    /// A store in memory that applies the messenger's writes as the real one does.
    struct MemoryStore {
        var contacts: [UserID: ContactRecord] = [:]
        var trust: [String: TrustRecord] = [:]
        var conversations: [UserID: ConversationRecord] = [:]
        var messages: [UserID: [MessageRecord]] = [:]
        var pins: [Fingerprint: [UInt8]] = [:]
        var groups: [GroupRecord] = []
        var failing = false

        mutating func apply(_ w: MessengerCore.StoreWrite) throws {
            struct Injected: Error {}
            if failing { throw Injected() }
            switch w {
            case let .insertMessage(m):
                if !(messages[m.contact] ?? []).contains(where: { $0.id == m.id }) { messages[m.contact, default: []].append(m) }
            case let .updateMessage(m):
                messages[m.contact] = (messages[m.contact] ?? []).map { $0.id == m.id ? m : $0 }
            case let .trust(t): trust[t.fingerprint] = t
            case let .contact(c): if let card = c.card { contacts[card.userID] = c }
            case let .conversation(c): conversations[c.id] = c
            case let .mergeConversation(old, new):
                for var m in messages.removeValue(forKey: old) ?? [] where !(messages[new] ?? []).contains(where: { $0.id == m.id }) {
                    m.contact = new
                    messages[new, default: []].append(m)
                }
                conversations[old] = nil
            case let .pin(f, key): pins[f] = key
            case .groups: break // read from the node by the runner (as Messenger reads MeshNode)
            case let .receipt(id, conversation, state, at):
                messages[conversation] = (messages[conversation] ?? []).map { m in
                    guard m.id == id, var p = m.progress else { return m }
                    p.receipt(state, at: at)
                    var moved = m
                    moved.progress = p
                    return moved
                }
            }
        }

        var contents: MessengerCore.StoreContents {
            var c = MessengerCore.StoreContents()
            c.contacts = Array(contacts.values)
            c.trust = Array(trust.values)
            c.conversations = Array(conversations.values)
            c.messages = messages
            c.pins = pins.map { ($0.key, $0.value) }
            c.pending = messages.values.flatMap { $0 }.filter(\.isPending)
            c.groups = groups
            return c
        }
    }

    let net = EmbeddedNetwork()
    var messengers: [MessengerCore] = []
    var stores: [MemoryStore] = []
    var events: [[MessengerEvent]] = []
    var pumped: [Int] = []

    var seconds: Double { Double(net.now) / 1000 }

    @discardableResult
    func add(_ name: String, configure: (inout MessengerCore.Configuration) -> Void = { _ in }) -> Int {
        let i = net.addNode(name) { $0.trustKnown = false }
        var c = MessengerCore.Configuration()
        configure(&c)
        messengers.append(MessengerCore(identity: net.nodes[i].identity, configuration: c))
        stores.append(MemoryStore())
        events.append([])
        pumped.append(0)
        return i
    }

    /// The store opens (trust known): what waited goes on.
    func open(_ i: Int) {
        messengers[i].storeOpened(stores[i].contents, peers: net.nodes[i].peers, now: seconds)
        apply(i)
    }

    func lock(_ i: Int) { messengers[i].storeClosed() }

    /// The node's process starts again: a fresh core and messenger, the same store.
    func restart(_ i: Int, open: Bool = true) {
        net.restart(i) { $0.trustKnown = false }
        let c = messengers[i].configuration
        messengers[i] = MessengerCore(identity: net.nodes[i].identity, configuration: c)
        pumped[i] = net.events[i].count
        if open { self.open(i) }
    }

    /// Node events to messengers, messengers' effects to nodes and stores, until quiet.
    func pump() {
        for _ in 0..<100 {
            var moved = false
            for i in messengers.indices where pumped[i] < net.events[i].count {
                let new = net.events[i][pumped[i]...]
                pumped[i] = net.events[i].count
                for e in new { messengers[i].handle(e, peers: net.nodes[i].peers, now: seconds) }
                apply(i)
                moved = true
            }
            if !moved { return }
        }
    }

    func apply(_ i: Int) {
        var effects = messengers[i].takeEffects()
        while !effects.isEmpty {
            applyOnce(i, effects)
            effects = messengers[i].takeEffects()
        }
    }

    private func applyOnce(_ i: Int, _ effects: [MessengerCore.Effect]) {
        for effect in effects {
            switch effect {
            case let .event(e): events[i].append(e)
            case let .store(w):
                do {
                    try stores[i].apply(w)
                    if case .groups = w {
                        stores[i].groups = net.nodes[i].groupStates.map { GroupRecord(groupID: $0.groupID, state: $0.encoded()) }
                            + net.nodes[i].groupsLeft.map { GroupRecord(groupID: $0.id, leftAtEpoch: $0.epoch) }
                    }
                } catch { messengers[i].storeFailed(w, reason: "injected") }
            case let .offMesh(.nostrContact(peer, npub, _)):
                net.on(i) { $0.setOffMeshRoute(peer, via: "nostr", reachable: npub != nil, now: $1) }
            case .offMesh(.serverContact):
                break
            case let .offMesh(.nostrOpened(ids)):
                while nostrOpened.count <= i { nostrOpened.append([]) }
                nostrOpened[i] += ids
            case let .node(c):
                while commands.count <= i { commands.append([]) }
                commands[i].append(c)
                net.on(i) { core, now in
                    switch c {
                    case let .sendPrivate(text, to, id): _ = try? core.sendPrivate(text, to: to, messageID: id, now: now)
                    case let .sendReadReceipt(id, to): try? core.sendReadReceipt(id, to: to, now: now)
                    case let .block(f): core.block(f)
                    case let .unblock(f): core.unblock(f)
                    case let .setFavorite(f, on): core.setFavorite(f, on)
                    case let .setVerified(f, on): core.setVerified(f, on)
                    case let .pin(key, f): core.pinSigningKey(key, for: f)
                    case .trustDecided: core.trustDecided(now: now)
                    case let .sendDrop(text, key, id): _ = try? core.sendDrop(text, toNoiseKey: key, messageID: id, now: now)
                    case .declineFileOffer: break // offers over the network are MeshNode's, not the core's
                    case let .restoreGroups(records):
                        core.restoreGroups(records.compactMap { r in r.state.flatMap { try? GroupState(decoding: $0[...]) } },
                                           left: records.compactMap { r in r.leftAtEpoch.map { (id: r.groupID, epoch: $0) } })
                    }
                }
            }
        }
    }

    func run(_ ms: Millis) {
        var left = ms
        while left > 0 {
            let step = min(left, 100)
            net.run(for: step)
            pump()
            left -= step
        }
        pump()
    }

    // MARK: What a face would see

    func received(_ i: Int) -> [String] {
        events[i].compactMap { if case let .privateMessage(_, r, _, _, _, _, _) = $0 { r.text } else { nil } }
    }

    /// The node commands the messenger gave (every one since the start).
    var commands: [[MessengerCore.NodeCommand]] = []
    /// Gift wraps each messenger said to keep as opened (requests answered).
    var nostrOpened: [[String]] = []

    func state(_ i: Int, of id: UserID) -> MessageState? {
        stores[i].messages.values.flatMap { $0 }.first { $0.id == id }?.progress?.state
    }

    func conversation(_ i: Int, with j: Int) -> UserID {
        MessengerCore.conversationID(for: net.nodes[j].identity.fingerprint)
    }
}
