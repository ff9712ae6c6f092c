import StarlingCrypto
import StarlingMesh
import StarlingNostr
import StarlingWire

/// Courier drops' commands and queries on the node (``CourierFeature`` holds their state).
extension NodeCore {
    public enum CourierError: Error, Hashable, Sendable, CustomStringConvertible {
        case unknownRecipient
        public var description: String { "no verified announce has given us this peer's Noise key: a drop cannot be sealed to them" }
    }

    /// Others' prekey bundles, kept and synced for courier drops.
    public var prekeys: PrekeyStore { courierFeature?.prekeys ?? PrekeyStore() }

    /// Our own prekeys (what the runtime keeps), nil unless published.
    public var localPrekeys: LocalPrekeys? { courierFeature?.ownPrekeys }

    /// Our own prekeys as the runtime kept them, taken at the start before
    /// the first tick (which publishes them, or makes new ones when none were kept).
    public mutating func adoptPrekeys(_ p: LocalPrekeys) { courierFeature?.adopt(p) }

    /// Seals a private message one-way to a peer who is away (its Noise key,
    /// from a verified announce we took) and deposits it with up to 3
    /// neighbours, 4 copies each, for 24 hours (as iOS). Returns how many took it.
    @discardableResult
    public mutating func sendDrop(_ text: String, to recipient: Fingerprint, messageID: String? = nil, now: Millis) throws -> Int {
        guard let key = noiseKeys[recipient] else { throw CourierError.unknownRecipient }
        return try sendDrop(text, toNoiseKey: key, messageID: messageID, now: now)
    }

    /// The same, to a Noise key the caller knows (a contact's card, a
    /// conversation the messenger kept): the key is its own proof, as the
    /// fingerprint is its hash. Says how many took it (``NodeEvent/dropDeposited``).
    @discardableResult
    public mutating func sendDrop(_ text: String, toNoiseKey key: [UInt8], messageID: String? = nil, now: Millis) throws -> Int {
        guard key.count == 32 else { throw CourierError.unknownRecipient }
        let recipient = Fingerprint(noiseStaticKey: key)
        if noiseKeys[recipient] == nil { rememberNoiseKey(recipient, key) }
        let id = messageID ?? newMessageID()
        let taken = try using(\.courierFeature, now: now) { courier, context in try courier.seal(text, toNoiseKey: key, messageID: id, context: &context) } ?? 0
        // The recipient may read the courier's copy before the same message goes
        // directly (if it does at all): its read receipt counts from then on.
        awaitRead(id, from: recipient.peerID)
        return taken
    }

    /// A kind 1401 event our bridge's subscription brought: a drop for us is
    /// opened; one for a peer here is carried and handed to it over a session
    /// that proved its key (as any drop we carry).
    public mutating func dropFromRelay(_ event: NostrEvent, now: Millis) {
        using(\.courierFeature, now: now) { courier, context in courier.fromRelay(event, context: &context) }
    }

    /// A drop the courier mailbox's fetch brought (``Configuration/courierMailbox``):
    /// as one from the relays, never posted back; taken once a seal.
    public mutating func dropFromMailbox(_ e: CourierEnvelope, now: Millis) {
        using(\.courierFeature, now: now) { courier, context in courier.fromMailbox(e, context: &context) }
    }
}
