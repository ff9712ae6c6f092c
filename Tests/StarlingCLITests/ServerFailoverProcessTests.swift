import Foundation
import StarlingTestSupport
import StarlingTransport
import StarlingYaOKClient
import StarlingYaOKServerPostgres
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 57 item 4: three `starling yaok-server` processes on one PostgreSQL,
/// clients that know all three. The server both clients use is SIGKILLed
/// mid-load: each client moves to the next address and registers there, what
/// the sender had not been answered QUEUED for goes there, and every message
/// the sender was answered QUEUED for reaches the recipient; none is stored twice.
@Suite(.serialized, .usesProcesses) struct ServerFailoverProcessTests {
    @Test func aServerKilledUnderLoadLeavesItsClientsToTheNextAndNothingIsLost() async throws {
        let pg = try PostgresCluster()
        defer { pg.stop() }
        var servers: [(LiveProcess, UInt16)] = []
        for _ in 0..<3 {
            let p = try LiveProcess(["yaok-server", "--bind", "127.0.0.1", "--port", "0", "--postgres", pg.url, "--json", "--duration", "300"])
            let started = try #require(await p.waitFor(seconds: 60) { $0["event"] as? String == "started" }, "\(p.text)")
            servers.append((p, UInt16(try #require(started["port"] as? Int))))
        }
        defer { for (p, _) in servers { p.stop() } }
        let load = try FailoverLoad(addresses: servers.map { UDPAddress.loopback($0.1) }, lostAfter: 4_000)
        await load.start()
        #expect(await FailoverLoad.waitFor(seconds: 60) { load.registrations == [1, 1] }, "\(load.summary)")
        try await load.send(100, gap: .milliseconds(20)) {
            kill(servers[0].0.process.processIdentifier, SIGKILL) // mid-load, with commits under way
        }
        #expect(await FailoverLoad.waitFor(seconds: 180) { load.answered == load.sent.count }, "\(load.summary)")
        #expect(load.allQueued, "every message QUEUED, none failed: \(load.summary)")
        // Every message answered QUEUED reaches bob (one offered again, its ACK lost with the killed server, is the same ID).
        #expect(await FailoverLoad.waitFor(seconds: 180) { load.allReceived }, "\(load.summary)")
        // Moved off the killed server (once, to the next, on an idle machine; a loaded one may take a live server for lost too).
        let (moves, recipientMoves, at, recipientAt) = (await load.sender.moves, await load.recipient.moves, await load.sender.address,
                                                        await load.recipient.address)
        #expect(moves >= 1 && recipientMoves >= 1 && at != load.addresses[0] && recipientAt != load.addresses[0],
                "\(moves), \(recipientMoves), \(at), \(recipientAt)")
        #expect(load.registrations.allSatisfy { $0 >= 2 }, "\(load.summary)")
        // Stored once each, and taken: nothing left queued once bob acknowledged them all.
        let store = try await PostgresServerStore(url: pg.url)
        defer { store.close() }
        let emptied = await FailoverLoad.waitFor(seconds: 60) { (try? await store.counts().queued) == 0 }
        let counts = try await store.counts()
        #expect(emptied, "\(counts.queued) left queued")
        await load.stop()
    }
}
