import Foundation

/// One call of the API: its method and path (OpenAPI's form, `{name}` for a
/// path's part), what it takes and what it answers, as contract types.
public struct APIRoute: Sendable {
    public enum Method: String, Sendable { case get, post, put, delete }

    public var method: Method
    public var path: String
    public var summary: String
    /// The answer's status when it goes well.
    public var status: Int
    public var query: [(name: String, type: String, required: Bool)]
    /// The body's schema (JSON), when it takes one; `bodyRequired` false: it may be left out.
    public var body: (@Sendable () throws -> JSONValue)?
    public var bodyRequired: Bool
    /// The answer's schema and content type.
    public var answer: @Sendable () throws -> JSONValue
    public var contentType: String

    init(_ method: Method, _ path: String, _ summary: String, status: Int = 200, query: [(String, String, Bool)] = [],
         body: (@Sendable () throws -> JSONValue)? = nil, bodyRequired: Bool = true, answer: @escaping @Sendable () throws -> JSONValue,
         contentType: String = "application/json") {
        self.bodyRequired = bodyRequired
        self.method = method
        self.path = path
        self.summary = summary
        self.status = status
        self.query = query.map { (name: $0.0, type: $0.1, required: $0.2) }
        self.body = body
        self.answer = answer
        self.contentType = contentType
    }
}

/// A type's schema, later (the document is built on request).
func schema<T: Decodable & Sendable>(_ type: T.Type) -> @Sendable () throws -> JSONValue { { try APISchema.of(T.self) } }
func list<T: Decodable & Sendable>(_ type: T.Type) -> @Sendable () throws -> JSONValue { { try APISchema.of([T].self) } }

