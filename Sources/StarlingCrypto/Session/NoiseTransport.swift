import StarlingWire

/// Why a bitchat session refused to seal or open a frame.
public enum SessionError: Error, Hashable, Sendable, CustomStringConvertible {
    case noSession(PeerID)
    case frameTooShort(Int)
    case replayed(nonce: UInt64)
    case outsideReplayWindow(nonce: UInt64)
    /// The 4-byte wire nonce would wrap: the session must be replaced.
    case counterExhausted
    case decryptionFailed
    /// More than 10 handshakes with this peer in the last minute.
    case rateLimited(PeerID)
    case handshakeFailed(NoiseError)
    case unexpectedHandshakeMessage(length: Int)

    public var description: String {
        switch self {
        case let .noSession(p): "no Noise session with \(p)"
        case let .frameTooShort(n): "transport frame of \(n) bytes; at least 20 are needed"
        case let .replayed(n): "frame with nonce \(n) was already received"
        case let .outsideReplayWindow(n): "frame with nonce \(n) is older than the replay window"
        case .counterExhausted: "message counter exhausted; the session must be rekeyed"
        case .decryptionFailed: "frame failed authentication"
        case let .rateLimited(p): "too many handshakes with \(p) in the last minute"
        case let .handshakeFailed(e): "handshake failed: \(e)"
        case let .unexpectedHandshakeMessage(n): "unexpected handshake message of \(n) bytes"
        }
    }
}

/// The transport phase of a bitchat Noise session: one cipher each way.
///
/// Frame = nonce u32 BE ‖ ciphertext ‖ 16-byte tag; the ChaChaPoly nonce is
/// 4 zero bytes ‖ the counter as u64 LE; no associated data. Frames may arrive
/// out of order; a 1,024-frame ``ReplayWindow`` refuses duplicates.
public struct NoiseTransport: Sendable {
    public static let nonceSize = 4
    public static let overhead = nonceSize + CipherState.tagSize
    /// The largest counter the 4-byte wire nonce can carry.
    public static let maxCounter = UInt64(UInt32.max)

    private var sender: CipherState
    private var receiver: CipherState
    private var window = ReplayWindow()
    public private(set) var sent: UInt64 = 0
    public private(set) var received: UInt64 = 0

    public init(sending: CipherState, receiving: CipherState) {
        sender = sending
        receiver = receiving
    }

    /// A transport whose send counter starts at `sent` (tests of counter exhaustion).
    init(sending: CipherState, receiving: CipherState, sent: UInt64) {
        self.init(sending: sending, receiving: receiving)
        self.sent = sent
    }

    public mutating func seal(_ plaintext: [UInt8]) throws(SessionError) -> [UInt8] {
        guard sent < Self.maxCounter else { throw .counterExhausted }
        let n = sent
        var frame = [UInt8]()
        frame.reserveCapacity(Self.overhead + plaintext.count)
        frame.appendU32BE(UInt32(n))
        do {
            try sender.encrypt(nonce: n, ad: [], plaintext: plaintext, appendingTo: &frame)
        } catch {
            throw .counterExhausted
        }
        sent += 1
        return frame
    }

    public mutating func open(_ frame: [UInt8]) throws(SessionError) -> [UInt8] {
        guard frame.count >= Self.overhead else { throw .frameTooShort(frame.count) }
        let n = UInt64(frame[0]) << 24 | UInt64(frame[1]) << 16 | UInt64(frame[2]) << 8 | UInt64(frame[3])
        switch window.check(n) {
        case .replayed: throw .replayed(nonce: n)
        case .tooOld: throw .outsideReplayWindow(nonce: n)
        case .fresh: break
        }
        let plaintext: [UInt8]
        do {
            plaintext = try receiver.decrypt(nonce: n, ad: [], ciphertext: frame[Self.nonceSize...])
        } catch {
            throw .decryptionFailed
        }
        window.record(n)
        received += 1
        return plaintext
    }

    /// Forgets both keys.
    public mutating func wipe() {
        sender.clear()
        receiver.clear()
    }
}

extension Array where Element == UInt8 {
    mutating func appendU32BE(_ v: UInt32) {
        append(UInt8(truncatingIfNeeded: v >> 24))
        append(UInt8(truncatingIfNeeded: v >> 16))
        append(UInt8(truncatingIfNeeded: v >> 8))
        append(UInt8(truncatingIfNeeded: v))
    }
}
