import Foundation
import StarlingCrypto
import StarlingWire

/// The phone side of WiFiSet as an async SDK: collect the device's networks,
/// write credentials, follow the connection — with the seed's timeouts and
/// retries and a typed error for every failure. It runs over any
/// ``WiFiSetCentral`` (in-process, a socket, BLE).
public actor WiFiSetClient {
    public enum Security: Hashable, Sendable {
        /// Seed 003's v1: credentials in clear.
        case none
        /// Secured mode with this code when the device offers it, else clear.
        case preferred(pop: String)
        /// Secured mode or nothing.
        case required(pop: String)
    }

    public struct Options: Sendable {
        public var listTimeout: Duration = .seconds(30)
        public var listAttempts = 2
        public var ackTimeout: Duration = .seconds(5)
        public var ackAttempts = 3
        public var statusTimeout: Duration = .seconds(5)
        public var security: Security = .none
        /// Whether the device collects chunks of a message longer than MTU − 3
        /// (seed 003, "Chunking"); without, such a message is an error here.
        public var chunking = true
        public init() {}
    }

    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        case timeout(String)
        /// The device refused the credentials.
        case rejected(WiFiSet.AckStatus)
        /// The device sent an Error message.
        case device(WiFiSet.ErrorCode, String)
        case messageTooLarge(bytes: Int, limit: Int)
        case secureModeUnsupported
        case security(String)
        case invalidCredentials(String)
        case link(String)

        public var description: String {
            switch self {
            case let .timeout(what): "timed out waiting for \(what)"
            case let .rejected(status): "the device refused the credentials: \(status)"
            case let .device(code, message): "the device reported \(code): \(message)"
            case let .messageTooLarge(bytes, limit):
                "a \(bytes)-byte message does not fit this link's \(limit)-byte values, and the device does not take chunks (raise the MTU)"
            case .secureModeUnsupported: "the device does not offer secured mode (a v1 device): credentials would travel in clear"
            case let .security(why): "secured mode failed: \(why)"
            case let .invalidCredentials(why): why
            case let .link(why): "link: \(why)"
            }
        }
    }

    public let options: Options
    private let central: any WiFiSetCentral
    private var sequence: UInt8 = 0
    private var assemblers: [WiFiSetGATT.Characteristic: WiFiSetAssembler] = [:]
    private var inbox: [WiFiSet.Message] = []
    private var waiters: [(id: Int, continuation: CheckedContinuation<Void, Never>)] = []
    private var nextWaiter = 0
    private var channel: WiFiSetSecurity.Channel?
    private var securityDecided = false
    private var receiving: Task<Void, Never>?
    private var tracker = WiFiSetSequence()
    /// Sequence numbers that showed a loss, a duplicate or a reordering.
    public private(set) var sequenceAnomalies = 0
    public nonisolated let statusUpdates: AsyncStream<WiFiSet.Status>
    private let statusContinuation: AsyncStream<WiFiSet.Status>.Continuation

    public init(central: any WiFiSetCentral, options: Options = Options()) {
        self.central = central
        self.options = options
        (statusUpdates, statusContinuation) = AsyncStream.makeStream(of: WiFiSet.Status.self, bufferingPolicy: .bufferingNewest(64))
    }

    public var isSecured: Bool { channel != nil }

    /// Starts listening and subscribes to the Status characteristic.
    public func start() async throws {
        guard receiving == nil else { return }
        let stream = central.notifications
        receiving = Task { [weak self] in
            for await (c, value) in stream { await self?.received(c, value) }
            await self?.linkEnded()
        }
        do { try await central.subscribe(.status) } catch { throw Failure.link("\(error)") }
    }

    public func close() async {
        receiving?.cancel()
        await central.disconnect()
    }

    // MARK: Operations

    /// The networks the device sees: subscribing to the WiFi List starts a
    /// scan; List Start, one entry per network, List End with the count.
    /// Without List End in `listTimeout`, subscribes again (a new scan).
    public func networks() async throws -> [WiFiSet.Network] {
        try await start()
        var lastFailure = Failure.timeout("the network list")
        for _ in 0..<max(1, options.listAttempts) {
            inbox.removeAll { if case .listStart = $0 { true } else if case .networkEntry = $0 { true } else if case .listEnd = $0 { true } else { false } }
            do { try await central.subscribe(.wifiList) } catch { throw Failure.link("\(error)") }
            let deadline = ContinuousClock.now + options.listTimeout
            do {
                _ = try await next(until: deadline, "List Start") { if case .listStart = $0 { true } else { false } }
                var found: [WiFiSet.Network] = []
                while true {
                    let m = try await next(until: deadline, "the network list") {
                        switch $0 { case .networkEntry, .listEnd: true; case .error(.scanFailed, _): true; default: false }
                    }
                    switch m {
                    case let .networkEntry(n): found.append(n)
                    case let .listEnd(count):
                        // A count that disagrees means entries were lost: scan again.
                        if Int(count) == found.count { return found }
                        lastFailure = .timeout("the \(count) networks announced (\(found.count) arrived)")
                    case let .error(code, message): throw Failure.device(code, message)
                    default: break
                    }
                    if case .listEnd = m { break }
                }
            } catch let f as Failure {
                if case .timeout = f { lastFailure = f; continue }
                throw f
            }
        }
        throw lastFailure
    }

    /// Writes the credentials and waits for the device's ACK (retrying when
    /// none comes in `ackTimeout`). Secured mode first when asked for.
    public func provision(ssid: String, password: String) async throws {
        guard (1...32).contains(ssid.utf8.count) else { throw Failure.invalidCredentials("an SSID has 1 to 32 bytes of UTF-8, not \(ssid.utf8.count)") }
        guard password.utf8.count <= 63 else { throw Failure.invalidCredentials("a password has 0 to 63 bytes of UTF-8, not \(password.utf8.count)") }
        try await start()
        try await secureIfAsked()
        try await exchange(.credentialWrite(ssid: ssid, password: password), attempts: options.ackAttempts,
                           timeout: options.ackTimeout, what: "the credential ACK") { m in
            guard case let .credentialAck(status) = m else { return .notThis }
            return status == .success ? .done : .failed(.rejected(status))
        }
    }

    /// Asks for the device's status.
    public func status() async throws -> WiFiSet.Status {
        try await start()
        try await secureIfAsked()
        var result: WiFiSet.Status?
        try await exchange(.statusRequest, attempts: 2, timeout: options.statusTimeout, what: "a status response") { m in
            guard case let .statusResponse(s) = m else { return .notThis }
            result = s
            return .done
        }
        return result!
    }

    /// Follows the status until the device is connected or has failed; a
    /// failure's reason, when the device gave one, is in ``failureReason``.
    public func outcome(within timeout: Duration = .seconds(40)) async throws -> WiFiSet.Status {
        let deadline = ContinuousClock.now + timeout
        failureReason = nil
        while true {
            let m = try await next(until: deadline, "the connection's outcome") {
                if case let .statusResponse(s) = $0 { return s.state == .connected || s.state == .connectionFailed }
                if case .error(.credentialWriteFailed, _) = $0 { return true }
                if case .error(.connectionTimeout, _) = $0 { return true }
                return false
            }
            switch m {
            case let .statusResponse(s): return s
            case let .error(_, text): failureReason = text
            default: break
            }
        }
    }

    /// Why the last ``outcome(within:)`` failed, in the device's words
    /// ("could not join Office: the password was refused; keeping Home, which worked").
    public private(set) var failureReason: String?

    // MARK: Secured mode

    private func secureIfAsked() async throws {
        guard !securityDecided else { return }
        let pop: String
        switch options.security {
        case .none: securityDecided = true; return
        case let .preferred(p), let .required(p): pop = p
        }
        var phone = WiFiSetSecurity.Phone(pop: pop)
        try await send(phone.hello, sealed: false)
        let reply = try await next(until: ContinuousClock.now + options.ackTimeout, "the secured-mode reply") {
            switch $0 { case .secureHelloReply, .error: true; default: false }
        }
        switch reply {
        case let .secureHelloReply(key, nonce):
            let verify: WiFiSet.Message
            do { verify = try phone.received(deviceKey: key, nonce: nonce) } catch { throw Failure.security("\(error)") }
            try await send(verify, sealed: false)
            let done = try await next(until: ContinuousClock.now + options.ackTimeout, "the device's proof") {
                switch $0 { case .secureVerifyReply, .error: true; default: false }
            }
            switch done {
            case let .secureVerifyReply(proof):
                do { channel = try phone.finished(deviceProof: proof) } catch { throw Failure.security("\(error)") }
            case let .error(code, message):
                throw code == .securityFailure ? Failure.security("the device refused the code: \(message)") : Failure.device(code, message)
            default: break
            }
        case .error(.unknownMessageType, _):
            if case .required = options.security { throw Failure.secureModeUnsupported }
        case let .error(code, message):
            throw Failure.device(code, message)
        default: break
        }
        securityDecided = true
    }

    // MARK: Sending and receiving

    enum Verdict { case notThis, done, failed(Failure) }

    /// Sends `message` and waits for the answer `classify` recognises, trying
    /// again when none comes in time. A device Error ends it.
    private func exchange(_ message: WiFiSet.Message, attempts: Int, timeout: Duration, what: String,
                          classify: (WiFiSet.Message) -> Verdict) async throws {
        // Answers already here belong to an earlier question (a retried write's second ACK, an old status).
        inbox.removeAll { if case .notThis = classify($0) { false } else { true } }
        for _ in 0..<max(1, attempts) {
            try await send(message, sealed: channel != nil)
            let deadline = ContinuousClock.now + timeout
            do {
                let m = try await next(until: deadline, what) { m in
                    if case .error = m { return true }
                    if case .notThis = classify(m) { return false }
                    return true
                }
                if case let .error(code, text) = m { throw Failure.device(code, text) }
                switch classify(m) {
                case .done, .notThis: return
                case let .failed(f): throw f
                }
            } catch let f as Failure {
                if case .timeout = f { continue }
                throw f
            }
        }
        throw Failure.timeout(what)
    }

    private func send(_ message: WiFiSet.Message, sealed: Bool) async throws {
        sequence &+= 1
        var bytes: [UInt8]
        do { bytes = try WiFiSet.Frame(sequence: sequence, message).encoded() } catch {
            throw Failure.invalidCredentials("\(error)")
        }
        if sealed, var ch = channel {
            do {
                bytes = try WiFiSet.Frame(sequence: sequence, .sealed(try ch.seal(bytes))).encoded()
            } catch { throw Failure.security("\(error)") }
            channel = ch
        }
        let mtu = await central.mtu
        let limit = WiFiSetGATT.valueSize(mtu: mtu)
        guard bytes.count <= limit || options.chunking else { throw Failure.messageTooLarge(bytes: bytes.count, limit: limit) }
        for chunk in WiFiSetGATT.chunks(bytes, mtu: mtu) {
            do { try await central.write(.credentialWrite, chunk) } catch { throw Failure.link("\(error)") }
        }
    }

    private func received(_ c: WiFiSetGATT.Characteristic, _ value: [UInt8]) {
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        var assembler = assemblers[c] ?? WiFiSetAssembler()
        let messages = assembler.add(value, now: now)
        assemblers[c] = assembler
        for bytes in messages {
            guard let frame = try? WiFiSet.Frame(decoding: bytes) else { continue }
            switch tracker.observe(frame.sequence) {
            case .first, .inOrder: break
            default: sequenceAnomalies += 1
            }
            var message = frame.message
            if case let .sealed(box) = message {
                guard var ch = channel, let inner = try? ch.open(box), let f = try? WiFiSet.Frame(decoding: inner) else { continue }
                channel = ch
                message = f.message
            }
            if case let .statusResponse(s) = message { statusContinuation.yield(s) }
            inbox.append(message)
            if inbox.count > 256 { inbox.removeFirst(inbox.count - 256) }
        }
        if !messages.isEmpty { wakeAll() }
    }

    private func linkEnded() {
        statusContinuation.finish()
        wakeAll()
    }

    private func wakeAll() {
        let w = waiters
        waiters = []
        for x in w { x.continuation.resume() }
    }

    /// The first message in the inbox `pick` accepts, waiting for one until `deadline`.
    private func next(until deadline: ContinuousClock.Instant, _ what: String,
                      _ pick: (WiFiSet.Message) -> Bool) async throws -> WiFiSet.Message {
        while true {
            if let i = inbox.firstIndex(where: pick) { return inbox.remove(at: i) }
            guard ContinuousClock.now < deadline, !Task.isCancelled else { throw Failure.timeout(what) }
            let id = nextWaiter
            nextWaiter += 1
            let timer = Task { [weak self] in
                try? await Task.sleep(until: deadline)
                await self?.wake(id)
            }
            await withCheckedContinuation { waiters.append((id, $0)) }
            timer.cancel()
        }
    }

    private func wake(_ id: Int) {
        if let i = waiters.firstIndex(where: { $0.id == id }) { waiters.remove(at: i).continuation.resume() }
    }
}
