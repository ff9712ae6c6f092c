import Crypto
import Foundation
import StarlingWire

/// The sealing of one bulk connection, without I/O.
///
/// The offer (sent inside the Noise session, so only its two ends read it)
/// carries a random 32-byte transfer key K. Each TCP connection has keys of its
/// own: HKDF-SHA256(ikm = K, salt = the hello's 32-byte nonce, info = "starling
/// bulk v1 sender" / "starling bulk v1 receiver") → 32 bytes each, for what
/// each side sends. Frames are sealed with ChaCha20-Poly1305 (RFC 8439); the
/// nonce is 4 zero bytes ‖ a u64: the chunk index for a chunk or an ack, 2⁶³
/// for the hello. The associated data is the transfer ID ‖ the frame type ‖
/// the index (u32), or for the hello everything before its tag. Nobody on the
/// LAN, nor anyone who saw the offer sealed in the session, can read a chunk or
/// forge one, an ack or a hello; a chunk replayed or out of order is refused
/// by its index.
public struct BulkSeal: Sendable {
    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case badTag(String)
        case outOfOrder(expected: UInt32, got: UInt32)
        case wrongTransfer
        case badLength(index: UInt32, length: Int)

        public var description: String {
            switch self {
            case let .badTag(what): "\(what) does not authenticate (not sealed with this transfer's key)"
            case let .outOfOrder(expected, got): "chunk \(got) where \(expected) was due (a replay, or out of order)"
            case .wrongTransfer: "a hello for another transfer"
            case let .badLength(index, length): "chunk \(index) is \(length) bytes, not what the offer says"
            }
        }
    }

    public let transferID: [UInt8]
    let toReceiver: SymmetricKey
    let toSender: SymmetricKey

    public init(transferKey: [UInt8], transferID: [UInt8], nonce: [UInt8]) {
        self.transferID = transferID
        let ikm = SymmetricKey(data: transferKey)
        toReceiver = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, salt: nonce, info: Array("starling bulk v1 sender".utf8),
                                            outputByteCount: 32)
        toSender = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, salt: nonce, info: Array("starling bulk v1 receiver".utf8),
                                          outputByteCount: 32)
    }

    static let helloCounter: UInt64 = 1 << 63

    static func nonce(_ n: UInt64) -> ChaChaPoly.Nonce {
        var bytes = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 { bytes[4 + i] = UInt8(truncatingIfNeeded: n >> (56 - 8 * UInt64(i))) }
        return try! ChaChaPoly.Nonce(data: bytes) // 12 bytes: always valid
    }

    func ad(_ type: UInt8, _ index: UInt32) -> [UInt8] {
        transferID + [type, UInt8(index >> 24), UInt8(truncatingIfNeeded: index >> 16), UInt8(truncatingIfNeeded: index >> 8),
                      UInt8(truncatingIfNeeded: index)]
    }

    static func helloAD(_ id: [UInt8], _ nonce: [UInt8], _ from: UInt32) -> [UInt8] {
        [0x01] + id + nonce + [UInt8(from >> 24), UInt8(truncatingIfNeeded: from >> 16), UInt8(truncatingIfNeeded: from >> 8),
                               UInt8(truncatingIfNeeded: from)]
    }

    static func tag(_ key: SymmetricKey, _ counter: UInt64, _ ad: [UInt8]) -> [UInt8] {
        let box = try! ChaChaPoly.seal([UInt8](), using: key, nonce: nonce(counter), authenticating: ad) // cannot fail with a 32-byte key
        return Array(box.tag)
    }

    static func check(_ key: SymmetricKey, _ counter: UInt64, _ ad: [UInt8], _ tag: [UInt8]) -> Bool {
        guard tag.count == 16, let box = try? ChaChaPoly.SealedBox(nonce: nonce(counter), ciphertext: [UInt8](), tag: tag) else { return false }
        return (try? ChaChaPoly.open(box, using: key, authenticating: ad)) != nil
    }

    // MARK: Frames

    /// The receiver's hello: a fresh nonce, the first chunk it wants.
    public static func hello(offer: BulkOffer, from: UInt32, nonce: [UInt8]) -> (BulkFrame, BulkSeal) {
        let seal = BulkSeal(transferKey: offer.key, transferID: offer.transferID, nonce: nonce)
        let tag = Self.tag(seal.toSender, helloCounter, helloAD(offer.transferID, nonce, from))
        return (.hello(transferID: offer.transferID, nonce: nonce, from: from, tag: tag), seal)
    }

    /// The sender's check of a hello for `offer`: the keys of the connection
    /// and the first chunk wanted.
    public static func accept(_ frame: BulkFrame, offer: BulkOffer) throws(Error) -> (BulkSeal, from: UInt32) {
        guard case let .hello(id, nonce, from, tag) = frame else { throw .badTag("a first frame that is not a hello") }
        guard id == offer.transferID else { throw .wrongTransfer }
        let seal = BulkSeal(transferKey: offer.key, transferID: id, nonce: nonce)
        guard check(seal.toSender, helloCounter, helloAD(id, nonce, from), tag) else { throw .badTag("the hello") }
        return (seal, from)
    }

    public func chunk(_ index: UInt32, _ bytes: some DataProtocol) -> BulkFrame {
        let box = try! ChaChaPoly.seal(bytes, using: toReceiver, nonce: Self.nonce(UInt64(index)), authenticating: ad(0x02, index))
        var sealed: [UInt8] = []
        sealed.reserveCapacity(bytes.count + 16)
        sealed.append(contentsOf: box.ciphertext)
        sealed.append(contentsOf: box.tag)
        return .chunk(index: index, sealed: sealed)
    }

    /// A chunk's bytes, or an error when its tag does not hold.
    public func openChunk(_ index: UInt32, _ sealed: [UInt8]) throws(Error) -> Data {
        guard sealed.count >= 16 else { throw .badTag("chunk \(index)") }
        let plain: Data? = sealed.withUnsafeBytes { raw in
            // Read where they lie (no copy of the ciphertext before it is opened).
            guard let box = try? ChaChaPoly.SealedBox(nonce: Self.nonce(UInt64(index)), ciphertext: raw.prefix(raw.count - 16),
                                                       tag: raw.suffix(16)) else { return nil }
            return try? ChaChaPoly.open(box, using: toReceiver, authenticating: ad(0x02, index))
        }
        guard let plain else { throw .badTag("chunk \(index)") }
        return plain
    }

    public func ack(_ index: UInt32) -> BulkFrame { .ack(index: index, tag: Self.tag(toSender, UInt64(index), ad(0x03, index))) }

    public func checkAck(_ index: UInt32, _ tag: [UInt8]) -> Bool { Self.check(toSender, UInt64(index), ad(0x03, index), tag) }
}
