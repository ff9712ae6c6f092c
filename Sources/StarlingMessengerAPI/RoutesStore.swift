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

// The encrypted store: lock, unlock, its protection, and the activity that holds off the auto-lock.
extension APIServer {
    func addStoreRoutes(_ v1: RouterGroup<BasicRequestContext>) {
        let c = client, m = client.messenger
        v1.post("store/backup") { _, _ in
            let (path, kept) = try await Self.call { try await c.backup() }
            return try Self.answer(APIBackup(path: path, kept: kept))
        }
        v1.post("store/restore") { request, context in
            let body = try await request.decode(as: APIRestore.self, context: context)
            let used = try await Self.call { try await c.restore(from: body.from, secret: body.secret) }
            return try Self.answer(APIRestored(restoredFrom: used))
        }
        v1.post("store/lock") { _, _ in
            try await Self.call { try await c.lock() }
            return try Self.answer(APIStoreState(storeOpen: false))
        }
        v1.put("store/protection") { request, context in
            let body = try await request.decode(as: APIProtectionChange.self, context: context)
            let new: StoreProtection
            switch body.protection {
            case "none": new = .keyFile
            case "pin": new = .pin(body.secret ?? "")
            case "passphrase": new = .passphrase(body.secret ?? "")
            default: throw APIError(.badRequest, "protection is pin, passphrase or none")
            }
            try await Self.call { try await c.changeProtection(current: body.current, to: new) }
            return try Self.answer(APIProtection(protection: new.name))
        }
        v1.post("activity") { _, _ in
            try await Self.call { try await c.noteActivity() }
            return try Self.answer(APIStoreState(storeOpen: await m.isStoreOpen))
        }
        v1.post("store/unlock") { request, context in
            let body = try await request.decode(as: APIUnlock.self, context: context)
            try await Self.call { try await c.unlock(secret: body.secret) }
            return try Self.answer(APIStoreState(storeOpen: true))
        }
    }
}
