import Foundation

extension APIEvent: Codable {
    private enum Key: String, CodingKey { case event }

    /// An event this version does not know (a newer daemon's): a client skips it.
    public struct Unknown: Error, CustomStringConvertible, Sendable {
        public let name: String
        public var description: String { "not an event this version knows: \(name)" }
    }

    /// The event's name and its payload (the object's other fields).
    private var parts: (name: String, payload: any Encodable) {
        switch self {
        case let .store(p): ("store", p)
        case let .privateMessage(p): ("privateMessage", p)
        case let .sent(p): ("sent", p)
        case let .progress(p): ("progress", p)
        case let .dropDeposited(p): ("dropDeposited", p)
        case let .sendingWaiting(p): ("sendingWaiting", p)
        case let .peer(p): ("peer", p)
        case let .left(p): ("left", p)
        case let .session(p): ("session", p)
        case let .favorited(p): ("favorited", p)
        case let .trust(p): ("trust", p)
        case let .warning(p): ("warning", p)
        case let .notSaved(p): ("notSaved", p)
        case let .notice(p): ("notice", p)
        case let .gap(p): ("gap", p)
        case let .channelMessage(p): ("channelMessage", p)
        case let .channelPresence(p): ("channelPresence", p)
        case let .channelFailed(p): ("channelFailed", p)
        case let .request(p): ("request", p)
        case let .started(p): ("started", p)
        case let .linkUp(p): ("linkUp", p)
        case let .linkDown(p): ("linkDown", p)
        case let .capabilities(p): ("capabilities", p)
        case let .message(p): ("message", p)
        case let .gatewayMessage(p): ("gatewayMessage", p)
        case let .bridgedMessage(p): ("bridgedMessage", p)
        case let .delivered(p): ("delivered", p)
        case let .read(p): ("read", p)
        case let .sentOffMesh(p): ("sentOffMesh", p)
        case let .failed(p): ("failed", p)
        case let .held(p): ("held", p)
        case let .fileProgress(p): ("fileProgress", p)
        case let .fileSending(p): ("fileSending", p)
        case let .fileSent(p): ("fileSent", p)
        case let .fileOffered(p): ("fileOffered", p)
        case let .fileReceived(p): ("fileReceived", p)
        case let .rejected(p): ("rejected", p)
        case let .state(p): ("state", p)
        case let .sos(p): ("sos", p)
        case let .stateExpired(p): ("stateExpired", p)
        case let .pong(p): ("pong", p)
        case let .pinned(p): ("pinned", p)
        case let .board(p): ("board", p)
        case let .boardDeleted(p): ("boardDeleted", p)
        case let .voice(p): ("voice", p)
        case let .groupMessage(p): ("groupMessage", p)
        case let .group(p): ("group", p)
        case let .recognized(p): ("recognized", p)
        case let .vouched(p): ("vouched", p)
        }
    }

    /// Each kind's name and how its payload is read (the inverse of ``parts``).
    static let readers: [String: @Sendable (any Decoder) throws -> APIEvent] = [
        "store": { .store(try .init(from: $0)) },
        "privateMessage": { .privateMessage(try .init(from: $0)) },
        "sent": { .sent(try .init(from: $0)) },
        "progress": { .progress(try .init(from: $0)) },
        "dropDeposited": { .dropDeposited(try .init(from: $0)) },
        "sendingWaiting": { .sendingWaiting(try .init(from: $0)) },
        "peer": { .peer(try .init(from: $0)) },
        "left": { .left(try .init(from: $0)) },
        "session": { .session(try .init(from: $0)) },
        "favorited": { .favorited(try .init(from: $0)) },
        "trust": { .trust(try .init(from: $0)) },
        "warning": { .warning(try .init(from: $0)) },
        "notSaved": { .notSaved(try .init(from: $0)) },
        "notice": { .notice(try .init(from: $0)) },
        "gap": { .gap(try .init(from: $0)) },
        "channelMessage": { .channelMessage(try .init(from: $0)) },
        "channelPresence": { .channelPresence(try .init(from: $0)) },
        "channelFailed": { .channelFailed(try .init(from: $0)) },
        "request": { .request(try .init(from: $0)) },
        "started": { .started(try .init(from: $0)) },
        "linkUp": { .linkUp(try .init(from: $0)) },
        "linkDown": { .linkDown(try .init(from: $0)) },
        "capabilities": { .capabilities(try .init(from: $0)) },
        "message": { .message(try .init(from: $0)) },
        "gatewayMessage": { .gatewayMessage(try .init(from: $0)) },
        "bridgedMessage": { .bridgedMessage(try .init(from: $0)) },
        "delivered": { .delivered(try .init(from: $0)) },
        "read": { .read(try .init(from: $0)) },
        "sentOffMesh": { .sentOffMesh(try .init(from: $0)) },
        "failed": { .failed(try .init(from: $0)) },
        "held": { .held(try .init(from: $0)) },
        "fileProgress": { .fileProgress(try .init(from: $0)) },
        "fileSending": { .fileSending(try .init(from: $0)) },
        "fileSent": { .fileSent(try .init(from: $0)) },
        "fileOffered": { .fileOffered(try .init(from: $0)) },
        "fileReceived": { .fileReceived(try .init(from: $0)) },
        "rejected": { .rejected(try .init(from: $0)) },
        "state": { .state(try .init(from: $0)) },
        "sos": { .sos(try .init(from: $0)) },
        "stateExpired": { .stateExpired(try .init(from: $0)) },
        "pong": { .pong(try .init(from: $0)) },
        "pinned": { .pinned(try .init(from: $0)) },
        "board": { .board(try .init(from: $0)) },
        "boardDeleted": { .boardDeleted(try .init(from: $0)) },
        "voice": { .voice(try .init(from: $0)) },
        "groupMessage": { .groupMessage(try .init(from: $0)) },
        "group": { .group(try .init(from: $0)) },
        "recognized": { .recognized(try .init(from: $0)) },
        "vouched": { .vouched(try .init(from: $0)) },
    ]

    /// Every kind's name, sorted (the schema lists each; a face renders or names each).
    public static var kinds: [String] { readers.keys.sorted() }

    /// The `"event"` field's value.
    public var name: String { parts.name }

    public func encode(to encoder: any Encoder) throws {
        let (name, payload) = parts
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(name, forKey: .event)
        try payload.encode(to: encoder)
    }

    public init(from decoder: any Decoder) throws {
        let name = try decoder.container(keyedBy: Key.self).decode(String.self, forKey: .event)
        guard let read = Self.readers[name] else { throw Unknown(name: name) }
        self = try read(decoder)
    }

    /// The event as one line of JSON (no newline), as every face writes it.
    public func json() throws -> Data { try APIJSONCoding.data(self) }

    /// Reads one event; an unknown kind throws ``Unknown``.
    public static func decoding(_ data: Data) throws -> APIEvent { try JSONDecoder().decode(APIEvent.self, from: data) }
}

/// An event as the daemon's stream carries it: its fields and its sequence number (`"seq"`).
public struct APISequencedEvent: Codable, Sendable {
    public var seq: UInt64
    public var event: APIEvent
    private enum Key: String, CodingKey { case seq }

    public init(seq: UInt64, event: APIEvent) {
        self.seq = seq
        self.event = event
    }

    public func encode(to encoder: any Encoder) throws {
        try event.encode(to: encoder)
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(seq, forKey: .seq)
    }

    public init(from decoder: any Decoder) throws {
        event = try APIEvent(from: decoder)
        seq = try decoder.container(keyedBy: Key.self).decode(UInt64.self, forKey: .seq)
    }
}
