import Foundation
import StarlingCrypto
import StarlingMessengerAPI
import StarlingNode
import StarlingTransport
import StarlingWire

/// `starling-bench web`: from a public message's frame leaving a node on
/// 127.0.0.1 to its line on a person's screen, in one run: the page that
/// `starling web` serves, in headless Chromium (the time its line enters the
/// DOM), beside the terminal client (`starling chat --plain`, the time its
/// line comes out). Also the page's weight and where its requests went.
/// Needs the release `starling` beside this binary, and Chromium, its driver
/// and the test environment's Selenium (scripts/install-deps --test).
enum WebBench {
    /// A child process whose output lines are kept with the time each came.
    final class Child: @unchecked Sendable {
        let process = Process()
        private let lock = NSLock()
        private var pending = Data()
        private(set) var lines: [(at: Double, text: String)] = []

        init(_ executable: URL, _ arguments: [String]) throws {
            process.executableURL = executable
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            process.standardInput = Pipe()
            pipe.fileHandleForReading.readabilityHandler = { [weak self] h in
                let data = h.availableData
                guard let self, !data.isEmpty else { return }
                let now = Date().timeIntervalSince1970 * 1000
                self.lock.lock()
                self.pending += data
                while let nl = self.pending.firstIndex(of: 0x0A) {
                    self.lines.append((now, String(decoding: self.pending[..<nl], as: UTF8.self)))
                    self.pending.removeSubrange(...nl)
                }
                self.lock.unlock()
            }
            try process.run()
        }

        var text: [(at: Double, text: String)] { lock.lock(); defer { lock.unlock() }; return lines }

