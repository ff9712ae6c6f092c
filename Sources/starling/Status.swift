import ArgumentParser
import Foundation
import StarlingMessenger
import StarlingMessengerAPI
import StarlingNode
import StarlingStately
import StarlingWire

/// `starling status`: Stately — broadcast this node's state, raise or clear an
/// SOS, watch the states around. States live in memory only.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Share a status with the people nearby (Stately): set it, raise an SOS, clear it, watch everyone's.",
        discussion: """
        States: \(StateKind.allCases.map { "\($0.emoji) \($0.rawValue)" }.joined(separator: ", ")). \
        A state is broadcast at once, then every 10–60 s by power mode, to 3 hops; an SOS every 5 s \
        to 7 hops. Others show a state for 5 minutes after they last heard it. Nothing is written \
        to disk. Without --group every copy of the software can read (and forge) states: the shared \
        key hides them only from listeners without it.
        """,
        subcommands: [Set.self, SOS.self, Clear.self, Watch.self]
    )

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Broadcast a state until interrupted (or --duration), relaying and showing others'.")
        @OptionGroup var node: NodeOptions
        @Argument(help: "The state (e.g. working, busy, red_circle, invisible).") var state: String
        @Option(help: "Stop after this many seconds.") var duration: Double?
        @Flag(help: "One JSON object per line.") var json = false

        func validate() throws {
            guard StateKind(name: state) != nil else {
                throw ValidationError("unknown state \(state); one of \(StateKind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }

        func run() async throws {
            guard let kind = StateKind(name: state) else {
                throw ValidationError("unknown state \(state); one of \(StateKind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            try await StatusRun(node: node, json: json, duration: duration).run({ n in
                await n.setStatus(kind)
                return "broadcasting \(kind.emoji) \(kind.displayName)"
            }, through: { c in
                try await c.setState(kind)
                return "broadcasting \(kind.emoji) \(kind.displayName)"
            })
        }
    }

    struct SOS: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sos",
            abstract: "Raise an SOS: broadcast every 5 s to 7 hops until you type clear (or Enter), then clear it at once.")
        @OptionGroup var node: NodeOptions
        @Option(help: "Stop (clearing the SOS) after this many seconds.") var duration: Double?
        @Flag(help: "One JSON object per line.") var json = false

        func run() async throws {
            try await StatusRun(node: node, json: json, duration: duration, clearOnInput: true).run({ n in
                await n.setStatus(.sos)
                return "🆘 SOS broadcast every 5 s — type clear (or press Enter) to end it"
            }, through: { c in
                try await c.setState(.sos)
                return "🆘 SOS broadcast every 5 s — type clear (or press Enter) to end it"
            })
        }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Clear an SOS: broadcast that you are available, at once, then leave.")
        @OptionGroup var node: NodeOptions
        @Option(help: "Seconds to wait for a first peer.") var wait = 3.0
        @Flag(help: "One JSON object per line.") var json = false

        func run() async throws {
            try await StatusRun(node: node, json: json, duration: wait + 1, waitForPeer: wait).run({ n in
                await n.setStatus(.available)
                return "✅ cleared: available"
            }, through: { c in
                try await c.setState(.available)
                return "✅ cleared: available"
            })
        }
    }

    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A live table of the states around: emoji, name, state, age, hops; SOS in red.")
        @OptionGroup var node: NodeOptions
        @Option(help: "Stop after this many seconds.") var duration: Double?
        @Flag(help: "One JSON object per line (events) instead of the table.") var json = false

        func run() async throws {
            try await StatusRun(node: node, json: json, duration: duration, table: !json).run { _ in nil }
        }
    }
}

/// A node that runs for a status command: prints events (or a table), and stops on time.
struct StatusRun {
    var node: NodeOptions
    var json: Bool
    var duration: Double?
    var clearOnInput = false
    var waitForPeer: Double?
    var table = false

