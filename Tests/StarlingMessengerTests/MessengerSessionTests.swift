import Foundation
import StarlingCrypto
import StarlingMessenger
import StarlingMessengerCore
import StarlingNode
import StarlingTransport
import StarlingWire
import StarlingTestSupport
import StarlingStore
import Testing

/// Issue 54, item 4: the composition root is the library's. An app embeds the
/// node the daemon runs by starting a `MessengerSession` on a data directory:
/// the settings it finds there decide, what the app sets wins, and the store
/// opens (or waits locked for its PIN) as the daemon's does.
@Suite struct MessengerSessionTests {
    static func directory(_ name: String) throws -> (IdentityStore, Identity) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("starling-session-\(name)-\(UUID().uuidString)").path
        let ids = IdentityStore(directory: DataDirectory(explicit: path))
        let (identity, _) = try ids.loadOrCreate()
        return (ids, identity)
    }

    static func options(_ name: String, _ transport: any Transport) -> MeshNode.Options {
        var o = MeshNode.Options(nickname: name)
        o.udp = nil
        o.transports = [transport]
        return o
    }

    @Test func twoEmbeddedSessionsTalkAsTwoDaemonsWould() async throws {
        let hub = InMemoryHub()
        let ta = hub.endpoint("a"), tb = hub.endpoint("b")
        let (aliceDir, aliceID) = try Self.directory("alice"), (bobDir, bobID) = try Self.directory("bob")
        defer { for d in [aliceDir, bobDir] { try? FileManager.default.removeItem(at: d.directory.url) } }
        let alice = try await MessengerSession.start(identityStore: aliceDir, identity: aliceID, options: Self.options("alice", ta))
        let bob = try await MessengerSession.start(identityStore: bobDir, identity: bobID, options: Self.options("bob", tb))
        // The store opened with its key file: the messenger knows its trust decisions before the node runs.
        let aliceOpen = await alice.messenger.isStoreOpen, bobOpen = await bob.messenger.isStoreOpen
        let bothOpen = aliceOpen && bobOpen
        #expect(bothOpen)
        #expect(alice.nostr == nil && alice.server == nil && alice.setByConfiguration.isEmpty, "nothing beside the node unless asked")
        let runners = [Task { await alice.run() }, Task { await bob.run() }]
        let bobHears = try await bob.client.events()
        hub.connect(ta, tb, maxFrame: 512)
        #expect(await waitUntil(seconds: 120) {
            if case .conversation = (try? await alice.client.resolve("bob")) ?? .none { true } else { false }
        })
        guard case let .conversation(toBob) = try await alice.client.resolve("bob") else {
            Issue.record("alice's messenger never knew bob: nothing was sent")
            return
        }
        _ = try await alice.client.send("embedded", to: toBob)
        // What bob's messenger says first of a private message, within a bound.
        let first = Task { () -> (String, String)? in
            for try await e in bobHears {
                if case let .privateMessage(_, record, _, name, _, _, _) = e { return (record.text, name) }
            }
            return nil
        }
        let deadline = Task {
            try await Task.sleep(for: .seconds(120))
            first.cancel()
        }
        let heard = try? await first.value
        deadline.cancel()
        #expect(heard?.1 == "alice")
        let got = heard?.0
        #expect(got == "embedded")
        for s in [alice, bob] { await s.node.stop() }
        for r in runners { await r.value }
    }

    @Test func theDirectorysSettingsDecideAndTheConfigurationWins() async throws {
        let (ids, identity) = try Self.directory("settings")
        defer { try? FileManager.default.removeItem(at: ids.directory.url) }
        try NodeSettings(server: "127.0.0.1:9", nostr: false, proxy: "127.0.0.1:9050").save(in: ids.directory.url)
        let hub = InMemoryHub()
        // The saved server is started (a mailbox beside the node) …
        let saved = try await MessengerSession.start(identityStore: ids, identity: identity, options: Self.options("a", hub.endpoint("a")))
        #expect(saved.server != nil && saved.settings.server == "127.0.0.1:9" && saved.setByConfiguration.isEmpty)
        try await saved.messenger.lock()
        // … and one the app names wins over it, said as set by the configuration.
        var c = MessengerSession.Configuration()
        c.server = "127.0.0.1:10"
        let chosen = try await MessengerSession.start(identityStore: ids, identity: identity, options: Self.options("a", hub.endpoint("b")), configuration: c)
        #expect(chosen.settings.server == "127.0.0.1:10" && chosen.setByConfiguration == ["server"])
        try await chosen.messenger.lock()
    }

    @Test func aStoreWithAPINWaitsLockedForAFace() async throws {
        let (ids, identity) = try Self.directory("pin")
        defer { try? FileManager.default.removeItem(at: ids.directory.url) }
        // The control: with its key file it opens at the start.
        let hub = InMemoryHub()
        let first = try await MessengerSession.start(identityStore: ids, identity: identity, options: Self.options("p", hub.endpoint("a")))
        #expect(await first.messenger.isStoreOpen)
        try await first.messenger.lock()
        try MessengerStore.changeProtection(directory: ids.directory.url, from: .keyFile(identity), to: .pin("4711"))
        let again = try await MessengerSession.start(identityStore: ids, identity: identity, options: Self.options("p", hub.endpoint("b")))
        #expect(await !again.messenger.isStoreOpen, "a PIN no one typed: locked")
        try await again.client.unlock(secret: "4711")
        #expect(await again.messenger.isStoreOpen, "a face opened it")
    }
}
