import Foundation
import StarlingCrypto
import StarlingWire
import StarlingYaOK

/// Receiving a sealed message into the store (seed 002 §5.1 and §8.2), for
/// any transport that carries them (the Ya OK server, a later mesh path).
extension MessengerStore {
    public enum Received: Hashable, Sendable {
        /// A new message, stored.
        case message(MessageRecord)
        /// A receipt for one of ours: its state moved.
        case receipt(MessageRecord)
        /// A message already stored (a replay or a second delivery): dropped.
        case duplicate
        /// From someone who is not a contact: dropped unread (there is no key
        /// to check it with).
        case unknownSender(UserID)
        /// A failed signature or box: logged with the packet's BLAKE3 hash
        /// and dropped; `alert` when its sender now has more than 3 in 24 hours.
        case refused(Incident, alert: Bool)
    }

    /// Checks and stores one sealed message for `me`: recipient, then the
    /// sender (a contact), then the signature and the box, then the ID.
    public func receive(sealed bytes: [UInt8], as me: UserID, identity: Identity, now: Double) throws -> Received {
        let header = try SealedMessage.peek(bytes)
        guard header.recipient == me else { throw SealedMessage.Error.wrongRecipient(header.recipient) }
        guard let contact = try contact(header.sender), let card = contact.card else { return .unknownSender(header.sender) }
        // (A Result, not do/catch: this compiler trips on a typed-throws catch here.)
        let result = Result { () throws(SealedMessage.Error) -> (SealedMessageBytes, SealedBody) in
            try SealedMessage.open(bytes, as: me, with: identity, senderSigningKey: card.signingKey)
        }
        let opened: (SealedMessageBytes, SealedBody)
        switch result {
        case let .success(value):
            opened = value
        case let .failure(error):
            let kind: Incident.Kind
            switch error {
            case .badSignature: kind = .badSignature
            case .decryptionFailed, .badKey: kind = .decryptionFailed
            default: throw error
            }
            let incident = Incident(sender: header.sender.description, kind: kind, packet: bytes, at: now)
            return .refused(incident, alert: try recordIncident(incident))
        }
        switch opened.1 {
        case let .text(text):
            let record = MessageRecord(id: header.messageID, contact: header.sender, outgoing: false, text: text,
                                       timestamp: header.timestamp, recordedAt: now, transport: "sealed")
            return try insertMessage(record) ? .message(record) : .duplicate
        case let .delivered(id), let .read(id):
            guard var ours = try message(id, contact: header.sender), ours.outgoing, ours.progress != nil else { return .duplicate }
            let before = ours.progress!.state
            ours.progress!.receipt(opened.1 == .delivered(id) ? .delivered : .read, at: now)
            guard ours.progress!.state != before else { return .duplicate }
            try updateMessage(ours)
            return .receipt(ours)
        }
    }
}