    func run(_ start: @escaping @Sendable (MeshNode) async -> String?, through: (@Sendable (APIMessengerClient) async throws -> String?)? = nil)
        async throws {
        // A daemon runs for this data directory: it is the node, and keeps the state.
        if let api = await APIClient.find(directory: DataDirectory(explicit: node.dataDir).url) {
            try await runThrough(APIMessengerClient(api), set: through)
            return
        }
        // A node with the store's trust decisions: a blocked peer's state is not shown.
        let session = try await NodeSession.start(node, tellsFavourites: false)
        let n = session.node, messenger = session.messenger
        let printer = EventPrinter(json: json)
        let deadline = duration.map { UInt64(Date().timeIntervalSince1970 * 1000) + UInt64($0 * 1000) }
        let table = self.table, clearOnInput = self.clearOnInput, waitForPeer = self.waitForPeer, json = self.json
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                if let waitForPeer {
                    let until = Date().addingTimeInterval(waitForPeer)
                    while await n.linkCount == 0, Date() < until { try? await Task.sleep(for: .milliseconds(50)) }
                }
                if let line = await start(n), !json { printer.say("* " + line) }
            }
            group.addTask { await messenger.run() }
            group.addTask {
                for await messengerEvent in messenger.events {
                    guard case let .node(event) = messengerEvent else { continue }
                    if table {
                        if case .sos = event { printer.print(event) }
                        if case .started = event { printer.print(event) }
                        continue
                    }
                    switch event {
                    case .state, .sos, .stateExpired, .started, .rejected: printer.print(event)
                    default: break
                    }
                }
            }
            if table {
                group.addTask {
                    var last = ""
                    while !Task.isCancelled {
                        let text = StatusTable.render(await n.statusBoard)
                        if text != last {
                            // On a terminal the table is redrawn in place; in a pipe each change is printed.
                            printer.say(isatty(STDOUT_FILENO) == 1 ? "\u{1B}[H\u{1B}[2J" + text : text)
                            last = text
                        }
                        try? await Task.sleep(for: .seconds(1))
                    }
                }
            }
            if clearOnInput {
                group.addTask {
                    for await line in Chat.lines() where line.isEmpty || line.lowercased() == "clear" { break }
                    await n.clearSOS()
                    if !json { printer.say("* SOS cleared") }
                    try? await Task.sleep(for: .milliseconds(500)) // let the clear go out
                    await n.stop()
                }
            }
            await n.run(until: deadline) // until the deadline, or until stopped
            group.cancelAll()
        }
    }
}

extension StatusRun {
    /// Through a daemon: the state is set on its node (it keeps broadcasting it
    /// after this command ends); an SOS is cleared when the person says so;
    /// watch follows the daemon's board.
    func runThrough(_ client: APIMessengerClient, set: (@Sendable (APIMessengerClient) async throws -> String?)?) async throws {
        let printer = EventPrinter(json: json)
        do {
            if let set, let line = try await set(client), !json { printer.say("* " + line + " (through the daemon, which keeps it)") }
            let until = duration.map { Date().addingTimeInterval($0) }
            if clearOnInput {
                let waiting = Task {
                    for await line in Chat.lines() where line.isEmpty || line.lowercased() == "clear" { break }
                }
                if let until {
                    let timer = Task { try? await Task.sleep(for: .seconds(max(0, until.timeIntervalSinceNow))); waiting.cancel() }
                    await waiting.value
                    timer.cancel()
                } else {
                    await waiting.value
                }
                try await client.clearSOS()
                if !json { printer.say("* SOS cleared") }
                return
            }
            guard table || set == nil else { return }
            // watch: the daemon's board, until the duration ends or the person interrupts.
            var last = ""
            while until.map({ Date() < $0 }) ?? true {
                let board = try await client.stately().board
                if table {
                    let text = StatusTable.render(board)
                    if text != last {
                        printer.say(isatty(STDOUT_FILENO) == 1 ? "\u{1B}[H\u{1B}[2J" + text : text)
                        last = text
                    }
                } else {
                    let text = board.map { "\($0.senderID) \($0.state.rawValue) \($0.timestamp)" }.joined(separator: "\n")
                    if text != last {
                        for s in board { printer.print(s.state == .sos ? .sos(s) : .state(s)) }
                        last = text
                    }
                }
                try await Task.sleep(for: .seconds(1))
            }
        } catch let e as MessengerClientError {
            throw RuntimeFailure(e.description)
        }
    }
}

/// The table `status watch` prints: SOS rows first and in red.
enum StatusTable {
    static func render(_ board: [StatelyEngine.PeerState], now: UInt64 = UInt64(Date().timeIntervalSince1970 * 1000)) -> String {
        guard !board.isEmpty else { return "— no states around yet —" }
        var lines = ["   name                 state             age   hops"]
        for s in board {
            let age = now > s.timestamp ? (now - s.timestamp) / 1000 : 0
            let name = DisplayText.clean(s.name)
            let row = "\(s.state.emoji)  \(name.padding(toLength: 20, withPad: " ", startingAt: 0)) "
                + "\(s.state.displayName.padding(toLength: 16, withPad: " ", startingAt: 0)) \(String(format: "%4d s", age))  \(s.hops)"
            lines.append(s.state == .sos ? "\u{1B}[1;31m\(row)\u{1B}[0m" : row)
        }
        return lines.joined(separator: "\n")
    }
}
