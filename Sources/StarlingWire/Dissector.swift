/// A decoded field for people: a name, a value, and nested fields.
/// `starling inspect` prints these as indented text or as JSON.
public struct DissectedField: Hashable, Sendable {
    public enum Value: Hashable, Sendable {
        case text(String)
        case number(UInt64)
        case bool(Bool)
        case bytes([UInt8])
        case list([String])
        case none
    }

    public var name: String
    public var value: Value
    /// A short human note, such as a type name or a date.
    public var note: String?
    public var children: [DissectedField]

    public init(_ name: String, _ value: Value, note: String? = nil, children: [DissectedField] = []) {
        self.name = name
        self.value = value
        self.note = note
        self.children = children
    }

    public subscript(_ name: String) -> DissectedField? {
        children.first { $0.name == name }
    }
}

/// What a dissection found: every layer it could read, and the first error,
/// if any (as Wireshark does: the outer layers are shown even when an inner
/// one is malformed, and the malformed one is marked).
public struct Dissection: Hashable, Sendable {
    /// nil when not even the packet's header and addresses decode.
    public var field: DissectedField?
    public var error: WireError?

    public init(field: DissectedField?, error: WireError?) {
        self.field = field
        self.error = error
    }
}

/// Decodes a packet and everything nested in it into ``DissectedField``s.
/// Any malformation, at any depth, is a ``WireError`` naming the field and
/// its byte offset.
public enum Dissector {
    /// Dissects an encoded packet; throws at the first malformation, whatever its depth.
    public static func packet(_ bytes: [UInt8], limits: WireLimits = .default) throws(WireError) -> DissectedField {
        let d = dissect(bytes, limits: limits)
        if let error = d.error { throw error }
        return d.field!
    }

    /// Dissects an encoded packet as far as it can: a packet whose inner
    /// payload is malformed still shows its header, addresses, route and
    /// signature, with the payload marked (`malformed` note, `error` child).
    public static func dissect(_ bytes: [UInt8], limits: WireLimits = .default) -> Dissection {
        let packet: Packet
        do { packet = try Packet(decoding: bytes, limits: limits) } catch { return Dissection(field: nil, error: error) }
        var innerError: WireError?
        let headerSize = packet.version == 2 ? Packet.v2HeaderSize : Packet.v1HeaderSize
        let payloadOffset = headerSize + 8 + (packet.recipientID == nil ? 0 : 8)
            + (packet.route.map { 1 + 8 * $0.count } ?? 0)
            + (packet.compressedPayload == nil ? 0 : (packet.version == 2 ? 4 : 2))
        var fields: [DissectedField] = [
            DissectedField("version", .number(UInt64(packet.version))),
            DissectedField("type", .number(UInt64(packet.type.rawValue)), note: packet.type.name ?? "unknown"),
            DissectedField("ttl", .number(UInt64(packet.ttl))),
            DissectedField("timestamp", .number(packet.timestamp), note: iso8601(millis: packet.timestamp)),
            DissectedField("flags", .list(flagNames(packet.flags))),
            DissectedField("payloadLength", .number(UInt64(packet.payloadLengthField))),
            DissectedField("senderID", .text(packet.senderID.description)),
        ]
        if let r = packet.recipientID {
            fields.append(DissectedField("recipientID", .text(r.description), note: r.isBroadcast ? "broadcast" : nil))
        } else {
            fields.append(DissectedField("recipientID", .none, note: "broadcast"))
        }
        if let route = packet.route {
            fields.append(DissectedField("route", .list(route.map(\.description))))
        }
        if let c = packet.compressedPayload {
            fields.append(DissectedField("compression", .text("deflate"), children: [
                DissectedField("originalSize", .number(UInt64(packet.payload.count))),
                DissectedField("compressedSize", .number(UInt64(c.count))),
            ]))
        }
        // Offsets inside an inflated payload are relative to the inflated bytes.
        let base = packet.compressedPayload == nil ? payloadOffset : 0
        do {
            fields.append(try payload(of: packet, errorBase: base))
        } catch {
            innerError = error
            fields.append(DissectedField("payload", .bytes(packet.payload), note: "malformed", children: [
                DissectedField("error", .text(error.description)),
            ]))
        }
        if let s = packet.signature {
            fields.append(DissectedField("signature", .bytes(s.bytes)))
        }
        let unpadded = packet.encodedSize
        if bytes.count > unpadded {
            fields.append(DissectedField("padding", .number(UInt64(bytes.count - unpadded)),
                                         note: "PKCS#7 to \(bytes.count) bytes"))
        }
        fields.append(DissectedField("packetID", .text(PacketID(packet).description)))
        return Dissection(field: DissectedField("packet", .number(UInt64(bytes.count)), note: "bytes", children: fields),
                          error: innerError)
    }

