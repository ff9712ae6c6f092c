import Foundation
import StarlingCrypto
import StarlingTransport
import StarlingWire
import StarlingYaOK
import StarlingYaOKClient
import StarlingYaOKServerCore

/// Two Ya OK clients that know every address of a server (issue 57): alice
/// sends sealed messages to bob, something happens to a server midway (it is
/// stopped, or SIGKILLed), and what each client saw is counted: QUEUED and
/// failed at alice's, what came to bob (acknowledged as it comes), and their
/// registrations. Timers short, so that a lost server is said in seconds.
public final class FailoverLoad: @unchecked Sendable {
    public let addresses: [UDPAddress]
    public let sender: YaOKClient
    public let recipient: YaOKClient
    private let alice = Identity.generate(), bob = Identity.generate()
    private let aliceID = UserID.random(), bobID = UserID.random()
    private let lock = NSLock()
    private var queued: Set<UserID> = [], failed: Set<UserID> = [], received: [UserID] = [], registered = [0, 0]
    public private(set) var sent: [UserID] = []
    private var readers: [Task<Void, Never>] = []

    /// Seconds, not minutes: a server silent for a few seconds is lost.
    public static func configuration(lostAfter: UInt64) -> YaOKClientCore.Configuration {
        var c = YaOKClientCore.Configuration()
        c.pingInterval = 500
        c.pollInterval = 500
        c.lostAfter = lostAfter
        c.lastPingWait = 500
        c.registerRetry = 1_000 // three unanswered (1 + 2 + 4 s) before a move: a loaded machine answers within that
        c.retryFirst = 300
        c.retryMax = 1_000
        c.maxAttempts = 120
        return c
    }

    public init(addresses: [UDPAddress], lostAfter: UInt64 = 4_000) throws {
        self.addresses = addresses
        let configuration = Self.configuration(lostAfter: lostAfter)
        sender = try YaOKClient(servers: addresses.map(\.description), addresses: addresses, userID: aliceID,
                                signingKey: alice.signingKey, configuration: configuration)
        recipient = try YaOKClient(servers: addresses.map(\.description), addresses: addresses, userID: bobID,
                                   signingKey: bob.signingKey, configuration: configuration)
    }

    public func start() async {
        let (sender, recipient) = (self.sender, self.recipient)
        readers = [
            Task { for await e in sender.events {
                switch e {
                case let .queued(id, _): self.lock.withLock { _ = self.queued.insert(id) }
                case let .failed(id): self.lock.withLock { _ = self.failed.insert(id) }
                case .registered: self.lock.withLock { self.registered[0] += 1 }
                default: break
                }
            } },
            Task { for await e in recipient.events {
                switch e {
                case let .message(_, payload):
                    guard let id = try? SealedMessage.peek(payload).messageID else { continue }
                    self.lock.withLock { self.received.append(id) }
                    await recipient.acknowledge(id) // stored (here: counted)
                case .registered: self.lock.withLock { self.registered[1] += 1 }
                default: break
                }
            } },
        ]
        await sender.start()
        await recipient.start()
    }

    /// `count` messages, `gap` apart; `midway` runs before the middle one is sent.
    public func send(_ count: Int, gap: Duration, midway: () async -> Void) async throws {
        for n in 0..<count {
            if n == count / 2 { await midway() }
            let id = UserID.random()
            let sealed = try SealedMessage.seal(.text("message \(n)"), id: id, timestamp: UInt64(Date().timeIntervalSince1970 * 1000),
                                                from: alice, senderID: aliceID, to: bobID, recipientAgreementKey: bob.noisePublicKey)
            try await sender.send(sealed: sealed)
            lock.withLock { sent.append(id) }
            try await Task.sleep(for: gap)
        }
    }

    public var registrations: [Int] { lock.withLock { registered } }
    /// Answered (QUEUED or failed) of those sent.
    public var answered: Int { lock.withLock { queued.count + failed.count } }
    public var allQueued: Bool { lock.withLock { failed.isEmpty && queued == Set(sent) } }
    public var allReceived: Bool { lock.withLock { Set(received) == Set(sent) } }
    public var summary: String {
        lock.withLock { "sent \(sent.count), queued \(queued.count), failed \(failed.count), received \(Set(received).count) (\(received.count) offers), registrations \(registered)" }
    }

    public func stop() async {
        await sender.stop()
        await recipient.stop()
        for r in readers { r.cancel() }
    }

    public static func waitFor(seconds: Double, _ condition: () async -> Bool) async -> Bool {
        await waitUntil(seconds: seconds, condition)
    }
}
