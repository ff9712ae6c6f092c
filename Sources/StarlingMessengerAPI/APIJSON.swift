import Foundation
import StarlingCrypto
import StarlingMessenger
import StarlingNode
import StarlingNodeCore
import StarlingNostrTransport
import StarlingQR
import StarlingStately
import StarlingWire
import StarlingYaOK
import StarlingYaOKStore

/// The API's JSON forms (docs/API.md): one per thing a client sees. Objects
/// are dictionaries of JSON values, written with sorted keys.
public enum APIJSON {
    public typealias Object = [String: any Sendable]

    /// The node's settings: `server` is null when there is none.
    public static func settings(_ s: NodeSettings) -> Object {
        ["server": s.server.map { $0 as any Sendable } ?? NSNull(), "nostr": s.nostr, "proxy": s.proxy]
    }

    public static func message(_ m: MessageRecord) -> Object {
        var o: Object = ["id": m.id.description, "conversation": m.contact.description, "outgoing": m.outgoing, "text": m.text,
                         "timestamp": Int(m.timestamp), "recordedAt": m.recordedAt]
        if let t = m.transportID { o["messageID"] = t }
        if let t = m.transport { o["via"] = t }
        if let p = m.progress { o["state"] = p.state.rawValue }
        if !m.outgoing { o["read"] = m.readAt != nil }
        if let a = m.author { o["author"] = a }
        if let file = m.file {
            var fo: Object = ["name": file.name, "size": file.size, "transferID": file.transferID]
            if let t = file.mimeType { fo["mimeType"] = t }
            if let p = file.path { fo["path"] = p }
            o["file"] = fo
        }
        return o
    }

    /// A contact; with our card, the safety number we share with a card contact.
    public static func contact(_ c: Contact, ours: ContactCard? = nil) -> Object {
        var o: Object = ["kind": c.kind.rawValue, "conversation": c.conversation.description, "name": c.name,
                         "fingerprint": c.fingerprint.hex, "peerID": c.fingerprint.peerID.description, "verified": c.verified,
                         "favorite": c.favorite, "blocked": c.blocked, "favoritesUs": c.favoritesUs]
        if let card = c.card {
            o["userID"] = card.userID.description
            o["card"] = card.uri
            if let ours { o["safetyNumber"] = SafetyNumber(ours, card).groups.joined(separator: " ") }
        }
        if let n = c.npub { o["npub"] = n }
        if let v = c.nostrVariant { o["nostrVariant"] = v }
        return o
    }

