import Crypto

/// Private groups as iOS 1.7 carries them (docs/PROTOCOL.md, "Groups (0x25,
/// Noise 0x06 / 0x07)"; bitchat GroupProtocol.swift): a group message packet
/// (0x25) holds a ``GroupEnvelope``, whose ciphertext opens (ChaCha20-Poly1305,
/// the group's key of its epoch) to a ``GroupMessageBody``; a ``GroupState``
/// (the name, key, epoch and roster, signed by the creator) goes to each
/// member inside its Noise session as an invite (0x06) or a key update (0x07).
///
/// Every group TLV is type u8 ‖ length u16 BE ‖ value. Read as iOS reads:
/// unknown types skipped, a value of the wrong size ignored, a later copy
/// replacing an earlier one, framing that overruns the bytes refused whole,
/// every field the format needs present.
public enum GroupWire {
    /// Members in a roster, the creator among them.
    public static let maxMembers = 16
    /// A roster nickname is trimmed to this many UTF-8 bytes (whole characters) when written.
    public static let maxNicknameBytes = 64
    /// A group's name when made (receivers do not bound it).
    public static let maxNameCharacters = 40

    /// The TLVs of `bytes` in order; throws when a header or value overruns.
    static func tlvs(_ bytes: ArraySlice<UInt8>, _ context: StaticString) throws(WireError) -> [(type: UInt8, value: [UInt8], offset: Int)] {
        var r = ByteReader(Array(bytes))
        var out: [(UInt8, [UInt8], Int)] = []
        while !r.isAtEnd {
            let t = try r.tlv(context) { _ in .u16 }
            out.append((t.type, Array(t.value), t.valueOffset))
        }
        return out
    }

    static func utf8(_ v: [UInt8], _ field: String, _ offset: Int) throws(WireError) -> String {
        guard let s = String(validating: v, as: UTF8.self) else { throw WireError(.invalidUTF8, field: field, offset: offset) }
        return s
    }

    static func u32(_ v: [UInt8]) -> UInt32 { v.reduce(0) { $0 << 8 | UInt32($1) } }
    static func u64(_ v: [UInt8]) -> UInt64 { v.reduce(0) { $0 << 8 | UInt64($1) } }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }
}

/// A member of a group: the SHA-256 of their Noise static key (the
/// fingerprint), their Ed25519 announce key and the nickname the creator wrote.
public struct GroupMember: Hashable, Sendable {
    public var fingerprint: [UInt8]
    public var signingKey: [UInt8]
    public var nickname: String

    public init(fingerprint: [UInt8], signingKey: [UInt8], nickname: String) {
        self.fingerprint = fingerprint
        self.signingKey = signingKey
        self.nickname = nickname
    }

    /// The nickname as a roster carries it: at most 64 UTF-8 bytes, cut between characters.
    public var trimmedNickname: String {
        var out = ""
        for c in nickname {
            guard out.utf8.count + String(c).utf8.count <= GroupWire.maxNicknameBytes else { break }
            out.append(c)
        }
        return out
    }
}

/// The roster blob: count u8 (1 to 16), then each member's fingerprint (32) ‖
/// signing key (32) ‖ nickname length u8 ‖ nickname; nothing after.
public enum GroupRoster {
    public static func encoded(_ members: [GroupMember]) -> [UInt8] {
        var out = [UInt8(min(members.count, 255))]
        for m in members {
            let nick = Array(m.trimmedNickname.utf8)
            out += m.fingerprint + m.signingKey + [UInt8(nick.count)] + nick
        }
        return out
    }

    public static func decode(_ bytes: ArraySlice<UInt8>) throws(WireError) -> [GroupMember] {
        var r = ByteReader(Array(bytes))
        let count = Int(try r.u8("groupRoster.count"))
        guard count >= 1, count <= GroupWire.maxMembers else {
            throw WireError(.lengthOutOfRange(declared: count, limit: GroupWire.maxMembers), field: "groupRoster.count", offset: bytes.startIndex)
        }
        var members: [GroupMember] = []
        for _ in 0..<count {
            let f = Array(try r.slice(32, "groupRoster.fingerprint")), k = Array(try r.slice(32, "groupRoster.signingKey"))
            let n = Int(try r.u8("groupRoster.nicknameLength")), at = r.position
            let nick = try GroupWire.utf8(Array(try r.slice(n, "groupRoster.nickname")), "groupRoster.nickname", at)
            members.append(GroupMember(fingerprint: f, signingKey: k, nickname: nick))
        }
        guard r.isAtEnd else { throw WireError(.trailingBytes(count: r.remaining), field: "groupRoster", offset: r.position) }
        return members
    }
}