extension APIRoute {
    /// Every call of v1, as the daemon serves them (a test holds the daemon's router to this list).
    public static let all: [APIRoute] = [
        APIRoute(.get, "/v1/status", "Who this node is and what it holds now", answer: schema(APIStatus.self)),
        APIRoute(.get, "/v1/peers", "The peers the node hears", answer: list(APIPeer.self)),
        APIRoute(.get, "/v1/peers/{peer}/identity", "A peer known by its session: its key and name", answer: schema(APIIdentity.self)),
        APIRoute(.post, "/v1/peers/{peer}/ping", "Pings a peer (its pong comes as an event)", status: 202, answer: schema(APIPinged.self)),
        APIRoute(.get, "/v1/contacts", "The contacts", answer: list(APIContact.self)),
        APIRoute(.post, "/v1/contacts", "Adds a contact (a contact code, a picture of its QR code, or an npub)", status: 201,
                 body: schema(APIAddContact.self), answer: list(APIContact.self)),
        APIRoute(.delete, "/v1/contacts/{id}", "Removes a contact (its conversation ID) and the conversation with them", answer: schema(APIDeleted.self)),
        APIRoute(.get, "/v1/card", "Our contact card and its QR code", answer: schema(APICard.self)),
        APIRoute(.get, "/v1/mesh", "The mesh as announces draw it", answer: schema(APIMesh.self)),
        APIRoute(.get, "/v1/trust", "Every trust decision kept", answer: list(APITrust.self)),
        APIRoute(.post, "/v1/trust", "Blocks, favourites or verifies a key (or sets its Nostr variant)", body: schema(APITrustChange.self),
                 answer: schema(APITrustState.self)),
        APIRoute(.get, "/v1/resolve", "The conversation a name means", query: [("name", "string", true)], answer: schema(APIResolution.self)),
        APIRoute(.get, "/v1/conversations", "The conversations, a person's or a group's", answer: list(APIConversation.self)),
        APIRoute(.post, "/v1/conversations", "Opens the conversation with a peer or a key", body: schema(APIOpenConversation.self),
                 answer: schema(APIConversation.self)),
        APIRoute(.get, "/v1/conversations/{id}", "One conversation", answer: schema(APIConversation.self)),
        APIRoute(.get, "/v1/conversations/{id}/messages",
                 "A conversation's history, oldest first: the newest `limit` (200; at most 1,000), or those stored before `before` (a position); "
                 + "with `search`, only those whose text holds it (any case)",
                 query: [("limit", "integer", false), ("before", "integer", false), ("search", "string", false)], answer: list(APIMessage.self)),
        APIRoute(.post, "/v1/conversations/{id}/seen", "The person saw the conversation (read receipts go); no body: all of it",
                 body: schema(APISeen.self), bodyRequired: false, answer: schema(APIUnread.self)),
        APIRoute(.post, "/v1/messages", "Sends a private message", status: 201, body: schema(APISendMessage.self), answer: schema(APIMessage.self)),
        APIRoute(.post, "/v1/public", "Sends a public message", status: 202, body: schema(APIText.self), answer: schema(APISent.self)),
        APIRoute(.post, "/v1/files", "Sends a small file (base64) to a peer", status: 202, body: schema(APISendFile.self), answer: schema(APITransfer.self)),
        APIRoute(.get, "/v1/groups", "The private groups we belong to", answer: list(APIGroup.self)),
        APIRoute(.post, "/v1/groups", "Makes a group", status: 201, body: schema(APICreateGroup.self), answer: schema(APIGroup.self)),
        APIRoute(.post, "/v1/groups/{group}/members", "Invites a peer here into a group", body: schema(APINickname.self), answer: schema(APIInvited.self)),
        APIRoute(.delete, "/v1/groups/{group}/members/{nickname}", "Removes a member (the creator only)", answer: schema(APIRemoved.self)),
        APIRoute(.delete, "/v1/groups/{group}", "Leaves a group", answer: schema(APILeft.self)),
        APIRoute(.post, "/v1/groups/{group}/messages", "Sends to a group", status: 201, body: schema(APIText.self), answer: schema(APIMessage.self)),
        APIRoute(.get, "/v1/requests", "Strangers' messages over Nostr, waiting for an answer", answer: list(APIRequest.self)),
        APIRoute(.post, "/v1/requests/{npub}/accept", "Accepts a request: a contact", body: schema(APIAcceptRequest.self), answer: schema(APIAccepted.self)),
        APIRoute(.post, "/v1/requests/{npub}/block", "Blocks a request's sender", answer: schema(APIBlocked.self)),
        APIRoute(.get, "/v1/board", "The mesh board's live posts", answer: list(APIEvent.BoardPost.self)),
        APIRoute(.post, "/v1/board", "Posts on the board", status: 201, body: schema(APIBoardPostRequest.self), answer: schema(APIEvent.BoardPost.self)),
        APIRoute(.delete, "/v1/board/{id}", "Deletes one of our posts", answer: schema(APIDeleted.self)),
        APIRoute(.get, "/v1/files/offers", "Large files offered, waiting for an answer", answer: list(APIFileOffer.self)),
        APIRoute(.post, "/v1/files/offers/{id}", "Accepts or declines an offer", body: schema(APIOfferAnswer.self), answer: schema(APIOfferAnswered.self)),
        APIRoute(.post, "/v1/files/upload", "Sends a file of any size (the body's bytes) to a peer", status: 202,
                 query: [("to", "string", true), ("name", "string", true)], answer: schema(APITransfer.self)),
        APIRoute(.get, "/v1/files/{id}", "A file (or voice note) that came, as bytes; after a restart, found through its `conversation`",
                 query: [("conversation", "string", false)], answer: { .object(["type": .string("string"), "format": .string("binary")]) },
                 contentType: "application/octet-stream"),
        APIRoute(.post, "/v1/nickname", "Renames us", body: schema(APINickname.self), answer: schema(APINickname.self)),
        APIRoute(.get, "/v1/settings", "The settings in effect, saved, and set on the command line", answer: schema(APISettingsAnswer.self)),
        APIRoute(.put, "/v1/settings", "Saves settings for the next start", body: schema(APISettingsChange.self), answer: schema(APISettingsAnswer.self)),
        APIRoute(.get, "/v1/statistics", "The node's counters", answer: { .object(["type": .string("object")]) }),
        APIRoute(.post, "/v1/store/lock", "Locks the store", answer: schema(APIStoreState.self)),
        APIRoute(.put, "/v1/store/protection", "Sets a PIN or passphrase, or the key file again (the current one given)",
                 body: schema(APIProtectionChange.self), answer: schema(APIProtection.self)),
        APIRoute(.post, "/v1/store/backup", "Backs the store up now (a daily backup is made too; 7 are kept)", answer: schema(APIBackup.self)),
        APIRoute(.post, "/v1/store/restore", "Replaces the store with a backup (the newest good one, or `from`): messages after it are lost, the identity stays",
                 body: schema(APIRestore.self), answer: schema(APIRestored.self)),
        APIRoute(.post, "/v1/activity", "A person did something in this face: the auto-lock's idle time starts again", answer: schema(APIStoreState.self)),
        APIRoute(.post, "/v1/store/unlock", "Opens the store", body: schema(APIUnlock.self), answer: schema(APIStoreState.self)),
        APIRoute(.get, "/v1/stately", "Our Stately state and the peers'", answer: schema(APIStately.self)),
        APIRoute(.post, "/v1/stately", "Sets our state (or clears an SOS)", body: schema(APIStateChange.self), answer: schema(APIStateChange.self)),
        APIRoute(.get, "/v1/channels", "The location channels joined", answer: list(APIChannel.self)),
        APIRoute(.post, "/v1/channels/{geohash}", "Joins a location channel", answer: schema(APIJoined.self)),
        APIRoute(.delete, "/v1/channels/{geohash}", "Leaves a location channel", answer: schema(APILeft.self)),
        APIRoute(.post, "/v1/channels/{geohash}/messages", "Says something in a location channel", status: 202, body: schema(APIText.self),
                 answer: schema(APISent.self)),
        APIRoute(.get, "/v1/events", "The events, as server-sent events (`id: SEQ`, `data: ` an Event)", query: [("since", "integer", false)],
                 answer: { .object(["type": .string("string")]) }, contentType: "text/event-stream"),
        APIRoute(.get, "/v1/openapi.json", "This document", answer: { .object(["type": .string("object")]) }),
    ]
}

