/// What can go wrong in a Noise handshake or transport.
public enum NoiseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The protocol name is malformed, or names a pattern, DH, cipher or hash this
    /// engine does not implement (it implements 25519, ChaChaPoly and SHA256).
    case unsupportedProtocol(String)
    /// A key the pattern needs was not supplied (`s`, `rs`, or a PSK).
    case missingKey(String)
    /// A key of the wrong size, or a public key of low order (the DH result is zero).
    case invalidKey(String)
    /// The message is shorter than its tokens require, or longer than 65,535 bytes.
    case invalidMessageLength(Int)
    /// Authentication failed: the ciphertext, tag or associated data was altered.
    case decryptionFailed
    /// writeMessage/readMessage called out of turn, or after the handshake ended.
    case outOfTurn
    /// split() or transport use before the handshake completed.
    case handshakeIncomplete
    /// The 2^64 − 1 nonce limit of a cipher state was reached.
    case nonceExhausted

    public var description: String {
        switch self {
        case let .unsupportedProtocol(name): "unsupported Noise protocol \(name)"
        case let .missingKey(which): "missing key: \(which)"
        case let .invalidKey(why): "invalid key: \(why)"
        case let .invalidMessageLength(n): "invalid Noise message length \(n)"
        case .decryptionFailed: "decryption failed (message altered or wrong key)"
        case .outOfTurn: "handshake message out of turn"
        case .handshakeIncomplete: "handshake not complete"
        case .nonceExhausted: "cipher nonce exhausted"
        }
    }
}
