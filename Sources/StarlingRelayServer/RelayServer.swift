import Foundation
import StarlingTransport
import StarlingWire
import StarlingYaOKRelay

/// The relay server's runtime: one UDP socket, the protocol core, a store.
/// MSGs are committed in groups — whatever arrived while the previous commit
/// ran goes into the next transaction — and QUEUED is sent only after its
/// commit, so that an answered message survives a SIGKILL.
///
/// Bounds: at most `maxPendingStore` store operations wait at once (more
/// packets are dropped, and their senders retry), 512 messages a commit.
public actor RelayServer {
    public typealias Core = RelayServerCore<UDPAddress>

    public nonisolated let port: UInt16
    private let socket: UDPSocket
    private let store: any RelayStore
    private var core: Core
    private var pending: [(RelayQueuedMessage, UDPAddress)] = []
    private var committing = false
    private var inFlight = 0
    private var stopped = false
    public let maxPendingStore = 20_000
    public private(set) var commits = 0
    public private(set) var storeFailures = 0

    public init(store: any RelayStore, bind address: UDPAddress, configuration: Core.Configuration = .init()) throws {
        socket = try UDPSocket(bindTo: address)
        port = socket.localPort
        self.store = store
        core = Core(configuration: configuration)
    }

    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    public var counters: Core.Counters { core.counters }
    public var sessionCount: Int { core.sessionCount }

    /// Serves until ``stop()``.
    public func run() async {
        let housekeeping = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(30))
                await self?.housekeep()
            }
        }
        for await (address, datagram) in socket.datagrams(maxSize: RelayPacket.maxDatagram + 1) {
            if stopped { break }
            perform(core.receive(datagram, from: address, now: Self.now()))
        }
        housekeeping.cancel()
    }

    public func stop() {
        stopped = true
        socket.close()
    }

    private func housekeep() async {
        let now = Self.now()
        core.tick(now: now)
        _ = try? await store.expire(before: now.saturatingSubtract(core.configuration.limits.maxAge))
    }

    private func perform(_ steps: [Core.Step]) {
        for step in steps {
            switch step {
            case let .send(bytes, address):
                _ = socket.send(bytes, to: address)
            case let .enqueue(message, address):
                guard inFlight + pending.count < maxPendingStore else { continue }
                pending.append((message, address))
                if !committing {
                    committing = true
                    Task { await self.commitLoop() }
                }
            case let .register(r, address):
                guard admit() else { continue }
                Task {
                    await self.completeRegistration(r, from: address)
                    self.done()
                }
            case let .fetch(user, limit, address):
                guard admit() else { continue }
                Task {
                    let messages = try? await self.store.fetch(user, limit: limit)
                    self.perform(self.core.fetched(messages ?? [], for: address))
                    self.done()
                }
            case let .remove(user, id):
                guard admit() else { continue }
                Task {
                    let removed = try? await self.store.remove(user, messageID: id)
                    self.perform(self.core.removed(removed ?? nil))
                    self.done()
                }
            }
        }
    }

    private func admit() -> Bool {
        guard inFlight + pending.count < maxPendingStore else { return false }
        inFlight += 1
        return true
    }

    private func done() { inFlight -= 1 }

    private func completeRegistration(_ r: RelayRegistration, from address: UDPAddress) async {
        let now = Self.now()
        let result: Result<UserID, RelayRejection>
        do {
            let pinned = try await store.pinned(r.userID)
            switch Core.check(r, pinned: pinned, now: now, window: core.configuration.registrationWindow) {
            case let .failure(why):
                result = .failure(why)
            case let .success(key):
                result = try await store.register(r.userID, key: key, timestamp: r.timestamp) ? .success(r.userID) : .failure(.serverFull)
            }
        } catch {
            storeFailures += 1
            result = .failure(.storageFailed)
        }
        perform(core.registration(result, from: address, now: Self.now()))
    }

    /// Group commit: each turn takes everything that arrived meanwhile.
    private func commitLoop() async {
        while !pending.isEmpty {
            let batch = Array(pending.prefix(512))
            pending.removeFirst(batch.count)
            inFlight += batch.count
            do {
                let outcomes = try await store.enqueue(batch.map(\.0), limits: core.configuration.limits)
                commits += 1
                for ((message, address), outcome) in zip(batch, outcomes) { perform(core.enqueued(message, outcome, from: address)) }
            } catch {
                storeFailures += 1
                for (message, address) in batch { perform(core.storageFailed(message, from: address)) }
            }
            inFlight -= batch.count
        }
        committing = false
    }
}

extension UInt64 {
    func saturatingSubtract(_ x: UInt64) -> UInt64 { self >= x ? self - x : 0 }
}