    /// Dissects the plaintext of a Noise transport frame (an inner payload).
    public static func noisePlaintext(_ bytes: [UInt8]) throws(WireError) -> DissectedField {
        let inner = try NoisePayload(decoding: bytes)
        var children = [DissectedField("type", .number(UInt64(bytes[0])), note: NoisePayload.Kind.name(of: bytes[0]) ?? "unknown")]
        switch inner {
        case let .privateMessage(m):
            children.append(DissectedField("messageID", .text(m.messageID)))
            children.append(DissectedField("content", .text(m.content)))
            children += m.unknown.map(unknownField)
        case let .readReceipt(id), let .delivered(id):
            children.append(DissectedField("messageID", .text(id)))
        case let .verifyChallenge(b), let .verifyResponse(b), let .unknown(_, b):
            children.append(DissectedField("body", .bytes(b)))
        case let .privateFile(f):
            children.append(file(f))
        case let .bulkOffer(o):
            children += [DissectedField("transferID", .bytes(o.transferID)), DissectedField("name", .text(o.name)),
                         DissectedField("size", .number(o.size)), DissectedField("sha256", .bytes(o.sha256)),
                         DissectedField("key", .text("(32 bytes, not shown)")), DissectedField("addresses", .list(o.addresses)),
                         DissectedField("chunkSize", .number(UInt64(o.chunkSize)))]
            if let m = o.mimeType { children.append(DissectedField("mimeType", .text(m))) }
        case let .bulkAnswer(a):
            children += [DissectedField("transferID", .bytes(a.transferID)), DissectedField("accepted", .number(a.accepted ? 1 : 0)),
                         DissectedField("reason", .text(a.reason))]
        }
        return DissectedField("noisePayload", .number(UInt64(bytes.count)), note: "bytes", children: children)
    }

