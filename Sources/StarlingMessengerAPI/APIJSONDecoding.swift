import Foundation
import StarlingAPIContract
import StarlingCrypto
import StarlingMessenger
import StarlingMessengerCore
import StarlingNodeCore
import StarlingNostr
import StarlingNostrTransport
import StarlingStately
import StarlingWire
import StarlingYaOK
import StarlingStore

/// The API's JSON forms read back into the values they were written from
/// (a face on the other side of the API sees what a face in process sees).
/// Each is the inverse of its form in ``APIJSON``; tests hold the round trips.
extension APIJSON {
    /// A field missing or of the wrong shape: the daemon is not one this client knows.
    public struct Unreadable: Error, CustomStringConvertible, Sendable {
        public let description: String
        init(_ what: String) { description = "the daemon's answer does not read as expected (\(what)): is it the same starling version?" }
    }

    struct Fields {
        let o: [String: Any]
        init(_ any: Any?) throws {
            guard let o = any as? [String: Any] else { throw Unreadable("an object") }
            self.o = o
        }
        func string(_ k: String) throws -> String {
            guard let v = o[k] as? String else { throw Unreadable(k) }
            return v
        }
        func optionalString(_ k: String) -> String? { o[k] as? String }
        func int(_ k: String) throws -> Int {
            if let v = o[k] as? Int { return v }
            if let v = o[k] as? Double, v.rounded() == v, abs(v) < 9e15 { return Int(v) }
            throw Unreadable(k)
        }
        func uint64(_ k: String) throws -> UInt64 {
            if let n = o[k] as? NSNumber, n.int64Value >= 0 { return n.uint64Value }
            throw Unreadable(k)
        }
        func double(_ k: String) throws -> Double {
            guard let v = (o[k] as? NSNumber)?.doubleValue else { throw Unreadable(k) }
            return v
        }
        func bool(_ k: String) throws -> Bool {
            guard let v = o[k] as? Bool else { throw Unreadable(k) }
            return v
        }
        func peer(_ k: String) throws -> PeerID {
            guard let p = PeerID(hex: try string(k)) else { throw Unreadable(k) }
            return p
        }
        func fingerprint(_ k: String) throws -> Fingerprint {
            guard let f = Fingerprint(hex: try string(k)) else { throw Unreadable(k) }
            return f
        }
        func userID(_ k: String) throws -> UserID {
            guard let u = UserID(string: try string(k)) else { throw Unreadable(k) }
            return u
        }
    }

    public static func readMessage(_ any: Any?) throws -> MessageRecord { try decode(any, as: APIMessage.self).record() }

    /// A history page's message: the record and its position (which a history answer always has).
    public static func readHistoryEntry(_ any: Any?) throws -> HistoryEntry {
        let m = try decode(any, as: APIMessage.self)
        guard let position = m.position else { throw Unreadable("a history message without its position") }
        return HistoryEntry(position: position, record: try m.record())
    }

    public static func readContact(_ any: Any?) throws -> Contact {
        let c = try decode(any, as: APIContact.self)
        guard let kind = Contact.Kind(rawValue: c.kind) else { throw Unreadable("kind \(c.kind)") }
        let card = try c.card.map { uri in
            do { return try ContactCard(uri: uri) } catch { throw Unreadable("card") }
        }
        return Contact(kind: kind, conversation: try APIMessage.userID(c.conversation, "conversation"), name: c.name,
                       fingerprint: try APIEvent.fingerprint(c.fingerprint), card: card, npub: c.npub, nostrVariant: c.nostrVariant,
                       verified: c.verified, favorite: c.favorite, blocked: c.blocked, favoritesUs: c.favoritesUs)
    }

    public static func readSummary(_ any: Any?) throws -> NodeSummary {
        let s = try decode(any, as: APIStatus.self)
        return NodeSummary(peerID: try APIEvent.peer(s.peerID), fingerprint: try APIEvent.fingerprint(s.fingerprint), nickname: s.nickname,
                           peers: s.peers, sessions: s.sessions, storeOpen: s.storeOpen, trustKnown: s.trustKnown, pending: s.pending,
                           server: s.server, nostr: s.nostr, udpPort: s.udpPort, npub: s.npub, lockAfter: s.lockAfter)
    }

    public static func readPeer(_ any: Any?) throws -> PeerView {
        let p = try decode(any, as: APIPeer.self)
        return PeerView(id: try APIEvent.peer(p.peerID), nickname: p.nickname, fingerprint: try APIEvent.fingerprint(p.fingerprint), hops: p.hops,
                        capabilities: p.capabilities, neighbour: p.neighbour, blocked: p.blocked, favorite: p.favorite, verified: p.verified,
                        vouchedBy: p.vouchedBy ?? [])
    }

    public static func readIdentity(_ any: Any?) throws -> PeerIdentity {
        let i = try decode(any, as: APIIdentity.self)
        return PeerIdentity(fingerprint: try APIEvent.fingerprint(i.fingerprint), conversation: try APIMessage.userID(i.conversation, "conversation"),
                            name: i.name, verified: i.verified)
    }

    public static func readTrust(_ any: Any?) throws -> TrustRecord {
        let t = try decode(any, as: APITrust.self)
        var r = TrustRecord(fingerprint: try APIEvent.fingerprint(t.fingerprint).hex, nickname: t.nickname, verified: t.verified, favorite: t.favorite,
                            blocked: t.blocked, updatedAt: t.updatedAt)
        r.npub = t.npub
        r.nostrVariant = t.nostrVariant
        r.favoritesUs = t.favoritesUs
        return r
    }

    public static func readRequest(_ any: Any?) throws -> StrangerRequest { try decode(any, as: APIRequest.self).request }

    public static func readConversation(_ any: Any?) throws -> Messenger.Summary {
        let c = try decode(any, as: APIConversation.self)
        return Messenger.Summary(id: try APIMessage.userID(c.id, "id"), name: c.name, unread: c.unread, fingerprint: try c.fingerprint.map(APIEvent.fingerprint),
                                 last: try c.last?.record(), group: c.group?.summary)
    }

    public static func readPeerState(_ any: Any?) throws -> StatelyEngine.PeerState { try decode(any, as: APIPeerState.self).peerState() }

    public static func readStately(_ any: Any?) throws -> StatelyView {
        let v = try decode(any, as: APIStately.self)
        guard let state = StateKind(rawValue: v.state) else { throw Unreadable("state \(v.state)") }
        return StatelyView(state: state, interval: v.intervalMillis, powerMode: v.powerMode, board: try v.board.map { try $0.peerState() })
    }

    /// One event of the stream as the messenger's event it was. Events this
    /// client does not know (a newer daemon's) are nil, skipped; a `gap` is a
    /// warning in words.
    public static func readEvent(_ data: Data) throws -> MessengerEvent? {
        let event: APIEvent
        do { event = try APIEvent.decoding(data) } catch is APIEvent.Unknown { return nil }
        return try event.messengerEvent()
    }
}
