import Crypto
import Foundation
import StarlingTransport
import StarlingWire
import StarlingYaOKServerCore

/// The Ya OK client's runtime: a UDP socket to one server, the protocol core
/// and its clock. It sleeps until the core's next deadline (a poll, a PING, a
/// retry; ``DeadlineTimer``) or until a datagram comes. The server may be at
/// several addresses (a list, a name with several records: ``ServerList``):
/// when the one in use is lost, the client registers at the next, and what it
/// sent that was not QUEUED goes there (servers on one database take a retry
/// once). Names are looked up again when the server stops answering.
public actor YaOKClient: DeadlineDriven {
    public typealias Event = YaOKClientCore.Event

    /// The address the server had when the client was made.
    public nonisolated let server: UDPAddress
    public nonisolated let configuration: YaOKClientCore.Configuration
    public nonisolated let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let socket: UDPSocket
    private var receiver: Task<Void, Never>?
    private var core: YaOKClientCore
    package var driver = DeadlineDriver()
    private var running = false
    private var list: ServerList
    /// Where the server is now: the address in use.
    public private(set) var address: UDPAddress
    /// Every address the client may use, in order.
    public var addresses: [UDPAddress] { list.addresses }
    /// Moves from one address to the next (the one in use lost or not answering).
    public private(set) var moves = 0
    /// REGISTERs unanswered when the client last moved: unregistered, it moves
    /// on after every `unansweredRegistrations` unanswered (``YaOKClientCore/Event/unreachable``
    /// is said once an outage, at the REGISTER after the first three).
    private var unansweredAtMove = 0
    /// The least time between two lookups of the name (while the server does not answer).
    public static let lookupInterval = ServerName.interval

    public init(server: UDPAddress, userID: UserID, signingKey: Curve25519.Signing.PrivateKey,
                configuration: YaOKClientCore.Configuration = .init(), name: String? = nil,
                lookup: @escaping @Sendable (String) -> UDPAddress? = { try? UDPAddress.resolving($0) }) throws {
        try self.init(servers: [name ?? server.description], addresses: [server], userID: userID, signingKey: signingKey,
                      configuration: configuration, lookup: { text in lookup(text).map { [$0] } ?? [] })
    }

    /// A server at any of `addresses` (what `servers`, "HOST:PORT" texts, gave
    /// when looked up; the first is used first).
    public init(servers: [String], addresses: [UDPAddress], userID: UserID, signingKey: Curve25519.Signing.PrivateKey,
                configuration: YaOKClientCore.Configuration = .init(),
                lookup: @escaping @Sendable (String) -> [UDPAddress] = { (try? UDPAddress.resolvingAll($0)) ?? [] }) throws {
        guard let first = addresses.first else { throw UDPAddress.ResolutionError(text: servers.joined(separator: ","), reason: "no address") }
        server = first
        address = first
        list = ServerList(entries: servers, addresses: addresses, lookup: lookup)
        socket = try .forServer()
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
        listen()
    }

    /// Reads the socket: the server's datagrams (from where it is now) go to the core.
    private func listen() {
        receiver = receiving(on: socket) { client, from, bytes in
            guard from == client.address else { return } // only the server speaks for the server
            client.received(bytes)
        }
    }

    /// The server in use was lost or does not answer: the next address from
    /// here on (the REGISTER that follows goes there), and the names looked up again.
    private func moveOn() {
        if list.addresses.count > 1 {
            address = list.move()
            moves += 1
            core.serverMoved() // the next address gets its own backoff, from the first interval
        }
        unansweredAtMove = core.unansweredRegistrationCount
        lookUpAgain()
    }

    /// The server stopped answering: its names are looked up again (at most every 30 s,
    /// off the actor: getaddrinfo blocks), and what they give is used from then on.
    private func lookUpAgain() {
        guard running, let texts = list.begin(now: readClock()) else { return }
        list.resolve(texts) { [weak self] in await self?.lookedUp($0) }
    }

    /// The names' addresses now (the socket is dual stack: either family).
    private func lookedUp(_ found: [UDPAddress]) {
        guard list.lookedUp(found), running else { return }
        address = list.current
        perform(core.poll(now: readClock())) // (registering, if it must, at the new address)
    }

    /// Says BYE (the session ends at the server), then stops.
    public func leave() {
        perform(core.leave())
        stop()
    }

    public func stop() {
        running = false
        receiver?.cancel()
        receiver = nil
        driver.stop()
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

    package var drives: Bool { running }
    package var nextWake: UInt64? { core.nextDeadline }
    package func clockNow() -> UInt64 { readClock() }
    package func due(now: UInt64) async {
        // Before the tick: the REGISTER due now goes to the next address when the last
        // `unansweredRegistrations` went unanswered here (each had its full wait).
        let unanswered = core.unansweredRegistrationCount
        if unanswered < unansweredAtMove { unansweredAtMove = 0 } // answered meanwhile: counted anew
        let movesOn = list.addresses.count > 1 && core.registrationDue(at: now)
            && unanswered - unansweredAtMove >= configuration.unansweredRegistrations
        if movesOn { moveOn() }
        perform(core.tick(now: now))
        // Unregistered and unanswered: the name may point elsewhere now.
        if !movesOn, list.hasNames, !core.isRegistered, core.unansweredRegistrationCount > 0 { lookUpAgain() }
    }

    /// The core's deadline may have moved: the timer follows it. (The wall
    /// clock's offset is read with every reading of the clock, so a step
    /// needs no wake of its own: a REGISTER's timestamp reads it then.)

    private func perform(_ steps: [YaOKClientCore.Step]) {
        for step in steps {
            switch step {
            case let .send(bytes): _ = socket.send(bytes, to: address)
            case let .event(e):
                // Lost: moved before the event is said (and before the REGISTER after it goes).
                // Never answered: moved by the count of unanswered REGISTERs (``due(now:)``), the
                // event said once an outage.
                if e == .lost { moveOn() } else if e == .unreachable, list.addresses.count == 1 { lookUpAgain() }
                continuation.yield(e)
            }
        }
        rearm()
    }
}