/// A group's state (the payload of Noise 0x06 invite and 0x07 key update):
/// TLVs 01 group ID (16), 02 name, 03 key (32), 04 epoch (u32 BE), 05 roster,
/// 06 creator fingerprint (32), 07 signature (64), by the creator's Ed25519
/// key over ``signingBytes``.
public struct GroupState: Hashable, Sendable {
    public static let domain = Array("bitchat-group-v1".utf8)

    public var groupID: [UInt8]
    public var name: String
    public var key: [UInt8]
    public var epoch: UInt32
    public var members: [GroupMember]
    public var creatorFingerprint: [UInt8]
    public var signature: [UInt8]

    public init(groupID: [UInt8], name: String, key: [UInt8], epoch: UInt32, members: [GroupMember],
                creatorFingerprint: [UInt8], signature: [UInt8] = []) {
        self.groupID = groupID
        self.name = name
        self.key = key
        self.epoch = epoch
        self.members = members
        self.creatorFingerprint = creatorFingerprint
        self.signature = signature
    }

    /// The creator, as the roster names them (nil: not in it, and the state cannot verify).
    public var creator: GroupMember? { members.first { $0.fingerprint == creatorFingerprint } }

    /// `"bitchat-group-v1" ‖ group ID ‖ u32be(epoch) ‖ SHA-256(key) ‖
    /// SHA-256(roster blob) ‖ SHA-256(name)`: 132 bytes, the roster re-encoded.
    public var signingBytes: [UInt8] {
        Self.domain + groupID + epoch.bigEndianBytes + GroupWire.sha256(key) + GroupWire.sha256(GroupRoster.encoded(members))
            + GroupWire.sha256(Array(name.utf8))
    }

    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.appendTLV(0x01, groupID, length: .u16)
        out.appendTLV(0x02, Array(name.utf8), length: .u16)
        out.appendTLV(0x03, key, length: .u16)
        out.appendTLV(0x04, epoch.bigEndianBytes, length: .u16)
        out.appendTLV(0x05, GroupRoster.encoded(members), length: .u16)
        out.appendTLV(0x06, creatorFingerprint, length: .u16)
        out.appendTLV(0x07, signature, length: .u16)
        return out
    }

    public init(decoding bytes: ArraySlice<UInt8>) throws(WireError) {
        var id: [UInt8]?, name: String?, key: [UInt8]?, epoch: UInt32?, roster: [GroupMember]?, creator: [UInt8]?, sig: [UInt8]?
        for (t, v, at) in try GroupWire.tlvs(bytes, "groupState") {
            switch t {
            case 0x01 where v.count == 16: id = v
            case 0x02: name = try GroupWire.utf8(v, "groupState.name", at)
            case 0x03 where v.count == 32: key = v
            case 0x04 where v.count == 4: epoch = GroupWire.u32(v)
            case 0x05: roster = try GroupRoster.decode(v[...])
            case 0x06 where v.count == 32: creator = v
            case 0x07 where v.count == 64: sig = v
            default: break // unknown, or the wrong size: ignored
            }
        }
        guard let id, let name, let key, let epoch, let roster, let creator, let sig else {
            throw WireError(.missingField, field: "groupState", offset: bytes.endIndex)
        }
        self.init(groupID: id, name: name, key: key, epoch: epoch, members: roster, creatorFingerprint: creator, signature: sig)
    }
}

/// The payload of a group message packet (0x25): TLVs 01 group ID (16, in
/// the clear), 02 epoch (u32 BE), 03 nonce (12), 04 ciphertext ‖ tag (16).
/// The AAD of its sealing is ``aad``.
public struct GroupEnvelope: Hashable, Sendable {
    public var groupID: [UInt8]
    public var epoch: UInt32
    public var nonce: [UInt8]
    public var ciphertext: [UInt8]

    public init(groupID: [UInt8], epoch: UInt32, nonce: [UInt8], ciphertext: [UInt8]) {
        self.groupID = groupID
        self.epoch = epoch
        self.nonce = nonce
        self.ciphertext = ciphertext
    }

