import Foundation
import StarlingTestSupport
import Testing

/// `starling status` between real processes on 127.0.0.1.
@Suite(.serialized, .usesProcesses) struct StatusCommandTests {
    /// A watcher that lives long enough for the slowest test (each test stops its processes).
    static func watcher(_ name: String, extra: [String] = [], peers: [UInt16] = []) throws -> LiveProcess {
        try LiveProcess(["status", "watch", "--json", "--no-discovery", "--port", "0", "--name", name, "--duration", "60",
                         "--data-dir", MeshProcessTests.dataDir()] + extra + peers.flatMap { ["--peer", "127.0.0.1:\($0)"] })
    }

    @Test func aStateCrossesARelayAndAnSOSIsClearedAtOnce() async throws {
        // carol watches; bob relays (a plain node); alice sets her state, then raises and clears an SOS.
        let carol = try Self.watcher("carol")
        defer { carol.stop() }
        let carolPort = try await MeshProcessTests.port(of: carol)
        // carol and bob outlive alice's run and dave's, however slow a loaded machine makes them.
        let bob = try MeshProcessTests.node("bob", peers: [carolPort], duration: 60)
        defer { bob.stop() }
        let bobPort = try await MeshProcessTests.port(of: bob)
        let alice = try LiveProcess(["status", "set", "working", "--json", "--no-discovery", "--port", "0", "--name", "alice",
                                     "--duration", "6", "--data-dir", MeshProcessTests.dataDir(), "--peer", "127.0.0.1:\(bobPort)"])
        defer { alice.stop() }
        let state = try #require(await carol.waitFor(seconds: 30) { $0["event"] as? String == "state" && $0["name"] as? String == "alice" },
                                 "carol:\n\(carol.text)\nbob:\n\(bob.text)\nalice:\n\(alice.text)")
        #expect(state["state"] as? String == "working")
        #expect(state["emoji"] as? String == "💼")
        #expect(state["hops"] as? Int == 2)                  // relayed by bob
        #expect(await bob.waitFor { $0["event"] as? String == "state" }?["hops"] as? Int == 1)
        #expect(await alice.waitForExit(seconds: 30) == 0)

        let sos = try LiveProcess(["status", "sos", "--json", "--no-discovery", "--port", "0", "--name", "dave",
                                   "--duration", "10", "--data-dir", MeshProcessTests.dataDir(), "--peer", "127.0.0.1:\(bobPort)"])
        defer { sos.stop() }
        let alert = try #require(await carol.waitFor(seconds: 30) { $0["event"] as? String == "sos" && $0["name"] as? String == "dave" })
        #expect(alert["hops"] as? Int == 2)
        sos.type("clear")
        let cleared = await carol.waitFor(seconds: 30) { $0["event"] as? String == "state" && $0["name"] as? String == "dave" && $0["state"] as? String == "available" }
        #expect(cleared != nil, "carol:\n\(carol.text)\ndave:\n\(sos.text)")
        #expect(await sos.waitForExit(seconds: 30) == 0)
    }

    @Test func anotherGroupSeesNothingTheSameGroupSeesAll() async throws {
        let outsider = try Self.watcher("outsider")
        defer { outsider.stop() }
        let outsiderPort = try await MeshProcessTests.port(of: outsider)
        let member = try Self.watcher("member", extra: ["--group", "hiking club"], peers: [outsiderPort])
        defer { member.stop() }
        let memberPort = try await MeshProcessTests.port(of: member)
        let setter = try LiveProcess(["status", "set", "traveling", "--group", "hiking club", "--no-discovery", "--port", "0",
                                      "--name", "erin", "--duration", "4", "--data-dir", MeshProcessTests.dataDir(),
                                      "--peer", "127.0.0.1:\(memberPort)", "--peer", "127.0.0.1:\(outsiderPort)"])
        defer { setter.stop() }
        let seen = await member.waitFor(seconds: 30) { $0["event"] as? String == "state" && $0["name"] as? String == "erin" }
        #expect(seen?["state"] as? String == "traveling", "member:\n\(member.text)")
        #expect(await setter.waitForExit(seconds: 30) == 0)
        #expect(!outsider.events.contains { $0["event"] as? String == "state" }, "outsider:\n\(outsider.text)")
    }

    @Test func badStatesAreRefused() async throws {
        let r = try await StarlingProcess.run(["status", "set", "dancing", "--no-discovery"])
        #expect(r.status != 0)
        #expect(r.stderr.contains("unknown state dancing"))
    }
}
