/// WiFiSet (seed 003): provisioning a device's Wi-Fi over BLE. Every message is
/// a 4-byte header — type u8, sequence u8, payload length u16 **little-endian**
/// — and its payload. This file knows the bytes only.
public enum WiFiSet {
    public static let headerSize = 4

    /// Message type codes. 0x30–0x33 and 0x40 are Starling's secured-mode
    /// extension (docs/PROTOCOL.md); a v1 device answers them with Error 0x06.
    public enum MessageType: UInt8, Hashable, Sendable, CaseIterable {
        case listStart = 0x01
        case networkEntry = 0x02
        case listEnd = 0x03
        case credentialWrite = 0x10
        case credentialAck = 0x11
        case statusRequest = 0x20
        case statusResponse = 0x21
        case secureHello = 0x30
        case secureHelloReply = 0x31
        case secureVerify = 0x32
        case secureVerifyReply = 0x33
        case sealed = 0x40
        case error = 0xFF
    }

    public enum Security: UInt8, Hashable, Sendable, CaseIterable {
        case open = 0x00
        case wep = 0x01
        case wpaPSK = 0x02
        case wpa2Enterprise = 0x03
        case wpa3 = 0x04

        public var name: String {
            switch self {
            case .open: "open"
            case .wep: "WEP"
            case .wpaPSK: "WPA/WPA2-PSK"
            case .wpa2Enterprise: "WPA2-Enterprise"
            case .wpa3: "WPA3"
            }
        }
    }

    /// Credential Write ACK status codes.
    public enum AckStatus: UInt8, Hashable, Sendable, CaseIterable {
        case success = 0x00
        case invalidSSIDLength = 0x01
        case invalidPasswordLength = 0x02
        case storageFailure = 0x03
        /// Extension: a secured device refuses credentials sent in clear.
        case securedSessionRequired = 0x04
    }

    public enum ConnectionState: UInt8, Hashable, Sendable, CaseIterable {
        case notConfigured = 0x00
        case configuredNotConnected = 0x01
        case connecting = 0x02
        case connected = 0x03
        case connectionFailed = 0x04
    }

    public enum ErrorCode: UInt8, Hashable, Sendable, CaseIterable {
        case invalidMessageFormat = 0x01
        case scanFailed = 0x02
        case credentialWriteFailed = 0x03
        case storageError = 0x04
        case connectionTimeout = 0x05
        case unknownMessageType = 0x06
        /// Extension: the secured-mode handshake failed (a wrong proof of possession).
        case securityFailure = 0x07
    }

    public struct Network: Hashable, Sendable {
        public var ssid: String
        public var rssi: Int8
        public var security: Security
        public var channel: UInt8
        public init(ssid: String, rssi: Int8, security: Security, channel: UInt8) {
            self.ssid = ssid
            self.rssi = rssi
            self.security = security
            self.channel = channel
        }
    }

    public struct Status: Hashable, Sendable {
        public var state: ConnectionState
        public var rssi: Int8
        /// IPv4 address, in network byte order (0.0.0.0 when not connected).
        public var ip: [UInt8]
        public var ssid: String
        public init(state: ConnectionState, rssi: Int8 = 0, ip: [UInt8] = [0, 0, 0, 0], ssid: String = "") {
            self.state = state
            self.rssi = rssi
            self.ip = ip
            self.ssid = ssid
        }
        public var ipString: String { ip.map(String.init).joined(separator: ".") }
    }

    public enum Message: Hashable, Sendable {
        case listStart
        case networkEntry(Network)
        case listEnd(count: UInt8)
        case credentialWrite(ssid: String, password: String)
        case credentialAck(AckStatus)
        case statusRequest
        case statusResponse(Status)
        case error(ErrorCode, message: String)
        /// Secured mode: the phone's ephemeral X25519 key.
        case secureHello(publicKey: [UInt8])
        /// Secured mode: the device's ephemeral X25519 key and a 16-byte nonce.
        case secureHelloReply(publicKey: [UInt8], nonce: [UInt8])
        /// Secured mode: each side's proof that it derived the same keys (a sealed tag).
        case secureVerify([UInt8])
        case secureVerifyReply([UInt8])
        /// Secured mode: a whole message (header and payload), sealed.
        case sealed([UInt8])

        public var type: MessageType {
            switch self {
            case .listStart: .listStart
            case .networkEntry: .networkEntry
            case .listEnd: .listEnd
            case .credentialWrite: .credentialWrite
            case .credentialAck: .credentialAck
            case .statusRequest: .statusRequest
            case .statusResponse: .statusResponse
            case .error: .error
            case .secureHello: .secureHello
            case .secureHelloReply: .secureHelloReply
            case .secureVerify: .secureVerify
            case .secureVerifyReply: .secureVerifyReply
            case .sealed: .sealed
            }
        }
    }

    /// Why a message cannot be decoded. Credential Write's length errors are
    /// their own cases: a device answers them with an ACK, not an Error.
    public enum DecodeError: Error, Hashable, Sendable, CustomStringConvertible {
        case malformed(WireError)
        case unknownType(UInt8)
        case invalidSSIDLength(Int)
        case invalidPasswordLength(Int)

