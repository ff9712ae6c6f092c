import Foundation
import StarlingTestSupport
import Testing

@Suite(.usesProcesses) struct UnknownCommandTests {
    @Test func aTypoIsAnsweredWithTheNearestCommand() async throws {
        let typo = try await StarlingProcess.run(["chta", "--name", "alice"])
        #expect(typo.status == 64)
        #expect(typo.stderr.contains("unknown command 'chta': did you mean chat?"), "\(typo.stderr)")
        let far = try await StarlingProcess.run(["zzzzzz"])
        #expect(far.status == 64 && far.stderr.contains("unknown command 'zzzzzz' (`starling --help` lists them)"), "\(far.stderr)")
        #expect(try await StarlingProcess.run(["help", "contact"]).stdout.contains("Ya OK contacts"))
        // `help` with a typo: the same answer, not the top-level help and 0.
        let helpTypo = try await StarlingProcess.run(["help", "chta"])
        #expect(helpTypo.status == 64 && helpTypo.stderr.contains("unknown command 'chta': did you mean chat?"), "\(helpTypo.stdout)\(helpTypo.stderr)")
        let plainHelp = try await StarlingProcess.run(["help"])
        #expect(plainHelp.status == 0 && plainHelp.stdout.contains("SUBCOMMANDS"), "\(plainHelp.stdout)")
    }

    /// A retired name (docs/GLOSSARY.md) still works for scripts: `relay-server` is `yaok-server`.
    @Test func theYaOKServersOldNameStillWorks() async throws {
        let new = try await StarlingProcess.run(["yaok-server", "--help"])
        #expect(new.status == 0 && new.stdout.contains("Run a Ya OK server"), "\(new.stdout)\(new.stderr)")
        let old = try await StarlingProcess.run(["relay-server", "--help"])
        #expect(old.status == 0 && old.stdout.contains("Run a Ya OK server"), "\(old.stdout)\(old.stderr)")
        // The control: a name that never was one is still refused.
        #expect(try await StarlingProcess.run(["relay-servers", "--help"]).status == 64)
        // --commits-under-way is said in its help, and out of its range it is a usage error (the control: 2 is taken).
        #expect(new.stdout.contains("--commits-under-way"), "\(new.stdout)")
        let none = try await StarlingProcess.run(["yaok-server", "--commits-under-way", "0", "--postgres", "postgres://u@127.0.0.1:1/db"])
        #expect(none.status == 64 && none.stderr.contains("--commits-under-way must be between 1 and 8") && none.stderr.contains("Usage: starling yaok-server"),
                "\(none.stderr)")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("starling-under-way-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let two = try await StarlingProcess.run(["yaok-server", "--commits-under-way", "2", "--port", "0", "--bind", "127.0.0.1",
                                                 "--data-dir", dir, "--duration", "1"])
        #expect(two.status == 0 && !two.stderr.contains("--commits-under-way"), "\(two.status): \(two.stderr)")
    }
}
