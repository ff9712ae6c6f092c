import Foundation
import StarlingAPIContract
import StarlingCrypto
import StarlingMessenger
import StarlingNodeCore
import StarlingNostr
import StarlingNostrTransport
import StarlingStately
import StarlingWire
import StarlingYaOK
import StarlingYaOKStore

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

    public static func readContact(_ any: Any?) throws -> Contact {
        let f = try Fields(any)
        guard let kind = Contact.Kind(rawValue: try f.string("kind")) else { throw Unreadable("kind") }
        let card = try f.optionalString("card").map { uri in
            do { return try ContactCard(uri: uri) } catch { throw Unreadable("card") }
        }
        return Contact(kind: kind, conversation: try f.userID("conversation"), name: try f.string("name"), fingerprint: try f.fingerprint("fingerprint"),
                       card: card, npub: f.optionalString("npub"), nostrVariant: f.optionalString("nostrVariant"), verified: try f.bool("verified"),
                       favorite: try f.bool("favorite"), blocked: try f.bool("blocked"), favoritesUs: try f.bool("favoritesUs"))
    }

    public static func readSummary(_ any: Any?) throws -> NodeSummary {
        let f = try Fields(any)
        return NodeSummary(peerID: try f.peer("peerID"), fingerprint: try f.fingerprint("fingerprint"), nickname: try f.string("nickname"),
                           peers: try f.int("peers"), sessions: try f.int("sessions"), storeOpen: try f.bool("storeOpen"),
                           trustKnown: try f.bool("trustKnown"), pending: f.o["pending"] == nil ? nil : try f.int("pending"),
                           server: f.optionalString("server"), nostr: f.o["nostr"] as? Bool ?? false,
                           udpPort: f.o["udpPort"] == nil ? nil : UInt16(exactly: try f.int("udpPort")), npub: f.optionalString("npub"))
    }

    public static func readPeer(_ any: Any?) throws -> PeerView {
        let f = try Fields(any)
        return PeerView(id: try f.peer("peerID"), nickname: try f.string("nickname"), fingerprint: try f.fingerprint("fingerprint"),
                        hops: try f.int("hops"), capabilities: f.o["capabilities"] as? [String], neighbour: try f.bool("neighbour"),
                        blocked: try f.bool("blocked"), favorite: try f.bool("favorite"), verified: try f.bool("verified"),
                        vouchedBy: f.o["vouchedBy"] as? [String] ?? [])
    }

    public static func readIdentity(_ any: Any?) throws -> PeerIdentity {
        let f = try Fields(any)
        return PeerIdentity(fingerprint: try f.fingerprint("fingerprint"), conversation: try f.userID("conversation"), name: try f.string("name"),
                            verified: try f.bool("verified"))
    }

    public static func readTrust(_ any: Any?) throws -> TrustRecord {
        let f = try Fields(any)
        var t = TrustRecord(fingerprint: try f.fingerprint("fingerprint").hex, nickname: f.optionalString("nickname"), verified: try f.bool("verified"),
                            favorite: try f.bool("favorite"), blocked: try f.bool("blocked"), updatedAt: try f.double("updatedAt"))
        t.npub = f.optionalString("npub")
        t.nostrVariant = f.optionalString("nostrVariant")
        t.favoritesUs = f.o["favoritesUs"] as? Bool
        return t
    }

    public static func readRequest(_ any: Any?) throws -> StrangerRequest { try decode(any, as: APIRequest.self).request }

    public static func readConversation(_ any: Any?) throws -> Messenger.Summary {
        let f = try Fields(any)
        return Messenger.Summary(id: try f.userID("id"), name: try f.string("name"), unread: try f.int("unread"),
                                 fingerprint: f.o["fingerprint"] == nil ? nil : try f.fingerprint("fingerprint"),
                                 last: f.o["last"] == nil ? nil : try readMessage(f.o["last"]),
                                 group: f.o["group"] == nil ? nil : try decode(f.o["group"], as: APIGroup.self).summary)
    }

    public static func readPeerState(_ any: Any?) throws -> StatelyEngine.PeerState { try decode(any, as: APIPeerState.self).peerState() }

    public static func readStately(_ any: Any?) throws -> StatelyView {
        let f = try Fields(any)
        guard let state = StateKind(rawValue: try f.string("state")) else { throw Unreadable("state") }
        return StatelyView(state: state, interval: try f.uint64("intervalMillis"), powerMode: try f.string("powerMode"),
                           board: try (f.o["board"] as? [Any] ?? []).map(readPeerState))
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
