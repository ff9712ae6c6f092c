import Foundation
import StarlingTransport
import StarlingWire
import StarlingYaOKServerCore

/// The Ya OK server's runtime: one UDP socket, the protocol core, a store.
/// MSGs are committed in groups — whatever arrived while the previous commit
/// ran goes into the next transaction, with up to the store's
/// `commitsUnderWay` begun at once — and QUEUED is sent only after its
/// commit, so that an answered message survives a SIGKILL.
///
/// ACKs to remove and courier drops to keep go into the same group commits
/// (one sync of the disk for all), a POLL waits for the ACKs that came before
/// it, and DROP_TAKEN too is sent only after its commit.
///
/// Bounds: at most `maxPendingStore` store operations wait at once (more
/// packets are dropped, and their senders retry), 512 messages, 512 ACKs and
/// 512 drops a commit.
public actor YaOKServer {
    public typealias Core = YaOKServerCore<UDPAddress>

    public nonisolated let port: UInt16
    private let socket: UDPSocket
    private let store: any ServerStore
    private var core: Core
    private var pending: [(QueuedMessage, UDPAddress)] = []
    /// Drops for the next group commit, with who sent each.
    private var pendingDrops: [(StoredDrop, UDPAddress)] = []
    /// Commits begun and not yet returned (at most the store's `commitsUnderWay`).
    private var underWay = 0
    /// A turn that begins commits is on its way.
    private var placing = false
    private var commitSerial = 0
    private var inFlight = 0
    private var stopped = false
    public let maxPendingStore: Int
    /// Store operations refused because `maxPendingStore` were waiting.
    public private(set) var refusedForBacklog = 0
    public private(set) var commits = 0
    /// How long group commits took (the store's enqueue, fsync included).
    public private(set) var commitTimes = CommitTimes()
    /// The store's own time in those commits (in the commit's task: without
    /// the wait for this actor to take the result up).
    public private(set) var storeTime: Duration = .zero
    public private(set) var storeFailures = 0

    public init(store: any ServerStore, bind address: UDPAddress, configuration: Core.Configuration = .init(),
                maxPendingStore: Int = 20_000) throws {
        self.maxPendingStore = maxPendingStore
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
        // In batches: what arrived together is handled in one turn of the actor.
        for await batch in socket.datagramBatches(maxSize: ServerPacket.maxDatagram + 1) {
            if stopped { break }
            let now = Self.now()
            for (address, datagram) in batch { perform(core.receive(datagram, from: address, now: now)) }
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
        // A failure is counted and tried again at the next round (30 s): nothing is lost, the tables are only longer.
        do { _ = try await store.expire(before: now.saturatingSubtract(core.configuration.limits.maxAge)) } catch { storeFailures += 1 }
        do { _ = try await store.expireDrops(at: now) } catch { storeFailures += 1 } // each fetch leaves expired drops out meanwhile
    }

    private func perform(_ steps: [Core.Step]) {
        for step in steps {
            switch step {
            case let .send(bytes, address):
                _ = socket.send(bytes, to: address)
            case let .enqueue(message, address):
                guard waitingForTheStore < maxPendingStore else { refusedForBacklog += 1; continue }
                pending.append((message, address))
                startCommitting()
            case let .putDrop(drop, address):
                // Into the next group commit; DROP_TAKEN once it has returned.
                guard waitingForTheStore < maxPendingStore else { refusedForBacklog += 1; continue }
                pendingDrops.append((drop, address))
                startCommitting()
            case .register, .fetch, .remove, .fetchDrops:
                // In arrival order, one at a time: an ACK goes in before the POLL
                // sent after it, so that an acknowledged message never comes back.
                guard waitingForTheStore < maxPendingStore else { refusedForBacklog += 1; continue }
                operations.append(step)
                if !operating {
                    operating = true
                    Task { await self.operationLoop() }
                }
            }
        }
    }

    private var operations: [Core.Step] = []
    private var operationHead = 0
    private var operating = false
    /// ACKs handed to the group commit, not yet in one.
    private var pendingAcks: [(user: UserID, messageID: UserID)] = []
    /// ACKs handed to the group commit, and those whose commit has returned (or failed).
    private var acksHanded = 0
    private var acksCommitted = 0
    /// ACKs in commits begun, and for each commit under way (in the order begun) the count up to its last.
    private var acksBegun = 0
    private var ackMarks: [(serial: Int, acks: Int, returned: Bool)] = []
    /// The POLL waiting for the ACKs before it (up to the count handed over
    /// then); one at most, as the operations run one at a time.
    private var ackWaiter: (upTo: Int, CheckedContinuation<Void, Never>)?

    /// Every store operation waiting or under way (bounded by `maxPendingStore`).
    public var waitingForTheStore: Int {
        inFlight + pending.count + pendingAcks.count + pendingDrops.count + operations.count - operationHead
    }

    /// Begins commits in a turn of their own, so that what arrived together goes in together.
    private func startCommitting() {
        guard !placing, underWay < store.commitsUnderWay else { return }
        placing = true
        Task { self.beginCommits() }
    }

    private func operationLoop() async {
        while operationHead < operations.count {
            let step = operations[operationHead]
            operationHead += 1
            if operationHead > 1_024 {
                operations.removeFirst(operationHead)
                operationHead = 0
            }
            switch step {
            case let .register(r, address):
                await completeRegistration(r, from: address)
            case let .fetch(user, limit, address):
                // Every ACK that came before this POLL is committed first, so that
                // an acknowledged message never comes back.
                if acksCommitted < acksHanded {
                    let target = acksHanded
                    await withCheckedContinuation { ackWaiter = (target, $0) }
                }
                // A store failure gets no answer (NO_MESSAGES would be a lie): the client polls again.
                do { perform(core.fetched(try await store.fetch(user, limit: limit), for: address)) } catch { storeFailures += 1 }
            case let .remove(user, id):
                // Into the next group commit, beside the MSGs that wait for it.
                pendingAcks.append((user, id))
                acksHanded += 1
                startCommitting()
            case let .fetchDrops(tags, after, limit, address):
                // A store failure gets no answer (an empty DROP_END would be a lie): the client fetches again.
                do {
                    let found = try await store.drops(for: tags, after: after, notExpiredAt: Self.now(), limit: limit)
                    perform(core.dropsFetched(found, after: after, for: address))
                } catch { storeFailures += 1 }
            default:
                break
            }
        }
        operations.removeAll(keepingCapacity: true)
        operationHead = 0
        operating = false
    }

    private func completeRegistration(_ r: ServerRegistration, from address: UDPAddress) async {
        let now = Self.now()
        let result: Result<UserID, ServerRejection>
        do {
            let pinned = try await store.pinned(r.userID)
            switch Core.check(r, pinned: pinned, now: now, window: core.configuration.registrationWindow) {
            case let .failure(why):
                result = .failure(why)
            case let .success(key):
                switch try await store.register(r.userID, key: key, timestamp: r.timestamp) {
                case .registered: result = .success(r.userID)
                case .full: result = .failure(.serverFull)
                case .conflict: result = .failure(pinned.map { $0.key == key } ?? true ? .replayed : .keyMismatch)
                }
            }
        } catch {
            storeFailures += 1
            result = .failure(.storageFailed)
        }
        perform(core.registration(result, from: address, now: Self.now(), timestamp: r.timestamp))
    }

    /// Group commit: each commit takes everything that arrived meanwhile, MSGs
    /// to store, ACKs to remove and drops to keep, in one transaction; up to
    /// the store's ``ServerStore/commitsUnderWay`` are under way at once (each
    /// begun after the last, and taking effect after it). A commit's answers
    /// go out once it has returned (never before), after the next one has
    /// begun; the POLLs that waited for its ACKs go on at once.
    private func beginCommits() {
        placing = false
        while underWay < store.commitsUnderWay, !(pending.isEmpty && pendingAcks.isEmpty && pendingDrops.isEmpty) {
            let batch = Array(pending.prefix(512))
            pending.removeFirst(batch.count)
            let acks = Array(pendingAcks.prefix(512))
            pendingAcks.removeFirst(acks.count)
            let drops = Array(pendingDrops.prefix(512))
            pendingDrops.removeFirst(drops.count)
            let size = batch.count + acks.count + drops.count
            inFlight += size
            underWay += 1
            acksBegun += acks.count
            commitSerial += 1
            let serial = commitSerial
            ackMarks.append((serial, acksBegun, false))
            let writes = StoreWrites(messages: batch.map(\.0), limits: core.configuration.limits, acks: acks,
                                     drops: drops.map(\.0), dropLimits: core.configuration.dropLimits)
            let started = ContinuousClock.now
            let commit = store.beginCommit(writes)
            Task.detached { // off the actor: `took` is the store's own time, not the wait for this actor too
                let result: Result<(StoreWritten, Duration), any Error>
                do { result = .success((try await commit.value, ContinuousClock.now - started)) } catch { result = .failure(error) }
                await self.returned(serial, batch: batch, drops: drops, size: size, result, started: started)
            }
        }
    }

    private func returned(_ serial: Int, batch: [(QueuedMessage, UDPAddress)], drops: [(StoredDrop, UDPAddress)], size: Int,
                          _ result: Result<(StoreWritten, Duration), any Error>, started: ContinuousClock.Instant) {
        underWay -= 1
        var answers: [Core.Step] = []
        answers.reserveCapacity(batch.count + drops.count)
        switch result {
        case let .success((written, took)):
            commits += 1
            commitTimes.add(ContinuousClock.now - started)
            storeTime += took
            for ((message, address), outcome) in zip(batch, written.stored) { answers.append(contentsOf: core.enqueued(message, outcome, from: address)) }
            for found in written.removed { answers.append(contentsOf: core.removed(found)) }
            for ((drop, address), outcome) in zip(drops, written.dropped) { answers.append(contentsOf: core.dropPut(drop, outcome, from: address)) }
        case .failure:
            // The ACKs' messages stay queued and come again (a recipient takes each once).
            storeFailures += 1
            for (message, address) in batch { answers += core.storageFailed(message, from: address) }
            for (drop, address) in drops { answers += core.dropStorageFailed(drop, from: address) }
        }
        inFlight -= size
        // The ACKs count as committed up to the first commit, in the order begun, not yet returned.
        if let i = ackMarks.firstIndex(where: { $0.serial == serial }) { ackMarks[i].returned = true }
        while let first = ackMarks.first, first.returned {
            acksCommitted = first.acks
            ackMarks.removeFirst()
        }
        if let (upTo, waiter) = ackWaiter, upTo <= acksCommitted {
            ackWaiter = nil
            waiter.resume()
        }
        beginCommits() // the next, with everything that came meanwhile, while these answers go out
        perform(answers)
    }
}

/// Commit durations in buckets (upper bounds in milliseconds), and the longest.
public struct CommitTimes: Sendable {
    public static let bounds: [Double] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000]
    /// Commits at most `bounds[i]` ms (and above the bound before); the last: longer than all.
    public private(set) var counts = [Int](repeating: 0, count: CommitTimes.bounds.count + 1)
    public private(set) var longest: Duration = .zero
    /// All of them together (the store's busy time, as the server sees it).
    public private(set) var total: Duration = .zero

    mutating func add(_ d: Duration) {
        total += d
        let ms = Double(d.components.seconds) * 1_000 + Double(d.components.attoseconds) / 1e15
        counts[Self.bounds.firstIndex { ms <= $0 } ?? Self.bounds.count] += 1
        longest = max(longest, d)
    }

    /// What changed since `earlier`.
    public func since(_ earlier: CommitTimes) -> [Int] { zip(counts, earlier.counts).map { $0 - $1 } }
}

extension UInt64 {
    func saturatingSubtract(_ x: UInt64) -> UInt64 { self >= x ? self - x : 0 }
}
