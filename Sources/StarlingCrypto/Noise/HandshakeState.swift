import Crypto

public typealias X25519PrivateKey = Curve25519.KeyAgreement.PrivateKey

/// A Noise HandshakeState (§5.3), driven by any ``NoisePattern``: one-way,
/// interactive, deferred and PSK patterns, for 25519 + ChaChaPoly + SHA256.
///
/// A plain value: bytes in, bytes out. Randomness enters only through the
/// ephemeral key, which a caller may supply (tests, vectors) or leave to the
/// system generator.
public struct HandshakeState: Sendable {
    public static let dhLength = 32
    public static let maxMessageLength = 65_535

    public let noiseProtocol: NoiseProtocol
    public let isInitiator: Bool
    private var symmetric: SymmetricState
    private var s: X25519PrivateKey?
    private var e: X25519PrivateKey?
    /// The remote static public key, known beforehand or learnt in the handshake.
    public private(set) var remoteStatic: [UInt8]?
    public private(set) var remoteEphemeral: [UInt8]?
    private var psks: [[UInt8]]
    private var messageIndex = 0
    private var pendingEphemeral: X25519PrivateKey?

    public init(protocol noiseProtocol: NoiseProtocol, initiator: Bool, prologue: [UInt8] = [],
                localStatic: X25519PrivateKey? = nil, localEphemeral: X25519PrivateKey? = nil,
                remoteStatic: [UInt8]? = nil, remoteEphemeral: [UInt8]? = nil,
                psks: [[UInt8]] = []) throws(NoiseError) {
        self.noiseProtocol = noiseProtocol
        self.isInitiator = initiator
        self.symmetric = SymmetricState(protocolName: noiseProtocol.name)
        self.s = localStatic
        self.pendingEphemeral = localEphemeral
        self.remoteStatic = remoteStatic
        self.remoteEphemeral = remoteEphemeral
        let pattern = noiseProtocol.pattern
        guard psks.count == pattern.pskCount, psks.allSatisfy({ $0.count == 32 }) else {
            throw .missingKey("\(pattern.pskCount) PSKs of 32 bytes")
        }
        self.psks = psks
        for key in [remoteStatic, remoteEphemeral] {
            if let key, key.count != Self.dhLength { throw .invalidKey("public key of \(key.count) bytes") }
        }
        symmetric.mixHash(prologue)
        // Pre-messages: the initiator's, then the responder's.
        for (tokens, ofInitiator) in [(pattern.initiatorPreMessage, true), (pattern.responderPreMessage, false)] {
            let local = ofInitiator == initiator
            for token in tokens {
                switch token {
                case .s:
                    let key = local ? s.map { Array($0.publicKey.rawRepresentation) } : remoteStatic
                    guard let key else { throw .missingKey(local ? "s" : "rs") }
                    symmetric.mixHash(key)
                case .e:
                    if local, e == nil { e = pendingEphemeral ?? X25519PrivateKey(); pendingEphemeral = nil }
                    let key = local ? e.map { Array($0.publicKey.rawRepresentation) } : remoteEphemeral
                    guard let key else { throw .missingKey(local ? "e" : "re") }
                    symmetric.mixHash(key)
                    if pattern.usesPSK { symmetric.mixKey(key) }
                default:
                    throw .unsupportedProtocol(noiseProtocol.name)
                }
            }
        }
    }

    /// Convenience: by protocol name.
    public init(protocolName: String, initiator: Bool, prologue: [UInt8] = [],
                localStatic: X25519PrivateKey? = nil, localEphemeral: X25519PrivateKey? = nil,
                remoteStatic: [UInt8]? = nil, remoteEphemeral: [UInt8]? = nil,
                psks: [[UInt8]] = []) throws(NoiseError) {
        try self.init(protocol: NoiseProtocol(protocolName), initiator: initiator, prologue: prologue,
                      localStatic: localStatic, localEphemeral: localEphemeral,
                      remoteStatic: remoteStatic, remoteEphemeral: remoteEphemeral, psks: psks)
    }

    public var isComplete: Bool { messageIndex >= noiseProtocol.pattern.messages.count }
    /// Whether the next handshake message is ours to write.
    public var isMyTurn: Bool { !isComplete && (messageIndex % 2 == 0) == isInitiator }
    /// The handshake hash h, for channel binding; final once the handshake completes.
    public var handshakeHash: [UInt8] { symmetric.h }
    public var localStaticPublicKey: [UInt8]? { s.map { Array($0.publicKey.rawRepresentation) } }

