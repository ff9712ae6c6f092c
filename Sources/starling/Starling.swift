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
        subcommands: [Chat.self, Contact.self, Daemon.self, Id.self, Inspect.self, Listen.self, Relay.self, YaOKServerCommand.self, Send.self, Sim.self, Status.self, Web.self, WiFi.self,
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
        // An unknown command is said so, with the nearest one: not as an
        // unknown option of the default command.
        // `starling help NAME` too, for a NAME that is not a command.
        let arguments = Array(CommandLine.arguments.dropFirst())
        let names = configuration.subcommands.map { $0._commandName } + ["help"]
        // Old names kept as aliases (docs/GLOSSARY.md): taken, never suggested.
        let aliases = configuration.subcommands.flatMap { $0.configuration.aliases }
        let asked = arguments.first == "help" ? arguments.dropFirst().first : arguments.first
        if let first = asked, !first.hasPrefix("-"), !names.contains(first), !aliases.contains(first) {
            let nearest = names.filter { $0 != "help" || arguments.first != "help" }.map { ($0, editDistance($0, first)) }.min { $0.1 < $1.1 }
            let hint = nearest.flatMap { $0.1 <= 2 ? ": did you mean \($0.0)?" : nil } ?? ""
            StandardError.write(Data("starling: unknown command '\(first)'\(hint) (`starling --help` lists them)\n".utf8))
            Foundation.exit(64)
        }
        let parsed: any ParsableCommand
        do { parsed = try parseAsRoot(joiningNegativeValues(arguments)) } catch { exit(withError: error) } // usage (64), --help, --version: as ArgumentParser says
        var command = parsed
        do {
            if var async = command as? AsyncParsableCommand { try await async.run() } else { try command.run() }
        } catch let code as ExitCode {
            Foundation.exit(code.rawValue) // said already
        } catch let clean as CleanExit {
            exit(withError: clean)
        } catch let usage as ValidationError {
            // A usage error found while running: the command's own usage, and 64.
            fail("\(usage.message)\n" + Starling.usageString(for: type(of: parsed)), code: 64)
        } catch where exitCode(for: error) == .success {
            exit(withError: error) // `starling help CMD` asks for help while running: ArgumentParser prints it
        } catch {
            fail(RuntimeFailure(error).description, code: 1)
        }
    }

    /// `--nodes -5` as `--nodes=-5`: a negative number after an option is its
    /// value (out of range, said so), never taken for an option of its own.
    static func joiningNegativeValues(_ arguments: [String]) -> [String] {
        var out: [String] = []
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            if a.hasPrefix("--"), !a.contains("="), i + 1 < arguments.count, arguments[i + 1].count > 1, arguments[i + 1].hasPrefix("-"),
               Double(arguments[i + 1]) != nil {
                out.append(a + "=" + arguments[i + 1])
                i += 2
            } else {
                out.append(a)
                i += 1
            }
        }
        return out
    }

    static func fail(_ text: String, code: Int32) -> Never {
        StandardError.write(Data("starling: \(text)\n".utf8))
        Foundation.exit(code)
    }
}

/// A failure at run time: one sentence that says what to do. Printed as
/// `starling: …` on standard error, exit 1, without the usage text (that is
/// for usage errors, exit 64).
struct RuntimeFailure: Error, CustomStringConvertible {
    let description: String
    init(_ sentence: String) { description = sentence }

    /// Any other error as one sentence: ours by their description, Foundation's
    /// file errors by what happened to which path.
    init(_ error: any Error) {
        if let failure = error as? RuntimeFailure {
            self = failure
            return
        }
        guard let cocoa = error as? CocoaError else {
            self.init(String(describing: error))
            return
        }
        let path = cocoa.filePath ?? cocoa.url?.path ?? "a file"
        switch cocoa.code {
        case .fileNoSuchFile, .fileReadNoSuchFile: self.init("\(path) does not exist: check the path")
        case .fileReadNoPermission, .fileWriteNoPermission, .fileWriteVolumeReadOnly:
            self.init("\(path) cannot be used (permission denied): fix its permissions, or choose another path")
        case .fileWriteOutOfSpace: self.init("the disk holding \(path) is full: free some space, then try again")
        default: self.init("\(path): \(UserError.reason(error))")
        }
    }
}

enum StarlingVersion {
    static let string = "0.1.0"
}

/// Levenshtein distance, for "did you mean".
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    var previous = Array(0...b.count)
    for i in 1...max(1, a.count) where !a.isEmpty {
        var current = [i] + [Int](repeating: 0, count: b.count)
        for j in 1...max(1, b.count) where !b.isEmpty {
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        }
        previous = current
    }
    return a.isEmpty ? b.count : previous[b.count]
}

/// Standard output and error for people and scripts. A reader that has gone
/// (`starling listen | head`) ends the program quietly, as a closed pipe ends
/// any Unix tool: SIGPIPE is ignored in this process (NIO ignores it), and
/// Foundation's `FileHandle.write(_:)` would trap on the error instead.
enum StandardOutput {
    static func write(_ data: Data) {
        do { try FileHandle.standardOutput.write(contentsOf: data) } catch { Foundation.exit(0) }
    }
}

enum StandardError {
    static func write(_ data: Data) {
        try? FileHandle.standardError.write(contentsOf: data) // nowhere left to say it
    }
}
