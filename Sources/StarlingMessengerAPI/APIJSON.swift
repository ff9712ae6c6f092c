import Foundation
import StarlingAPIContract
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

    public static func message(_ m: MessageRecord) -> Object { object(APIMessage(m)) }

    /// A contract value (StarlingAPIContract) as an object, for an answer that holds it among other fields.
    public static func object<T: Encodable>(_ value: T) -> Object {
        guard let data = try? APIJSONCoding.data(value), let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [:] }
        return sendable(o)
    }

    /// A contract value read from what JSONSerialization gave (an answer's part).
    public static func decode<T: Decodable>(_ any: Any?, as type: T.Type = T.self) throws -> T {
        guard let any, JSONSerialization.isValidJSONObject(any) else { throw Unreadable("an object") }
        do { return try JSONDecoder().decode(T.self, from: try JSONSerialization.data(withJSONObject: any)) } catch {
            throw Unreadable("\(T.self): \(error)")
        }
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

    /// A board post as shown: its fields (its signature, which a client may check against
    /// authorKey), `ours`, `author` (the verified name), `shownName`, `crossed`.
    static func boardEntry(_ e: BoardEntry) -> Object { object(APIEvent.BoardPost(e)) }

    static func group(_ g: GroupSummary) -> Object { object(APIGroup(g)) }

    static func fileOffer(_ f: MeshNode.FileOffer) -> Object {
        var o: Object = ["from": f.from.description, "transferID": f.transferID, "name": f.name, "size": f.size]
        if let t = f.mimeType { o["mimeType"] = t }
        return o
    }

    /// A stranger's request over Nostr: who (npub and key) and what they wrote, oldest first.
    public static func request(_ r: StrangerRequest) -> Object { object(APIRequest(r)) }

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

    public static func peerState(_ s: StatelyEngine.PeerState) -> Object { object(APIPeerState(s)) }

    public static func stately(_ v: StatelyView) -> Object {
        ["state": v.state.rawValue, "intervalMillis": Int(v.interval), "powerMode": v.powerMode, "board": v.board.map(peerState),
         "states": StateKind.allCases.map { ["name": $0.rawValue, "emoji": $0.emoji, "displayName": $0.displayName] as Object }]
    }

    public static func data(_ o: Any) -> Data {
        (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
    }
}
