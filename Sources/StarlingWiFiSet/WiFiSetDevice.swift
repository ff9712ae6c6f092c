import StarlingCrypto
import StarlingWire

/// The device side of WiFiSet (the ESP32 of seed 003) as a state machine
/// without I/O: GATT events and the results of scans, storage and connection
/// attempts come in with the time; notifications and requests to scan, store
/// and connect go out. The emulator (`WiFiSetEmulator`) and real firmware drive it.
public struct WiFiSetDevice: Sendable {
    public enum Security: Hashable, Sendable {
        /// Seed 003's v1: credentials in clear; secured-mode messages are unknown (Error 0x06).
        case none
        /// Secured mode offered with this proof-of-possession code; clear credentials still accepted.
        case optional(pop: String)
        /// Secured mode required: clear credentials are refused (ACK 0x04).
        case required(pop: String)

        var pop: String? {
            switch self {
            case .none: nil
            case let .optional(pop), let .required(pop): pop
            }
        }
    }

    public struct Configuration: Sendable {
        public var security: Security = .none
        public var connectTimeout: UInt64 = 30_000
        public var mtu = 512
        /// Whether this device cuts messages longer than MTU − 3 into several
        /// notifications; without, such a message is replaced by an Error.
        public var chunking = true
        public init() {}
    }

    public enum Input: Sendable {
        case subscribed(WiFiSetGATT.Characteristic)
        /// A value the phone wrote (a whole message, or a chunk of one).
        case written(WiFiSetGATT.Characteristic, [UInt8])
        case scanned([WiFiSet.Network])
        case scanFailed(String)
        /// The credentials were stored (or not: why).
        case stored(failure: String?)
        case connected(ip: [UInt8], rssi: Int8)
        case connectFailed(String)
        /// The BLE link went away: subscriptions and the secured session end.
        case disconnected
    }

    public enum Output: Hashable, Sendable {
        /// A value to notify (at most MTU − 3 bytes).
        case notify(WiFiSetGATT.Characteristic, [UInt8])
        case scan
        case store(ssid: String, password: String)
        case connect(ssid: String, password: String)
        case cancelConnect
    }

    public var configuration: Configuration
    public private(set) var status: WiFiSet.Status
    private var credentials: (ssid: String, password: String)?
    /// The credentials that last joined their network (or were found stored at
    /// boot): new ones that fail give way to these, in storage and on the air.
    private var working: (ssid: String, password: String)?
    private var pendingCredentials: (ssid: String, password: String, sealed: Bool)?
    private var sequence: UInt8 = 0
    private var assembler = WiFiSetAssembler()
    private var handshake: WiFiSetSecurity.Device?
    private var channel: WiFiSetSecurity.Channel?
    private var subscribed: Set<WiFiSetGATT.Characteristic> = []
    private var connectDeadline: UInt64?
    /// Messages received that were not understood, for diagnostics.
    public private(set) var errorsSent = 0

    /// `stored`: credentials found in storage at boot.
    public init(configuration: Configuration, stored: (ssid: String, password: String)? = nil) {
        self.configuration = configuration
        credentials = stored
        working = stored
        status = stored.map { WiFiSet.Status(state: .configuredNotConnected, ssid: $0.ssid) } ?? WiFiSet.Status(state: .notConfigured)
    }

    public var isSecured: Bool { channel != nil }
    public var nextDeadline: UInt64? { connectDeadline }

    public mutating func handle(_ input: Input, now: UInt64) -> [Output] {
        switch input {
        case let .subscribed(c):
            subscribed.insert(c)
            guard c == .wifiList else { return [] }
            return send(.listStart) + [.scan]
        case let .scanned(networks):
            var out: [Output] = []
            for n in networks { out += send(.networkEntry(n)) }
            return out + send(.listEnd(count: UInt8(min(networks.count, 255))))
        case let .scanFailed(why):
            return error(.scanFailed, why)
        case let .written(c, value):
            guard c == .credentialWrite else { return error(.invalidMessageFormat, "writes go to the Credential Write characteristic") }
            var out: [Output] = []
            for message in assembler.add(value, now: now) { out += receive(message, sealed: false, now: now) }
            return out
        case let .stored(failure):
            guard let p = pendingCredentials else { return [] }
            pendingCredentials = nil
            if let failure {
                return send(.credentialAck(.storageFailure), seal: p.sealed) + error(.storageError, failure)
            }
            credentials = (p.ssid, p.password)
            connectDeadline = now + configuration.connectTimeout
            return send(.credentialAck(.success), seal: p.sealed)
                + setStatus(WiFiSet.Status(state: .connecting, ssid: p.ssid))
                + [.connect(ssid: p.ssid, password: p.password)]
        case let .connected(ip, rssi):
            guard connectDeadline != nil, let c = credentials else { return [] }
            connectDeadline = nil
            working = c
            return setStatus(WiFiSet.Status(state: .connected, rssi: rssi, ip: ip, ssid: c.ssid))
        case let .connectFailed(why):
            guard connectDeadline != nil, let c = credentials else { return [] }
            connectDeadline = nil
            return failed(c, code: .credentialWriteFailed, "could not join \(c.ssid): \(why)", now: now)
        case .disconnected:
            subscribed = []
            assembler.reset()
            handshake = nil
            channel = nil
            return []
        }
    }