    /// Group ID ‖ u32be(epoch): 20 bytes.
    public static func aad(groupID: [UInt8], epoch: UInt32) -> [UInt8] { groupID + epoch.bigEndianBytes }
    public var aad: [UInt8] { Self.aad(groupID: groupID, epoch: epoch) }

    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.appendTLV(0x01, groupID, length: .u16)
        out.appendTLV(0x02, epoch.bigEndianBytes, length: .u16)
        out.appendTLV(0x03, nonce, length: .u16)
        out.appendTLV(0x04, ciphertext, length: .u16)
        return out
    }

    public init(decoding bytes: ArraySlice<UInt8>) throws(WireError) {
        var id: [UInt8]?, epoch: UInt32?, nonce: [UInt8]?, sealed: [UInt8]?
        for (t, v, _) in try GroupWire.tlvs(bytes, "groupEnvelope") {
            switch t {
            case 0x01 where v.count == 16: id = v
            case 0x02 where v.count == 4: epoch = GroupWire.u32(v)
            case 0x03 where v.count == 12: nonce = v
            case 0x04 where !v.isEmpty: sealed = v
            default: break
            }
        }
        guard let id, let epoch, let nonce, let sealed else { throw WireError(.missingField, field: "groupEnvelope", offset: bytes.endIndex) }
        self.init(groupID: id, epoch: epoch, nonce: nonce, ciphertext: sealed)
    }
}

/// What a group message's ciphertext opens to: TLVs 01 message ID (UTF-8,
/// not empty), 02 the sender's Ed25519 key (32), 03 the sender's nickname,
/// 04 timestamp (u64 BE ms), 05 content (UTF-8), 06 signature (64) by the
/// sender's key over ``signingBytes(groupID:epoch:)``.
public struct GroupMessageBody: Hashable, Sendable {
    public static let domain = Array("bitchat-group-msg-v1".utf8)

    public var messageID: String
    public var senderSigningKey: [UInt8]
    public var senderNickname: String
    public var timestamp: UInt64
    public var content: String
    public var signature: [UInt8]

    public init(messageID: String, senderSigningKey: [UInt8], senderNickname: String, timestamp: UInt64, content: String,
                signature: [UInt8] = []) {
        self.messageID = messageID
        self.senderSigningKey = senderSigningKey
        self.senderNickname = senderNickname
        self.timestamp = timestamp
        self.content = content
        self.signature = signature
    }

    /// `"bitchat-group-msg-v1" ‖ group ID ‖ u32be(epoch) ‖ message ID ‖
    /// u64be(timestamp) ‖ content`, no lengths (as iOS signs it).
    public func signingBytes(groupID: [UInt8], epoch: UInt32) -> [UInt8] {
        Self.domain + groupID + epoch.bigEndianBytes + Array(messageID.utf8) + timestamp.bigEndianBytes + Array(content.utf8)
    }

    /// Throws when a field is longer than a TLV holds (65,535 bytes).
    public func encoded() throws(EncodingError) -> [UInt8] {
        let id = Array(messageID.utf8), nick = Array(senderNickname.utf8), text = Array(content.utf8)
        for (value, field) in [(id, "groupMessage.messageID"), (nick, "groupMessage.senderNickname"), (text, "groupMessage.content")] {
            try checkLength(value.count, .u16, field: field)
        }
        var out: [UInt8] = []
        out.appendTLV(0x01, id, length: .u16)
        out.appendTLV(0x02, senderSigningKey, length: .u16)
        out.appendTLV(0x03, nick, length: .u16)
        out.appendTLV(0x04, timestamp.bigEndianBytes, length: .u16)
        out.appendTLV(0x05, text, length: .u16)
        out.appendTLV(0x06, signature, length: .u16)
        return out
    }

    public init(decoding bytes: ArraySlice<UInt8>) throws(WireError) {
        var id: String?, key: [UInt8]?, nick: String?, at: UInt64?, text: String?, sig: [UInt8]?
        for (t, v, offset) in try GroupWire.tlvs(bytes, "groupMessage") {
            switch t {
            case 0x01 where !v.isEmpty: id = try GroupWire.utf8(v, "groupMessage.messageID", offset)
            case 0x02 where v.count == 32: key = v
            case 0x03: nick = try GroupWire.utf8(v, "groupMessage.senderNickname", offset)
            case 0x04 where v.count == 8: at = GroupWire.u64(v)
            case 0x05: text = try GroupWire.utf8(v, "groupMessage.content", offset)
            case 0x06 where v.count == 64: sig = v
            default: break
            }
        }
        guard let id, let key, let nick, let at, let text, let sig else { throw WireError(.missingField, field: "groupMessage", offset: bytes.endIndex) }
        self.init(messageID: id, senderSigningKey: key, senderNickname: nick, timestamp: at, content: text, signature: sig)
    }
}
