/// The payload of a FILE_TRANSFER packet (type 0x22), and of a private file
/// inside a Noise payload.
///
/// TLVs: 0x01 name (u16 BE length), 0x02 size (u16 length 4, u32 BE value; a
/// length of 8 with a u64 value is accepted), 0x03 MIME type (u16 length),
/// 0x04 content (**u32** BE length). Unknown TLVs carry a u16 length and are kept.
/// Packets carrying files are always v2 and always fragmented.
public struct FileTransfer: Hashable, Sendable {
    public enum Tag {
        public static let name: UInt8 = 0x01
        public static let size: UInt8 = 0x02
        public static let mimeType: UInt8 = 0x03
        public static let content: UInt8 = 0x04
    }

    public var name: String?
    /// The size field as sent; nil when absent. Must equal `content.count` when present.
    public var declaredSize: UInt64?
    public var mimeType: String?
    public var content: [UInt8]
    public var unknown: [UnknownTLV]

    public init(name: String?, mimeType: String?, content: [UInt8],
                declaredSize: UInt64? = nil, unknown: [UnknownTLV] = []) {
        self.name = name
        self.mimeType = mimeType
        self.content = content
        self.declaredSize = declaredSize ?? UInt64(content.count)
        self.unknown = unknown
    }

    static func length(for tag: UInt8) -> TLVLength { tag == Tag.content ? .u32 : .u16 }

    public func encoded() throws(EncodingError) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(content.count + 64)
        if let name {
            let n = Array(name.utf8)
            try checkLength(n.count, .u16, field: "file.name")
            out.appendTLV(Tag.name, n, length: .u16)
        }
        if let declaredSize {
            if declaredSize <= UInt64(UInt32.max) {
                out.append(Tag.size); out.appendBE(UInt16(4)); out.appendBE(UInt32(declaredSize))
            } else {
                out.append(Tag.size); out.appendBE(UInt16(8)); out.appendBE(declaredSize)
            }
        }
        if let mimeType {
            let m = Array(mimeType.utf8)
            try checkLength(m.count, .u16, field: "file.mimeType")
            out.appendTLV(Tag.mimeType, m, length: .u16)
        }
        try checkLength(content.count, .u32, field: "file.content")
        out.appendTLV(Tag.content, content, length: .u32)
        for tlv in unknown {
            try checkLength(tlv.value.count, .u16, field: "file.unknown")
            out.appendTLV(tlv.type, tlv.value, length: .u16)
        }
        return out
    }

    public init(decoding bytes: [UInt8], errorBase: Int = 0) throws(WireError) {
        var r = ByteReader(bytes, errorBase: errorBase)
        var name: String?, mime: String?, size: UInt64?, content: [UInt8]?
        var unknown: [UnknownTLV] = []
        var seen = SeenTLVTypes()
        var contentAt = errorBase
        while !r.isAtEnd {
            let start = r.position
            let (type, at, value) = try r.tlv("file.tlv", length: Self.length(for:))
            if (Tag.name...Tag.content).contains(type) {
                try seen.insert(type, context: "file.tlv", offset: start)
            }
            switch type {
            case Tag.name:
                name = try utf8Value(value, field: "file.name", offset: at)
            case Tag.size:
                guard value.count == 4 || value.count == 8 else {
                    throw WireError(.invalidValue("size of \(value.count) bytes; must be 4 or 8"), field: "file.size", offset: at)
                }
                size = value.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            case Tag.mimeType:
                mime = try utf8Value(value, field: "file.mimeType", offset: at)
            case Tag.content:
                content = Array(value)
                contentAt = at
            default:
                unknown.append(UnknownTLV(type: type, value: Array(value)))
            }
        }
        guard let content else { throw WireError(.missingField, field: "file.content", offset: r.position) }
        if let size, size != UInt64(content.count) {
            throw WireError(.invalidValue("size field says \(size), content has \(content.count) bytes"),
                            field: "file.size", offset: contentAt)
        }
        self.name = name
        self.mimeType = mime
        self.content = content
        self.declaredSize = size
        self.unknown = unknown
    }
}