    static func payload(of packet: Packet, errorBase: Int) throws(WireError) -> DissectedField {
        let body = packet.payload
        let count = UInt64(body.count)
        switch packet.type {
        case .announce:
            let a = try Announce(decoding: body, errorBase: errorBase)
            var c = [
                DissectedField("nickname", .text(a.nickname)),
                DissectedField("noisePublicKey", .bytes(a.noisePublicKey)),
                DissectedField("signingPublicKey", .bytes(a.signingPublicKey)),
            ]
            if let n = a.directNeighbors { c.append(DissectedField("directNeighbors", .list(n.map(\.description)))) }
            if let caps = a.capabilities {
                c.append(DissectedField("capabilities", .number(caps), note: Capabilities(rawValue: caps).names.joined(separator: ", ")))
            }
            if let g = a.bridgeGeohash { c.append(DissectedField("bridgeGeohash", .text(g))) }
            c += a.unknown.map(unknownField)
            return DissectedField("announce", .number(count), note: "bytes", children: c)
        case .message:
            let text = try utf8Value(body[...], field: "message.text", offset: errorBase)
            return DissectedField("message", .text(text))
        case .noiseHandshake:
            let step: String? = switch body.count {
            case 32: "XX message 1 (-> e)"
            case 96: "XX message 2 (<- e, ee, s, es)"
            case 64: "XX message 3 (-> s, se)"
            default: nil
            }
            return DissectedField("noiseHandshake", .bytes(body), note: step)
        case .noiseEncrypted:
            guard body.count >= 4 + 16 else {
                throw WireError(.truncated(needed: 20, available: body.count), field: "noiseEncrypted.frame", offset: errorBase)
            }
            let nonce = body.prefix(4).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return DissectedField("noiseEncrypted", .number(count), note: "bytes", children: [
                DissectedField("nonce", .number(nonce)),
                DissectedField("ciphertext", .bytes(Array(body[4..<(body.count - 16)]))),
                DissectedField("tag", .bytes(Array(body.suffix(16)))),
            ])
        case .fragment:
            let f = try Fragment(decoding: body, errorBase: errorBase)
            var c = [
                DissectedField("fragmentID", .text(PeerID(rawValue: f.fragmentID).description)),
                DissectedField("index", .number(UInt64(f.index))),
                DissectedField("total", .number(UInt64(f.total))),
                DissectedField("originalType", .number(UInt64(f.originalType.rawValue)), note: f.originalType.name ?? "unknown"),
                DissectedField("data", .bytes(f.data)),
            ]
            if f.total == 1 {
                c.append(try Dissector.packet(f.data))
            }
            return DissectedField("fragment", .number(count), note: "bytes", children: c)
        case .requestSync:
            let rs = try RequestSync(decoding: body, errorBase: errorBase)
            var c = [
                DissectedField("p", .number(UInt64(rs.filter.p))),
                DissectedField("m", .number(UInt64(rs.filter.m))),
                DissectedField("data", .bytes(rs.filter.data)),
                DissectedField("elements", .number(UInt64(rs.filter.values().count)), note: "decoded from the filter"),
            ]
            if let t = rs.types {
                let known = SyncTypes.bits.filter { t.rawValue & (1 << UInt64($0.1)) != 0 }.map { $0.0.name ?? "0x" + String($0.0.rawValue, radix: 16) }
                let knownBits = SyncTypes.bits.reduce(UInt64(0)) { $0 | 1 << UInt64($1.1) }
                let other = (0..<64).filter { t.rawValue & ~knownBits & (1 << UInt64($0)) != 0 }.map { "bit \($0)" }
                c.append(DissectedField("types", .number(t.rawValue), note: (known + other).joined(separator: ", ")))
            } else {
                c.append(DissectedField("types", .none, note: "absent: announce, message"))
            }
            if let since = rs.since { c.append(DissectedField("since", .number(since), note: iso8601(millis: since))) }
            if let ids = rs.fragmentIDs {
                c.append(DissectedField("fragmentIDs", .list(ids.map { PeerID(rawValue: $0).description })))
            }
            c += rs.unknown.map(unknownField)
            return DissectedField("requestSync", .number(count), note: "bytes", children: c)
        case .fileTransfer:
            return file(try FileTransfer(decoding: body, errorBase: errorBase))
        case .versionHello:
            let v = try VersionNegotiation.decodeHello(body, errorBase: errorBase)
            return DissectedField("versionHello", .list(v.map { String($0) }))
        case .versionAck:
            let v = try VersionNegotiation.decodeAck(body, errorBase: errorBase)
            return DissectedField("versionAck", v.map { .number(UInt64($0)) } ?? .none, note: v == nil ? "no common version" : nil)
        case .ping, .pong:
            guard body.count >= 9 else {
                throw WireError(.truncated(needed: 9, available: body.count), field: "\(packet.type.name!).nonce", offset: errorBase)
            }
            return DissectedField(packet.type.name!, .number(count), note: "bytes", children: [
                DissectedField("nonce", .bytes(Array(body.prefix(8)))),
                DissectedField("originTTL", .number(UInt64(body[8])), note: "hops \(max(0, Int(body[8]) - Int(packet.ttl) + 1))"),
            ])
        case .boardPost:
            return board(try BoardPacket(decoding: body[...]), count: count)
        case .announceV2:
            let a = try AnnounceV2(decoding: body[...])
            var c = [
                DissectedField("epoch", .number(UInt64(a.epoch)), note: iso8601(millis: UInt64(a.epoch) * 3_600_000)),
                DissectedField("tags", .list(a.tags.map(\.hexString)), note: "8 slots; unused ones random"),
            ]
            if let caps = a.capabilities {
                c.append(DissectedField("capabilities", .number(caps), note: Capabilities(rawValue: caps).names.joined(separator: ", ")))
            }
            if let g = a.bridgeGeohash { c.append(DissectedField("bridgeGeohash", .text(g))) }
            return DissectedField("announceV2", .number(count), note: "bytes, unsigned", children: c)
        case .courierEnvelope, .prekeyBundle, .groupMessage, .nostrCarrier:
            let names = tlv16Names[packet.type] ?? [:]
            let entries = try tlv16(body, field: packet.type.name!, errorBase: errorBase)
            return DissectedField(packet.type.name!, .number(count), note: "bytes", children: entries.map { t, v in
                let name = names[t] ?? "tlv 0x" + String(t, radix: 16)
                let text = (t == 0x02 && packet.type == .nostrCarrier) || (t == 0x03 && packet.type == .nostrCarrier)
                    ? String(validating: v, as: UTF8.self) : nil
                return DissectedField(name, text.map { .text($0) } ?? .bytes(v))
            })
        case .voiceFrame:
            guard body.count >= 11 else {
                throw WireError(.truncated(needed: 11, available: body.count), field: "voiceFrame.header", offset: errorBase)
            }
            let kind: String = switch body[10] {
            case 0x00: "audio"
            case 0x01: "start"
            case 0x02: "end"
            case 0x04: "cancelled"
            default: "flags 0x" + String(body[10], radix: 16)
            }
            return DissectedField("voiceFrame", .number(count), note: "bytes", children: [
                DissectedField("burstID", .bytes(Array(body.prefix(8)))),
                DissectedField("sequence", .number(UInt64(body[8]) << 8 | UInt64(body[9]))),
                DissectedField("flags", .number(UInt64(body[10])), note: kind),
                DissectedField("body", .bytes(Array(body.dropFirst(11)))),
            ])
        default:
            return DissectedField("payload", .bytes(body))
        }
    }

