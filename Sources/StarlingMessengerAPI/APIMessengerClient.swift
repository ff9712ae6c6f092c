import Foundation
import StarlingAPIContract
import StarlingCrypto
import StarlingMessenger
import StarlingMessengerCore
import StarlingNode
import StarlingNodeCore
import StarlingNostr
import StarlingStately
import StarlingWire
import StarlingYaOK
import StarlingStore

/// The messenger of a running daemon, through its API: what a face in
/// another process (the terminal's chat) uses as it would the messenger in
/// process. Each call is one request; the events are the daemon's stream,
/// read back into ``MessengerEvent``s.
public struct APIMessengerClient: MessengerClient {
    public let api: APIClient

    public init(_ api: APIClient) { self.api = api }

    /// A refusal in the daemon's words, with its kind from the status.
    static func failure(_ error: any Error) -> any Error {
        guard let f = error as? APIClient.Failure else {
            if error is APIJSON.Unreadable { return error }
            return MessengerClientError(.unavailable, "the daemon did not answer (\(error)): is it still running?")
        }
        let kind: MessengerClientError.Kind = switch f.status {
        case 400: .badRequest
        case 403: .forbidden
        case 404: .notFound
        case 409: .conflict
        case 423: .locked
        default: .failed
        }
        return MessengerClientError(kind, f.message)
    }

    func get(_ path: String) async throws -> Any {
        do { return try await api.get(path) } catch { throw Self.failure(error) }
    }

    func post(_ path: String, _ body: [String: Any] = [:]) async throws -> Any {
        do { return try await api.post(path, body) } catch { throw Self.failure(error) }
    }

    func delete(_ path: String) async throws {
        do { _ = try await api.request(.DELETE, path, body: nil) } catch { throw Self.failure(error) }
    }

    public static func escaped(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? s
    }

    public func events() async throws -> AsyncThrowingStream<MessengerEvent, any Error> {
        try await events(since: UInt64(try APIJSON.Fields(try await get("/v1/status")).int("events")))
    }

