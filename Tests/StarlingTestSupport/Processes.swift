import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

// The process helpers every test target shares: the `starling` binary run
// to its end or read as it runs, the repository's Python environment, and a
// bound on how many tests run processes at once.

/// Limits scale with STARLING_TEST_TIMEOUT_SCALE (default 1): a slow machine
/// can give every wait more room without a test changing.
public enum TestTimeouts {
    public static let scale: Double = {
        guard let text = ProcessInfo.processInfo.environment["STARLING_TEST_TIMEOUT_SCALE"], let v = Double(text), v > 0 else { return 1 }
        return v
    }()
}

/// How many tests run processes at once (STARLING_TEST_PROCESSES, default:
/// the processor count, at least 2). A burst of parallel process starts on a
/// cold, loaded machine is what made readiness waits run out.
///
/// ``computing`` bounds the tests that compute for seconds in the test
/// process itself (simulated meshes, soaks, floods of signatures:
/// STARLING_TEST_COMPUTE, default 1). Started all at once with the rest they
/// took both of CI's cores for the suite's first minute (`perf`: ten of them,
/// ~75% of the process's time), and every wait for a process's readiness or
/// a server's answer ran out in that minute.
public actor ProcessSlots {
    public static let shared = ProcessSlots(Int(ProcessInfo.processInfo.environment["STARLING_TEST_PROCESSES"] ?? "")
                                            ?? max(2, ProcessInfo.processInfo.activeProcessorCount))
    public static let computing = ProcessSlots(Int(ProcessInfo.processInfo.environment["STARLING_TEST_COMPUTE"] ?? "") ?? 1)
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []
    init(_ n: Int) { free = max(1, n) }
    public func acquire() async {
        if free > 0 { free -= 1 } else { await withCheckedContinuation { waiting.append($0) } }
    }
    public func release() {
        if waiting.isEmpty { free += 1 } else { waiting.removeFirst().resume() }
    }
}

/// A test (or every test of a suite) that holds one of a set of
/// ``ProcessSlots`` for its whole run: `.usesProcesses` (it runs processes)
/// or `.computesHeavily` (it computes for seconds in the test process).
public struct HoldsASlot: TestTrait, SuiteTrait, TestScoping {
    let slots: ProcessSlots
    public var isRecursive: Bool { true }
    public func provideScope(for test: Test, testCase: Test.Case?, performing body: @Sendable () async throws -> Void) async throws {
        guard !test.isSuite else { return try await body() }
        await slots.acquire()
        do {
            try await body()
        } catch {
            await slots.release()
            throw error
        }
        await slots.release()
    }
}

extension Trait where Self == HoldsASlot {
    /// The test runs processes: it waits for one of ``ProcessSlots/shared``.
    public static var usesProcesses: Self { HoldsASlot(slots: .shared) }
    /// The test computes for seconds: it waits for one of ``ProcessSlots/computing``.
    public static var computesHeavily: Self { HoldsASlot(slots: .computing) }
}

/// The repository, and its Python environment (`.venv`, made by scripts/install-deps --test).
public enum PythonEnvironment {
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    public static var python: URL { root.appendingPathComponent(".venv/bin/python") }

    /// The interpreter, or a failure that says how to get it.
    public static func require() throws -> URL {
        try #require(FileManager.default.isExecutableFile(atPath: python.path),
                     "no Python environment at \(python.path): run scripts/install-deps --test (scripts/test does)")
        return python
    }

    /// Runs a script of Tests/interop (or any path under the root) to its end,
    /// standard input from `input`, within `seconds`; its standard output.
    public static func run(_ script: String, _ arguments: [String] = [], input: Data? = nil, seconds: Double = 120) async throws -> String {
        let python = try require()
        let path = script.hasPrefix("/") ? script : root.appendingPathComponent(script.contains("/") ? script : "Tests/interop/\(script)").path
        let result = try await StarlingProcess.run(executable: python, [path] + arguments, stdin: input, seconds: seconds)
        #expect(result.status == 0, "\(script) exited \(result.status): \(result.stderr.suffix(2_000))")
        return result.stdout
    }
}