    public mutating func writeMessage(payload: [UInt8] = []) throws(NoiseError) -> [UInt8] {
        guard isMyTurn else { throw .outOfTurn }
        var out = [UInt8]()
        for token in noiseProtocol.pattern.messages[messageIndex] {
            switch token {
            case .e:
                let key = pendingEphemeral ?? X25519PrivateKey()
                pendingEphemeral = nil
                e = key
                let pub = Array(key.publicKey.rawRepresentation)
                out += pub
                symmetric.mixHash(pub)
                if noiseProtocol.pattern.usesPSK { symmetric.mixKey(pub) }
            case .s:
                guard let s else { throw .missingKey("s") }
                out += try symmetric.encryptAndHash(Array(s.publicKey.rawRepresentation))
            case .psk:
                symmetric.mixKeyAndHash(psks.removeFirst())
            default:
                symmetric.mixKey(try dh(token))
            }
        }
        out += try symmetric.encryptAndHash(payload)
        guard out.count <= Self.maxMessageLength else { throw .invalidMessageLength(out.count) }
        messageIndex += 1
        return out
    }

    public mutating func readMessage(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard !isComplete, !isMyTurn else { throw .outOfTurn }
        guard message.count <= Self.maxMessageLength else { throw .invalidMessageLength(message.count) }
        var rest = message[...]
        func take(_ n: Int) throws(NoiseError) -> [UInt8] {
            guard rest.count >= n else { throw .invalidMessageLength(message.count) }
            defer { rest = rest.dropFirst(n) }
            return Array(rest.prefix(n))
        }
        for token in noiseProtocol.pattern.messages[messageIndex] {
            switch token {
            case .e:
                let pub = try take(Self.dhLength)
                remoteEphemeral = pub
                symmetric.mixHash(pub)
                if noiseProtocol.pattern.usesPSK { symmetric.mixKey(pub) }
            case .s:
                let sealed = try take(Self.dhLength + (symmetric.cipher.hasKey ? CipherState.tagSize : 0))
                remoteStatic = try symmetric.decryptAndHash(sealed)
            case .psk:
                symmetric.mixKeyAndHash(psks.removeFirst())
            default:
                symmetric.mixKey(try dh(token))
            }
        }
        let payload = try symmetric.decryptAndHash(Array(rest))
        messageIndex += 1
        return payload
    }

    /// The two transport cipher states once the handshake is complete:
    /// initiator → responder first.
    public func split() throws(NoiseError) -> (initiatorToResponder: CipherState, responderToInitiator: CipherState) {
        guard isComplete else { throw .handshakeIncomplete }
        let (c1, c2) = symmetric.split()
        return (c1, c2)
    }

    /// The DH a token calls for, from this side's point of view.
    private func dh(_ token: NoiseToken) throws(NoiseError) -> [UInt8] {
        let local: X25519PrivateKey?
        let remote: [UInt8]?
        switch (token, isInitiator) {
        case (.ee, _): (local, remote) = (e, remoteEphemeral)
        case (.ss, _): (local, remote) = (s, remoteStatic)
        case (.es, true), (.se, false): (local, remote) = (e, remoteStatic)
        case (.es, false), (.se, true): (local, remote) = (s, remoteEphemeral)
        default: throw .unsupportedProtocol(noiseProtocol.name)
        }
        guard let local else { throw .missingKey("local key for \(token)") }
        guard let remote else { throw .missingKey("remote key for \(token)") }
        return try X25519.sharedSecret(local, remote)
    }
}

/// X25519 through swift-crypto, with low-order points refused.
public enum X25519 {
    public static func sharedSecret(_ privateKey: X25519PrivateKey, _ publicKey: [UInt8]) throws(NoiseError) -> [UInt8] {
        do {
            let pub = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: publicKey)
            let secret = try privateKey.sharedSecretFromKeyAgreement(with: pub)
            let bytes = secret.withUnsafeBytes { Array($0) }
            // BoringSSL already fails on an all-zero result; check anyway, in constant time.
            guard bytes.reduce(0, { $0 | $1 }) != 0 else { throw NoiseError.invalidKey("low-order public key") }
            return bytes
        } catch let error as NoiseError {
            throw error
        } catch {
            throw .invalidKey("low-order or malformed public key")
        }
    }
}
