import Foundation
import StarlingBlueZ
import StarlingDBus
#if canImport(Glibc)
import Glibc
#endif

// Shared by the test targets: a private D-Bus daemon, and bluezoo on it.

/// SIGTERM, then SIGKILL after a second, and the child reaped either way.
func terminate(_ process: Process) {
    let pid = process.processIdentifier
    var status: Int32 = 0
    kill(pid, SIGTERM)
    for _ in 0..<100 {
        if waitpid(pid, &status, WNOHANG) != 0 { return }
        usleep(10_000)
    }
    kill(pid, SIGKILL)
    _ = waitpid(pid, &status, 0)
}

/// A private dbus-daemon for one test, stopped at the end.
public final class PrivateBus {
    let process = Process()
    public let address: String
    public let directory: URL

    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("dbus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--session", "--nofork", "--nopidfile", "--print-address=1",
                             "--address=unix:path=\(directory.path)/bus"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice // never the test runner's own output
        try process.run()
        var line = [UInt8]()
        while let b = try out.fileHandleForReading.read(upToCount: 1)?.first, b != 0x0A, line.count < 512 { line.append(b) }
        address = String(decoding: line, as: UTF8.self)
        guard address.hasPrefix("unix:") else { throw DBusError(name: "test", message: "dbus-daemon did not start") }
    }

    private var stopped = false

    /// Ends the bus now (a test of a bus that goes away); deinit does it otherwise.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        terminate(process)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// bluezoo (a mock of BlueZ's D-Bus API) on a private bus, with virtual adapters.
public final class MockBlueZ {
    public let bus: PrivateBus
    private var process = Process()
    private let arguments: [String]
    let log: URL

    public init(adapters: Int, poweredOn: Bool = true) throws {
        bus = try PrivateBus()
        arguments = (poweredOn ? ["--auto-enable"] : []) + ["--scan-interval", "1", "-v"]
            + (1...adapters).flatMap { ["-a", String(format: "00:00:00:00:00:%02X", $0)] }
        log = bus.directory.appendingPathComponent("bluezoo.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        try launch()
    }

    private func launch() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let exe = root.appendingPathComponent(".venv/bin/bluezoo")
        guard FileManager.default.isExecutableFile(atPath: exe.path) else {
            throw DBusError(name: "test", message: "bluezoo is not installed: run scripts/install-deps --test")
        }
        process = Process()
        process.executableURL = exe
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["DBUS_SYSTEM_BUS_ADDRESS"] = bus.address
        process.environment = env
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        running = true
    }
    private var running = false

    /// BlueZ stops, the bus stays (`systemctl restart bluetooth`, first half).
    public func stopBlueZ() {
        guard running else { return }
        running = false
        terminate(process)
    }

    /// BlueZ starts again on the same bus, with the same adapters; returns once they are there.
    public func startBlueZ(adapters: Int) async throws {
        try launch()
        let probe = try DBusConnection(address: bus.address)
        defer { probe.close() }
        try await ready(probe, count: adapters)
    }

    public var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// bluezoo with `adapters` adapters, once they are all there.
    public static func started(adapters: Int, poweredOn: Bool = true) async throws -> MockBlueZ {
        let zoo = try MockBlueZ(adapters: adapters, poweredOn: poweredOn)
        let probe = try DBusConnection(address: zoo.bus.address)
        defer { probe.close() }
        try await zoo.ready(probe, count: adapters)
        return zoo
    }

    /// Waits until bluezoo shows `count` adapters: up to 90 s, since a cold
    /// machine's first start of bluezoo (Python imports, a loaded CI run) has
    /// taken more than 15 s here; a warm start takes about a second.
    public func ready(_ connection: DBusConnection, count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(90)
        while ContinuousClock.now < deadline {
            if let a = try? await BlueZ.adapters(connection), a.count >= count { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw DBusError(name: "test", message: "bluezoo did not come up:\n\(logText)")
    }

    private var stopped = false

    /// Ends bluezoo and its bus now (BlueZ gone mid-conversation).
    public func stop() {
        guard !stopped else { return }
        stopped = true
        stopBlueZ()
        bus.stop()
    }

    deinit { stop() }
}

