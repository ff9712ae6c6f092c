import Foundation
import StarlingWire

/// Private messages in three layers (NIP-59 / NIP-17): an unsigned rumor
/// (kind 14) inside a seal (kind 13, signed by the sender) inside a gift wrap
/// (kind 1059, signed by a one-time key, tagged with the recipient). Two
/// variants, chosen per peer: the standard one (NIP-44 v2 encryption, the
/// rumor tagged with its recipient and with its ID) and bitchat's (its own
/// envelope encryption, the iOS rumor shape: no tags, an empty ID).
public enum GiftWrap {
    public enum Variant: String, Sendable, Hashable, CaseIterable {
        case standard
        case bitchat
    }

    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case event(NostrEvent.Error)
        case nip44(NIP44.Error)
        case envelope(BitchatEnvelope.Error)
        case notForUs
        case wrongShape(String)
        case impersonation

        public var description: String {
            switch self {
            case let .event(e): "\(e)"
            case let .nip44(e): "\(e)"
            case let .envelope(e): "\(e)"
            case .notForUs: "a gift wrap for someone else"
            case let .wrongShape(what): "not a private message: \(what)"
            case .impersonation: "the seal and the message inside name different authors (refused)"
            }
        }
    }

    /// An opened private message: who sent it (the seal's signer), when (the
    /// rumor's time, the only true one), and what.
    public struct Opened: Hashable, Sendable {
        public var sender: String
        public var createdAt: Int64
        public var content: String
        public var variant: Variant
    }

    /// Wraps `content` from `sender` for `recipient` (x-only, hex). `now` in
    /// Unix seconds; the seal's and wrap's times are randomised (standard:
    /// up to 2 days back; bitchat: ±15 minutes, as iOS does).
    public static func wrap(_ content: String, from sender: Secp256k1.PrivateKey, to recipient: String, variant: Variant,
                            now: Int64, wrapKey: Secp256k1.PrivateKey = .random()) throws(Error) -> NostrEvent {
        guard let recipientKey = try? [UInt8](hex: recipient), recipientKey.count == 32 else { throw .wrongShape("recipient key") }
        var rumor = NostrEvent(pubkey: sender.publicKey.hexString, createdAt: now, kind: 14,
                               tags: variant == .standard ? [["p", recipient]] : [], content: content)
        if variant == .standard { rumor.id = rumor.computedID }
        let sealContent = try encrypt(rumor.json, from: sender, to: recipientKey, variant: variant)
        var seal = NostrEvent(pubkey: "", createdAt: randomised(now, variant), kind: 13, content: sealContent)
        do { try seal.sign(with: sender) } catch { throw .event(error) }
        let wrapContent = try encrypt(seal.json, from: wrapKey, to: recipientKey, variant: variant)
        var wrap = NostrEvent(pubkey: "", createdAt: randomised(now, variant), kind: 1059, tags: [["p", recipient]], content: wrapContent)
        do { try wrap.sign(with: wrapKey) } catch { throw .event(error) }
        return wrap
    }

    /// Opens a gift wrap for `me`, checking every layer as iOS bitchat does:
    /// kinds, tags, both signatures, 64 KiB a layer, and that the seal's
    /// signer wrote the rumor. The variant is recognised from the content.
    public static func open(_ wrap: NostrEvent, with me: Secp256k1.PrivateKey) throws(Error) -> Opened {
        let myKey = me.publicKey.hexString
        guard wrap.content.utf8.count <= NostrEvent.maxBytes else { throw .event(.tooLarge(wrap.content.utf8.count)) }
        guard wrap.kind == 1059 else { throw .wrongShape("kind \(wrap.kind), not a gift wrap (1059)") }
        guard wrap.tags == [["p", myKey]] else { throw .notForUs }
        do { try wrap.verify() } catch { throw .event(error) }
        let variant: Variant = wrap.content.hasPrefix("v2:") ? .bitchat : .standard
        let sealJSON = try decrypt(wrap.content, from: wrap.pubkey, with: me, variant: variant)
        let seal: NostrEvent
        do { seal = try NostrEvent.decode(sealJSON) } catch { throw .event(error) }
        guard seal.kind == 13, seal.tags.isEmpty else { throw .wrongShape("the seal is kind \(seal.kind) with \(seal.tags.count) tags") }
        do { try seal.verify() } catch { throw .event(error) }
        let rumorJSON = try decrypt(seal.content, from: seal.pubkey, with: me, variant: variant)
        let rumor: NostrEvent
        do { rumor = try NostrEvent.decode(rumorJSON) } catch { throw .event(error) }
        guard rumor.kind == 14, rumor.sig == nil else { throw .wrongShape("the message is kind \(rumor.kind), or signed") }
        guard rumor.tags.isEmpty || rumor.tags == [["p", myKey]] else { throw .wrongShape("the message's tags") }
        guard rumor.id.isEmpty || rumor.id == rumor.computedID else { throw .event(.badID) }
        guard rumor.pubkey == seal.pubkey else { throw .impersonation }
        return Opened(sender: seal.pubkey, createdAt: rumor.created_at, content: rumor.content, variant: variant)
    }

    static func encrypt(_ plaintext: String, from key: Secp256k1.PrivateKey, to recipient: [UInt8], variant: Variant) throws(Error) -> String {
        switch variant {
        case .bitchat:
            do { return try BitchatEnvelope.seal(plaintext, from: key, to: recipient) } catch { throw .envelope(error) }
        case .standard:
            do {
                return try NIP44.encrypt(plaintext, conversationKey: try NIP44.conversationKey(key, recipient))
            } catch { throw .nip44(error) }
        }
    }

    static func decrypt(_ payload: String, from sender: String, with me: Secp256k1.PrivateKey, variant: Variant) throws(Error) -> String {
        guard let senderKey = try? [UInt8](hex: sender), senderKey.count == 32 else { throw .wrongShape("the author's key") }
        switch variant {
        case .bitchat:
            do { return try BitchatEnvelope.open(payload, from: senderKey, with: me) } catch { throw .envelope(error) }
        case .standard:
            do { return try NIP44.decrypt(payload, conversationKey: try NIP44.conversationKey(me, senderKey)) } catch { throw .nip44(error) }
        }
    }

    static func randomised(_ now: Int64, _ variant: Variant) -> Int64 {
        switch variant {
        case .standard: now - Int64.random(in: 0...172_800)
        case .bitchat: now + Int64.random(in: -900...900)
        }
    }
}
