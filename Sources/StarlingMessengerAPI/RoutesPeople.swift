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
import StarlingMessengerCore
import StarlingNode
import StarlingNodeCore
import StarlingNostr
import StarlingQR
import StarlingStately
import StarlingWire
import StarlingYaOK
import StarlingStore

// People: the peers here, contacts and our card, trust decisions, names, strangers' requests.
extension APIServer {
    func addPeopleRoutes(_ v1: RouterGroup<BasicRequestContext>) {
        let c = client, m = client.messenger
        v1.get("peers") { _, _ in try Self.answer(try await Self.call { try await c.peers() }.map(APIJSON.peer)) }
        v1.get("peers/:peer/identity") { _, context in
            let peer = try Self.peer(context)
            guard let i = try await Self.call({ try await c.identity(ofPeer: peer) }) else {
                throw APIError(.notFound, "no key is known for peer \(peer)")
            }
            return try Self.answer(APIJSON.identity(i))
        }
        v1.post("peers/:peer/ping") { _, context in
            let peer = try Self.peer(context)
            try await Self.call { try await c.ping(peer) }
            return try Self.answer(APIPinged(pinged: peer.description), status: .accepted)
        }
        v1.get("contacts") { _, _ in
            let ours = try await Self.call { try await c.card() }
            return try Self.answer(try await Self.call { try await c.contacts() }.map { APIJSON.contact($0, ours: ours) })
        }
        v1.get("card") { _, _ in try Self.answer(APIJSON.card(try await Self.call { try await c.card() })) }
        v1.post("contacts") { request, context in
            var body = try await request.decode(as: APIAddContact.self, context: context)
            if body.uri == nil, let image = body.image {
                // A picture of their QR code (PNG), read here: the page needs no decoder of its own.
                guard let png = Data(base64Encoded: image) else { throw APIError(.badRequest, "image is a PNG picture, base64") }
                let found: [String]
                do { found = try QRCode.scan(png: [UInt8](png)) } catch { throw APIError(.badRequest, "no QR code was found in the picture (\(error))") }
                guard let uri = found.first(where: { $0.hasPrefix("yaok://") }) else { throw APIError(.badRequest, "the QR code in the picture is not a Ya OK contact") }
                body.uri = uri
            }
            if let npub = body.npub?.lowercased() {
                try await Self.call { try await c.addNostrContact(npub: npub, name: body.name ?? String(npub.prefix(12)) + "…") }
            } else if let uri = body.uri {
                let card: ContactCard
                do { card = try ContactCard(uri: uri) } catch { throw APIError(.badRequest, "not a contact code: \(error)") }
                try await Self.call { try await c.addContact(card, replace: body.replace ?? false) }
            } else {
                throw APIError(.badRequest, "give uri (a yaok:// link) or npub")
            }
            let ours = try await Self.call { try await c.card() }
            return try Self.answer(try await Self.call { try await c.contacts() }.map { APIJSON.contact($0, ours: ours) }, status: .created)
        }
        v1.delete("contacts/:id") { _, context in
            let id = try Self.conversation(context)
            try await Self.call { try await c.removeContact(id) }
            return try Self.answer(APIDeleted(deleted: id.description))
        }
        v1.get("trust") { _, _ in
            try Self.answer(try await Self.call { try await c.trust() }.sorted { $0.key < $1.key }.map { APIJSON.trust($0.value) })
        }
        v1.post("trust") { request, context in
            let body = try await request.decode(as: APITrustChange.self, context: context)
            guard let f = Fingerprint(hex: body.fingerprint.lowercased()) else { throw APIError(.badRequest, "a fingerprint is 64 hex digits") }
            if let v = body.nostrVariant {
                guard let variant = GiftWrap.Variant(rawValue: v) else { throw APIError(.badRequest, "nostrVariant is bitchat or standard") }
                guard try await Self.call({ try await c.setNostrVariant(variant, for: f) }) else {
                    throw APIError(.notFound, "no Nostr contact has this fingerprint")
                }
            }
            if let name = body.change {
                let aliases: [String: MessengerCore.TrustChange] = ["favorite": .favourite, "unfavorite": .unfavourite]
                guard let change = MessengerCore.TrustChange(rawValue: name) ?? aliases[name] else {
                    throw APIError(.badRequest, "change is one of \(MessengerCore.TrustChange.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                try await Self.call { try await c.decide(change, about: f, nickname: body.nickname) }
            } else if body.nostrVariant == nil {
                throw APIError(.badRequest, "give change (block, unblock, favourite, unfavourite, verify, unverify) or nostrVariant")
            }
            return try Self.answer(APITrustState(fingerprint: f.hex, blocked: await m.isBlocked(f), favorite: await m.isFavorite(f),
                                                 verified: await m.isVerified(f)))
        }
        v1.get("resolve") { request, _ in
            guard let name = request.uri.queryParameters.get("name"), !name.isEmpty else { throw APIError(.badRequest, "give ?name=NAME") }
            switch try await Self.call({ try await c.resolve(name) }) {
            case let .conversation(id): return try Self.answer(APIResolution(conversation: id.description))
            case let .ambiguous(names): return try Self.answer(APIResolution(ambiguous: names))
            case .none: throw APIError(.notFound, "no contact or peer called \(name)")
            }
        }
        // Strangers' messages over Nostr, waiting for an answer (docs/NOSTR.md, "Requests").
        v1.get("requests") { _, _ in try Self.answer(try await Self.call { try await c.requests() }.map(APIJSON.request)) }
        v1.post("requests/:npub/accept") { request, context in
            let body = try await request.decode(as: APIAcceptRequest.self, context: context), npub = try Self.named(context, "npub")
            try await Self.call { try await c.acceptRequest(npub, name: body.name) }
            return try Self.answer(APIAccepted(accepted: npub))
        }
        v1.post("requests/:npub/block") { _, context in
            let npub = try Self.named(context, "npub")
            try await Self.call { try await c.blockRequest(npub) }
            return try Self.answer(APIBlocked(blocked: npub))
        }
    }
}
