import ArgumentParser
import Foundation
import StarlingMessenger
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
            try await StatusRun(node: node, json: json, duration: duration).run { n in
                await n.setStatus(kind)
                return "broadcasting \(kind.emoji) \(kind.displayName)"
            }
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
            try await StatusRun(node: node, json: json, duration: duration, clearOnInput: true).run { n in
                await n.setStatus(.sos)
                return "🆘 SOS broadcast every 5 s — type clear (or press Enter) to end it"
            }
        }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Clear an SOS: broadcast that you are available, at once, then leave.")
        @OptionGroup var node: NodeOptions
        @Option(help: "Seconds to wait for a first peer.") var wait = 3.0
        @Flag(help: "One JSON object per line.") var json = false

        func run() async throws {
            try await StatusRun(node: node, json: json, duration: wait + 1, waitForPeer: wait).run { n in
                await n.setStatus(.available)
                return "✅ cleared: available"
            }
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

    func run(_ start: @escaping @Sendable (MeshNode) async -> String?) async throws {
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