/// The API described as an OpenAPI 3.1 document, built from the contract's
/// types and routes (served at `/v1/openapi.json`, kept in docs/openapi.json).
public enum APIDocument {
    public static func openAPI() throws -> JSONValue {
        var paths: [String: [String: JSONValue]] = [:]
        let error = try APISchema.of(APIErrorAnswer.self)
        for r in APIRoute.all {
            var op: [String: JSONValue] = [
                "summary": .string(r.summary),
                "operationId": .string(operationID(r)),
            ]
            var parameters: [JSONValue] = []
            for part in r.path.split(separator: "/") where part.hasPrefix("{") {
                parameters.append(.object(["name": .string(String(part.dropFirst().dropLast())), "in": .string("path"), "required": .bool(true),
                                           "schema": .object(["type": .string("string")])]))
            }
            for q in r.query {
                parameters.append(.object(["name": .string(q.name), "in": .string("query"), "required": .bool(q.required),
                                           "schema": .object(["type": .string(q.type)])]))
            }
            if !parameters.isEmpty { op["parameters"] = .array(parameters) }
            if let body = r.body {
                op["requestBody"] = .object(["required": .bool(r.bodyRequired), "content": .object(["application/json": .object(["schema": try body()])])])
            } else if r.path == "/v1/files/upload" {
                op["requestBody"] = .object(["required": .bool(true),
                                             "content": .object(["application/octet-stream": .object(["schema": .object(["type": .string("string"),
                                                                                                                          "format": .string("binary")])])])])
            }
            op["responses"] = .object([
                String(r.status): .object(["description": .string(r.summary), "content": .object([r.contentType: .object(["schema": try r.answer()])])]),
                "default": .object(["description": .string("A refusal, in one sentence that says what to do"),
                                    "content": .object(["application/json": .object(["schema": error])])]),
            ])
            paths[r.path, default: [:]][r.method.rawValue] = .object(op)
        }
        var events: [JSONValue] = []
        var mapping: [String: JSONValue] = [:]
        var schemas: [String: JSONValue] = [:]
        for kind in APIEvent.kinds {
            guard let read = APIEvent.readers[kind] else { continue }
            guard case var .object(o) = try APISchema.recording({ _ = try read($0) }) else { continue }
            var properties: [String: JSONValue] = [:]
            if case let .object(p)? = o["properties"] { properties = p }
            properties["event"] = .object(["const": .string(kind)])
            o["properties"] = .object(properties)
            var required: [JSONValue] = [.string("event")]
            if case let .array(r)? = o["required"] { required += r }
            o["required"] = .array(required)
            let name = "Event_" + kind
            schemas[name] = .object(o)
            events.append(.object(["$ref": .string("#/components/schemas/" + name)]))
            mapping[kind] = .string("#/components/schemas/" + name)
        }
        schemas["Event"] = .object(["oneOf": .array(events), "discriminator": .object(["propertyName": .string("event"), "mapping": .object(mapping)])])
        return .object([
            "openapi": .string("3.1.0"),
            "info": .object(["title": .string("Starling's messenger API (the daemon's)"), "version": .string("1"),
                             "description": .string("docs/API.md explains; this document is the reference. Every call needs the bearer token (api.json).")]),
            "security": .array([.object(["token": .array([])])]),
            "components": .object([
                "securitySchemes": .object(["token": .object(["type": .string("http"), "scheme": .string("bearer")])]),
                "schemas": .object(schemas),
            ]),
            "paths": .object(paths.mapValues { .object($0) }),
        ])
    }

    /// The document as the daemon serves it (keys sorted, indented: docs/openapi.json is this).
    public static func json() throws -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        return try e.encode(try openAPI()) + Data("\n".utf8)
    }

    static func operationID(_ r: APIRoute) -> String {
        let words = r.path.dropFirst(4).split(separator: "/").map { part -> String in
            let w = part.hasPrefix("{") ? "by" + part.dropFirst().dropLast().capitalized : part.split(separator: ".").first.map(String.init) ?? ""
            return w.prefix(1).uppercased() + w.dropFirst()
        }
        return r.method.rawValue + words.joined()
    }
}
