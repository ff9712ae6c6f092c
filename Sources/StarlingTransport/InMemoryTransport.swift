import Foundation
import StarlingWire

/// Transports in one process, joined by a hub: no sockets, no radio. Each
/// endpoint is a ``Transport``; ``InMemoryHub/connect(_:_:maxFrame:)`` makes a
/// link between two of them. Frames go straight into the other end's events.
/// For tests and for apps that want two nodes in one process; for many nodes
/// on a virtual clock, see `EmbeddedNetwork` (StarlingNodeCore).
///
/// Each endpoint keeps its hub: the links work as long as the endpoints live,
/// whether or not the hub is still held (the hub holds its endpoints weakly).
public final class InMemoryHub: @unchecked Sendable {
    private let lock = NSLock()
    private struct Weak { weak var transport: InMemoryTransport? }
    private var endpoints: [String: Weak] = [:]

    public init() {}

    /// A new endpoint named `id` (its links on the others are named by it).
    public func endpoint(_ id: String) -> InMemoryTransport {
        let t = InMemoryTransport(id: id, hub: self)
        lock.withLock {
            endpoints = endpoints.filter { $0.value.transport != nil } // those released
            endpoints[id] = Weak(transport: t)
        }
        return t
    }

    func endpoint(named id: String) -> InMemoryTransport? { lock.withLock { endpoints[id]?.transport } }

    /// Links `a` and `b` both ways.
    public func connect(_ a: InMemoryTransport, _ b: InMemoryTransport, maxFrame: Int? = nil) {
        a.linked(b.id, maxFrame: maxFrame)
        b.linked(a.id, maxFrame: maxFrame)
    }

    /// Whether `a` has a link to `b`.
    public func isLinked(_ a: InMemoryTransport, _ b: InMemoryTransport) -> Bool { a.isLinked(to: b.id) }

    /// Ends the link between `a` and `b` on both sides.
    public func disconnect(_ a: InMemoryTransport, _ b: InMemoryTransport) {
        a.unlinked(b.id)
        b.unlinked(a.id)
    }
}

/// One endpoint of an ``InMemoryHub``. Its links are named by the other
/// endpoints' IDs.
public final class InMemoryTransport: Transport, @unchecked Sendable {
    public let name = "memory"
    public let id: String
    public let events: AsyncStream<TransportEvent>
    private let continuation: AsyncStream<TransportEvent>.Continuation
    private let hub: InMemoryHub
    private let lock = NSLock()
    private var links: Set<String> = []
    private var stopped = false

    init(id: String, hub: InMemoryHub) {
        self.id = id
        self.hub = hub
        (events, continuation) = AsyncStream.makeStream(of: TransportEvent.self, bufferingPolicy: .bufferingNewest(65_536))
    }

    func linked(_ other: String, maxFrame: Int?) {
        guard lock.withLock({ !stopped && links.insert(other).inserted }) else { return }
        continuation.yield(.up(other, maxFrame: maxFrame))
    }

    func isLinked(to other: String) -> Bool { lock.withLock { links.contains(other) } }

    func unlinked(_ other: String) {
        guard lock.withLock({ links.remove(other) }) != nil else { return }
        continuation.yield(.down(other))
    }

    func deliver(_ frame: [UInt8], on channel: FrameChannel, from other: String) {
        guard lock.withLock({ links.contains(other) }) else { return }
        continuation.yield(.frame(other, frame, channel))
    }

    public func start() async throws {}

    public func send(_ frame: [UInt8], on channel: FrameChannel, to keys: [String]) {
        let mine = lock.withLock { keys.filter { links.contains($0) } }
        for key in mine { hub.endpoint(named: key)?.deliver(frame, on: channel, from: id) }
    }

    public func close(_ key: String) async {
        guard let other = hub.endpoint(named: key) else { return }
        hub.disconnect(self, other)
    }

    public func stop() async {
        let others = lock.withLock { () -> [String] in
            stopped = true
            return Array(links)
        }
        for key in others { await close(key) }
        continuation.finish()
    }
}
