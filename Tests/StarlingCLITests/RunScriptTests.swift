import Foundation
import StarlingTestSupport
import Testing

/// `scripts/run`, README's first command: with nothing changed since the last
/// build it runs the command at once (no package check, no build); with a
/// source newer than the command, or no command yet, it builds first.
@Suite(.usesProcesses) struct RunScriptTests {
    static let script = PythonEnvironment.root.appendingPathComponent("scripts/run")

    /// A stand-in for the built command that prints what it was given.
    static func standIn(modified: Date? = nil) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("starling-run-\(UUID().uuidString)")
        try Data("#!/bin/sh\necho \"stand-in ran with: $*\"\n".utf8).write(to: url)
        var attributes: [FileAttributeKey: Any] = [.posixPermissions: 0o755]
        if let modified { attributes[.modificationDate] = modified }
        try FileManager.default.setAttributes(attributes, ofItemAtPath: url.path)
        return url
    }

    static func run(_ binary: URL, explain: Bool, _ arguments: [String] = []) async throws -> StarlingProcess.Result {
        var environment = ["STARLING_RUN_BINARY": binary.path]
        if explain { environment["STARLING_RUN_EXPLAIN"] = "1" }
        return try await StarlingProcess.run(executable: URL(fileURLWithPath: "/bin/bash"), [script.path] + arguments,
                                             environment: environment)
    }

    @Test func aCommandNewerThanItsSourcesRunsWithoutABuild() async throws {
        let current = try Self.standIn()
        defer { try? FileManager.default.removeItem(at: current) }
        let explained = try await Self.run(current, explain: true)
        #expect(explained.status == 0 && explained.stdout == "run: up to date, no build\n", "\(explained.stdout)\(explained.stderr)")
        // And it runs it, arguments and all, saying nothing of its own.
        let ran = try await Self.run(current, explain: false, ["inspect", "a b"])
        #expect(ran.status == 0 && ran.stdout == "stand-in ran with: inspect a b\n", "\(ran.stdout)")
        #expect(ran.stderr.isEmpty, "a no-op run is quiet: \(ran.stderr)")
    }

    @Test func aSourceNewerThanTheCommandOrNoCommandBuildsFirst() async throws {
        let old = try Self.standIn(modified: Date(timeIntervalSince1970: 978_307_200)) // 2001
        defer { try? FileManager.default.removeItem(at: old) }
        let stale = try await Self.run(old, explain: true)
        #expect(stale.status == 0, "\(stale.stderr)")
        #expect(stale.stdout.hasPrefix("run: build: ") && stale.stdout.contains("changed since the last build"), "\(stale.stdout)")
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("starling-none-\(UUID().uuidString)")
        let none = try await Self.run(missing, explain: true)
        #expect(none.stdout == "run: build: \(missing.path) is not built yet\n", "\(none.stdout)")
    }
}
