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

// What everyone here sees: the board and location channels.
extension APIServer {
    func addPublicRoutes(_ v1: RouterGroup<BasicRequestContext>) {
        let c = client
        v1.get("board") { _, _ in
            try Self.answer(try await Self.call { try await c.boardPosts() }.map(APIJSON.boardEntry))
        }
        v1.post("board") { request, context in
            let body = try await request.decode(as: APIBoardPostRequest.self, context: context)
            let post = try await Self.call { try await c.postToBoard(body.text, urgent: body.urgent ?? false, days: body.days ?? 1) }
            return try Self.answer(APIJSON.boardEntry(BoardEntry(post: post, author: await c.node.currentNickname, ours: true)), status: .created)
        }
        v1.delete("board/:id") { _, context in
            let id = try context.parameters.require("id")
            try await Self.call { try await c.deleteBoardPost(id) }
            return try Self.answer(APIDeleted(deleted: id))
        }
        v1.get("channels") { _, _ in try Self.answer(try await Self.call { try await c.channels() }.map { APIChannel(geohash: $0) }) }
        v1.post("channels/:geohash") { _, context in
            let name = try context.parameters.require("geohash")
            return try Self.answer(APIJoined(joined: try await Self.call { try await c.join(channel: name) }))
        }
        v1.delete("channels/:geohash") { _, context in
            let name = try context.parameters.require("geohash")
            try await Self.call { try await c.leave(channel: name) }
            return try Self.answer(APILeft(left: name.lowercased()))
        }
        v1.post("channels/:geohash/messages") { request, context in
            let g = try context.parameters.require("geohash")
            let body = try await request.decode(as: APIText.self, context: context)
            try await Self.call { try await c.say(body.text, in: g) }
            return try Self.answer(APISent(sent: true), status: .accepted)
        }
    }
}
