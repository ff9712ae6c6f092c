import Foundation
import StarlingAPIContract
import StarlingCrypto
import StarlingMessenger
import StarlingMessengerCore
import StarlingNode
import StarlingNodeCore
import StarlingNostrTransport
import StarlingQR
import StarlingStately
import StarlingWire
import StarlingYaOK
import StarlingStore

/// The messenger's values as the API's answers (StarlingAPIContract's types,
/// docs/API.md), and the few helpers the server and the client share.
public enum APIJSON {
    public typealias Object = [String: any Sendable]

    public static func settings(_ s: NodeSettings) -> APISettings { APISettings(server: s.server, nostr: s.nostr, proxy: s.proxy) }

    public static func message(_ m: MessageRecord) -> APIMessage { APIMessage(m) }

    /// A history page's message, with its position.
    public static func message(_ e: HistoryEntry) -> APIMessage {
        var m = APIMessage(e.record)
        m.position = e.position
        return m
    }

    /// A contract value read from what JSONSerialization gave (an answer, or its part).
    public static func decode<T: Decodable>(_ any: Any?, as type: T.Type = T.self) throws -> T {
        guard let any, JSONSerialization.isValidJSONObject(any) else { throw Unreadable("\(T.self): not JSON") }
        do { return try JSONDecoder().decode(T.self, from: try JSONSerialization.data(withJSONObject: any)) } catch {
            throw Unreadable("\(T.self): \(error)")
        }
    }

    /// A contact; with our card, the safety number we share with a card contact.
    public static func contact(_ c: Contact, ours: ContactCard? = nil) -> APIContact {
        APIContact(kind: c.kind.rawValue, conversation: c.conversation.description, name: c.name, fingerprint: c.fingerprint.hex,
                   peerID: c.fingerprint.peerID.description, verified: c.verified, favorite: c.favorite, blocked: c.blocked, favoritesUs: c.favoritesUs,
                   userID: c.card?.userID.description, card: c.card?.uri,
                   safetyNumber: c.card.flatMap { card in ours.map { SafetyNumber($0, card).groups.joined(separator: " ") } },
                   npub: c.npub, nostrVariant: c.nostrVariant)
    }

    /// A board post as shown: its fields (its signature, which a client may check against
    /// authorKey), `ours`, `author` (the verified name), `shownName`, `crossed`.
    static func boardEntry(_ e: BoardEntry) -> APIEvent.BoardPost { APIEvent.BoardPost(e) }

    static func group(_ g: GroupSummary) -> APIGroup { APIGroup(g) }

    static func fileOffer(_ f: MeshNode.FileOffer) -> APIFileOffer {
        APIFileOffer(from: f.from.description, transferID: f.transferID, name: f.name, size: f.size, mimeType: f.mimeType)
    }

    /// A stranger's request over Nostr: who (npub and key) and what they wrote, oldest first.
    public static func request(_ r: StrangerRequest) -> APIRequest { APIRequest(r) }

    public static func summary(_ s: NodeSummary, events: UInt64) -> APIStatus {
        APIStatus(peerID: s.peerID.description, fingerprint: s.fingerprint.hex, nickname: s.nickname, peers: s.peers, sessions: s.sessions,
                  storeOpen: s.storeOpen, trustKnown: s.trustKnown, version: 1, events: events, nostr: s.nostr, udpPort: s.udpPort, pending: s.pending,
                  server: s.server, npub: s.npub, lockAfter: s.lockAfter)
    }

    /// Our card, with its QR code as an SVG picture (black modules on white, a 4-module border).
    public static func card(_ c: ContactCard) -> APICard {
        APICard(uri: c.uri, userID: c.userID.description, displayName: c.displayName, fingerprint: c.meshFingerprint.hex,
                qrSVG: (try? QRCode(text: c.uri)).map { svg($0) })
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

    public static func mesh(_ lists: [PeerID: Set<PeerID>], me: PeerID) -> APIMesh {
        APIMesh(me: me.description, neighbours: Dictionary(uniqueKeysWithValues: lists.map { ($0.key.description, $0.value.map(\.description).sorted()) }))
    }

    public static func peer(_ p: PeerView) -> APIPeer {
        APIPeer(peerID: p.id.description, nickname: p.nickname, fingerprint: p.fingerprint.hex, hops: p.hops, neighbour: p.neighbour,
                blocked: p.blocked, favorite: p.favorite, verified: p.verified, capabilities: p.capabilities,
                vouchedBy: p.vouchedBy.isEmpty ? nil : p.vouchedBy)
    }

    public static func identity(_ i: PeerIdentity) -> APIIdentity {
        APIIdentity(fingerprint: i.fingerprint.hex, conversation: i.conversation.description, name: i.name, verified: i.verified)
    }

    public static func trust(_ t: TrustRecord) -> APITrust {
        APITrust(fingerprint: t.fingerprint, verified: t.verified, favorite: t.favorite, blocked: t.blocked, updatedAt: t.updatedAt,
                 nickname: t.nickname, npub: t.npub, nostrVariant: t.nostrVariant, favoritesUs: t.favoritesUs)
    }

    public static func conversation(_ c: Messenger.Summary) -> APIConversation {
        APIConversation(id: c.id.description, name: c.name, unread: c.unread, kind: c.group == nil ? "person" : "group", fingerprint: c.fingerprint?.hex,
                        last: c.last.map(APIMessage.init), group: c.group.map(APIGroup.init))
    }

    public static func peerState(_ s: StatelyEngine.PeerState) -> APIPeerState { APIPeerState(s) }

    public static func stately(_ v: StatelyView) -> APIStately {
        APIStately(state: v.state.rawValue, intervalMillis: v.interval, powerMode: v.powerMode, board: v.board.map(APIPeerState.init),
                   states: StateKind.allCases.map { APIStateKind(name: $0.rawValue, emoji: $0.emoji, displayName: $0.displayName) })
    }

    /// A small acknowledgement's JSON (a dictionary of plain values).
    public static func data(_ o: Any) -> Data {
        (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
    }
}