    /// The events after the daemon's `since`th (0: every one it still keeps, from its start).
    public func events(since: UInt64) async throws -> AsyncThrowingStream<MessengerEvent, any Error> {
        let source = api.events(since: since)
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await data in source {
                        if let e = try APIJSON.readEvent(data) { continuation.yield(e) }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: Self.failure(error))
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func summary() async throws -> NodeSummary { try APIJSON.readSummary(try await get("/v1/status")) }

    public func peers() async throws -> [PeerView] {
        try ((try await get("/v1/peers")) as? [Any] ?? []).map(APIJSON.readPeer)
    }

    public func identity(ofPeer peer: PeerID) async throws -> PeerIdentity? {
        do {
            return try APIJSON.readIdentity(try await get("/v1/peers/\(peer)/identity"))
        } catch let e as MessengerClientError where e.kind == .notFound {
            return nil
        }
    }

    public func contacts() async throws -> [Contact] {
        try ((try await get("/v1/contacts")) as? [Any] ?? []).map(APIJSON.readContact)
    }

    public func addContact(_ card: ContactCard, replace: Bool) async throws {
        _ = try await post("/v1/contacts", ["uri": card.uri, "replace": replace])
    }

    public func addNostrContact(npub: String, name: String) async throws {
        _ = try await post("/v1/contacts", ["npub": npub, "name": name])
    }

    public func removeContact(_ conversation: UserID) async throws { try await delete("/v1/contacts/\(conversation)") }

    public func trust() async throws -> [Fingerprint: TrustRecord] {
        var out: [Fingerprint: TrustRecord] = [:]
        for t in try ((try await get("/v1/trust")) as? [Any] ?? []).map(APIJSON.readTrust) {
            if let f = Fingerprint(hex: t.fingerprint) { out[f] = t }
        }
        return out
    }

    public func conversations() async throws -> [Messenger.Summary] {
        try ((try await get("/v1/conversations")) as? [Any] ?? []).map(APIJSON.readConversation)
    }

    public func conversation(_ id: UserID) async throws -> Messenger.Summary {
        try APIJSON.readConversation(try await get("/v1/conversations/\(id)"))
    }

    public func conversation(withPeer peer: PeerID) async throws -> UserID? {
        do {
            return try APIJSON.readConversation(try await post("/v1/conversations", ["peerID": peer.description])).id
        } catch let e as MessengerClientError where e.kind == .notFound {
            return nil
        }
    }

    public func conversation(withKey fingerprint: Fingerprint) async throws -> UserID {
        try APIJSON.readConversation(try await post("/v1/conversations", ["fingerprint": fingerprint.hex])).id
    }

    public func resolve(_ name: String) async throws -> Messenger.Resolution {
        let f: APIJSON.Fields
        do {
            f = try APIJSON.Fields(try await get("/v1/resolve?name=\(Self.escaped(name))"))
        } catch let e as MessengerClientError where e.kind == .notFound {
            return .none
        }
        if let names = f.o["ambiguous"] as? [String] { return .ambiguous(names) }
        return .conversation(try f.userID("conversation"))
    }

    public func history(_ conversation: UserID, limit: Int) async throws -> [MessageRecord] {
        try ((try await get("/v1/conversations/\(conversation)/messages?limit=\(limit)")) as? [Any] ?? []).map(APIJSON.readMessage)
    }

    public func history(_ conversation: UserID, limit: Int, before position: Int64?) async throws -> [HistoryEntry] {
        let query = "limit=\(limit)" + (position.map { "&before=\($0)" } ?? "")
        return try ((try await get("/v1/conversations/\(conversation)/messages?\(query)")) as? [Any] ?? []).map(APIJSON.readHistoryEntry)
    }

    public func search(_ conversation: UserID, for text: String, limit: Int, before position: Int64?) async throws -> [HistoryEntry] {
        var query = URLComponents()
        query.queryItems = [URLQueryItem(name: "search", value: text), URLQueryItem(name: "limit", value: String(limit))]
            + (position.map { [URLQueryItem(name: "before", value: String($0))] } ?? [])
        // (`+` is a space in a query: written out, as the server reads it.)
        let q = (query.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
        return try ((try await get("/v1/conversations/\(conversation)/messages?\(q)")) as? [Any] ?? []).map(APIJSON.readHistoryEntry)
    }

    public func send(_ text: String, to conversation: UserID) async throws -> MessageRecord {
        try APIJSON.readMessage(try await post("/v1/messages", ["to": conversation.description, "text": text]))
    }

    public func sendPublic(_ text: String) async throws { _ = try await post("/v1/public", ["text": text]) }

    public func groups() async throws -> [GroupSummary] {
        try APIJSON.decode(try await get("/v1/groups"), as: [APIGroup].self).map(\.summary)
    }

    public func createGroup(_ name: String, members: [String]) async throws -> GroupSummary {
        try APIJSON.decode(try await post("/v1/groups", ["name": name, "members": members]), as: APIGroup.self).summary
    }

    public func inviteToGroup(_ group: String, member nickname: String) async throws {
        _ = try await post("/v1/groups/\(Self.escaped(group))/members", ["nickname": nickname])
    }

    public func removeFromGroup(_ group: String, member nickname: String) async throws {
        try await delete("/v1/groups/\(Self.escaped(group))/members/\(Self.escaped(nickname))")
    }

    public func leaveGroup(_ group: String) async throws { try await delete("/v1/groups/\(Self.escaped(group))") }

    public func requests() async throws -> [StrangerRequest] {
        try ((try await get("/v1/requests")) as? [Any] ?? []).map(APIJSON.readRequest)
    }

    public func acceptRequest(_ npub: String, name: String) async throws {
        _ = try await post("/v1/requests/\(Self.escaped(npub))/accept", ["name": name])
    }

    public func blockRequest(_ npub: String) async throws { _ = try await post("/v1/requests/\(Self.escaped(npub))/block") }

    public func sendToGroup(_ group: String, text: String) async throws -> MessageRecord {
        try APIJSON.readMessage(try await post("/v1/groups/\(Self.escaped(group))/messages", ["text": text]))
    }

    public func boardPosts() async throws -> [BoardEntry] {
        try APIJSON.decode(try await get("/v1/board"), as: [APIEvent.BoardPost].self).map { try $0.entry() }
    }

    public func postToBoard(_ text: String, urgent: Bool, days: Int) async throws -> BoardPost {
        try APIJSON.decode(try await post("/v1/board", ["text": text, "urgent": urgent, "days": days]), as: APIEvent.BoardPost.self).entry().post
    }

    public func deleteBoardPost(_ postID: String) async throws { try await delete("/v1/board/\(postID)") }

    public func sendFile(name: String, content: [UInt8], to peer: PeerID) async throws -> String {
        let o = try await post("/v1/files", ["to": peer.description, "name": name, "content": Data(content).base64EncodedString()])
        return try APIJSON.Fields(o).string("transferID")
    }

    /// Streamed to the daemon (`POST /v1/files/upload`), which sends it as
    /// `send --file` would: over the mesh when it fits, else over the network.
    public func sendFile(at url: URL, to peer: PeerID) async throws -> String {
        guard FileManager.default.isReadableFile(atPath: url.path) else {
            throw MessengerClientError(.badRequest, "cannot read \(url.path)")
        }
        do {
            let o = try await api.upload("/v1/files/upload?to=\(peer)&name=\(Self.escaped(url.lastPathComponent))", file: url)
            return try APIJSON.Fields(o).string("transferID")
        } catch { throw Self.failure(error) }
    }

    public func fileOffers() async throws -> [MeshNode.FileOffer] {
        try ((try await get("/v1/files/offers")) as? [Any] ?? []).map { item in
            let f = try APIJSON.Fields(item)
            guard let from = PeerID(hex: try f.string("from")) else { throw APIJSON.Unreadable("file offer") }
            return MeshNode.FileOffer(from: from, transferID: try f.string("transferID"), name: try f.string("name"),
                                      size: f.o["size"] as? Int ?? 0, mimeType: f.o["mimeType"] as? String)
        }
    }

    public func answerFileOffer(_ transferID: String, accept: Bool) async throws {
        _ = try await post("/v1/files/offers/\(Self.escaped(transferID))", ["accept": accept])
    }

    public func markSeen(_ conversation: UserID, through last: UserID?) async throws {
        _ = try await post("/v1/conversations/\(conversation)/seen", last.map { ["through": $0.description] } ?? [:])
    }

    public func decide(_ change: MessengerCore.TrustChange, about fingerprint: Fingerprint, nickname: String?) async throws {
        var body: [String: Any] = ["fingerprint": fingerprint.hex, "change": change.rawValue]
        if let nickname { body["nickname"] = nickname }
        _ = try await post("/v1/trust", body)
    }

    public func setNostrVariant(_ variant: GiftWrap.Variant, for fingerprint: Fingerprint) async throws -> Bool {
        do {
            _ = try await post("/v1/trust", ["fingerprint": fingerprint.hex, "nostrVariant": variant.rawValue])
            return true
        } catch let e as MessengerClientError where e.kind == .notFound {
            return false
        }
    }

    public func lock() async throws { _ = try await post("/v1/store/lock") }

    public func noteActivity() async throws { _ = try await post("/v1/activity") }

    public func backup() async throws -> (path: String, kept: Int) {
        let b = try APIJSON.decode(try await post("/v1/store/backup"), as: APIBackup.self)
        return (b.path, b.kept)
    }

    public func restore(from: String?, secret: String?) async throws -> String {
        var body: [String: Any] = [:]
        if let from { body["from"] = from }
        if let secret { body["secret"] = secret }
        return try APIJSON.decode(try await post("/v1/store/restore", body), as: APIRestored.self).restoredFrom
    }

    public func changeProtection(current: String?, to new: StoreProtection) async throws {
        var secret: String?
        if case let .pin(s) = new { secret = s }
        if case let .passphrase(s) = new { secret = s }
        let body = try APIJSONCoding.data(APIProtectionChange(protection: new.name, secret: secret, current: current))
        do { _ = try await api.request(.PUT, "/v1/store/protection", body: body) } catch { throw Self.failure(error) }
    }

    public func unlock(secret: String?) async throws {
        _ = try await post("/v1/store/unlock", secret.map { ["secret": $0] } ?? [:])
    }

    public func join(channel name: String) async throws -> String {
        try APIJSON.Fields(try await post("/v1/channels/\(Self.escaped(name))")).string("joined")
    }

    public func say(_ text: String, in geohash: String) async throws {
        _ = try await post("/v1/channels/\(Self.escaped(geohash))/messages", ["text": text])
    }

    public func leave(channel geohash: String) async throws { try await delete("/v1/channels/\(Self.escaped(geohash))") }

    public func channels() async throws -> [String] {
        try ((try await get("/v1/channels")) as? [Any] ?? []).map { try APIJSON.Fields($0).string("geohash") }
    }

    public func ping(_ peer: PeerID) async throws { _ = try await post("/v1/peers/\(peer)/ping") }

    public func rename(_ nickname: String) async throws { _ = try await post("/v1/nickname", ["nickname": nickname]) }

    public func statistics() async throws -> NodeStatistics {
        let o = try await get("/v1/statistics")
        do {
            return try JSONDecoder().decode(NodeStatistics.self, from: JSONSerialization.data(withJSONObject: o))
        } catch {
            throw APIJSON.Unreadable("statistics")
        }
    }

    public func card() async throws -> ContactCard {
        let uri = try APIJSON.Fields(try await get("/v1/card")).string("uri")
        do { return try ContactCard(uri: uri) } catch { throw APIJSON.Unreadable("card") }
    }

    public func mesh() async throws -> [PeerID: Set<PeerID>] {
        let o = try APIJSON.Fields(try await get("/v1/mesh")).o["neighbours"] as? [String: [String]] ?? [:]
        var out: [PeerID: Set<PeerID>] = [:]
        for (k, v) in o {
            guard let p = PeerID(hex: k) else { throw APIJSON.Unreadable("mesh") }
            out[p] = Set(v.compactMap(PeerID.init(hex:)))
        }
        return out
    }

    public func stately() async throws -> StatelyView { try APIJSON.readStately(try await get("/v1/stately")) }

    public func setState(_ state: StateKind) async throws { _ = try await post("/v1/stately", ["state": state.rawValue]) }

    public func clearSOS() async throws { _ = try await post("/v1/stately", ["state": "clear"]) }
}
