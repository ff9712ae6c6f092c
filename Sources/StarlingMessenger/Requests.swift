import StarlingCrypto
import StarlingMessengerCore
import StarlingNostr
import StarlingYaOK

// The requests of strangers (their rules: StarlingMessengerCore/StrangerRequests.swift), for the faces.
extension LocalMessengerClient {
    public func requests() async throws -> [StrangerRequest] { await messenger.strangerRequests }
    public func acceptRequest(_ npub: String, name: String) async throws { try await messenger.acceptRequest(npub, name: name) }
    public func blockRequest(_ npub: String) async throws { try await messenger.blockRequest(npub) }
}

extension Messenger {
    /// The requests waiting, the most recent first.
    public var strangerRequests: [StrangerRequest] { requestsNow() }

    /// Accepts a request (by npub or key): a contact named `name`, its messages in their conversation.
    public func acceptRequest(_ who: String, name: String) async throws(MessengerClientError) {
        guard let r = findRequest(who) else { throw MessengerClientError(.notFound, "no request from \(who) waits (`/requests` lists them)") }
        let name = name.trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { throw MessengerClientError(.badRequest, "give a name for them") }
        do { try await addNostrContact(npub: r.npub, name: name) } catch {
            throw MessengerClientError(.conflict, Self.reason(error, directory: directory))
        }
        await answered { $0.acceptRequest(r.publicKey, name: name, now: Self.now) }
    }

    /// Blocks a request's sender (by npub or key): nothing from them is shown again.
    public func blockRequest(_ who: String) async throws(MessengerClientError) {
        guard let r = findRequest(who) else { throw MessengerClientError(.notFound, "no request from \(who) waits (`/requests` lists them)") }
        guard let f = try? NostrContacts.key(npub: r.npub) else { throw MessengerClientError(.badRequest, "\(who) is not an npub") }
        let record = TrustRecord(fingerprint: f.hex, nickname: String(r.npub.prefix(16)) + "…", blocked: true, updatedAt: Self.now, npub: r.npub,
                                 nostrVariant: "standard", favoritesUs: nil)
        do { try storeTrust(record) } catch { throw MessengerClientError(.conflict, Self.reason(error, directory: directory)) }
        await answered { $0.dropRequest(r.publicKey) }
    }
}
