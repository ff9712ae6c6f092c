import Foundation
import StarlingTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL server from Debian's packages (postgresql, which
/// scripts/install-deps installs): initdb in a temporary directory, trust
/// authentication, 127.0.0.1 on a free port; stopped and deleted by ``stop()``.
/// As root it runs as the `postgres` user (PostgreSQL refuses root).
final class PostgresCluster: @unchecked Sendable {
    let directory: String
    let port: Int
    private let runAs: String?
    private let bin: String

    static var binDirectory: String? {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for v in versions.sorted(by: >) where FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/\(v)/bin/initdb") {
            return "/usr/lib/postgresql/\(v)/bin"
        }
        return nil
    }

    var url: String { "postgres://starling@127.0.0.1:\(port)/postgres" }

    init() throws {
        guard let bin = Self.binDirectory else {
            throw Failure(text: "PostgreSQL is not installed (scripts/install-deps installs Debian's postgresql)")
        }
        self.bin = bin
        let runAs: String? = getuid() == 0 ? "postgres" : nil
        self.runAs = runAs
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("starling-pg-\(UUID().uuidString.prefix(8))").path
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if let runAs { _ = try Self.run(["/bin/chown", "\(runAs):\(runAs)", directory]) }
        let initdb = try Self.run(Self.wrap(runAs, ["\(bin)/initdb", "-D", "\(directory)/data", "-A", "trust", "-U", "starling", "--no-sync"]))
        guard initdb.status == 0 else { throw Failure(text: "initdb: \(initdb.output)") }
        // A free port: the first that starts.
        var chosen: Int?
        for _ in 0..<10 {
            let p = Int.random(in: 55_000...59_999)
            let start = try Self.run(Self.wrap(runAs, ["\(bin)/pg_ctl", "-D", "\(directory)/data", "-l", "\(directory)/server.log", "-w", "-t", "60",
                                           "-o", "-k \(directory) -p \(p) -c listen_addresses=127.0.0.1 -c fsync=off", "start"]))
            if start.status == 0 { chosen = p; break }
        }
        guard let chosen else {
            throw Failure(text: "PostgreSQL did not start: \((try? String(contentsOfFile: "\(directory)/server.log", encoding: .utf8)) ?? "")")
        }
        port = chosen
    }

    struct Failure: Error, CustomStringConvertible { var text: String; var description: String { text } }

    private static func wrap(_ runAs: String?, _ command: [String]) -> [String] {
        guard let runAs else { return command }
        return ["/usr/sbin/runuser", "-u", runAs, "--"] + command
    }

    /// Runs SQL through psql (for what a test does behind the store's back).
    @discardableResult
    func sql(_ statement: String) throws -> String {
        let r = try Self.run(["\(bin)/psql", "-h", "127.0.0.1", "-p", String(port), "-U", "starling", "-d", "postgres",
                              "-v", "ON_ERROR_STOP=1", "-At", "-c", statement])
        guard r.status == 0 else { throw Failure(text: "psql: \(r.output)") }
        return r.output
    }

    /// Restarts the server on the same port (`pg_ctl restart -m fast`: connections cut).
    func restart() throws {
        let r = try Self.run(Self.wrap(runAs, ["\(bin)/pg_ctl", "-D", "\(directory)/data", "-l", "\(directory)/server.log", "-m", "fast", "-w", "-t", "60",
                                           "-o", "-k \(directory) -p \(port) -c listen_addresses=127.0.0.1 -c fsync=off", "restart"]))
        guard r.status == 0 else { throw Failure(text: "pg_ctl restart: \(r.output)") }
    }

    func stop() {
        _ = try? Self.run(Self.wrap(runAs, ["\(bin)/pg_ctl", "-D", "\(directory)/data", "-m", "immediate", "-w", "stop"]))
        try? FileManager.default.removeItem(atPath: directory)
    }

    static func run(_ command: [String]) throws -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: command[0])
        p.arguments = Array(command.dropFirst())
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pg-\(UUID().uuidString).out")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: file) }
        let handle = try FileHandle(forWritingTo: file)
        p.standardOutput = handle
        p.standardError = handle
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let status = StarlingProcess.waitForExit(p, seconds: 120) ?? -1
        try handle.close()
        return (status, String(decoding: (try? Data(contentsOf: file)) ?? Data(), as: UTF8.self))
    }
}