    static func board(_ b: BoardPacket, count: UInt64) -> DissectedField {
        switch b {
        case let .post(p):
            return DissectedField("boardPost", .number(count), note: "bytes", children: [
                DissectedField("kind", .number(1), note: "post"),
                DissectedField("postID", .bytes(p.postID)),
                DissectedField("geohash", .text(p.geohash), note: p.geohash.isEmpty ? "the mesh's own board" : nil),
                DissectedField("content", .text(p.content)),
                DissectedField("authorKey", .bytes(p.authorKey)),
                DissectedField("nickname", .text(p.nickname)),
                DissectedField("createdAt", .number(p.createdAt), note: iso8601(millis: p.createdAt)),
                DissectedField("expiresAt", .number(p.expiresAt), note: iso8601(millis: p.expiresAt)),
                DissectedField("flags", .number(UInt64(p.flags)), note: p.isUrgent ? "urgent" : nil),
                DissectedField("signature", .bytes(p.signature), note: "Ed25519 by authorKey"),
            ])
        case let .tombstone(t):
            return DissectedField("boardPost", .number(count), note: "bytes", children: [
                DissectedField("kind", .number(2), note: "tombstone"),
                DissectedField("postID", .bytes(t.postID)),
                DissectedField("authorKey", .bytes(t.authorKey)),
                DissectedField("deletedAt", .number(t.deletedAt), note: iso8601(millis: t.deletedAt)),
                DissectedField("signature", .bytes(t.signature), note: "Ed25519 by authorKey"),
            ])
        }
    }

