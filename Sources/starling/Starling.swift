import ArgumentParser
import Foundation
import Logging

@main
struct Starling: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "starling",
        abstract: "Offline, end-to-end encrypted mesh chat over Bluetooth LE and the local network.",
        discussion: """
        Starling speaks the bitchat protocol, so it can chat with and relay for the \
        bitchat phone apps. Each subcommand has its own --help.
        """,
        version: StarlingVersion.string,
        subcommands: [Chat.self, Contact.self, Id.self, Inspect.self, Listen.self, Relay.self, Send.self, Sim.self, Status.self, WiFi.self,
                      Backup.self, Restore.self, Reset.self, Pin.self]
    )

    /// Logs go to standard error (standard output is for people and --json),
    /// at the level STARLING_LOG_LEVEL names (trace … critical; default warning).
    static func main() async {
        let level = ProcessInfo.processInfo.environment["STARLING_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0.lowercased()) }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level ?? .warning
            return handler
        }
        do {
            var command = try parseAsRoot()
            if var async = command as? AsyncParsableCommand { try await async.run() } else { try command.run() }
        } catch {
            exit(withError: error)
        }
    }
}

enum StarlingVersion {
    static let string = "0.1.0"
}