    /// The connection attempt's timeout (30 s).
    public mutating func tick(now: UInt64) -> [Output] {
        guard let deadline = connectDeadline, now >= deadline, let c = credentials else { return [] }
        connectDeadline = nil
        return [.cancelConnect]
            + failed(c, code: .connectionTimeout, "no connection to \(c.ssid) within \(configuration.connectTimeout / 1000) s", now: now)
    }

    /// New credentials did not join: why (an Error, before the status the phone
    /// waits for), then back to the ones that worked, stored again and joined.
    private mutating func failed(_ c: (ssid: String, password: String), code: WiFiSet.ErrorCode, _ why: String,
                                 now: UInt64) -> [Output] {
        guard let w = working, w.ssid != c.ssid || w.password != c.password else {
            return error(code, why) + setStatus(WiFiSet.Status(state: .connectionFailed, ssid: c.ssid))
        }
        credentials = w
        connectDeadline = now + configuration.connectTimeout
        return error(code, "\(why); keeping \(w.ssid), which worked") + setStatus(WiFiSet.Status(state: .connectionFailed, ssid: c.ssid))
            + [.store(ssid: w.ssid, password: w.password)]
            + setStatus(WiFiSet.Status(state: .connecting, ssid: w.ssid)) + [.connect(ssid: w.ssid, password: w.password)]
    }

    // MARK: Receiving

    private mutating func receive(_ bytes: [UInt8], sealed: Bool, now: UInt64) -> [Output] {
        let frame: WiFiSet.Frame
        do {
            frame = try WiFiSet.Frame(decoding: bytes)
        } catch let e {
            switch e {
            case let .unknownType(t): return error(.unknownMessageType, "unknown message type 0x\(String(t, radix: 16, uppercase: true))")
            case .invalidSSIDLength: return send(.credentialAck(.invalidSSIDLength), seal: sealed)
            case .invalidPasswordLength: return send(.credentialAck(.invalidPasswordLength), seal: sealed)
            case let .malformed(w): return error(.invalidMessageFormat, w.description)
            }
        }
        switch frame.message {
        case let .credentialWrite(ssid, password):
            if case .required = configuration.security, !sealed {
                return send(.credentialAck(.securedSessionRequired))
            }
            pendingCredentials = (ssid, password, sealed)
            return [.store(ssid: ssid, password: password)]
        case .statusRequest:
            return send(.statusResponse(status), seal: sealed)
        case let .secureHello(phoneKey):
            guard let pop = configuration.security.pop, !sealed else {
                return error(.unknownMessageType, "unknown message type 0x30") // what a v1 device says
            }
            var device = WiFiSetSecurity.Device(pop: pop)
            channel = nil
            do {
                let reply = try device.received(phoneKey: phoneKey)
                handshake = device
                return send(reply)
            } catch {
                return self.error(.securityFailure, "\(error)")
            }
        case let .secureVerify(proof):
            guard let device = handshake, !sealed else { return error(.securityFailure, "no secured-mode handshake under way") }
            handshake = nil
            do {
                let (reply, channel) = try device.verify(phoneProof: proof)
                self.channel = channel
                return send(reply)
            } catch {
                return self.error(.securityFailure, "\(error)")
            }
        case let .sealed(box):
            guard !sealed, var ch = channel else { return error(.securityFailure, "a sealed message without a secured session") }
            do {
                let inner = try ch.open(box)
                channel = ch
                return receive(inner, sealed: true, now: now)
            } catch {
                return self.error(.securityFailure, "\(error)")
            }
        case .listStart, .networkEntry, .listEnd, .credentialAck, .statusResponse, .error, .secureHelloReply, .secureVerifyReply:
            return error(.invalidMessageFormat, "a \(frame.message.type) message is not for the device")
        }
    }

    // MARK: Sending

    private mutating func setStatus(_ s: WiFiSet.Status) -> [Output] {
        status = s
        return send(.statusResponse(s), seal: channel != nil)
    }

    private mutating func error(_ code: WiFiSet.ErrorCode, _ text: String) -> [Output] {
        errorsSent += 1
        return send(.error(code, message: text))
    }

    /// Encodes with the next sequence number (sealed when asked and a session
    /// is up) and cuts it for the MTU.
    private mutating func send(_ message: WiFiSet.Message, seal: Bool = false) -> [Output] {
        sequence &+= 1
        guard var bytes = try? WiFiSet.Frame(sequence: sequence, message).encoded() else { return [] }
        if seal, var ch = channel, let box = try? ch.seal(bytes), let outer = try? WiFiSet.Frame(sequence: sequence, .sealed(box)).encoded() {
            channel = ch
            bytes = outer
        }
        let c = WiFiSetGATT.characteristic(for: message)
        let size = WiFiSetGATT.valueSize(mtu: configuration.mtu)
        if bytes.count > size && !configuration.chunking {
            // Cannot be sent whole, and this device does not chunk: say so in a message that fits.
            let text = "a \(bytes.count)-byte message does not fit the \(size)-byte values of this link, and this device does not chunk"
            var fits = Array(text.utf8.prefix(max(0, size - 6)))
            while String(validating: fits, as: UTF8.self) == nil { fits.removeLast() }
            guard let e = try? WiFiSet.Frame(sequence: sequence, .error(.invalidMessageFormat, message: String(decoding: fits, as: UTF8.self))).encoded(),
                  e.count <= size else { return [] }
            errorsSent += 1
            return [.notify(.status, e)]
        }
        return WiFiSetGATT.chunks(bytes, mtu: configuration.mtu).map { .notify(c, $0) }
    }
}
