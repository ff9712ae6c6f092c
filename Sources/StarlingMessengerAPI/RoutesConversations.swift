import Foundation
import StarlingAPIContract
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import StarlingBulkTransport
import StarlingCrypto
import StarlingMessenger
import StarlingNode
import StarlingNodeCore
import StarlingNostr
import StarlingQR
import StarlingStately
import StarlingWire
import StarlingYaOK
import StarlingStore

// Conversations: a person's or a group's, their history, sending, groups.
extension APIServer {
    func addConversationsRoutes(_ v1: RouterGroup<BasicRequestContext>) {
        let c = client, m = client.messenger
        v1.get("conversations") { _, _ in try Self.answer(try await Self.call { try await c.conversations() }.map(APIJSON.conversation)) }
        v1.post("conversations") { request, context in
            let body = try await request.decode(as: APIOpenConversation.self, context: context)
            let id: UserID
            if let text = body.peerID {
                guard let peer = PeerID(hex: text) else { throw APIError(.badRequest, "a peer ID is 16 hex digits") }
                guard let found = try await Self.call({ try await c.conversation(withPeer: peer) }) else {
                    throw APIError(.notFound, "no key is known for peer \(peer)")
                }
                id = found
            } else if let hex = body.fingerprint {
                guard let f = Fingerprint(hex: hex.lowercased()) else { throw APIError(.badRequest, "a fingerprint is 64 hex digits") }
                id = try await Self.call { try await c.conversation(withKey: f) }
            } else {
                throw APIError(.badRequest, "give peerID or fingerprint")
            }
            return try Self.answer(APIJSON.conversation(try await Self.call { try await c.conversation(id) }))
        }
        v1.get("conversations/:id") { _, context in
            let id = try Self.conversation(context)
            return try Self.answer(APIJSON.conversation(try await Self.call { try await c.conversation(id) }))
        }
        v1.get("conversations/:id/messages") { request, context in
            let id = try Self.conversation(context)
            let limit = try Self.query(request, "limit", as: Int.self).map { min(max(1, $0), 1_000) } ?? 200
            let before = try Self.query(request, "before", as: Int64.self)
            if let text = try Self.query(request, "search", as: String.self) {
                guard !text.isEmpty, text.count <= 200 else { throw APIError(.badRequest, "search is the text to find (1 to 200 characters)") }
                return try Self.answer(try await Self.call { try await c.search(id, for: text, limit: limit, before: before) }.map(APIJSON.message))
            }
            return try Self.answer(try await Self.call { try await c.history(id, limit: limit, before: before) }.map(APIJSON.message))
        }
        v1.post("conversations/:id/seen") { request, context in
            let id = try Self.conversation(context)
            // (No body, or {}: everything in it.)
            let bytes = try await request.body.collect(upTo: 4_096)
            var body: APISeen?
            if bytes.readableBytes > 0 {
                do { body = try JSONDecoder().decode(APISeen.self, from: Data(bytes.readableBytesView)) } catch {
                    throw APIError(.badRequest, "the body is {\"through\": MESSAGE_ID} or nothing")
                }
            }
            var last: UserID?
            if let text = body?.through {
                guard let u = UserID(string: text) else { throw APIError(.badRequest, "through is a message's id (a UUID)") }
                last = u
            }
            try await Self.call { try await c.markSeen(id, through: last) }
            return try Self.answer(APIUnread(unread: await m.unreadCount(id)))
        }
        v1.post("messages") { request, context in
            let body = try await request.decode(as: APISendMessage.self, context: context)
            let id: UserID
            switch try await Self.call({ try await c.resolve(body.to) }) {
            case let .conversation(c): id = c
            case let .ambiguous(names): throw APIError(.conflict, "\(names.count) are called \(body.to): \(names.joined(separator: ", ")); say which")
            case .none: throw APIError(.notFound, "no contact or peer called \(body.to)")
            }
            return try Self.answer(APIJSON.message(try await Self.call { try await c.send(body.text, to: id) }), status: .created)
        }
        v1.post("public") { request, context in
            let body = try await request.decode(as: APIText.self, context: context)
            try await Self.call { try await c.sendPublic(body.text) }
            return try Self.answer(APISent(sent: true), status: .accepted)
        }
        // Private groups (docs/PROTOCOL.md, "Groups"): a group is named by its name or its ID's first digits.
        v1.get("groups") { _, _ in try Self.answer(try await Self.call { try await c.groups() }.map(APIJSON.group)) }
        v1.post("groups") { request, context in
            let body = try await request.decode(as: APICreateGroup.self, context: context)
            return try Self.answer(APIJSON.group(try await Self.call { try await c.createGroup(body.name, members: body.members ?? []) }), status: .created)
        }
        v1.post("groups/:group/members") { request, context in
            let body = try await request.decode(as: APINickname.self, context: context), group = try Self.named(context, "group")
            try await Self.call { try await c.inviteToGroup(group, member: body.nickname) }
            return try Self.answer(APIInvited(invited: body.nickname))
        }
        v1.delete("groups/:group/members/:nickname") { _, context in
            let group = try Self.named(context, "group"), nick = try Self.named(context, "nickname")
            try await Self.call { try await c.removeFromGroup(group, member: nick) }
            return try Self.answer(APIRemoved(removed: nick))
        }
        v1.delete("groups/:group") { _, context in
            let group = try Self.named(context, "group")
            try await Self.call { try await c.leaveGroup(group) }
            return try Self.answer(APILeft(left: group))
        }
        v1.post("groups/:group/messages") { request, context in
            let body = try await request.decode(as: APIText.self, context: context), group = try Self.named(context, "group")
            return try Self.answer(APIJSON.message(try await Self.call { try await c.sendToGroup(group, text: body.text) }), status: .created)
        }
    }
}
