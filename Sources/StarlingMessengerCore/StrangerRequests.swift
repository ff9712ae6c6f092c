import StarlingCrypto
import StarlingNostr
import StarlingYaOK

/// Someone who is not a contact wrote over Nostr (their seal's key proved it is
/// theirs): their messages wait here until the person accepts (they become a
/// contact, the messages go into the conversation) or blocks them (never shown
/// again). docs/NOSTR.md, "Requests".
public struct StrangerRequest: Hashable, Sendable {
    /// Their x-only key, hex.
    public var publicKey: String
    public var npub: String
    /// Oldest first; the newest 16.
    public var messages: [NostrClientCore.StrangerMessage]
    /// When the first and the last came (seconds, this node's clock).
    public var firstAt: Double
    public var lastAt: Double
    public init(publicKey: String, npub: String, messages: [NostrClientCore.StrangerMessage], firstAt: Double, lastAt: Double) {
        self.publicKey = publicKey
        self.npub = npub
        self.messages = messages
        self.firstAt = firstAt
        self.lastAt = lastAt
    }
}

/// The requests waiting for an answer, bounded: 64 senders (the one heard from
/// least recently goes first), 16 messages each (the oldest goes first), each
/// forgotten 48 hours after its last message. A request is not stored: its
/// wraps are not kept as opened, so relays bring them again after a restart
/// (for as long as they look back) until the person answers.
public struct StrangerRequests: Sendable {
    public static let maxSenders = 64
    public static let maxMessages = 16
    public static let lifetime: Double = 48 * 3_600

    public private(set) var bySender: [String: StrangerRequest] = [:]

    public init() {}

    /// Every request, the most recent first.
    public var all: [StrangerRequest] { bySender.values.sorted { ($0.lastAt, $0.publicKey) > ($1.lastAt, $1.publicKey) } }

    /// Takes a message: the request as it is now, or nil for one already held (a relay's copy).
    public mutating func add(_ m: NostrClientCore.StrangerMessage, now: Double) -> StrangerRequest? {
        expire(now: now)
        if var r = bySender[m.publicKey] {
            guard !r.messages.contains(where: { $0.wrapID == m.wrapID }) else { return nil }
            r.messages.append(m)
            r.messages.sort { ($0.createdAt, $0.wrapID) < ($1.createdAt, $1.wrapID) }
            if r.messages.count > Self.maxMessages { r.messages.removeFirst(r.messages.count - Self.maxMessages) }
            r.lastAt = now
            bySender[m.publicKey] = r
            return r
        }
        if bySender.count >= Self.maxSenders, let quietest = bySender.values.min(by: { ($0.lastAt, $0.publicKey) < ($1.lastAt, $1.publicKey) }) {
            bySender[quietest.publicKey] = nil
        }
        let r = StrangerRequest(publicKey: m.publicKey, npub: m.npub, messages: [m], firstAt: now, lastAt: now)
        bySender[m.publicKey] = r
        return r
    }

    /// The request from this npub or key (hex), if one waits.
    public func find(_ who: String) -> StrangerRequest? {
        let wanted = who.lowercased()
        return bySender[wanted] ?? bySender.values.first { $0.npub == wanted }
    }

    public mutating func take(_ publicKey: String) -> StrangerRequest? { bySender.removeValue(forKey: publicKey) }

    public mutating func expire(now: Double) {
        bySender = bySender.filter { now - $0.value.lastAt < Self.lifetime }
    }
}

extension MessengerCore {
    /// The requests waiting now (those past their lifetime forgotten first), the most recent first.
    public mutating func waitingRequests(now: Double) -> [StrangerRequest] {
        requests.expire(now: now)
        return requests.all
    }

    /// A stranger's message: a request, or (from someone blocked) kept as opened and never shown.
    public mutating func strangerWrote(_ m: NostrClientCore.StrangerMessage, now: Double) {
        guard let f = try? NostrContacts.key(npub: m.npub) else { return }
        if isBlocked(f) {
            effects.append(.offMesh(.nostrOpened([m.wrapID])))
            return
        }
        guard let r = requests.add(m, now: now) else { return }
        emit(.request(r))
    }

    /// The person accepted: the request's messages go into the new contact's
    /// conversation (the contact's trust record is the runtime's to add first).
    @discardableResult
    public mutating func acceptRequest(_ publicKey: String, name: String, now: Double) -> StrangerRequest? {
        // Taken only once its key is known good: a request is never dropped unshown.
        guard let waiting = requests.bySender[publicKey], let f = try? NostrContacts.key(npub: waiting.npub),
              let r = requests.take(publicKey) else { return nil }
        for m in r.messages {
            receiveFromNostr(fingerprint: f, nickname: name, text: m.text, messageID: m.wrapID, now: now)
        }
        effects.append(.offMesh(.nostrOpened(r.messages.map(\.wrapID))))
        return r
    }

    /// The person blocked them (the blocked trust record is the runtime's to add): the request goes, unshown.
    @discardableResult
    public mutating func dropRequest(_ publicKey: String) -> StrangerRequest? {
        guard let r = requests.take(publicKey) else { return nil }
        effects.append(.offMesh(.nostrOpened(r.messages.map(\.wrapID))))
        return r
    }
}

