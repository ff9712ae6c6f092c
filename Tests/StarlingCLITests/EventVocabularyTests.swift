import Foundation
import StarlingAPIContract
import StarlingMessengerAPI
import StarlingTestSupport
import Testing

/// Issue 54: one event vocabulary. `listen --json` prints the same objects in
/// process and through a daemon for the same scenario: carol, a peer, sends
/// alice a private message; alice is first a node of her own (`listen`), then
/// a daemon on the same data directory followed by `listen --json`.
@Suite(.serialized, .usesProcesses) struct EventVocabularyTests {
    /// Fields that differ between two runs of one scenario by nature (a port, a
    /// clock, a message's own ID); everything else must be byte-identical.
    static let volatile: Set<String> = ["port", "messageID", "id", "recordedAt", "timestamp"]

    static func normalized(_ o: [String: Any]) -> String {
        func strip(_ v: Any) -> Any {
            if let d = v as? [String: Any] {
                return d.filter { !volatile.contains($0.key) }.mapValues(strip)
            }
            if let a = v as? [Any] { return a.map(strip) }
            return v
        }
        let data = (try? JSONSerialization.data(withJSONObject: strip(o), options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// carol's one private message to alice at `port`, from carol's own data directory.
    static func carolWrites(to port: UInt16, carol: String) async throws {
        let sent = try await StarlingProcess.run(["send", "--json", "--no-discovery", "--port", "0", "--peer", "127.0.0.1:\(port)", "--name", "carol",
                                                  "--announce-interval", "1", "--data-dir", carol, "--to", "alice", "--linger", "20", "hello alice"])
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
    }

    /// What alice's listener printed of the scenario, normalized: her start, carol's
    /// arrival, their session and the message (and no sequence number anywhere).
    static func scenario(_ listener: LiveProcess) async throws -> [String: String] {
        let message = try #require(await listener.waitFor(seconds: 60) { $0["event"] as? String == "privateMessage" && $0["text"] as? String == "hello alice" },
                                   "\(listener.text)")
        var out = ["privateMessage": normalized(message)]
        for kind in ["started", "session", "peer"] {
            let e = try #require(listener.events.first { $0["event"] as? String == kind && (kind == "started" || $0["nickname"] as? String == "carol") },
                                 "no \(kind): \(listener.text)")
            out[kind] = normalized(e)
        }
        #expect(!listener.events.contains { $0["seq"] != nil }, "\(listener.text)")
        return out
    }

    @Test func listenJSONIsTheSameInProcessAndThroughADaemon() async throws {
        let alice = ContactCommandTests.temporaryDirectory("vocabulary-alice"), carol = ContactCommandTests.temporaryDirectory("vocabulary-carol")
        defer { for d in [alice, carol] { try? FileManager.default.removeItem(atPath: d) } }

        // 1. alice's own node: `listen --json`.
        let node = try LiveProcess(["listen", "--json", "--no-discovery", "--port", "0", "--name", "alice", "--announce-interval", "1",
                                    "--duration", "120", "--data-dir", alice])
        defer { node.stop() }
        try await Self.carolWrites(to: try await MeshProcessTests.port(of: node), carol: carol)
        let inProcess = try await Self.scenario(node)
        node.stop()
        let inProcessText = node.text

        // 2. A daemon on the same directory, and `listen --json` through it.
        let daemon = try DaemonProcessTests.daemon(alice, name: "alice")
        defer { daemon.stop() }
        let (url, token, _) = try await DaemonProcessTests.info(alice, daemon)
        let api = APIClient(host: try #require(url.host), port: try #require(url.port), token: token)
        let udp = UInt16(try #require((try await api.get("/v1/status") as? [String: Any])?["udpPort"] as? Int))
        let listener = try LiveProcess(["listen", "--json", "--data-dir", alice, "--duration", "120"])
        defer { listener.stop() }
        #expect(await listener.waitFor { $0["event"] as? String == "started" } != nil, "\(listener.text)")
        try await Self.carolWrites(to: udp, carol: carol)
        let throughDaemon = try await Self.scenario(listener)

        for kind in inProcess.keys.sorted() {
            #expect(inProcess[kind] == throughDaemon[kind], "\(kind): in process \(inProcess[kind] ?? "-"), through the daemon \(throughDaemon[kind] ?? "-")")
        }
        // The control: the comparison sees a difference where there is one (carol's name).
        #expect(inProcess["peer"] != inProcess["peer"]?.replacingOccurrences(of: "carol", with: "carla"))
        // Each object reads as the contract's event, and is one of the OpenAPI document's
        // (checked by openapi-schema-validator); a wrong one is refused (the control).
        for line in listener.text.split(separator: "\n") where line.hasPrefix("{") {
            #expect(throws: Never.self) { try APIEvent.decoding(Data(line.utf8)) }
        }
        let doc = PythonEnvironment.root.appendingPathComponent("docs/openapi.json").path
        let valid = try await PythonEnvironment.run("api_contract.py", ["events", doc], input: Data((inProcessText + listener.text).utf8))
        #expect(valid.hasPrefix("ok: "), "\(valid)")
        let wrong = try await StarlingProcess.run(executable: try PythonEnvironment.require(),
                                                  [PythonEnvironment.root.appendingPathComponent("Tests/interop/api_contract.py").path, "events", doc],
                                                  stdin: Data(#"{"event":"peer","peerID":"a1b2c3d4e5f60718","nickname":"x","hops":"two"}"#.utf8))
        #expect(wrong.status == 1 && wrong.stdout.contains("not an Event"), "\(wrong.stdout)\(wrong.stderr)")
    }
}