    /// A node event as `listen --json` prints it.
    public static func node(_ e: NodeEvent) -> Object {
        let encoder = JSONEncoder()
        guard let data = try? encoder.encode(e), let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            return ["event": "unencodable"]
        }
        return sendable(o)
    }

    static func sendable(_ o: [String: Any]) -> Object {
        o.mapValues(sendableValue)
    }

    static func sendableValue(_ v: Any) -> any Sendable {
        switch v {
        case let d as [String: Any]: return sendable(d)
        case let a as [Any]: return a.map(sendableValue)
        case let s as String: return s
        case let n as NSNumber:
            // JSONSerialization's numbers and booleans are all NSNumbers, and 1 casts
            // to Bool: the type code tells them apart (a boolean is "c").
            switch String(cString: n.objCType) {
            case "c", "B": return n.boolValue
            case "f", "d": return n.doubleValue
            default: return n.intValue
            }
        case let b as Bool: return b
        case let i as Int: return i
        case let d as Double: return d
        default: return NSNull()
        }
    }

    /// The messenger's events as the event stream carries them: each one or
    /// more objects (a history block is one object a message).
    /// A board post: its fields, and its signature (a client may check it against authorKey).
    static func boardPost(_ p: BoardPost) -> Object {
        ["postID": p.postID.hexString, "authorKey": p.authorKey.hexString, "nickname": p.nickname, "text": p.content,
         "geohash": p.geohash, "urgent": p.isUrgent, "createdAt": p.createdAt, "expiresAt": p.expiresAt, "flags": Int(p.flags),
         "signature": p.signature.hexString]
    }

    /// A board post as shown: its fields, `ours` (ours to delete), `author`
    /// (the verified name, absent when the key is no peer's we know), `shownName`,
    /// and `crossed` (true: it came from another mesh through our bridge; absent otherwise).
    static func boardEntry(_ e: BoardEntry) -> Object {
        var o = boardPost(e.post)
        o["ours"] = e.ours
        o["shownName"] = e.shownName
        if let author = e.author { o["author"] = author }
        if e.crossed { o["crossed"] = true }
        return o
    }

    /// A private group: no key ever leaves the node.
    static func group(_ g: GroupSummary) -> Object {
        ["groupID": g.groupID, "name": g.name, "epoch": Int(g.epoch), "creator": g.creator,
         "members": g.members.map { ["fingerprint": $0.fingerprint, "nickname": $0.nickname] }]
    }

    static func readGroup(_ any: Any) throws -> GroupSummary {
        let f = try Fields(any)
        guard let members = (any as? [String: Any])?["members"] as? [Any] else { throw Unreadable("members") }
        return GroupSummary(groupID: try f.string("groupID"), name: try f.string("name"), epoch: UInt32(clamping: try f.int("epoch")),
                            members: try members.map { let m = try Fields($0); return .init(fingerprint: try m.string("fingerprint"), nickname: try m.string("nickname")) },
                            creator: try f.string("creator"))
    }

    static func readBoardEntry(_ any: Any) throws -> BoardEntry {
        let f = try Fields(any)
        return BoardEntry(post: try readBoardPost(any), author: (any as? [String: Any])?["author"] as? String, ours: try f.bool("ours"),
                          crossed: (any as? [String: Any])?["crossed"] as? Bool ?? false)
    }

    static func readBoardPost(_ any: Any) throws -> BoardPost {
        let f = try Fields(any)
        func bytes(_ k: String) throws -> [UInt8] {
            guard let b = try? [UInt8](hex: try f.string(k)) else { throw Unreadable(k) }
            return b
        }
        return BoardPost(postID: try bytes("postID"), geohash: try f.string("geohash"), content: try f.string("text"),
                         authorKey: try bytes("authorKey"), nickname: try f.string("nickname"), createdAt: try f.uint64("createdAt"),
                         expiresAt: try f.uint64("expiresAt"), flags: UInt8(clamping: try f.int("flags")), signature: try bytes("signature"))
    }

    static func fileOffer(_ f: MeshNode.FileOffer) -> Object {
        var o: Object = ["from": f.from.description, "transferID": f.transferID, "name": f.name, "size": f.size]
        if let t = f.mimeType { o["mimeType"] = t }
        return o
    }

    public static func events(_ e: MessengerEvent) -> [Object] {
        switch e {
        case let .node(n):
            return [node(n)]
        case let .publicHistory(burst):
            return burst.map(node)
        case let .privateMessage(conversation, record, from, name, hops, via):
            var o: Object = ["event": "privateMessage", "conversation": conversation.description, "from": from.description,
                             "nickname": name, "text": record.text, "messageID": record.transportID ?? record.id.description,
                             "hops": hops, "message": message(record)]
            if let via { o["via"] = via }
            return [o]
        case let .sent(conversation, record):
            return [["event": "sent", "conversation": conversation.description, "message": message(record)]]
        case let .progress(conversation, record):
            return [["event": "progress", "conversation": conversation.description, "message": message(record)]]
        case let .carried(conversation, record, couriers):
            return [["event": "carried", "conversation": conversation.description, "message": message(record), "couriers": couriers]]
        case let .sendingWaiting(conversation, count):
            return [["event": "sendingWaiting", "conversation": conversation.description, "count": count]]
        case let .peerJoined(peer, nickname, hops):
            return [["event": "peer", "peerID": peer.description, "nickname": nickname, "hops": hops]]
        case let .peerLeft(peer):
            return [["event": "left", "peerID": peer.description]]
        case let .sessionEstablished(peer, name):
            return [["event": "session", "peerID": peer.description, "nickname": name]]
        case let .favorited(by, name, on, npub, overNostr):
            var o: Object = ["event": "favorited", "from": by.description, "nickname": name, "on": on, "overNostr": overNostr]
            if let npub { o["npub"] = npub }
            return [o]
        case let .trustChanged(f, name, blocked, favorite, verified):
            return [["event": "trust", "fingerprint": f.hex, "name": name, "blocked": blocked, "favorite": favorite, "verified": verified]]
        case let .trustLoaded(contacts, pending):
            return [["event": "store", "open": true, "contacts": contacts, "pending": pending]]
        case let .storeUnlocked(stored):
            return [["event": "store", "open": true, "storedMeanwhile": stored]]
        case let .warning(text):
            return [["event": "warning", "text": text]]
        case let .notSaved(text):
            return [["event": "notSaved", "text": text]]
        case let .diagnostic(r):
            var o = node(.rejected(r))
            o["diagnostic"] = true // internals, for a log: not for a person's screen
            return [o]
        case let .channel(c):
            switch c {
            case let .message(m):
                var o: Object = ["event": "channelMessage", "geohash": m.geohash, "publicKey": m.publicKey, "text": m.text,
                                 "createdAt": Int(m.createdAt), "eventID": m.eventID]
                if let n = m.nickname { o["nickname"] = n }
                return [o]
            case let .presence(geohash, key):
                return [["event": "channelPresence", "geohash": geohash, "publicKey": key]]
            case let .failed(why):
                return [["event": "channelFailed", "reason": why]]
            case .bridge, .drop, .request:
                return [] // the node's bridge and the messenger take these; a face sees what they show
            }
        case let .request(r):
            var o = request(r)
            o["event"] = "request"
            if let newest = r.messages.last {
                o["text"] = newest.text
                o["createdAt"] = Int(newest.createdAt)
            }
            return [o]
        }
    }

    /// A stranger's request over Nostr: who (npub and key) and what they wrote, oldest first.
    public static func request(_ r: StrangerRequest) -> Object {
        ["npub": r.npub, "publicKey": r.publicKey, "firstAt": r.firstAt, "lastAt": r.lastAt,
         "messages": r.messages.map { ["text": $0.text, "createdAt": Int($0.createdAt), "wrapID": $0.wrapID] as Object }]
    }

    public static func summary(_ s: NodeSummary, events: UInt64) -> Object {
        var o: Object = ["peerID": s.peerID.description, "fingerprint": s.fingerprint.hex, "nickname": s.nickname, "peers": s.peers,
                         "sessions": s.sessions, "storeOpen": s.storeOpen, "trustKnown": s.trustKnown, "version": 1,
                         "events": Int(events), "nostr": s.nostr]
        if let p = s.udpPort { o["udpPort"] = Int(p) }
        if let p = s.pending { o["pending"] = p }
        if let server = s.server { o["server"] = server }
        if let npub = s.npub { o["npub"] = npub }
        return o
    }

    /// Our card, with its QR code as an SVG picture (black modules on white, a 4-module border).
    public static func card(_ c: ContactCard) -> Object {
        var o: Object = ["uri": c.uri, "userID": c.userID.description, "displayName": c.displayName, "fingerprint": c.meshFingerprint.hex]
        if let code = try? QRCode(text: c.uri) { o["qrSVG"] = svg(code) }
        return o
    }

    static func svg(_ code: QRCode, border: Int = 4) -> String {
        let side = code.size + 2 * border
        var path = ""
        for y in 0..<code.size {
            for x in 0..<code.size where code.isDark(x: x, y: y) { path += "M\(x + border) \(y + border)h1v1h-1z" }
        }
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(side) \(side)\" shape-rendering=\"crispEdges\">"
            + "<rect width=\"\(side)\" height=\"\(side)\" fill=\"#fff\"/><path d=\"\(path)\" fill=\"#000\"/></svg>"
    }

    public static func mesh(_ lists: [PeerID: Set<PeerID>], me: PeerID) -> Object {
        ["me": me.description, "neighbours": Dictionary(uniqueKeysWithValues: lists.map { ($0.key.description, $0.value.map(\.description).sorted()) })]
    }

    public static func peer(_ p: PeerView) -> Object {
        var o: Object = ["peerID": p.id.description, "nickname": p.nickname, "fingerprint": p.fingerprint.hex, "hops": p.hops,
                         "blocked": p.blocked, "favorite": p.favorite, "verified": p.verified, "neighbour": p.neighbour]
        if let c = p.capabilities { o["capabilities"] = c }
        if !p.vouchedBy.isEmpty { o["vouchedBy"] = p.vouchedBy }
        return o
    }

    public static func identity(_ i: PeerIdentity) -> Object {
        ["fingerprint": i.fingerprint.hex, "conversation": i.conversation.description, "name": i.name, "verified": i.verified]
    }

    public static func trust(_ t: TrustRecord) -> Object {
        var o: Object = ["fingerprint": t.fingerprint, "verified": t.verified, "favorite": t.favorite, "blocked": t.blocked,
                         "updatedAt": t.updatedAt]
        if let n = t.nickname { o["nickname"] = n }
        if let n = t.npub { o["npub"] = n }
        if let v = t.nostrVariant { o["nostrVariant"] = v }
        if let f = t.favoritesUs { o["favoritesUs"] = f }
        return o
    }

    public static func conversation(_ c: Messenger.Summary) -> Object {
        var o: Object = ["id": c.id.description, "name": c.name, "unread": c.unread, "kind": c.group == nil ? "person" : "group"]
        if let f = c.fingerprint { o["fingerprint"] = f.hex }
        if let last = c.last { o["last"] = message(last) }
        if let g = c.group { o["group"] = group(g) }
        return o
    }

    public static func peerState(_ s: StatelyEngine.PeerState) -> Object {
        ["peerID": s.senderID.description, "name": s.name, "state": s.state.rawValue, "emoji": s.state.emoji, "hops": s.hops,
         "timestamp": Int(s.timestamp)]
    }

    public static func stately(_ v: StatelyView) -> Object {
        ["state": v.state.rawValue, "intervalMillis": Int(v.interval), "powerMode": v.powerMode, "board": v.board.map(peerState),
         "states": StateKind.allCases.map { ["name": $0.rawValue, "emoji": $0.emoji, "displayName": $0.displayName] as Object }]
    }

    public static func data(_ o: Any) -> Data {
        (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
    }
}
