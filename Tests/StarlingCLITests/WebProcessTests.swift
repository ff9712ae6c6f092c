import Foundation
import StarlingMessengerAPI
import StarlingNostr
import StarlingTestSupport
import Testing

/// `starling web` as two people meet it: two daemons, each serving the page,
/// two headless Chromium browsers driven by Selenium (Tests/web/web_check.py):
/// public both ways, a private message to "read" only once it is opened, a
/// hostile nickname shown as text, a wrong token refused. Screenshots go to
/// .build/screenshots.
@Suite(.serialized, .usesProcesses) struct WebProcessTests {
    static func web(_ dir: String, name: String, peer: UInt16? = nil, _ extra: [String] = []) throws -> LiveProcess {
        try LiveProcess(["web", "--no-discovery", "--port", "0", "--name", name, "--announce-interval", "1", "--data-dir", dir]
                        + (peer.map { ["--peer", "127.0.0.1:\($0)"] } ?? []) + extra)
    }

    static func link(_ p: LiveProcess) async throws -> String {
        #expect(await p.waitForText("web: open http"), "\(p.text)")
        let line = try #require(p.text.split(separator: "\n").first { $0.hasPrefix("web: open ") }, "\(p.text)")
        return String(line.dropFirst("web: open ".count))
    }

    @Test func twoPeopleInTwoBrowsers() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver"),
                     "Chromium and its driver are test dependencies: run scripts/install-deps --test")
        let (a, b) = (ContactCommandTests.temporaryDirectory("web-alice"), ContactCommandTests.temporaryDirectory("web-bob"))
        defer { for d in [a, b] { try? FileManager.default.removeItem(atPath: d) } }
        // Both take large files over the network; bob asks about any above 1 MiB.
        let alice = try Self.web(a, name: "alice", peer: nil, ["--bulk", "--bulk-host", "127.0.0.1"])
        defer { alice.stop() }
        let aliceLink = try await Self.link(alice)
        #expect(aliceLink.hasPrefix("http://127.0.0.1:") && aliceLink.contains("/#token="), "\(aliceLink)")
        // The link's token is the API's: without it, the API refuses; the page itself needs none.
        let base = try #require(URL(string: String(aliceLink.prefix { $0 != "#" })))
        let token = String(try #require(aliceLink.split(separator: "=").last))
        let api = APIClient(host: try #require(base.host), port: try #require(base.port), token: token)
        let status = try #require(try await api.get("/v1/status") as? [String: Any])
        let udp = try #require(status["udpPort"] as? Int)
        let page = try await APIClient(host: try #require(base.host), port: try #require(base.port), token: "").raw(.GET, "/")
        #expect(page.status == 200 && String(decoding: page.body, as: UTF8.self).contains("<textarea id=\"message\""))
        #expect(try await APIClient(host: try #require(base.host), port: try #require(base.port), token: "").raw(.GET, "/v1/status").status == 401)
        let bob = try Self.web(b, name: "bob", peer: UInt16(udp), ["--bulk", "--bulk-host", "127.0.0.1", "--accept-up-to", "1"])
        defer { bob.stop() }
        let bobLink = try await Self.link(bob)
        // A second `starling web` on alice's directory finds her daemon and prints the same link.
        let again = try await StarlingProcess.run(["web", "--data-dir", a])
        #expect(again.status == 0 && again.stdout.contains(aliceLink), "\(again.stdout)\(again.stderr)")

        // Bob's QR code as a picture, for alice's page to read.
        let qr = b + "/bob-qr.png"
        let made = try await StarlingProcess.run(["contact", "qr", "--data-dir", b, "--png", qr])
        #expect(made.status == 0, "\(made.stderr)")
        let shots = PythonEnvironment.root.appendingPathComponent(".build/screenshots")
        try FileManager.default.createDirectory(at: shots, withIntermediateDirectories: true)
        let out = try await PythonEnvironment.run(PythonEnvironment.root.appendingPathComponent("Tests/web/web_check.py").path,
                                                  [aliceLink, bobLink, StarlingProcess.executable.path, String(udp), shots.path, qr, a], seconds: 240)
        #expect(out.contains("all checks passed"), "\(out)")
        #expect(!out.contains("FAIL"), "\(out)")
        for name in ["web-mesh.png", "web-private.png", "web-wrong-token.png", "web-contacts.png", "web-sos.png", "web-blocked.png", "web-file.png", "web-offer.png", "web-group.png", "web-narrow.png"]
            + ["light", "dark"].flatMap({ scheme in [360, 800, 1280].map { "web-\(scheme)-\($0).png" } }) {
            #expect(FileManager.default.fileExists(atPath: shots.appendingPathComponent(name).path), "no screenshot \(name)")
        }
    }

    /// A long conversation (2,400 private messages) on bob's page: the
    /// newest page, then older pages from the API as he scrolls back to the
    /// first, never more than 1,000 lines held, and the newest again at the end
    /// (Tests/web/web_history.py).
    @Test func aLongConversationScrollsBackInPages() async throws {
        try Self.requireChromium()
        let p = try await Self.pair("long", "alice", "bob")
        defer { p.stop() }
        let (aliceLink, bobLink) = (p.firstLink, p.secondLink)
        let out = try await PythonEnvironment.run(PythonEnvironment.root.appendingPathComponent("Tests/web/web_history.py").path,
                                                  [aliceLink, bobLink, "2400"], seconds: 420)
        #expect(out.contains("all checks passed") && !out.contains("FAIL"), "\(out)")
    }

    /// Voice notes and pictures on the page (Tests/web/web_media.py): an
    /// independent speaker (FFmpeg's AAC through PyAV, a Noise session of
    /// `noiseprotocol`'s) sends bob a private voice note and alice's daemon a
    /// picture; bob's page plays the one (Chromium decodes it: ~2 s) and shows
    /// the other, live and again from the history after bob's daemon restarts.
    /// Both daemons as README starts them (no flags but the test's own).
    @Test func aVoiceNoteAndAPictureStayOnThePageAcrossARestart() async throws {
        try Self.requireChromium()
        let p = try await Self.pair("media", "bob", "alice")
        defer { p.stop() }
        var bob = p.first
        defer { bob.stop() } // (whichever bob runs then)
        let (bobLink, bobUDP, aliceLink, b) = (p.firstLink, p.firstUDP, p.secondLink, p.dirs.first)
        let shots = PythonEnvironment.root.appendingPathComponent(".build/screenshots")
        try FileManager.default.createDirectory(at: shots, withIntermediateDirectories: true)
        let script = PythonEnvironment.root.appendingPathComponent("Tests/web/web_media.py").path
        // The live checks, then bob's daemon restarted under the open page (the script waits for the marker).
        let marker = b + "/restarted"
        let live = LiveProcess.unstarted([try PythonEnvironment.require().path, script, "live", bobLink, String(bobUDP), aliceLink, shots.path, marker])
        try live.start()
        defer { live.stop() }
        #expect(await live.waitForText("restart now", seconds: 180), "\(live.text)")
        bob.stop()
        bob = try Self.web(b, name: "bob")
        #expect(try await Self.link(bob) == bobLink, "the daemon keeps its address and token across a restart")
        #expect(FileManager.default.createFile(atPath: marker, contents: Data()))
        #expect(await live.waitForExit(seconds: 180) == 0, "\(live.text)")
        #expect(live.text.contains("all checks passed") && !live.text.contains("FAIL"), "\(live.text)")
        #expect(live.text.components(separatedBy: "\nok   ").count >= 12, "every check ran: \(live.text)")
        let again = try await PythonEnvironment.run(script, ["history", try await Self.link(bob), shots.path], seconds: 240)
        #expect(again.contains("all checks passed") && !again.contains("FAIL"), "\(again)")
        #expect(again.components(separatedBy: "\nok   ").count >= 8, "every check ran: \(again)")
        for name in ["web-media.png", "web-voice.png"] {
            #expect(FileManager.default.fileExists(atPath: shots.appendingPathComponent(name).path), "no screenshot \(name)")
        }
    }

    /// The page as a desktop client (Tests/web/web_desk.py): Ctrl-K's switcher,
    /// search in a stored conversation (marked matches, Esc back), the sound
    /// setting kept across a reload and heard on a private message, and bob's
    /// own fingerprint in the contacts panel.
    @Test func theSwitcherSearchAndSoundOnThePage() async throws {
        try Self.requireChromium()
        let p = try await Self.pair("desk", "bob", "alice")
        defer { p.stop() }
        let (bobLink, aliceLink) = (p.firstLink, p.secondLink)
        let shots = PythonEnvironment.root.appendingPathComponent(".build/screenshots")
        try FileManager.default.createDirectory(at: shots, withIntermediateDirectories: true)
        let out = try await PythonEnvironment.run(PythonEnvironment.root.appendingPathComponent("Tests/web/web_desk.py").path,
                                                  [aliceLink, bobLink, shots.path], seconds: 240)
        #expect(out.contains("all checks passed") && !out.contains("FAIL"), "\(out)")
        #expect(out.components(separatedBy: "\nok   ").count >= 20, "every check ran: \(out)")
    }

    static func requireChromium() throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver"),
                     "Chromium and its driver are test dependencies: run scripts/install-deps --test")
    }

    /// Two `starling web` daemons as README starts them, each in a directory of
    /// its own: `first`, then `second` linked to the first's UDP port. The
    /// caller stops both and removes `dirs`.
    struct Pair {
        var first: LiveProcess, firstLink: String, firstUDP: Int
        var second: LiveProcess, secondLink: String
        var dirs: (first: String, second: String)
        func stop() {
            first.stop()
            second.stop()
            for d in [dirs.first, dirs.second] { try? FileManager.default.removeItem(atPath: d) }
        }
    }

    static func pair(_ label: String, _ firstName: String, _ secondName: String) async throws -> Pair {
        let dirs = (ContactCommandTests.temporaryDirectory("web-\(label)-\(firstName)"), ContactCommandTests.temporaryDirectory("web-\(label)-\(secondName)"))
        let first = try Self.web(dirs.0, name: firstName)
        do {
            let firstLink = try await Self.link(first)
            let status = try #require(try await Self.api(firstLink).get("/v1/status") as? [String: Any])
            let udp = try #require(status["udpPort"] as? Int)
            let second = try Self.web(dirs.1, name: secondName, peer: UInt16(udp))
            return Pair(first: first, firstLink: firstLink, firstUDP: udp, second: second, secondLink: try await Self.link(second), dirs: dirs)
        } catch {
            first.stop()
            throw error
        }
    }

    static func api(_ link: String) throws -> APIClient {
        let base = try #require(URL(string: String(link.prefix { $0 != "#" })))
        return APIClient(host: try #require(base.host), port: try #require(base.port), token: String(try #require(link.split(separator: "=").last)))
    }

    /// The same page in Firefox (Debian's firefox-esr, driven over WebDriver
    /// BiDi by Tests/web/web_firefox.py): two tabs, public both ways, a private
    /// message to "read", the settings form refusing a bad address, a group, a
    /// voice note, a picture, an SOS, 450 messages in pages, notifications
    /// while the tab is hidden, Ctrl-K, search, the sound setting, axe-core.
    @Test func thePageWorksInFirefox() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/firefox-esr"),
                     "Firefox is a test dependency: run scripts/install-deps --test")
        let p = try await Self.pair("fx", "alice", "bob")
        defer { p.stop() }
        let (aliceLink, bobLink) = (p.firstLink, p.secondLink)
        let shots = PythonEnvironment.root.appendingPathComponent(".build/screenshots")
        try FileManager.default.createDirectory(at: shots, withIntermediateDirectories: true)
        let out = try await PythonEnvironment.run(PythonEnvironment.root.appendingPathComponent("Tests/web/web_firefox.py").path,
                                                  [aliceLink, bobLink, shots.path], seconds: 240)
        #expect(out.contains("all checks passed") && !out.contains("FAIL"), "\(out)")
        #expect(out.components(separatedBy: "\nok   ").count >= 33, "every check ran: \(out)")
        #expect(FileManager.default.fileExists(atPath: shots.appendingPathComponent("web-firefox.png").path))
    }

    /// The page's Nostr flows in Firefox: strangers' messages as requests
    /// (carol accepted, mallory blocked), then a location channel with a
    /// terminal chat in it (joined, a line each way, kept across a reload, left).
    @Test func theNostrFlowsWorkInFirefox() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/firefox-esr"),
                     "Firefox is a test dependency: run scripts/install-deps --test")
        let scene = try await Self.channelScene("fx")
        defer { scene.stop() }
        let status = try #require(try await Self.api(scene.link).get("/v1/status") as? [String: Any])
        let annKey = try Bech32.publicKey(npub: try #require(status["npub"] as? String)).hexString
        let carol = Secp256k1.PrivateKey.random(), mallory = Secp256k1.PrivateKey.random()
        try await NostrProcessTests.publish(from: carol, to: annKey, "hello ann, carol here", relayPort: scene.relayPort)
        try await NostrProcessTests.publish(from: mallory, to: annKey, "click here", relayPort: scene.relayPort)
        let page = try await scene.exchange("web_firefox_nostr.py", [Bech32.npub(carol.publicKey), Bech32.npub(mallory.publicKey)], shot: "web-firefox-channel.png")
        #expect(page.text.contains("all checks passed") && page.text.components(separatedBy: "\nok   ").count >= 12, "every check ran: \(page.text)")
    }

    /// A daemon on Nostr (ann, serving the page) and a terminal chat (ben) in
    /// #u4pruyd, through a relay and a SOCKS proxy on loopback.
    struct ChannelScene {
        var relay: LiveProcess, relayPort: UInt16, proxy: LiveProcess, dir: String
        var ann: LiveProcess, link: String, ben: LiveProcess

        func stop() {
            for p in [ann, ben, proxy, relay] { p.stop() }
            try? FileManager.default.removeItem(atPath: dir)
        }

        /// Tests/web/SCRIPT LINK ARGUMENTS… GEOHASH LINE REPLY SCREENSHOT: the page says a line in
        /// the channel once it prints "said"; ben sees it and answers; the page's process, ended.
        func exchange(_ script: String, _ arguments: [String] = [], shot: String) async throws -> LiveProcess {
            let shots = PythonEnvironment.root.appendingPathComponent(".build/screenshots")
            try FileManager.default.createDirectory(at: shots, withIntermediateDirectories: true)
            let page = LiveProcess.unstarted([try PythonEnvironment.require().path, PythonEnvironment.root.appendingPathComponent("Tests/web/" + script).path,
                                              link] + arguments + ["u4pruyd", "who is near the station?", "by the north gate",
                                                                   shots.appendingPathComponent(shot).path])
            try page.start()
            defer { page.stop() }
            #expect(await page.waitForText("said", seconds: 180), "\(page.text)")
            #expect(await ben.waitForText("@#u4pruyd> who is near the station?", seconds: 60), "\(ben.text)")
            ben.type("by the north gate")
            #expect(await page.waitForExit(seconds: 120) == 0, "\(page.text)")
            return page
        }
    }

    static func channelScene(_ label: String) async throws -> ChannelScene {
        let (relay, relayPort, _) = try await NostrProcessTests.relay()
        let (proxy, proxyPort) = try await NostrProcessTests.socks()
        let nostr = ["--nostr", "--nostr-relay", "ws://127.0.0.1:\(relayPort)", "--proxy", "127.0.0.1:\(proxyPort)"]
        let dir = ContactCommandTests.temporaryDirectory("web-\(label)-ann")
        let ann = try Self.web(dir, name: "ann", nostr)
        let ben = try LiveProcess(["chat", "--plain", "--no-discovery", "--port", "0", "--name", "ben",
                                   "--data-dir", ContactCommandTests.temporaryDirectory("web-\(label)-ben")] + nostr)
        let scene = ChannelScene(relay: relay, relayPort: relayPort, proxy: proxy, dir: dir, ann: ann, link: "", ben: ben)
        do {
            let link = try await Self.link(ann)
            #expect(await ben.waitForText("connected to ws://127.0.0.1:\(relayPort)"), "\(ben.text)")
            ben.type("/join #u4pruyd")
            #expect(await ben.waitForText("joined #u4pruyd"), "\(ben.text)")
            var ready = scene
            ready.link = link
            return ready
        } catch {
            scene.stop()
            throw error
        }
    }

    /// A location channel from the page (its daemon on Nostr, through a relay
    /// and a SOCKS proxy on loopback), with a terminal chat in the same channel.
    @Test func aLocationChannelFromThePage() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "run scripts/install-deps --test")
        let scene = try await Self.channelScene("chromium")
        defer { scene.stop() }
        let link = scene.link
        let page = try await scene.exchange("web_channel.py", shot: "web-channel.png")
        if !page.text.contains("ok   the channel's reply is on the page") {
            let token = String(link.split(separator: "=").last ?? "")
            let url = String(link.prefix { $0 != "#" })
            let events = try await StarlingProcess.run(executable: URL(fileURLWithPath: "/usr/bin/curl"),
                                                       ["-sN", "--max-time", "2", "-H", "Authorization: Bearer \(token)", url + "v1/events?since=0"])
            Issue.record("the page missed the reply; the daemon's events: \(events.stdout.suffix(3_000))")
        }
    }

    /// What crosses from another mesh, on the page: ann's daemon is mesh B's
    /// bridge; alice (mesh A, letting her lines cross) says a line and posts
    /// a notice through gateA; both show on ann's page, marked across a bridge.
    @Test func whatCrossedABridgeIsOnThePage() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "run scripts/install-deps --test")
        let (relay, relayPort, _) = try await NostrProcessTests.relay()
        defer { relay.stop() }
        let (proxy, proxyPort) = try await NostrProcessTests.socks()
        defer { proxy.stop() }
        let cellB = try #require(Geohash.neighbours(of: "u4pruy").first)
        let dir = ContactCommandTests.temporaryDirectory("web-bridge-ann")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ann = try LiveProcess(["web", "--no-discovery", "--port", "0", "--name", "ann", "--data-dir", dir, "--bridge", cellB]
                                  + NostrProcessTests.nostr(relayPort: relayPort, proxyPort: proxyPort))
        defer { ann.stop() }
        let link = try await Self.link(ann)
        let gateA = try BridgeProcessTests.bridge("webGateA", "u4pruy", relayPort, proxyPort)
        defer { gateA.stop() }
        let alice = try LiveProcess(["chat", "--plain", "--no-discovery", "--port", "0", "--name", "alice", "--announce-interval", "1", "--cross-bridges",
                                     "--data-dir", ContactCommandTests.temporaryDirectory("web-bridge-alice"),
                                     "--peer", "127.0.0.1:\(try await MeshProcessTests.port(of: gateA))"])
        defer { alice.stop() }
        #expect(await alice.waitForText("webGateA joined"), "\(alice.text)")
        let shots = PythonEnvironment.root.appendingPathComponent(".build/screenshots")
        try FileManager.default.createDirectory(at: shots, withIntermediateDirectories: true)
        let page = LiveProcess.unstarted([try PythonEnvironment.require().path, PythonEnvironment.root.appendingPathComponent("Tests/web/web_bridge.py").path,
                                          link, "the road north is open", "water at the school", shots.appendingPathComponent("web-bridge.png").path])
        try page.start()
        defer { page.stop() }
        #expect(await page.waitForText("ready", seconds: 90), "\(page.text)")
        alice.type("the road north is open")
        alice.type("/board post water at the school")
        #expect(await page.waitForExit(seconds: 120) == 0, "\(page.text)\n\(ann.text.suffix(3_000))")
    }
}
