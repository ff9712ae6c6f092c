import Foundation
import StarlingTransport
import StarlingWire
import StarlingYaOKServerCore

/// The courier mailbox's runtime on a node: a UDP socket to one relay
/// server and ``CourierMailboxCore``, ticked at its next deadline
/// (``DeadlineTimer``) and at each datagram.
/// What a fetch brings comes out of ``drops``; what became of the posted
/// drops out of ``outcomes``.
public actor CourierMailboxClient {
    public nonisolated let server: UDPAddress
    /// Envelopes a fetch brought (the newest 1,000 kept when nobody reads).
    public nonisolated let drops: AsyncStream<CourierEnvelope>
    public enum Outcome: Hashable, Sendable {
        case taken(Bytes16)
        case notTaken(Bytes16, ServerRejection?)
    }
    public nonisolated let outcomes: AsyncStream<Outcome>
    private let dropSink: AsyncStream<CourierEnvelope>.Continuation
    private let outcomeSink: AsyncStream<Outcome>.Continuation
    private let socket: UDPSocket
    private var core: CourierMailboxCore
    private var tasks: [Task<Void, Never>] = []
    private var timer = DeadlineTimer()
    private var running = false
    private let time = NodeTime()

    public init(server: UDPAddress, configuration: CourierMailboxCore.Configuration = .init()) throws {
        self.server = server
        socket = try UDPSocket(bindTo: server.ipv6 == nil ? .any(0) : .anyIPv6(0))
        core = CourierMailboxCore(configuration: configuration)
        (drops, dropSink) = AsyncStream.makeStream(of: CourierEnvelope.self, bufferingPolicy: .bufferingNewest(1_000))
        (outcomes, outcomeSink) = AsyncStream.makeStream(of: Outcome.self, bufferingPolicy: .bufferingNewest(1_000))
    }

    /// Whether the server has taken this address as proven.
    public var isReady: Bool { core.ready }
    public var waitingCount: Int { core.waiting }
    public var counts: (posted: Int, fetched: Int) { (core.posted, core.fetched) }

    public func start() {
        running = true
        tasks.append(receiving(from: server, on: socket) { $0.received($1) })
        tick()
    }

    public func stop() {
        running = false
        timer.cancel()
        for t in tasks { t.cancel() }
        tasks = []
        socket.close()
        dropSink.finish()
        outcomeSink.finish()
    }

    public func post(_ envelope: CourierEnvelope) { perform(core.post(envelope, now: time.now())) }

    /// Recipient tags (hex, as the node says them); bad ones are left out.
    public func follow(hexTags: [String]) {
        perform(core.follow(hexTags.compactMap { Bytes16(hex: $0) }, now: time.now()))
    }

    private func received(_ bytes: [UInt8]) {
        perform(core.receive(bytes, now: time.now()))
    }

    private func tick() {
        timer.fired()
        perform(core.tick(now: time.now()))
    }

    private func perform(_ outputs: [CourierMailboxCore.Output]) {
        for o in outputs {
            switch o {
            case let .send(bytes): _ = socket.send(bytes, to: server)
            case let .drop(e): dropSink.yield(e)
            case let .taken(id): outcomeSink.yield(.taken(id))
            case let .notTaken(id, why): outcomeSink.yield(.notTaken(id, why))
            }
        }
        guard running else { return }
        timer.arm(at: core.nextDeadline(), now: time.now()) { [weak self] in await self?.tick() }
    }
}

extension Bytes16 {
    /// From 32 hex digits.
    init?(hex: String) {
        guard hex.utf8.count == 32, let bytes = try? [UInt8](hex: hex), bytes.count == 16 else { return nil }
        self.init(bytes)
    }
}