    /// The TLV names of the 2026 types (docs/PROTOCOL.md; from the apps' sources).
    static let tlv16Names: [MessageType: [UInt8: String]] = [
        .courierEnvelope: [0x01: "recipientTag", 0x02: "expiry", 0x03: "ciphertext", 0x04: "copies", 0x05: "prekeyID"],
        .prekeyBundle: [0x01: "noiseStaticKey", 0x02: "prekeys", 0x03: "generatedAt", 0x04: "signature"],
        .groupMessage: [0x01: "groupID", 0x02: "epoch", 0x03: "nonce", 0x04: "ciphertext"],
        .nostrCarrier: [0x01: "direction", 0x02: "geohash", 0x03: "eventJSON"],
    ]

    /// TLVs of u8 type and u16 big-endian length, to the end of `body`.
    static func tlv16(_ body: [UInt8], field: String, errorBase: Int) throws(WireError) -> [(UInt8, [UInt8])] {
        var out: [(UInt8, [UInt8])] = []
        var i = 0
        while i < body.count {
            guard i + 3 <= body.count else {
                throw WireError(.truncated(needed: 3, available: body.count - i), field: "\(field).tlv", offset: errorBase + i)
            }
            let length = Int(body[i + 1]) << 8 | Int(body[i + 2])
            guard i + 3 + length <= body.count else {
                throw WireError(.truncated(needed: length, available: body.count - i - 3), field: "\(field).tlv 0x"
                    + String(body[i], radix: 16), offset: errorBase + i + 3)
            }
            out.append((body[i], Array(body[(i + 3)..<(i + 3 + length)])))
            i += 3 + length
        }
        return out
    }

    static func file(_ f: FileTransfer) -> DissectedField {
        var c: [DissectedField] = []
        if let n = f.name { c.append(DissectedField("name", .text(n))) }
        if let s = f.declaredSize { c.append(DissectedField("size", .number(s))) }
        if let m = f.mimeType { c.append(DissectedField("mimeType", .text(m))) }
        c.append(DissectedField("content", .bytes(f.content)))
        c += f.unknown.map(unknownField)
        return DissectedField("file", .number(UInt64(f.content.count)), note: "content bytes", children: c)
    }

    static func unknownField(_ t: UnknownTLV) -> DissectedField {
        DissectedField("tlv_0x\(String(t.type, radix: 16))", .bytes(t.value), note: "unknown TLV, kept")
    }

    static func flagNames(_ f: PacketFlags) -> [String] {
        var out: [String] = []
        if f.contains(.hasRecipient) { out.append("hasRecipient") }
        if f.contains(.hasSignature) { out.append("hasSignature") }
        if f.contains(.isCompressed) { out.append("isCompressed") }
        if f.contains(.hasRoute) { out.append("hasRoute") }
        if f.contains(.isRSR) { out.append("isRSR") }
        return out
    }

    /// UTC date of a millisecond timestamp, computed without Foundation.
    static func iso8601(millis: UInt64) -> String {
        let seconds = Int64(millis / 1000)
        let ms = Int(millis % 1000)
        var days = seconds / 86_400
        let rem = Int(seconds % 86_400)
        // Civil-from-days (Howard Hinnant's algorithm).
        days += 719_468
        let era = days / 146_097
        let doe = days - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        func three(_ v: Int) -> String { v < 10 ? "00\(v)" : v < 100 ? "0\(v)" : "\(v)" }
        return "\(y)-\(two(Int(m)))-\(two(Int(d)))T\(two(rem / 3600)):\(two(rem / 60 % 60)):\(two(rem % 60)).\(three(ms))Z"
    }
}
