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

// Files: small ones as JSON, any size as a body, offers, what came.
extension APIServer {
    func addFilesRoutes(_ v1: RouterGroup<BasicRequestContext>) {
        let c = client
        v1.post("files") { request, context in
            let body = try await request.decode(as: APISendFile.self, context: context)
            guard let peer = PeerID(hex: body.to) else { throw APIError(.badRequest, "to is a peer ID (16 hex digits)") }
            guard let content = Data(base64Encoded: body.content) else { throw APIError(.badRequest, "content is base64") }
            guard !body.name.isEmpty, !body.name.contains("/") else { throw APIError(.badRequest, "name is a file name without a path") }
            let id = try await Self.call { try await c.sendFile(name: body.name, content: [UInt8](content), to: peer) }
            return try Self.answer(APITransfer(transferID: id, size: content.count), status: .accepted)
        }
        v1.get("files/offers") { _, _ in
            try Self.answer(try await Self.call { try await c.fileOffers() }.map(APIJSON.fileOffer))
        }
        v1.post("files/offers/:id") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.decode(as: APIOfferAnswer.self, context: context)
            try await Self.call { try await c.answerFileOffer(id, accept: body.accept) }
            return try Self.answer(APIOfferAnswered(transferID: id, accepted: body.accept))
        }
        // A file of any size as the request's body, streamed to files/outgoing
        // (never held in memory), then sent as `send --file` sends it.
        let outgoing = configuration.directory.appendingPathComponent("files/outgoing", isDirectory: true)
        let uploads = self.uploads, maxUpload = configuration.maxUpload
        v1.post("files/upload") { request, _ in
            guard let to = request.uri.queryParameters["to"].map(String.init), let peer = PeerID(hex: to) else {
                throw APIError(.badRequest, "to is a peer ID (16 hex digits)")
            }
            guard let name = request.uri.queryParameters["name"].map(String.init), !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
                throw APIError(.badRequest, "name is a file name without a path")
            }
            let file = try await uploads.receive(request.body, name: name, into: outgoing, limit: maxUpload)
            do {
                let id = try await Self.call { try await c.sendFile(at: file.url, to: peer) }
                await uploads.sending(id, file.url)
                return try Self.answer(APITransfer(transferID: id, size: file.size), status: .accepted)
            } catch {
                try? FileManager.default.removeItem(at: file.url.deletingLastPathComponent()) // not sent: not kept
                throw error
            }
        }
        let received = self.received
        let incoming = configuration.directory.appendingPathComponent("files/incoming").standardizedFileURL.resolvingSymlinksInPath().path + "/"
        let m = messenger
        v1.get("files/:id") { request, context in
            // A file that came, as bytes to save: never shown as what it says it is.
            let id = try context.parameters.require("id")
            var found = await received.path(id)
            if found == nil, let named = try Self.query(request, "conversation", as: String.self) {
                // After a restart: the conversation's history says where it was saved.
                guard let conversation = UserID(string: named) else { throw APIError(.badRequest, "conversation is a conversation's ID (a UUID)") }
                found = try await Self.call { try await m.receivedFile(id, in: conversation) }?.path
            }
            guard let path = found else { throw APIError(.notFound, "no file came with transfer ID \(id)") }
            let real = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
            guard real.hasPrefix(incoming), let bytes = FileManager.default.contents(atPath: real) else {
                throw APIError(.notFound, "the file of transfer \(id) is no longer in files/incoming")
            }
            var headers = HTTPFields()
            headers[.contentType] = "application/octet-stream"
            headers[HTTPField.Name("Content-Disposition")!] = "attachment; filename=\"\(Self.safeName(URL(fileURLWithPath: real).lastPathComponent))\""
            headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
            headers[HTTPField.Name("Content-Security-Policy")!] = "default-src 'none'; sandbox"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(data: bytes)))
        }
    }
}
