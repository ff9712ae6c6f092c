import Foundation
import StarlingYaOKServer
import StarlingTransport
import StarlingWire
import StarlingYaOKServerCore
import Testing

/// A store whose writes wait until it is opened: a disk that has stalled.
actor StalledStore: ServerStore {
    private let inner = InMemoryServerStore()
    private var open = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func release() {
        open = true
        for w in waiting { w.resume() }
        waiting = []
    }

    func pinned(_ user: UserID) async throws -> (key: [UInt8], lastTimestamp: UInt64)? { await inner.pinned(user) }
    func register(_ user: UserID, key: [UInt8], timestamp: UInt64) async throws -> RegisterOutcome {
        await inner.register(user, key: key, timestamp: timestamp)
    }
    func commit(_ batch: [QueuedMessage], limits: QueueLimits, removing acks: [(user: UserID, messageID: UserID)]) async throws
        -> (stored: [EnqueueOutcome], removed: [QueuedMessage?]) {
        if !open { await withCheckedContinuation { waiting.append($0) } }
        return await inner.commit(batch, limits: limits, removing: acks)
    }
    func fetch(_ user: UserID, limit: Int) async throws -> [QueuedMessage] { await inner.fetch(user, limit: limit) }
    func expire(before cutoff: UInt64) async throws -> Int { await inner.expire(before: cutoff) }
    func counts() async throws -> (users: Int, queued: Int) { await inner.counts() }
}

@Suite struct YaOKServerTests {
    /// ACKs are network input that waits for the store: a user floods ACKs
    /// while the disk has stalled. What waits stays within the server's cap
    /// (the rest is refused and counted), and once the disk is back a POLL,
    /// which waits for the ACKs before it, is answered.
    @Test func aFloodOfAcksWhileTheStoreStallsStaysWithinTheCap() async throws {
        let store = StalledStore()
        var configuration = YaOKServer.Core.Configuration()
        configuration.perAddressRate = 1_000_000
        configuration.perAddressBurst = 1_000_000
        configuration.perUserRate = 1_000_000
        configuration.perUserBurst = 1_000_000
        let server = try YaOKServer(store: store, bind: .loopback(0), configuration: configuration, maxPendingStore: 100)
        let serving = Task { await server.run() }
        defer { serving.cancel(); Task { await server.stop() } }
        let client = try UDPSocket(bindTo: .loopback(0))
        defer { client.close() }
        let answers = AnswerBox()
        let reader = Task { for await (_, bytes) in client.datagrams(maxSize: 2_048) { answers.add(bytes) } }
        defer { reader.cancel() }

        let user = ServerUser()
        // Registered once every REGISTER sent is answered (each ends the session
        // before it), with the last token; sent again every 5 s, up to a minute.
        func tokens() -> [ServerToken] { answers.all.compactMap { if case let .registered(t, _) = $0 { t } else { nil } } }
        var sent = 0
        for _ in 0..<12 where tokens().isEmpty || tokens().count < sent {
            _ = client.send(try user.registration(at: UInt64(Date().timeIntervalSince1970 * 1000) + UInt64(sent)), to: .loopback(server.port))
            sent += 1
            for _ in 0..<500 where tokens().count < sent { try await Task.sleep(for: .milliseconds(10)) }
        }
        let token = tokens().count == sent ? tokens().last : nil
        let t = try #require(token)
        // 1,000 ACKs, paced so that the socket's buffer keeps them.
        for i in 0..<1_000 {
            _ = client.send(ServerPacket.ack(token: t, messageID: .random()).encode(), to: .loopback(server.port))
            if i % 50 == 49 { try await Task.sleep(for: .milliseconds(5)) }
        }
        // Generous limits for a loaded machine; they cost time only on failure.
        let deadline = Date().addingTimeInterval(60)
        while await server.refusedForBacklog == 0, Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let (refused, waiting, counters) = (await server.refusedForBacklog, await server.waitingForTheStore, await server.counters)
        #expect(refused > 0, "waiting \(waiting), answers \(answers.all.count), \(counters)")
        #expect(await server.waitingForTheStore <= 100)
        // The disk is back: a POLL (behind the ACKs that were taken) is answered.
        await store.release()
        let before = answers.all.count
        var answered = false
        let until = Date().addingTimeInterval(60)
        while !answered, Date() < until {
            _ = client.send(ServerPacket.poll(token: t).encode(), to: .loopback(server.port))
            try await Task.sleep(for: .milliseconds(100))
            answered = answers.all.dropFirst(before).contains(.noMessages)
        }
        #expect(answered)
        #expect(await server.waitingForTheStore == 0)
    }
}

final class AnswerBox: @unchecked Sendable {
    private let lock = NSLock()
    private var packets: [ServerPacket] = []
    func add(_ bytes: [UInt8]) {
        guard let p = try? ServerPacket.decode(bytes, .toClient) else { return }
        lock.withLock { packets.append(p) }
    }
    var all: [ServerPacket] { lock.withLock { packets } }
}
