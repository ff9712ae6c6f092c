import Foundation
import StarlingMessenger
import StarlingMessengerAPI
import StarlingMessengerCore
import StarlingNode
import StarlingStore

/// The messenger a one-shot command (`contact`, `pin`, `backup`) asks, so
/// that no face goes around it into the store (issue 54): a running daemon's
/// on this data directory (its API, and every face sees the change at once),
/// else one started in this process on the directory, with no links and no
/// off-mesh transports, holding the directory as a node does while the command runs.
enum OneShot {
    /// Runs `body` with the data directory's messenger; `daemon` says whether it is a running daemon's.
    /// `opensStore`: the in-process one opens the store first (asking for its PIN on a terminal, or
    /// STARLING_PIN); `pin` leaves it closed (the protection changes open or locked), unless there
    /// is none yet (it is made, sealed with the key file, as any first use makes it).
    static func withMessenger<T>(dataDir: String?, opensStore: Bool = true,
                                 _ body: (_ client: any MessengerClient, _ daemon: Bool) async throws -> T) async throws -> T {
        let directory = DataDirectory(explicit: dataDir)
        if let api = await APIClient.find(directory: directory.url) {
            return try await call { try await body(APIMessengerClient(api), true) }
        }
        let ids = IdentityStore(directory: directory)
        ids.tightenPermissions()
        try UserError.writableDirectory(ids.directory)
        do {
            runningNodeLock = try DirectoryLock(ids.directory)
        } catch let held as DirectoryLock.Held {
            throw RuntimeFailure("a starling node\(held.pid.map { " (pid \($0))" } ?? "") runs on \(held.path) without a daemon, so this command cannot reach its messenger: use that chat (/contacts, /verify), or stop it and run this again")
        }
        let (identity, _) = try ids.loadOrCreate(passphrase: try Passphrase.forStoredKey(ids))
        var options = MeshNode.Options(nickname: ids.nickname(or: identity))
        options.udp = nil // no links: nothing leaves this process
        options.core.favorites = ids.favorites()
        var c = MessengerSession.Configuration()
        c.offMeshTransports = false
        c.tellsFavourites = false
        let session: MessengerSession
        do {
            session = try await MessengerSession.start(identityStore: ids, identity: identity, options: options, configuration: c) { directory, identity in
                opensStore || MessengerStore.protection(in: directory) == nil ? try StoreAccess.open(directory: directory, identity: identity) : nil
            }
        } catch let e as MessengerSession.StartError {
            throw RuntimeFailure(e.description)
        }
        // What the messenger could not write is said, never lost in silence.
        let events = try await session.client.events()
        let running = Task { await session.run() }
        let unsaved = Task { () -> [String] in
            var said: [String] = []
            do {
                for try await e in events {
                    if case let .notSaved(what) = e { said.append(what) }
                }
            } catch {}
            return said
        }
        let result: Result<T, any Error>
        do { result = .success(try await call { try await body(session.client, false) }) } catch { result = .failure(error) }
        await session.node.stop()
        await running.value
        let notSaved = await unsaved.value
        do { try await session.messenger.lock(reason: "the command is done") } catch {
            throw RuntimeFailure("the store did not close cleanly: \(error)")
        }
        if !notSaved.isEmpty { throw RuntimeFailure("not saved: \(notSaved.joined(separator: "; "))") }
        return try result.get()
    }

    /// A call whose refusal is said as the messenger words it.
    static func call<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let e as MessengerClientError { throw RuntimeFailure(e.description) }
    }
}
