import Foundation
import StarlingWire

/// The receiving end of one bulk connection, without I/O: it makes the hello,
/// opens chunks strictly in order (a replay, a gap or a forged chunk is an
/// error: the connection ends, and a new one resumes), and acknowledges each
/// once its caller has written it.
public struct BulkReceiving: Sendable {
    public let offer: BulkOffer
    public let hello: BulkFrame
    /// The next chunk due (all before it are written).
    public private(set) var next: UInt32
    private let seal: BulkSeal

    /// A connection that asks for the chunks from `from` on (those before it are on disk).
    public init(offer: BulkOffer, from: UInt32, nonce: [UInt8]) {
        self.offer = offer
        next = from
        (hello, seal) = BulkSeal.hello(offer: offer, from: from, nonce: nonce)
    }

    public var chunkCount: UInt32 { UInt32(offer.chunkCount) }
    public var isComplete: Bool { next >= chunkCount }

    /// A frame from the sender: the chunk's bytes, to be written at
    /// `index × chunkSize`, then ``written()``.
    public func open(_ frame: BulkFrame) throws(BulkTransferError) -> (index: UInt32, bytes: Data) {
        switch frame {
        case let .chunk(index, sealed):
            guard index == next, index < chunkCount else { throw .crypto(.outOfOrder(expected: next, got: index)) }
            let bytes: Data
            do { bytes = try seal.openChunk(index, sealed) } catch { throw .crypto(error) }
            guard bytes.count == offer.length(ofChunk: Int(index)) else { throw .crypto(.badLength(index: index, length: bytes.count)) }
            return (index, bytes)
        case let .refused(why):
            throw .refused(why)
        default:
            throw .unexpected("a frame a sender does not send")
        }
    }

    /// The chunk due is written: its ack.
    public mutating func written() -> BulkFrame {
        defer { next += 1 }
        return seal.ack(next)
    }

    /// The whole file verified against the offer's SHA-256 and saved: the last ack.
    public func saved() -> BulkFrame { seal.ack(chunkCount) }
}

/// The sending end of one bulk connection, without I/O: it checks the hello,
/// says which chunk to read next (at most `window` unacknowledged), seals it,
/// and follows the acks to the last one, which says the file was saved whole.
public struct BulkSending: Sendable {
    public enum Event: Hashable, Sendable {
        /// `acked` chunks are on the receiver's disk.
        case progress(acked: UInt32)
        /// The receiver verified the whole file and saved it.
        case saved
    }

    public let offer: BulkOffer
    public let firstChunk: UInt32
    public let window: UInt32
    public private(set) var nextToSend: UInt32
    /// Chunks acknowledged (all before this index).
    public private(set) var acked: UInt32
    public private(set) var isSaved = false
    private let seal: BulkSeal

    public init(hello: BulkFrame, offer: BulkOffer, window: UInt32 = 16) throws(BulkTransferError) {
        let from: UInt32
        do { (seal, from) = try BulkSeal.accept(hello, offer: offer) } catch { throw .crypto(error) }
        guard from <= UInt32(offer.chunkCount) else { throw .unexpected("a hello from chunk \(from) of \(offer.chunkCount)") }
        self.offer = offer
        self.window = max(1, window)
        firstChunk = from
        nextToSend = from
        acked = from
    }

    public var chunkCount: UInt32 { UInt32(offer.chunkCount) }

    /// The chunk to read and send next, when the window has room.
    public var due: UInt32? { nextToSend < chunkCount && nextToSend - acked < window ? nextToSend : nil }

    /// Seals the chunk ``due`` names, read from the file.
    public mutating func sealDue(_ bytes: some DataProtocol) throws(BulkTransferError) -> BulkFrame {
        guard let index = due else { throw .unexpected("no chunk is due") }
        guard bytes.count == offer.length(ofChunk: Int(index)) else { throw .crypto(.badLength(index: index, length: bytes.count)) }
        nextToSend += 1
        return seal.chunk(index, bytes)
    }

    /// A frame from the receiver.
    public mutating func receive(_ frame: BulkFrame) throws(BulkTransferError) -> Event {
        switch frame {
        case let .ack(index, tag):
            guard seal.checkAck(index, tag) else { throw .crypto(.badTag("ack \(index)")) }
            if index == acked, index < nextToSend {
                acked += 1
                return .progress(acked: acked)
            }
            if index == chunkCount, acked == chunkCount, !isSaved {
                isSaved = true
                return .saved
            }
            throw .crypto(.outOfOrder(expected: acked, got: index))
        case let .refused(why):
            throw .refused(why)
        default:
            throw .unexpected("a frame a receiver does not send")
        }
    }
}

/// Why a bulk connection ended early.
public enum BulkTransferError: Error, Hashable, Sendable, CustomStringConvertible {
    case crypto(BulkSeal.Error)
    /// The other side said why (words, not authenticated).
    case refused(String)
    case unexpected(String)
    case wire(WireError)
    /// The whole file does not hash to the offer's SHA-256: nothing is saved.
    case hashMismatch
    case io(String)

    public var description: String {
        switch self {
        case let .crypto(e): "\(e)"
        case let .refused(why): "the other side ended the transfer: \(why)"
        case let .unexpected(what): "\(what)"
        case let .wire(e): "\(e)"
        case .hashMismatch: "the file received is not the one offered (SHA-256 differs): not saved"
        case let .io(what): what
        }
    }
}
