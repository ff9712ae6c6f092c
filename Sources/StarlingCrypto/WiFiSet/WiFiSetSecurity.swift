import Crypto
import StarlingWire

/// WiFiSet's secured mode (a Starling extension; seed 003's v1 sends the
/// password in clear). Modelled on ESP-IDF's provisioning "security 1": an
/// X25519 exchange of ephemeral keys, with a proof-of-possession code shown on
/// the device mixed into the key derivation; each side proves it derived the
/// same keys; then credential and status messages travel sealed.
///
/// ```
/// phone → device  SecureHello        e_p (32)
/// device → phone  SecureHelloReply   e_d (32) ‖ n_d (16)
///   okm = HKDF-SHA256(ikm = X25519(e_p, e_d), salt = SHA-256("wifiset pop v1" ‖ pop),
///                     info = "wifiset secured v1" ‖ e_p ‖ e_d ‖ n_d, 96 bytes)
///   k_pd = okm[0..<32] (phone → device), k_dp = okm[32..<64], k_confirm = okm[64..<96]
/// phone → device  SecureVerify       HMAC-SHA256(k_confirm, "phone")
/// device → phone  SecureVerifyReply  HMAC-SHA256(k_confirm, "device")
/// then            Sealed             counter u32 LE ‖ ChaCha20-Poly1305(k, nonce = 0⁴ ‖ counter u64 LE, whole message)
/// ```
///
/// A passive eavesdropper learns nothing. An active attacker in the middle can
/// test guesses of the code offline against one exchange: the code must be long
/// and random enough (the emulator makes 8 characters from 32 symbols, 40 bits).
public enum WiFiSetSecurity {
    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case badPublicKey
        case proofMismatch
        case replayed(counter: UInt32)
        case openFailed
        case boxTooShort(Int)
        case exhausted