        public var description: String {
            switch self {
            case let .malformed(e): "malformed WiFiSet message: \(e)"
            case let .unknownType(t): "unknown WiFiSet message type 0x\(String(t, radix: 16, uppercase: true))"
            case let .invalidSSIDLength(n): "SSID of \(n) bytes: a credential's SSID has 1 to 32"
            case let .invalidPasswordLength(n): "password of \(n) bytes: a password has 0 to 63"
            }
        }
    }

    /// A message with its sequence number.
    public struct Frame: Hashable, Sendable {
        public var sequence: UInt8
        public var message: Message
        public init(sequence: UInt8, _ message: Message) {
            self.sequence = sequence
            self.message = message
        }
    }

    /// The total length of the message at the start of `bytes` (header + payload),
    /// or nil while fewer than 4 bytes are there.
    public static func messageLength(_ bytes: some Collection<UInt8>) -> Int? {
        guard bytes.count >= headerSize else { return nil }
        let i = bytes.startIndex
        let lo = Int(bytes[bytes.index(i, offsetBy: 2)]), hi = Int(bytes[bytes.index(i, offsetBy: 3)])
        return headerSize + (lo | hi << 8)
    }
}

extension WiFiSet.Frame {
    public func encoded() throws(EncodingError) -> [UInt8] {
        let payload = try message.payload()
        guard payload.count <= Int(UInt16.max) else {
            throw EncodingError(field: "wifiset.payload", problem: "\(payload.count) bytes; at most 65,535")
        }
        return [message.type.rawValue, sequence, UInt8(payload.count & 0xFF), UInt8(payload.count >> 8)] + payload
    }

    /// Decodes exactly one message: the header's length must match the bytes.
    public init(decoding bytes: [UInt8]) throws(WiFiSet.DecodeError) {
        var r = ByteReader(bytes)
        do {
            let typeCode = try r.u8("wifiset.type")
            sequence = try r.u8("wifiset.sequence")
            let lo = try r.u8("wifiset.payloadLength"), hi = try r.u8("wifiset.payloadLength")
            let length = Int(lo) | Int(hi) << 8
            guard length == r.remaining else {
                throw r.error(.invalidValue("payload length \(length) declared, \(r.remaining) bytes follow"), "wifiset.payloadLength", at: 2)
            }
            guard let type = WiFiSet.MessageType(rawValue: typeCode) else { throw WiFiSet.DecodeError.unknownType(typeCode) }
            message = try Self.payload(of: type, &r)
            guard r.isAtEnd else { throw r.error(.trailingBytes(count: r.remaining), "wifiset.payload", at: r.position) }
        } catch let e as WireError {
            throw .malformed(e)
        } catch let e as WiFiSet.DecodeError {
            throw e
        } catch {
            throw .malformed(WireError(.invalidValue("\(error)"), field: "wifiset", offset: 0))
        }
    }

    private static func text(_ r: inout ByteReader, _ count: Int, _ field: String) throws -> String {
        try r.utf8(count, field)
    }

    private static func payload(of type: WiFiSet.MessageType, _ r: inout ByteReader) throws -> WiFiSet.Message {
        switch type {
        case .listStart: return .listStart
        case .statusRequest: return .statusRequest
        case .networkEntry:
            let at = r.position
            let n = Int(try r.u8("network.ssidLength"))
            guard n <= 32 else { throw r.error(.lengthOutOfRange(declared: n, limit: 32), "network.ssidLength", at: at) }
            let ssid = try text(&r, n, "network.ssid")
            let rssi = Int8(bitPattern: try r.u8("network.rssi"))
            let securityAt = r.position
            let code = try r.u8("network.security")
            guard let security = WiFiSet.Security(rawValue: code) else {
                throw r.error(.invalidValue("security type 0x\(String(code, radix: 16)) (0x00–0x04 exist)"), "network.security", at: securityAt)
            }
            let channelAt = r.position
            let channel = try r.u8("network.channel")
            guard channel >= 1 else { throw r.error(.invalidValue("channel 0"), "network.channel", at: channelAt) }
            return .networkEntry(WiFiSet.Network(ssid: ssid, rssi: rssi, security: security, channel: channel))
        case .listEnd:
            return .listEnd(count: try r.u8("listEnd.count"))
        case .credentialWrite:
            let n = Int(try r.u8("credential.ssidLength"))
            guard (1...32).contains(n) else { throw WiFiSet.DecodeError.invalidSSIDLength(n) }
            let ssid = try text(&r, n, "credential.ssid")
            let m = Int(try r.u8("credential.passwordLength"))
            guard m <= 63 else { throw WiFiSet.DecodeError.invalidPasswordLength(m) }
            let password = try text(&r, m, "credential.password")
            return .credentialWrite(ssid: ssid, password: password)
        case .credentialAck:
            let at = r.position
            let code = try r.u8("ack.status")
            guard let status = WiFiSet.AckStatus(rawValue: code) else {
                throw r.error(.invalidValue("ACK status 0x\(String(code, radix: 16))"), "ack.status", at: at)
            }
            return .credentialAck(status)
        case .statusResponse:
            let at = r.position
            let code = try r.u8("status.state")
            guard let state = WiFiSet.ConnectionState(rawValue: code) else {
                throw r.error(.invalidValue("connection state 0x\(String(code, radix: 16))"), "status.state", at: at)
            }
            let rssi = Int8(bitPattern: try r.u8("status.rssi"))
            let ip = try r.read(4, "status.ip")
            let lengthAt = r.position
            let n = Int(try r.u8("status.ssidLength"))
            guard n <= 32 else { throw r.error(.lengthOutOfRange(declared: n, limit: 32), "status.ssidLength", at: lengthAt) }
            return .statusResponse(WiFiSet.Status(state: state, rssi: rssi, ip: ip, ssid: try text(&r, n, "status.ssid")))
        case .error:
            let at = r.position
            let code = try r.u8("error.code")
            guard let errorCode = WiFiSet.ErrorCode(rawValue: code) else {
                throw r.error(.invalidValue("error code 0x\(String(code, radix: 16))"), "error.code", at: at)
            }
            let n = Int(try r.u8("error.messageLength"))
            return .error(errorCode, message: try text(&r, n, "error.message"))
        case .secureHello:
            return .secureHello(publicKey: try r.read(32, "secureHello.publicKey"))
        case .secureHelloReply:
            return .secureHelloReply(publicKey: try r.read(32, "secureHelloReply.publicKey"), nonce: try r.read(16, "secureHelloReply.nonce"))
        case .secureVerify:
            return .secureVerify(try r.read(r.remaining, "secureVerify.proof"))
        case .secureVerifyReply:
            return .secureVerifyReply(try r.read(r.remaining, "secureVerifyReply.proof"))
        case .sealed:
            return .sealed(try r.read(r.remaining, "sealed.box"))
        }
    }
}

