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

// The node itself: its description, status, the mesh it sees, its name, settings, counters and Stately state.
extension APIServer {
    func addNodeRoutes(_ v1: RouterGroup<BasicRequestContext>) {
        let c = client, m = client.messenger, log = self.log
        // The API described (OpenAPI 3.1), built from the contract's types: docs/openapi.json is a copy.
        let document = Result { try APIDocument.json() }
        v1.get("openapi.json") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            let data: Data
            do { data = try document.get() } catch { throw APIError(.internalServerError, "the API's description could not be written: \(error)") }
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(data: data)))
        }
        v1.get("status") { _, _ in
            try Self.answer(APIJSON.summary(try await Self.call { try await c.summary() }, events: await log.lastSeq))
        }
        v1.get("mesh") { _, _ in try Self.answer(APIJSON.mesh(try await Self.call { try await c.mesh() }, me: m.node.identity.peerID)) }
        v1.post("nickname") { request, context in
            let body = try await request.decode(as: APINickname.self, context: context)
            try await Self.call { try await c.rename(body.nickname) }
            return try Self.answer(APINickname(nickname: await m.node.currentNickname))
        }
        let settings = configuration.settings, setOnCommandLine = configuration.setOnCommandLine, directory = configuration.directory
        @Sendable func settingsAnswer() throws -> Response {
            let saved = try Self.savedSettings(in: directory)
            // What the next start would run with: the saved ones, the command line's over them.
            var next = saved ?? NodeSettings()
            if setOnCommandLine.contains("server") { next.server = settings.server }
            if setOnCommandLine.contains("nostr") { next.nostr = settings.nostr }
            if setOnCommandLine.contains("proxy") { next.proxy = settings.proxy }
            return try Self.answer(APISettingsAnswer(inEffect: APIJSON.settings(settings), saved: saved.map(APIJSON.settings),
                                                     setOnCommandLine: setOnCommandLine.sorted(), restartNeeded: next != settings))
        }
        v1.get("settings") { _, _ in try settingsAnswer() }
        v1.put("settings") { request, context in
            let body = try await request.decode(as: APISettingsChange.self, context: context)
            var saved = try Self.savedSettings(in: directory) ?? settings
            // Absent: as saved; "server": "" or null: none.
            if let server = body.server { saved.server = server.isEmpty ? nil : server }
            if let nostr = body.nostr { saved.nostr = nostr }
            if let proxy = body.proxy { saved.proxy = proxy.isEmpty ? NodeSettings.defaultProxy : proxy }
            do { try saved.validate() } catch { throw APIError(.badRequest, "\(error)") }
            do { try saved.save(in: directory) } catch { throw APIError(.internalServerError, "\(error)") }
            return try settingsAnswer()
        }
        v1.get("statistics") { _, _ in
            let s = try await Self.call { try await c.statistics() }
            return try Self.answer(s)
        }
        v1.get("stately") { _, _ in try Self.answer(APIJSON.stately(try await Self.call { try await c.stately() })) }
        v1.post("stately") { request, context in
            let body = try await request.decode(as: APIStateChange.self, context: context)
            if body.state == "clear" {
                try await Self.call { try await c.clearSOS() }
            } else {
                guard let kind = StateKind(name: body.state) else {
                    throw APIError(.badRequest, "state is one of \(StateKind.allCases.map(\.rawValue).joined(separator: ", ")), or clear")
                }
                try await Self.call { try await c.setState(kind) }
            }
            return try Self.answer(APIStateChange(state: await m.node.status.rawValue))
        }
    }
}