/// Runs the real `starling` binary, built next to this test bundle.
public struct StarlingProcess {
    public struct Result: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    public static var executable: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("starling")
    }

    /// Runs `starling` to the end. Async: waiting never holds a thread of the
    /// shared pool that in-process async tests need.
    public static func run(executable program: URL? = nil, _ arguments: [String], stdin: Data? = nil,
                           environment: [String: String] = [:], seconds: Double = 60) async throws -> Result {
        let process = Process()
        process.executableURL = program ?? executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try input.fileHandleForWriting.close()
        // The pipes are read without blocking while the child runs (a full pipe
        // would stall it) and drained once it has exited: what it wrote is in
        // the pipe then. Not read to end-of-file: that waits forever when
        // another child holds a pipe.
        var stdout = Data(), stderr = Data()
        let outFD = out.fileHandleForReading.fileDescriptor, errFD = err.fileHandleForReading.fileDescriptor
        for fd in [outFD, errFD] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        func drain() {
            read(outFD, into: &stdout)
            read(errFD, into: &stderr)
        }
        var status: Int32?
        let deadline = Date().addingTimeInterval(seconds * TestTimeouts.scale)
        while status == nil, Date() < deadline {
            drain()
            status = waitForExit(process, seconds: 0)
            if status == nil { try? await Task.sleep(for: .milliseconds(10)) }
        }
        if status == nil {
            kill(process.processIdentifier, SIGKILL)
            status = -1
        }
        drain()
        return Result(status: status ?? -1, stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// Appends what a non-blocking descriptor holds now.
    public static func read(_ fd: Int32, into data: inout Data) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { return }
            data.append(contentsOf: buffer[0..<n])
        }
    }

    /// Waits for a child to exit, for at most `seconds`, and returns its exit
    /// status (nil on timeout). Polls waitpid instead of Foundation's
    /// waitUntilExit, which can miss a child's exit and wait forever; when
    /// Foundation reaped the child first, asks it for the status only once it
    /// knows (asking earlier traps).
    public static func waitForExit(_ process: Process, seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        let pid = process.processIdentifier
        var first = true // checked at least once, even with 0 seconds
        while first || Date() < deadline {
            first = false
            var raw: Int32 = 0
            let r = waitpid(pid, &raw, WNOHANG)
            if r == pid { return (raw & 0x7F) == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F) }
            if r == -1 && errno == ECHILD {
                let known = Date().addingTimeInterval(2)
                while process.isRunning, Date() < known { Thread.sleep(forTimeInterval: 0.01) }
                return process.isRunning ? nil : process.terminationStatus
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return nil
    }
}

/// A `starling` process whose output is read as it comes.
public final class LiveProcess: @unchecked Sendable {
    public let process = Process()
    private let lock = NSLock()
    private var output = ""
    private let input = Pipe()

    public convenience init(_ arguments: [String]) throws {
        self.init(executable: StarlingProcess.executable, arguments: arguments)
        try start()
    }

    /// A process of any executable (the first element), not started yet.
    public static func unstarted(_ command: [String]) -> LiveProcess {
        LiveProcess(executable: URL(fileURLWithPath: command[0]), arguments: Array(command.dropFirst()))
    }

    private init(executable: URL, arguments: [String]) {
        process.executableURL = executable
        process.arguments = arguments
    }

    public func start() throws {
        process.standardInput = input
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.lock()
            self.output += String(decoding: data, as: UTF8.self)
            self.lock.unlock()
        }
        try process.run()
    }

    public var text: String { lock.lock(); defer { lock.unlock() }; return output }

    /// Types a line on the process's standard input.
    public func type(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }

    /// Polls the plain output for `needle` for at most `seconds`.
    /// Async, so that waiting never holds a thread of the shared pool that
    /// in-process tests run on.
    /// Limits, not sleeps: generous (30 s) so that a cold, loaded first run passes; they cost time only on failure.
    public func waitForText(_ needle: String, seconds: Double = 30) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds * TestTimeouts.scale)
        var exitedAt: Date?
        while Date() < deadline {
            if text.contains(needle) { return true }
            if gone(&exitedAt) { return text.contains(needle) }
            try? await Task.sleep(for: .milliseconds(20))
        }
        // Once more after the limit: a waiter starved of its thread (CPU-bound
        // tests beside it) wakes past the deadline with the text already there.
        return text.contains(needle)
    }

    /// Whether the process has exited and its output had half a second to drain:
    /// waiting longer for its text cannot help.
    private func gone(_ exitedAt: inout Date?) -> Bool {
        guard !process.isRunning else { return false }
        if let t = exitedAt { return Date().timeIntervalSince(t) > 0.5 }
        exitedAt = Date()
        return false
    }

    /// JSON events printed so far.
    public var events: [[String: Any]] {
        text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Polls for an event matching `predicate` for at most `seconds`.
    public func waitFor(seconds: Double = 30, _ predicate: ([String: Any]) -> Bool) async -> [String: Any]? {
        let deadline = Date().addingTimeInterval(seconds * TestTimeouts.scale)
        var exitedAt: Date?
        while Date() < deadline {
            if let e = events.first(where: predicate) { return e }
            if gone(&exitedAt) { return events.first(where: predicate) }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return events.first(where: predicate)
    }

    /// The exit status, polled without holding a thread (nil: still running after `seconds`).
    @discardableResult
    public func waitForExit(seconds: Double = 15) async -> Int32? {
        let deadline = Date().addingTimeInterval(seconds * TestTimeouts.scale)
        while Date() < deadline {
            if let status = StarlingProcess.waitForExit(process, seconds: 0) { return status }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return StarlingProcess.waitForExit(process, seconds: 0)
    }

    public func stop() {
        if process.isRunning { process.terminate() }
        if StarlingProcess.waitForExit(process, seconds: 5) == nil {
            kill(process.processIdentifier, SIGKILL)
            _ = StarlingProcess.waitForExit(process, seconds: 5)
        }
    }
}