extension WiFiSet.Message {
    func payload() throws(EncodingError) -> [UInt8] {
        func utf8(_ s: String, _ field: String, _ range: ClosedRange<Int>) throws(EncodingError) -> [UInt8] {
            let b = Array(s.utf8)
            guard range.contains(b.count) else {
                throw EncodingError(field: field, problem: "\(b.count) bytes; \(range.lowerBound) to \(range.upperBound) allowed")
            }
            return [UInt8(b.count)] + b
        }
        switch self {
        case .listStart, .statusRequest: return []
        case let .networkEntry(n):
            guard n.channel >= 1 else { throw EncodingError(field: "network.channel", problem: "channel 0") }
            return try utf8(n.ssid, "network.ssid", 0...32) + [UInt8(bitPattern: n.rssi), n.security.rawValue, n.channel]
        case let .listEnd(count): return [count]
        case let .credentialWrite(ssid, password):
            return try utf8(ssid, "credential.ssid", 1...32) + utf8(password, "credential.password", 0...63)
        case let .credentialAck(status): return [status.rawValue]
        case let .statusResponse(s):
            guard s.ip.count == 4 else { throw EncodingError(field: "status.ip", problem: "\(s.ip.count) bytes; IPv4 has 4") }
            return [s.state.rawValue, UInt8(bitPattern: s.rssi)] + s.ip + (try utf8(s.ssid, "status.ssid", 0...32))
        case let .error(code, message):
            // The message is cut to 255 bytes at a character boundary.
            var m = ""
            for c in message {
                if m.utf8.count + String(c).utf8.count > 255 { break }
                m.append(c)
            }
            return [code.rawValue] + (try utf8(m, "error.message", 0...255))
        case let .secureHello(key):
            guard key.count == 32 else { throw EncodingError(field: "secureHello.publicKey", problem: "\(key.count) bytes; 32") }
            return key
        case let .secureHelloReply(key, nonce):
            guard key.count == 32, nonce.count == 16 else {
                throw EncodingError(field: "secureHelloReply", problem: "a 32-byte key and a 16-byte nonce")
            }
            return key + nonce
        case let .secureVerify(proof), let .secureVerifyReply(proof): return proof
        case let .sealed(box): return box
        }
    }
}

/// What a sequence number says about the message it came with, given the last
/// one seen from the same sender (seed 003: each side counts 0–255 and wraps).
public struct WiFiSetSequence: Hashable, Sendable {
    public enum Verdict: Hashable, Sendable {
        case first
        case inOrder
        /// `missing` messages were lost (or are late) before this one.
        case gap(missing: Int)
        case duplicate
        /// Older than the last one: it came out of order.
        case reordered
    }

    public private(set) var last: UInt8?
    public init() {}

    /// Classifies `sequence` and remembers it when it moves forward.
    public mutating func observe(_ sequence: UInt8) -> Verdict {
        guard let last else { self.last = sequence; return .first }
        let ahead = Int(sequence &- last) // 0 … 255, modulo 256
        switch ahead {
        case 0: return .duplicate
        case 1: self.last = sequence; return .inOrder
        case 2...128: self.last = sequence; return .gap(missing: ahead - 1)
        default: return .reordered
        }
    }
}
