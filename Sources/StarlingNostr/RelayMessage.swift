import Foundation

/// A subscription filter (NIP-01): the fields Starling asks by. Encoded with
/// its keys sorted, as iOS bitchat encodes it.
public struct NostrFilter: Hashable, Sendable {
    public var kinds: [Int]?
    public var authors: [String]?
    /// `#p`: events tagged with these keys.
    public var p: [String]?
    /// `#g`: events tagged with these geohashes.
    public var g: [String]?
    /// `#r`: events tagged with these rendezvous cells (a mesh bridge's).
    public var r: [String]?
    /// `#x`: events tagged with these recipient tags (courier drops).
    public var x: [String]?
    public var since: Int64?
    public var limit: Int?

    public init(kinds: [Int]? = nil, authors: [String]? = nil, p: [String]? = nil, g: [String]? = nil, r: [String]? = nil, x: [String]? = nil,
                since: Int64? = nil, limit: Int? = nil) {
        self.kinds = kinds
        self.authors = authors
        self.p = p
        self.g = g
        self.r = r
        self.x = x
        self.since = since
        self.limit = limit
    }

    /// Gift wraps for `recipient` (x-only hex) since a time: the apps' DM filter.
    public static func giftWraps(for recipient: String, since: Int64, limit: Int = 100) -> NostrFilter {
        NostrFilter(kinds: [1059], p: [recipient], since: since, limit: limit)
    }

    public var json: String {
        var fields: [String] = []
        if let g { fields.append("\"#g\":[" + g.map(NostrEvent.quote).joined(separator: ",") + "]") }
        if let p { fields.append("\"#p\":[" + p.map(NostrEvent.quote).joined(separator: ",") + "]") }
        if let r { fields.append("\"#r\":[" + r.map(NostrEvent.quote).joined(separator: ",") + "]") }
        if let x { fields.append("\"#x\":[" + x.map(NostrEvent.quote).joined(separator: ",") + "]") }
        if let authors { fields.append("\"authors\":[" + authors.map(NostrEvent.quote).joined(separator: ",") + "]") }
        if let kinds { fields.append("\"kinds\":[" + kinds.map(String.init).joined(separator: ",") + "]") }
        if let limit { fields.append("\"limit\":\(limit)") }
        if let since { fields.append("\"since\":\(since)") }
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// Whether `event` passes this filter (a relay's test; ours on what comes back).
    public func matches(_ event: NostrEvent) -> Bool {
        if let kinds, !kinds.contains(event.kind) { return false }
        if let authors, !authors.contains(event.pubkey) { return false }
        if let since, event.created_at < since { return false }
        func tagged(_ name: String, _ values: [String]?) -> Bool {
            guard let values else { return true }
            return event.tags.contains { $0.count >= 2 && $0[0] == name && values.contains($0[1]) }
        }
        return tagged("p", p) && tagged("g", g) && tagged("r", r) && tagged("x", x)
    }
}

/// What a client sends a relay (NIP-01).
public enum NostrClientMessage: Hashable, Sendable {
    case event(NostrEvent)
    case request(subscription: String, filters: [NostrFilter])
    case close(subscription: String)

    public var json: String {
        switch self {
        case let .event(e): "[\"EVENT\",\(e.json)]"
        case let .request(id, filters): "[\"REQ\",\(NostrEvent.quote(id))," + filters.map(\.json).joined(separator: ",") + "]"
        case let .close(id): "[\"CLOSE\",\(NostrEvent.quote(id))]"
        }
    }
}

/// What a relay sends a client (NIP-01, NIP-42's AUTH named only).
public enum NostrRelayMessage: Hashable, Sendable {
    case event(subscription: String, NostrEvent)
    /// The relay stored our event (or refused it, and why).
    case ok(eventID: String, accepted: Bool, message: String)
    /// The stored events for a subscription are all sent; what follows is live.
    case endOfStoredEvents(subscription: String)
    case notice(String)
    case closed(subscription: String, message: String)
    case auth(challenge: String)

    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case tooLarge(Int)
        case malformed(String)

        public var description: String {
            switch self {
            case let .tooLarge(n): "a relay message of \(n) bytes is over the \(NostrRelayMessage.maxBytes)-byte limit"
            case let .malformed(what): "not a relay message: \(what)"
            }
        }
    }

    /// The largest relay message taken in: an event of 64 KiB with room for
    /// its escaping and the envelope.
    public static let maxBytes = 160 * 1024

    public static func decode(_ text: String) throws(Error) -> NostrRelayMessage {
        let bytes = Array(text.utf8)
        guard bytes.count <= maxBytes else { throw .tooLarge(bytes.count) }
        do {
            return try JSONDecoder().decode(Wire.self, from: Data(bytes)).message
        } catch let e as Error {
            throw e
        } catch {
            throw .malformed("not a JSON array that a relay sends")
        }
    }

    private struct Wire: Decodable {
        var message: NostrRelayMessage

        init(from decoder: any Decoder) throws {
            var c = try decoder.unkeyedContainer()
            let type = try c.decode(String.self)
            switch type {
            case "EVENT":
                let id = try c.decode(String.self)
                message = .event(subscription: id, try c.decode(NostrEvent.self))
            case "OK":
                let id = try c.decode(String.self), accepted = try c.decode(Bool.self)
                message = .ok(eventID: id, accepted: accepted, message: (try? c.decode(String.self)) ?? "")
            case "EOSE":
                message = .endOfStoredEvents(subscription: try c.decode(String.self))
            case "NOTICE":
                message = .notice(try c.decode(String.self))
            case "CLOSED":
                let id = try c.decode(String.self)
                message = .closed(subscription: id, message: (try? c.decode(String.self)) ?? "")
            case "AUTH":
                message = .auth(challenge: try c.decode(String.self))
            default:
                throw NostrRelayMessage.Error.malformed("unknown type \(type.prefix(16))")
            }
        }
    }
}
