import CDBus

/// A D-Bus value with its type: what goes into and comes out of a message.
public indirect enum DBusValue: Hashable, Sendable, CustomStringConvertible {
    case byte(UInt8)
    case bool(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    case variant(DBusValue)
    /// An array; `element` is the signature of its elements (needed when empty).
    case array(element: String, [DBusValue])
    /// A dictionary (an array of dict entries), in order.
    case dictionary(key: String, value: String, [DictEntry])
    case structure([DBusValue])

    public struct DictEntry: Hashable, Sendable {
        public var key: DBusValue
        public var value: DBusValue
        public init(_ key: DBusValue, _ value: DBusValue) {
            self.key = key
            self.value = value
        }
    }

    /// The D-Bus type signature.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .bool: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .variant: "v"
        case let .array(element, _): "a" + element
        case let .dictionary(k, v, _): "a{" + k + v + "}"
        case let .structure(fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    public var description: String {
        switch self {
        case let .byte(v): "\(v)"
        case let .bool(v): "\(v)"
        case let .int16(v): "\(v)"
        case let .uint16(v): "\(v)"
        case let .int32(v): "\(v)"
        case let .uint32(v): "\(v)"
        case let .int64(v): "\(v)"
        case let .uint64(v): "\(v)"
        case let .double(v): "\(v)"
        case let .string(v): "\"\(v)\""
        case let .objectPath(v): v
        case let .signature(v): "g\"\(v)\""
        case let .variant(v): "<\(v)>"
        case let .array(_, items): "[" + items.map(\.description).joined(separator: ", ") + "]"
        case let .dictionary(_, _, entries): "{" + entries.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case let .structure(fields): "(" + fields.map(\.description).joined(separator: ", ") + ")"
        }
    }

    // Conveniences for reading replies.
    public var string: String? {
        switch self {
        case let .string(s), let .objectPath(s), let .signature(s): s
        case let .variant(v): v.string
        default: nil
        }
    }

    public var bool: Bool? {
        switch self {
        case let .bool(b): b
        case let .variant(v): v.bool
        default: nil
        }
    }

    public var int: Int? {
        switch self {
        case let .byte(v): Int(v)
        case let .int16(v): Int(v)
        case let .uint16(v): Int(v)
        case let .int32(v): Int(v)
        case let .uint32(v): Int(v)
        case let .int64(v): Int(v)
        case let .uint64(v): Int(exactly: v)
        case let .variant(v): v.int
        default: nil
        }
    }

    /// An array of bytes (`ay`), as BlueZ carries values.
    public var bytes: [UInt8]? {
        switch self {
        case let .array("y", items): items.compactMap { if case let .byte(b) = $0 { b } else { nil } }
        case let .variant(v): v.bytes
        default: nil
        }
    }

    public var array: [DBusValue]? {
        switch self {
        case let .array(_, items): items
        case let .variant(v): v.array
        default: nil
        }
    }

    /// A dictionary with string keys (`a{sv}`, `a{oa{sa{sv}}}` …).
    public var dictionary: [String: DBusValue]? {
        switch self {
        case let .dictionary(_, _, entries):
            var out: [String: DBusValue] = [:]
            for e in entries { if let k = e.key.string { out[k] = e.value } }
            return out
        case let .variant(v): return v.dictionary
        default: return nil
        }
    }

    public static func bytes(_ b: [UInt8]) -> DBusValue { .array(element: "y", b.map { .byte($0) }) }
    public static func strings(_ s: [String]) -> DBusValue { .array(element: "s", s.map { .string($0) }) }

    /// `a{sv}` from string keys.
    public static func properties(_ p: [String: DBusValue]) -> DBusValue {
        .dictionary(key: "s", value: "v", p.keys.sorted().map { DictEntry(.string($0), .variant(p[$0]!)) })
    }
}

/// libdbus's type codes (C macros Swift does not import): the signature characters.
enum T {
    static let byte: Int32 = 121 // 'y'
    static let boolean: Int32 = 98 // 'b'
    static let int16: Int32 = 110 // 'n'
    static let uint16: Int32 = 113 // 'q'
    static let int32: Int32 = 105 // 'i'
    static let uint32: Int32 = 117 // 'u'
    static let int64: Int32 = 120 // 'x'
    static let uint64: Int32 = 116 // 't'
    static let double: Int32 = 100 // 'd'
    static let string: Int32 = 115 // 's'
    static let objectpath: Int32 = 111 // 'o'
    static let signature: Int32 = 103 // 'g'
    static let variant: Int32 = 118 // 'v'
    static let array: Int32 = 97 // 'a'
    static let structure: Int32 = 114 // 'r'
    static let dictentry: Int32 = 101 // 'e'
    static let invalid: Int32 = 0 // '\0'
}

/// Writing values into a message and reading them back, with libdbus's iterators.
enum Marshal {
    static func append(_ value: DBusValue, to iter: inout DBusMessageIter) -> Bool {
        // Basic values are plain integers and doubles (BitwiseCopyable): their bytes are what libdbus reads.
        func basic<T: BitwiseCopyable>(_ type: Int32, _ v: T) -> Bool {
            var v = v
            return withUnsafeBytes(of: &v) { dbus_message_iter_append_basic(&iter, type, $0.baseAddress) != 0 }
        }
        func text(_ type: Int32, _ s: String) -> Bool {
            s.withCString { p in
                var p: UnsafePointer<CChar>? = p
                return dbus_message_iter_append_basic(&iter, type, &p) != 0
            }
        }
        switch value {
        case let .byte(v): return basic(T.byte, v)
        case let .bool(v): return basic(T.boolean, dbus_bool_t(v ? 1 : 0))
        case let .int16(v): return basic(T.int16, v)
        case let .uint16(v): return basic(T.uint16, v)
        case let .int32(v): return basic(T.int32, v)
        case let .uint32(v): return basic(T.uint32, v)
        case let .int64(v): return basic(T.int64, v)
        case let .uint64(v): return basic(T.uint64, v)
        case let .double(v): return basic(T.double, v)
        case let .string(s): return text(T.string, s)
        case let .objectPath(s): return text(T.objectpath, s)
        case let .signature(s): return text(T.signature, s)
        case let .variant(inner):
            return open(&iter, T.variant, inner.signature) { append(inner, to: &$0) }
        case let .array(element, items):
            return open(&iter, T.array, element) { sub in items.allSatisfy { append($0, to: &sub) } }
        case let .dictionary(k, v, entries):
            return open(&iter, T.array, "{" + k + v + "}") { sub in
                entries.allSatisfy { e in
                    open(&sub, T.dictentry, nil) { entry in append(e.key, to: &entry) && append(e.value, to: &entry) }
                }
            }
        case let .structure(fields):
            return open(&iter, T.structure, nil) { sub in fields.allSatisfy { append($0, to: &sub) } }
        }
    }

    /// Opens a container in `parent`, fills it, closes it.
    static func open(_ parent: inout DBusMessageIter, _ type: Int32, _ signature: String?,
                     _ body: (inout DBusMessageIter) -> Bool) -> Bool {
        var sub = DBusMessageIter()
        let opened: Bool
        if let signature {
            opened = signature.withCString { dbus_message_iter_open_container(&parent, type, $0, &sub) != 0 }
        } else {
            opened = dbus_message_iter_open_container(&parent, type, nil, &sub) != 0
        }
        guard opened else { return false }
        let ok = body(&sub)
        guard dbus_message_iter_close_container(&parent, &sub) != 0 else { return false }
        return ok
    }

    static func read(_ iter: inout DBusMessageIter) -> DBusValue? {
        let type = dbus_message_iter_get_arg_type(&iter)
        func basic<T: BitwiseCopyable>(_ zero: T) -> T {
            var v = zero
            withUnsafeMutableBytes(of: &v) { dbus_message_iter_get_basic(&iter, $0.baseAddress) }
            return v
        }
        func text() -> String {
            var p: UnsafePointer<CChar>? = nil
            dbus_message_iter_get_basic(&iter, &p)
            return p.map { String(cString: $0) } ?? ""
        }
        switch type {
        case T.byte: return .byte(basic(UInt8(0)))
        case T.boolean: return .bool(basic(dbus_bool_t(0)) != 0)
        case T.int16: return .int16(basic(Int16(0)))
        case T.uint16: return .uint16(basic(UInt16(0)))
        case T.int32: return .int32(basic(Int32(0)))
        case T.uint32: return .uint32(basic(UInt32(0)))
        case T.int64: return .int64(basic(Int64(0)))
        case T.uint64: return .uint64(basic(UInt64(0)))
        case T.double: return .double(basic(Double(0)))
        case T.string: return .string(text())
        case T.objectpath: return .objectPath(text())
        case T.signature: return .signature(text())
        case T.variant:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return read(&sub).map { .variant($0) }
        case T.structure:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .structure(readAll(&sub))
        case T.array:
            let element = signature(of: &iter).dropFirst()
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            if element.hasPrefix("{") {
                let inner = String(element.dropFirst().dropLast())
                let keySig = String(inner.prefix(1))
                var entries: [DBusValue.DictEntry] = []
                while dbus_message_iter_get_arg_type(&sub) == T.dictentry {
                    var entry = DBusMessageIter()
                    dbus_message_iter_recurse(&sub, &entry)
                    let kv = readAll(&entry)
                    if kv.count == 2 { entries.append(.init(kv[0], kv[1])) }
                    dbus_message_iter_next(&sub)
                }
                return .dictionary(key: keySig, value: String(inner.dropFirst()), entries)
            }
            if element == "y" {
                // Bytes in one go: BlueZ values are byte arrays.
                var pointer: UnsafeMutablePointer<UInt8>? = nil
                var count: Int32 = 0
                dbus_message_iter_get_fixed_array(&sub, &pointer, &count)
                let bytes = pointer.map { Array(UnsafeBufferPointer(start: $0, count: Int(count))) } ?? []
                return .bytes(bytes)
            }
            return .array(element: String(element), readAll(&sub))
        default:
            return nil
        }
    }

    static func readAll(_ iter: inout DBusMessageIter) -> [DBusValue] {
        var out: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iter) != T.invalid {
            if let v = read(&iter) { out.append(v) }
            dbus_message_iter_next(&iter)
        }
        return out
    }

    static func signature(of iter: inout DBusMessageIter) -> String {
        guard let p = dbus_message_iter_get_signature(&iter) else { return "" }
        defer { dbus_free(p) }
        return String(cString: p)
    }
}