        /// The first line with `needle`, within `seconds`.
        func wait(for needle: String, seconds: Double = 30) async -> String? {
            let until = Date().addingTimeInterval(seconds)
            while Date() < until {
                if let l = text.first(where: { $0.text.contains(needle) }) { return l.text }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return nil
        }

        func stop() {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
    }

    static func run() async {
        print("starling-bench web (release; a sender node, `starling web` in headless Chromium and `starling chat --plain`, on 127.0.0.1)")
        do { try await measure() } catch { print("  web bench failed: \(error)") }
    }

    struct Missing: Error, CustomStringConvertible { let description: String }

    static func measure(count: Int = 100) async throws {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let starling = here.appendingPathComponent("starling")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let python = root.appendingPathComponent(".venv/bin/python")
        for (path, what) in [(starling.path, "the release starling (swift build -c release)"), (python.path, "the test environment (scripts/install-deps --test)"),
                             ("/usr/bin/chromium", "Chromium (scripts/install-deps --test)")] where !FileManager.default.isExecutableFile(atPath: path) {
            throw Missing(description: "\(what) is missing: \(path)")
        }
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("starling-web-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        let web = try Child(starling, ["web", "--no-discovery", "--port", "0", "--name", "page", "--announce-interval", "1",
                                       "--data-dir", base.appendingPathComponent("page").path])
        defer { web.stop() }
        let chat = try Child(starling, ["chat", "--plain", "--no-discovery", "--port", "0", "--name", "term", "--announce-interval", "1",
                                        "--data-dir", base.appendingPathComponent("term").path])
        defer { chat.stop() }
        guard let linkLine = await web.wait(for: "web: open "), let link = linkLine.split(separator: " ").last.map(String.init),
              let you = await chat.wait(for: "* you are term"), let chatPort = you.split(separator: ":").last.flatMap({ UInt16($0) }) else {
            throw Missing(description: "the page or the chat did not start")
        }
        let dir = base.appendingPathComponent("page")
        guard let info = FileManager.default.contents(atPath: dir.appendingPathComponent("api.json").path),
              let o = try JSONSerialization.jsonObject(with: info) as? [String: Any], let url = o["url"] as? String, let token = o["token"] as? String else {
            throw Missing(description: "no api.json")
        }
        guard let u = URL(string: url), let host = u.host, let port = u.port else { throw Missing(description: "a bad URL in api.json: \(url)") }
        let status = try await APIClient(host: host, port: port, token: token).get("/v1/status") as? [String: Any] ?? [:]
        guard let pagePort = status["udpPort"] as? Int else { throw Missing(description: "the daemon has no UDP port") }

        // The sender: a node in this process, linked to both.
        var options = MeshNode.Options(nickname: "sender")
        options.udp?.port = 0
        options.udp?.discovery = false
        options.udp?.peers = [.loopback(UInt16(pagePort)), .loopback(chatPort)]
        options.core.announceInterval = 1_000
        let sender = try MeshNode(identity: Identity.generate(), options: options)
        let running = Task { await sender.run() }
        defer { running.cancel() }
        let until = Date().addingTimeInterval(30)
        while await sender.peers.count < 2, Date() < until { try await Task.sleep(for: .milliseconds(50)) }
        guard await sender.peers.count == 2 else { throw Missing(description: "the sender did not meet both") }
        try await Task.sleep(for: .seconds(6)) // the chat shows a join after 5 s: out of the way first

        let page = try Child(python, [root.appendingPathComponent("Tests/web/web_bench.py").path, link, String(count)])
        defer { page.stop() }
        guard await page.wait(for: "ready", seconds: 60) != nil else { throw Missing(description: "the page did not load in Chromium") }
        var sent: [Int: Double] = [:]
        for i in 0..<count {
            sent[i] = Date().timeIntervalSince1970 * 1000
            try await sender.sendPublic("bench \(i)")
            try await Task.sleep(for: .milliseconds(150))
        }
        guard let result = await page.wait(for: "\"seen\"", seconds: 100),
              let r = try JSONSerialization.jsonObject(with: Data(result.utf8)) as? [String: Any],
              let seen = r["seen"] as? [String: Any] else { throw Missing(description: "the page's times did not come") }
        try await Task.sleep(for: .milliseconds(500))
        var onPage: [Double] = [], onTerminal: [Double] = []
        for (k, v) in seen {
            if let i = Int(k), let at = (v as? NSNumber)?.doubleValue, let s = sent[i] { onPage.append(at - s) }
        }
        for line in chat.text {
            guard let range = line.text.range(of: #"bench (\d+)$"#, options: .regularExpression),
                  let i = Int(line.text[range].dropFirst(6)), let s = sent[i] else { continue }
            onTerminal.append(line.at - s)
        }
        onPage.sort()
        onTerminal.sort()
        print(String(format: "  the page (DOM)      %3d of %d lines: p50 %6.2f ms, p99 %6.2f ms", onPage.count, count, percentile(onPage, 0.5), percentile(onPage, 0.99)))
        print(String(format: "  the terminal (chat) %3d of %d lines: p50 %6.2f ms, p99 %6.2f ms", onTerminal.count, count, percentile(onTerminal, 0.5), percentile(onTerminal, 0.99)))
        let resources = r["resources"] as? [[Any]] ?? []
        let hosts = Set(resources.compactMap { ($0.first as? String).flatMap { URL(string: $0)?.host } })
        print("  the page's weight: \(r["weight"] ?? 0) bytes in \(r["files"] ?? 0) files; \(resources.count) requests in all (with its API calls), to \(hosts.sorted().joined(separator: ", ")) only (goal: under 150 KB, no other host)")
        page.stop()

        // A long private conversation (issue 56): the page's conversation with the sender holds
        // `history` messages; the page opens it (its newest page, a window of at most 1,000
        // lines) and `count` private lines are timed into it, as the public ones were.
        let history = Int(ProcessInfo.processInfo.environment["STARLING_BENCH_WEB_HISTORY"] ?? "") ?? 10_000
        guard let pagePeer = await sender.peers.first(where: { $0.value.nickname == "page" })?.key else { throw Missing(description: "the sender does not know the page") }
        let api = APIClient(host: host, port: port, token: token)
        // How far the page's node has them: the newest stored message's number (hN), through the API.
        func unread() async -> Int {
            let all = (try? await api.get("/v1/conversations") as? [[String: Any]]) ?? []
            guard let id = all.first(where: { ($0["name"] as? String)?.hasPrefix("sender") == true })?["id"] as? String,
                  let newest = try? await api.get("/v1/conversations/\(id)/messages?limit=1") as? [[String: Any]],
                  let text = newest.first?["text"] as? String, text.hasPrefix("h"), let n = Int(text.dropFirst()) else { return 0 }
            return n + 1
        }
        let t0 = Date()
        _ = try await sender.sendPrivate("h0", to: pagePeer)
        while await unread() < 1, Date().timeIntervalSince(t0) < 30 { try await Task.sleep(for: .milliseconds(100)) } // the session first
        for i in 1..<history {
            _ = try await sender.sendPrivate("h\(i)", to: pagePeer)
            if i % 100 == 0 { while await unread() < i - 400, Date().timeIntervalSince(t0) < 600 { try await Task.sleep(for: .milliseconds(20)) } }
        }
        while await unread() < history, Date().timeIntervalSince(t0) < 600 { try await Task.sleep(for: .milliseconds(200)) }
        let held = await unread()
        print("  a conversation of \(held) private messages sent to the page's node in \(String(format: "%.1f", Date().timeIntervalSince(t0))) s")
        let long = try Child(python, [root.appendingPathComponent("Tests/web/web_bench.py").path, link, String(count), "sender"])
        defer { long.stop() }
        guard await long.wait(for: "ready", seconds: 90) != nil else { throw Missing(description: "the page did not open the long conversation") }
        var sentPrivate: [Int: Double] = [:]
        for i in 0..<count {
            sentPrivate[i] = Date().timeIntervalSince1970 * 1000
            _ = try await sender.sendPrivate("bench \(i)", to: pagePeer)
            try await Task.sleep(for: .milliseconds(150))
        }
        guard let result2 = await long.wait(for: "\"seen\"", seconds: 100),
              let r2 = try JSONSerialization.jsonObject(with: Data(result2.utf8)) as? [String: Any],
              let seen2 = r2["seen"] as? [String: Any] else { throw Missing(description: "the page's times did not come (long conversation)") }
        var onLong: [Double] = []
        for (k, v) in seen2 {
            if let i = Int(k), let at = (v as? NSNumber)?.doubleValue, let s = sentPrivate[i] { onLong.append(at - s) }
        }
        onLong.sort()
        print(String(format: "  the page (DOM), private, %d held: %3d of %d lines: p50 %6.2f ms, p99 %6.2f ms (goal: p99 < 50 ms)",
                     held, onLong.count, count, percentile(onLong, 0.5), percentile(onLong, 0.99)))
        print("  its lines in the DOM at the end: \(r2["lines"] ?? "?"); the first load with the conversation opened: \(r2["firstLoad"] ?? 0) bytes "
              + "(the page's files and every API answer before the first line showed; goal: under 150 KB)")
    }

}
