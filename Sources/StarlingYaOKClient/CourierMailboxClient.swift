import Foundation
import StarlingTransport
import StarlingWire
import StarlingYaOKServerCore

/// The courier mailbox's runtime on a node: a UDP socket to one relay
/// server and ``CourierMailboxCore``, ticked at its next deadline
/// (``DeadlineTimer``) and at each datagram.
/// What a fetch brings comes out of ``drops``; what became of the posted
/// drops out of ``outcomes``; whether the server answers (said once an
/// outage) out of ``answering``. A server given by a host name is looked up
/// again when it stops answering (``ServerName``).
public actor CourierMailboxClient: DeadlineDriven {
    /// The address the server had when the client was made.
    public nonisolated let server: UDPAddress
    /// Where the server is now (the name's latest address).
    public private(set) var address: UDPAddress
    private var name: ServerName
    /// Envelopes a fetch brought (the newest 1,000 kept when nobody reads).
    public nonisolated let drops: AsyncStream<CourierEnvelope>
    public enum Outcome: Hashable, Sendable {
        case taken(Bytes16)
        case notTaken(Bytes16, ServerRejection?)
    }
    public nonisolated let outcomes: AsyncStream<Outcome>
    /// False when the server stopped answering (or never did), true when it answers again after that.
    public nonisolated let answering: AsyncStream<Bool>
    private let dropSink: AsyncStream<CourierEnvelope>.Continuation
    private let outcomeSink: AsyncStream<Outcome>.Continuation
    private let answeringSink: AsyncStream<Bool>.Continuation
    private let socket: UDPSocket
    private var core: CourierMailboxCore
    private var tasks: [Task<Void, Never>] = []
    package var driver = DeadlineDriver()
    private var running = false
    private let time = NodeTime()

    /// `name`: the host name `server` was found by (looked up again when it stops answering).
    public init(server: UDPAddress, configuration: CourierMailboxCore.Configuration = .init(), name: String? = nil,
                lookup: @escaping @Sendable (String) -> UDPAddress? = { try? UDPAddress.resolving($0) }) throws {
        self.server = server
        address = server
        self.name = ServerName(name, lookup: lookup)
        socket = try .forServer()
        core = CourierMailboxCore(configuration: configuration)
        (drops, dropSink) = AsyncStream.makeStream(of: CourierEnvelope.self, bufferingPolicy: .bufferingNewest(1_000))
        (outcomes, outcomeSink) = AsyncStream.makeStream(of: Outcome.self, bufferingPolicy: .bufferingNewest(1_000))
        (answering, answeringSink) = AsyncStream.makeStream(of: Bool.self, bufferingPolicy: .bufferingNewest(16))
    }

    /// Whether the server has taken this address as proven.
    public var isReady: Bool { core.ready }
    public var waitingCount: Int { core.waiting }
    public var counts: (posted: Int, fetched: Int) { (core.posted, core.fetched) }

    public func start() {
        running = true
        tasks.append(receiving(on: socket) { client, from, bytes in
            guard from == client.address else { return } // only the server speaks for the server
            client.received(bytes)
        })
        perform(core.tick(now: time.now()))
    }

    public func stop() {
        running = false
        driver.stop()
        for t in tasks { t.cancel() }
        tasks = []
        socket.close()
        dropSink.finish()
        outcomeSink.finish()
        answeringSink.finish()
    }

    public func post(_ envelope: CourierEnvelope) { perform(core.post(envelope, now: time.now())) }

    /// Recipient tags (hex, as the node says them); bad ones are left out.
    public func follow(hexTags: [String]) {
        perform(core.follow(hexTags.compactMap { Bytes16(hex: $0) }, now: time.now()))
    }

    private func received(_ bytes: [UInt8]) {
        perform(core.receive(bytes, now: time.now()))
    }

    package var drives: Bool { running }
    package var nextWake: UInt64? { core.nextDeadline() }
    package func clockNow() -> UInt64 { time.now() }
    package func due(now: UInt64) async {
        perform(core.tick(now: now))
        // Still not answering: the name may point elsewhere now (at most every 30 s).
        if !core.ready, core.outageSaid { lookUpAgain() }
    }

    private func perform(_ outputs: [CourierMailboxCore.Output]) {
        for o in outputs {
            switch o {
            case let .send(bytes): _ = socket.send(bytes, to: address)
            case let .drop(e): dropSink.yield(e)
            case let .taken(id): outcomeSink.yield(.taken(id))
            case let .notTaken(id, why): outcomeSink.yield(.notTaken(id, why))
            case let .answering(yes):
                answeringSink.yield(yes)
                if !yes { lookUpAgain() }
            }
        }
        rearm()
    }
}

extension CourierMailboxClient {
    /// The server stopped answering: its name is looked up again (off the actor).
    private func lookUpAgain() {
        guard running, let text = name.begin(now: time.now()) else { return }
        name.resolve(text) { [weak self] in await self?.lookedUp($0) }
    }

    /// The name's address now: used from here on, proven there anew.
    private func lookedUp(_ found: UDPAddress?) {
        name.end()
        guard running else { return }
        if let found, found != address { address = found }
    }
}

extension Bytes16 {
    /// From 32 hex digits.
    init?(hex: String) {
        guard hex.utf8.count == 32, let bytes = try? [UInt8](hex: hex), bytes.count == 16 else { return nil }
        self.init(bytes)
    }
}
