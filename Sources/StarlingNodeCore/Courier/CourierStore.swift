import StarlingCrypto
import StarlingWire

/// The courier drops a node carries for others (docs/PROTOCOL.md, "Courier
/// drops (0x04)"), kept as iOS keeps them (bitchat CourierStore.swift): at
/// most 40 envelopes, 20 from peers who are not favourites, 2 from one such
/// depositor (5 from a favourite); the same seal deposited twice is one
/// envelope; when full, the oldest non-favourite's goes first (a favourite's
/// deposit may push out any). Each lives until its expiry (at most 24 h and
/// an hour's slack ahead). Plain value: envelopes, keys and wall-clock
/// milliseconds in, envelopes out.
public struct CourierStore: Sendable {
    public struct Limits: Hashable, Sendable {
        public var maxEnvelopes = 40
        public var maxVerifiedEnvelopes = 20
        public var maxPerFavorite = 5
        public var maxPerVerified = 2
        public var expirySlack: UInt64 = 3_600_000
        public init() {}
    }

    public struct Held: Hashable, Sendable {
        public var envelope: CourierEnvelope
        /// The depositor's Noise static key.
        public var depositor: [UInt8]
        public var favorite: Bool
        public var storedAt: UInt64
        /// Couriers (Noise keys) given half our copies already.
        public var sprayedTo: Set<[UInt8]> = []
    }

    public var limits: Limits
    public private(set) var held: [Held] = []

    public init(limits: Limits = Limits()) { self.limits = limits }

    public var count: Int { held.count }

    public enum Outcome: Hashable, Sendable { case kept, duplicate, refused(String) }

    /// Takes a deposit from `depositor` (a peer whose verified announce gave its Noise key).
    public mutating func deposit(_ e: CourierEnvelope, from depositor: [UInt8], favorite: Bool, now: UInt64) -> Outcome {
        prune(now: now)
        guard e.recipientTag.count == CourierEnvelope.tagLength, !e.ciphertext.isEmpty, e.ciphertext.count <= CourierEnvelope.maxCiphertext else {
            return .refused("malformed")
        }
        guard !e.isExpired(at: now) else { return .refused("expired") }
        guard e.expiry <= now + CourierEnvelope.maxLifetime + limits.expirySlack else { return .refused("expiry over 24 h ahead") }
        if let i = held.firstIndex(where: { $0.envelope.ciphertext == e.ciphertext }) {
            // The same seal again: more copies only while none were handed on (a replay never refills spent copies).
            if held[i].sprayedTo.isEmpty, e.copies > held[i].envelope.copies { held[i].envelope.copies = e.copies }
            return .duplicate
        }
        let mine = held.filter { $0.depositor == depositor }.count
        guard mine < (favorite ? limits.maxPerFavorite : limits.maxPerVerified) else { return .refused("this depositor holds its share") }
        if !favorite, held.filter({ !$0.favorite }).count >= limits.maxVerifiedEnvelopes { return .refused("full") }
        if held.count >= limits.maxEnvelopes {
            if let i = held.indices.filter({ !held[$0].favorite }).min(by: { held[$0].storedAt < held[$1].storedAt }) {
                held.remove(at: i)
            } else if favorite, let i = held.indices.min(by: { held[$0].storedAt < held[$1].storedAt }) {
                held.remove(at: i)
            } else {
                return .refused("full")
            }
        }
        held.append(Held(envelope: e, depositor: depositor, favorite: favorite, storedAt: now))
        return .kept
    }

    public mutating func prune(now: UInt64) { held.removeAll { $0.envelope.isExpired(at: now) } }

    /// When the next envelope held expires (wall-clock milliseconds; nil: none held).
    public var nextExpiry: UInt64? { held.map(\.envelope.expiry).min() }

    /// The envelopes for a peer who is here (by its Noise key's candidate
    /// tags): removed, to be handed over.
    public mutating func handOver(to noiseKey: [UInt8], now: UInt64) -> [Held] {
        prune(now: now)
        let tags = Set(CourierSeal.candidateTags(noiseKey: noiseKey, day: CourierSeal.epochDay(unixSeconds: now / 1_000)))
        let out = held.filter { tags.contains($0.envelope.recipientTag) }
        held.removeAll { tags.contains($0.envelope.recipientTag) }
        return out
    }

    /// A drop handed over that could not be sent: carried again, as it was.
    public mutating func readmit(_ h: Held) {
        guard !held.contains(where: { $0.envelope.ciphertext == h.envelope.ciphertext }) else { return }
        held.append(h)
    }

    /// Spray-and-wait: for a courier met (its Noise key), each envelope with
    /// copies to spare that it neither deposited, got from us, nor is
    /// addressed to: half the copies go to it, we keep the rest.
    public mutating func spray(to courier: [UInt8], now: UInt64) -> [CourierEnvelope] {
        prune(now: now)
        let tags = Set(CourierSeal.candidateTags(noiseKey: courier, day: CourierSeal.epochDay(unixSeconds: now / 1_000)))
        var out: [CourierEnvelope] = []
        for i in held.indices where held[i].envelope.copies > 1 && held[i].depositor != courier && !held[i].sprayedTo.contains(courier)
            && !tags.contains(held[i].envelope.recipientTag) {
            var given = held[i].envelope
            given.copies = held[i].envelope.copies / 2
            held[i].envelope.copies -= given.copies
            held[i].sprayedTo.insert(courier)
            out.append(given)
        }
        return out
    }
}
