import Crypto
import Foundation
import StarlingTransport
import StarlingWire
import StarlingYaOKServerCore

/// The Ya OK client's runtime: a UDP socket to one server, the protocol core
/// and its clock. It sleeps until the core's next deadline (a poll, a PING, a
/// retry; ``DeadlineTimer``), at most 5 s at a time, or until a datagram comes.
public actor YaOKClient {
    public typealias Event = YaOKClientCore.Event

    public nonisolated let server: UDPAddress
    public nonisolated let configuration: YaOKClientCore.Configuration
    public nonisolated let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let socket: UDPSocket
    private var core: YaOKClientCore
    private var tasks: [Task<Void, Never>] = []
    private var timer = DeadlineTimer()
    private var running = false

    public init(server: UDPAddress, userID: UserID, signingKey: Curve25519.Signing.PrivateKey,
                configuration: YaOKClientCore.Configuration = .init()) throws {
        self.server = server
        socket = try UDPSocket(bindTo: server.ipv6 == nil ? .any(0) : .anyIPv6(0))
        self.configuration = configuration
        core = YaOKClientCore(userID: userID, signingKey: signingKey, configuration: configuration)
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(10_000))
    }

    /// Monotonic time for the core's timers; the wall clock's offset from it
    /// goes to the core at every reading (``NodeTime``).
    private let time = NodeTime()

    private func readClock() -> UInt64 {
        core.wallClockOffset = time.wallOffset()
        return time.now()
    }

    public var isRegistered: Bool { core.isRegistered }
    public var waitingCount: Int { core.waitingCount }

    /// Registers and runs until ``stop()``.
    public func start() {
        running = true
        perform(core.start(now: readClock()))
        tasks.append(receiving(from: server, on: socket) { $0.received($1) })
    }

    /// Says BYE (the session ends at the server), then stops.
    public func leave() {
        perform(core.leave())
        stop()
    }

    public func stop() {
        running = false
        for t in tasks { t.cancel() }
        tasks = []
        timer.cancel()
        socket.close()
        continuation.finish()
    }

    /// Hands a sealed message to the relay; its fate comes as an event
    /// (queued, rejected or failed).
    public func send(sealed payload: [UInt8]) throws {
        perform(try core.send(sealed: payload, now: readClock()))
    }

    /// The message is stored: the server may drop it.
    public func acknowledge(_ messageID: UserID) {
        perform(core.acknowledge(messageID, now: readClock()))
    }

    public func pollNow() {
        perform(core.poll(now: readClock()))
    }

    private func received(_ bytes: [UInt8]) {
        perform(core.receive(bytes, now: readClock()))
    }

    private func tick() {
        timer.fired()
        perform(core.tick(now: readClock()))
    }

    /// The core's deadline may have moved: the timer follows it (5 s at most,
    /// so that a wall-clock step is read within 5 s).
    private func rearm() {
        guard running else { return }
        let now = readClock()
        timer.arm(at: min(core.nextDeadline, now + 5_000), now: now) { [weak self] in await self?.tick() }
    }

    private func perform(_ steps: [YaOKClientCore.Step]) {
        for step in steps {
            switch step {
            case let .send(bytes): _ = socket.send(bytes, to: server)
            case let .event(e): continuation.yield(e)
            }
        }
        rearm()
    }
}