        public var description: String {
            switch self {
            case .badPublicKey: "the peer's key is not a usable X25519 key"
            case .proofMismatch: "the other side derived different keys: a wrong proof-of-possession code"
            case let .replayed(c): "sealed message \(c) is a replay or out of order"
            case .openFailed: "a sealed message did not open (altered, or another session's)"
            case let .boxTooShort(n): "a sealed message has at least 20 bytes, not \(n)"
            case .exhausted: "the session's counter is spent; start a new one"
            }
        }
    }

    /// The keys of an established session, from one side's point of view.
    public struct Channel: Sendable {
        let sendKey: SymmetricKey
        let receiveKey: SymmetricKey
        private var sent: UInt32 = 0
        private var received: UInt32 = 0

        init(send: SymmetricKey, receive: SymmetricKey) {
            sendKey = send
            receiveKey = receive
        }

        /// Seals a whole WiFiSet message (header and payload).
        public mutating func seal(_ message: [UInt8]) throws -> [UInt8] {
            guard sent < .max else { throw Error.exhausted }
            sent += 1
            let box = try ChaChaPoly.seal(message, using: sendKey, nonce: Self.nonce(sent))
            return [UInt8(sent & 0xFF), UInt8(sent >> 8 & 0xFF), UInt8(sent >> 16 & 0xFF), UInt8(sent >> 24)]
                + Array(box.ciphertext) + Array(box.tag)
        }

        /// Opens a sealed message; counters must increase (no replays).
        public mutating func open(_ box: [UInt8]) throws(Error) -> [UInt8] {
            guard box.count >= 20 else { throw .boxTooShort(box.count) }
            let counter = UInt32(box[0]) | UInt32(box[1]) << 8 | UInt32(box[2]) << 16 | UInt32(box[3]) << 24
            guard counter > received else { throw .replayed(counter: counter) }
            do {
                let sealed = try ChaChaPoly.SealedBox(nonce: Self.nonce(counter), ciphertext: box[4..<(box.count - 16)],
                                                     tag: box[(box.count - 16)...])
                let plain = Array(try ChaChaPoly.open(sealed, using: receiveKey))
                received = counter
                return plain
            } catch {
                throw .openFailed
            }
        }

        static func nonce(_ counter: UInt32) -> ChaChaPoly.Nonce {
            var n = [UInt8](repeating: 0, count: 12)
            for i in 0..<4 { n[4 + i] = UInt8(truncatingIfNeeded: counter >> (8 * UInt32(i))) }
            return try! ChaChaPoly.Nonce(data: n)
        }
    }

    struct Keys {
        var phoneToDevice: SymmetricKey
        var deviceToPhone: SymmetricKey
        var confirm: SymmetricKey
    }

    static func derive(shared: [UInt8], pop: String, phoneKey: [UInt8], deviceKey: [UInt8], nonce: [UInt8]) throws -> Keys {
        guard shared.contains(where: { $0 != 0 }) else { throw Error.badPublicKey } // a low-order point
        let salt = Array(SHA256.hash(data: Array("wifiset pop v1".utf8) + Array(pop.utf8)))
        let okm = try HKDFSHA256.derive(inputKeyMaterial: shared, salt: salt,
                                        info: Array("wifiset secured v1".utf8) + phoneKey + deviceKey + nonce,
                                        outputByteCount: 96)
        return Keys(phoneToDevice: SymmetricKey(data: okm[0..<32]), deviceToPhone: SymmetricKey(data: okm[32..<64]),
                    confirm: SymmetricKey(data: okm[64..<96]))
    }

    static func proof(_ key: SymmetricKey, _ label: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array(label.utf8), using: key))
    }

    /// Compares in constant time.
    static func isValid(_ candidate: [UInt8], _ key: SymmetricKey, _ label: String) -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(candidate, authenticating: Array(label.utf8), using: key)
    }

    static func agree(_ privateKey: Curve25519.KeyAgreement.PrivateKey, _ peer: [UInt8]) throws -> [UInt8] {
        guard let key = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: peer) else { throw Error.badPublicKey }
        guard let shared = try? privateKey.sharedSecretFromKeyAgreement(with: key) else { throw Error.badPublicKey }
        return shared.withUnsafeBytes { Array($0) }
    }

    /// The phone's side of the handshake.
    public struct Phone: Sendable {
        let ephemeral: Curve25519.KeyAgreement.PrivateKey
        public let pop: String
        var keys: Keys?

        public init(pop: String, ephemeral: Curve25519.KeyAgreement.PrivateKey = .init()) {
            self.pop = pop
            self.ephemeral = ephemeral
        }

        public var hello: WiFiSet.Message { .secureHello(publicKey: Array(ephemeral.publicKey.rawRepresentation)) }

        /// The device's reply: returns the phone's proof to send.
        public mutating func received(deviceKey: [UInt8], nonce: [UInt8]) throws -> WiFiSet.Message {
            let mine = Array(ephemeral.publicKey.rawRepresentation)
            let k = try derive(shared: try agree(ephemeral, deviceKey), pop: pop, phoneKey: mine, deviceKey: deviceKey, nonce: nonce)
            keys = k
            return .secureVerify(proof(k.confirm, "phone"))
        }

        /// The device's proof: on success, the channel.
        public func finished(deviceProof: [UInt8]) throws -> Channel {
            guard let k = keys else { throw Error.proofMismatch }
            guard isValid(deviceProof, k.confirm, "device") else { throw Error.proofMismatch }
            return Channel(send: k.phoneToDevice, receive: k.deviceToPhone)
        }
    }

    /// The device's side of the handshake.
    public struct Device: Sendable {
        let ephemeral: Curve25519.KeyAgreement.PrivateKey
        let nonce: [UInt8]
        public let pop: String
        var keys: Keys?

        public init(pop: String, ephemeral: Curve25519.KeyAgreement.PrivateKey = .init(),
                    nonce: [UInt8] = (0..<16).map { _ in UInt8.random(in: 0...255) }) {
            self.pop = pop
            self.ephemeral = ephemeral
            self.nonce = nonce
        }

        /// The phone's hello: returns the reply to send.
        public mutating func received(phoneKey: [UInt8]) throws -> WiFiSet.Message {
            let mine = Array(ephemeral.publicKey.rawRepresentation)
            keys = try derive(shared: try agree(ephemeral, phoneKey), pop: pop, phoneKey: phoneKey, deviceKey: mine, nonce: nonce)
            return .secureHelloReply(publicKey: mine, nonce: nonce)
        }

        /// The phone's proof: on success, the reply to send and the channel.
        public func verify(phoneProof: [UInt8]) throws -> (WiFiSet.Message, Channel) {
            guard let k = keys, isValid(phoneProof, k.confirm, "phone") else { throw Error.proofMismatch }
            return (.secureVerifyReply(proof(k.confirm, "device")), Channel(send: k.deviceToPhone, receive: k.phoneToDevice))
        }
    }
}
