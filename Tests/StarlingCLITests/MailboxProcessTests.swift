import Foundation
import StarlingTestSupport
import Testing

/// Issue 41, item 4, as processes: `starling yaok-server` as a courier
/// mailbox between two meshes on UDP loopback that never meet and have no
/// Nostr at all (a blackout with a LAN): a drop left in mesh A reaches a
/// peer who later joins mesh B.
@Suite(.serialized, .usesProcesses) struct MailboxProcessTests {
    /// A node of its own mesh (no discovery) that uses the mailbox.
    static func gate(_ name: String, mailbox: UInt16) throws -> LiveProcess {
        try LiveProcess(["listen", "--json", "--no-discovery", "--port", "0", "--name", name, "--duration", "120", "--announce-interval", "1",
                         "--data-dir", ContactCommandTests.temporaryDirectory(name), "--courier-mailbox", "127.0.0.1:\(mailbox)"])
    }

    /// Drops the mailbox's SQLite file holds (read with Python's sqlite3, as another process would).
    static func heldDrops(_ db: String) async throws -> Int {
        let python = NostrProcessTests.root.appendingPathComponent(".venv/bin/python")
        let r = try await StarlingProcess.run(executable: python, ["-c", """
            import sqlite3, sys
            print(sqlite3.connect(sys.argv[1]).execute("select count(*) from drops").fetchone()[0])
            """, db])
        return Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// Alice and bob met once (alice's store keeps bob's key). Bob leaves;
    /// alice's message for him becomes a courier drop that gateA carries and
    /// leaves at the mailbox. Bob turns up in mesh B: gateB fetches the drops
    /// for its peers' tags and hands it to him, once. The control: before
    /// bob is there, gateB has nothing to hand anyone, and mesh A and mesh B
    /// share no link (bob's message could come by no other way).
    @Test func aDropLeftAtTheMailboxInOneMeshReachesAPeerWhoLaterJoinsAnother() async throws {
        let dbDir = ContactCommandTests.temporaryDirectory("mailbox-db")
        try FileManager.default.createDirectory(atPath: dbDir, withIntermediateDirectories: true)
        let db = dbDir + "/relay.sqlite"
        let (server, serverPort) = try await ServerProcessTests.server(db: db)
        defer { server.stop() }
        let gateA = try Self.gate("mailGateA", mailbox: serverPort), gateB = try Self.gate("mailGateB", mailbox: serverPort)
        defer { gateA.stop(); gateB.stop() }
        defer { try? FileManager.default.removeItem(atPath: dbDir) }
        try await CourierProcessTests.aDropReachesBobInTheOtherMesh(gateA: gateA, nameA: "mailGateA", gateB: gateB, seconds: 90,
                                                                    nothingYet: { try await Self.heldDrops(db) == 0 },
                                                                    stored: { try await Self.heldDrops(db) == 1 })
        #expect(!gateA.text.contains("\"mailGateB\"") && !gateB.text.contains("\"mailGateA\""), "the meshes never met")
    }
}
