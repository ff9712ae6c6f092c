import Foundation

/// A JSON value (the OpenAPI document is one), written with sorted keys.
public indirect enum JSONValue: Codable, Hashable, Sendable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case array([JSONValue])
    case object([String: JSONValue])
    case null

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case let .string(s): try c.encode(s)
        case let .number(n): if n.rounded() == n, abs(n) < 9e15 { try c.encode(Int64(n)) } else { try c.encode(n) }
        case let .bool(b): try c.encode(b)
        case let .array(a): try c.encode(a)
        case let .object(o): try c.encode(o)
        case .null: try c.encodeNil()
        }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let n = try? c.decode(Double.self) { self = .number(n) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    public subscript(key: String) -> JSONValue? {
        if case let .object(o) = self { return o[key] }
        return nil
    }
}

/// The JSON Schema of a contract type, read from its own `Decodable`
/// conformance: a decoder that records what the type asks for (each key, its
/// type, whether it may be absent) instead of reading a document. So the
/// schema cannot drift from the type: both are the compiler's one definition.
public enum APISchema {
    /// The schema of `T` (OpenAPI 3.1: JSON Schema 2020-12); nested contract
    /// types are inlined.
    public static func of<T: Decodable>(_ type: T.Type) throws -> JSONValue {
        let recorder = Recorder()
        return try recorder.schema(of: type)
    }

    /// The schema `read` records (for a value read by a closure, as an event's payload).
    public static func recording(_ read: (any Decoder) throws -> Void) throws -> JSONValue {
        let recorder = Recorder()
        let d = SchemaDecoder(recorder: recorder, path: [])
        try read(d)
        return d.node.schema
    }

    final class Recorder {
        /// Types being recorded (a type inside itself would recurse for ever: none here does).
        var depth = 0

        func schema<T: Decodable>(of type: T.Type) throws -> JSONValue {
            if let s = Self.primitive(type) { return s }
            depth += 1
            defer { depth -= 1 }
            guard depth < 16 else { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "\(T.self) nests too deep")) }
            let d = SchemaDecoder(recorder: self, path: [])
            _ = try T(from: d)
            return d.node.schema
        }

        static func primitive(_ type: Any.Type) -> JSONValue? {
            switch type {
            case is String.Type: return .object(["type": .string("string")])
            case is Bool.Type: return .object(["type": .string("boolean")])
            case is Double.Type, is Float.Type: return .object(["type": .string("number")])
            case is Int.Type, is Int64.Type, is Int32.Type, is Int16.Type, is Int8.Type: return .object(["type": .string("integer")])
            case is UInt.Type, is UInt64.Type, is UInt32.Type, is UInt16.Type, is UInt8.Type:
                return .object(["type": .string("integer"), "minimum": .number(0)])
            case is [String: [String]].Type:
                return .object(["type": .string("object"),
                                "additionalProperties": .object(["type": .string("array"), "items": .object(["type": .string("string")])])])
            case is [String: JSONValue].Type: return .object(["type": .string("object")])
            default: return nil
            }
        }
    }

    /// What one decoder saw: an object's properties, an array's items, or a single value.
    final class Node {
        var properties: [String: JSONValue] = [:]
        var required: Set<String> = []
        var items: JSONValue?
        var single: JSONValue?
        var kind: Kind = .unknown
        enum Kind { case unknown, object, array, single }

        var schema: JSONValue {
            switch kind {
            case .object:
                var o: [String: JSONValue] = ["type": .string("object"), "properties": .object(properties)]
                if !required.isEmpty { o["required"] = .array(required.sorted().map(JSONValue.string)) }
                return .object(o)
            case .array:
                return .object(["type": .string("array"), "items": items ?? .object([:])])
            case .single:
                return single ?? .object([:])
            case .unknown:
                return .object([:])
            }
        }
    }

    struct SchemaDecoder: Decoder {
        let recorder: Recorder
        let path: [any CodingKey]
        let node = Node()
        var codingPath: [any CodingKey] { path }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            node.kind = .object
            return KeyedDecodingContainer(Keyed<Key>(decoder: self))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            node.kind = .array
            return Unkeyed(decoder: self)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer {
            node.kind = .single
            return Single(decoder: self)
        }
    }

    /// `schema`, or null.
    static func nullable(_ schema: JSONValue) -> JSONValue {
        guard case var .object(o) = schema, case let .string(t)? = o["type"] else { return schema }
        o["type"] = .array([.string(t), .string("null")])
        return .object(o)
    }

    /// A value of `T` to hand back while recording (its fields' own values matter not).
    static func placeholder<T: Decodable>(_ type: T.Type, _ recorder: Recorder, record: (JSONValue) -> Void) throws -> T {
        if let s = Recorder.primitive(type) {
            record(s)
            switch type {
            case is String.Type: return "" as! T
            case is Bool.Type: return false as! T
            case is Double.Type: return 0.0 as! T
            case is Float.Type: return Float(0) as! T
            case is Int.Type: return 0 as! T
            case is Int64.Type: return Int64(0) as! T
            case is Int32.Type: return Int32(0) as! T
            case is Int16.Type: return Int16(0) as! T
            case is Int8.Type: return Int8(0) as! T
            case is UInt.Type: return UInt(0) as! T
            case is UInt64.Type: return UInt64(0) as! T
            case is UInt32.Type: return UInt32(0) as! T
            case is UInt16.Type: return UInt16(0) as! T
            case is UInt8.Type: return UInt8(0) as! T
            case is [String: [String]].Type: return [String: [String]]() as! T
            case is [String: JSONValue].Type: return [String: JSONValue]() as! T
            default: break
            }
        }
        let d = SchemaDecoder(recorder: recorder, path: [])
        recorder.depth += 1
        defer { recorder.depth -= 1 }
        guard recorder.depth < 16 else { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "\(T.self) nests too deep")) }
        let value = try T(from: d)
        record(d.node.schema)
        return value
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: SchemaDecoder
        var codingPath: [any CodingKey] { decoder.path }
        var allKeys: [Key] { [] }
        func contains(_ key: Key) -> Bool { true }

        func decodeNil(forKey key: Key) throws -> Bool { false }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try APISchema.placeholder(type, decoder.recorder) { s in
                decoder.node.properties[key.stringValue] = s
                decoder.node.required.insert(key.stringValue)
            }
        }

        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try optional(type, key) }

        /// A field that may be absent: described, not required. (The protocol's own
        /// overloads for plain types would ask `decode` and make it required.)
        /// Such a field may also be null (read as absent): the schema says so.
        private func optional<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
            try APISchema.placeholder(type, decoder.recorder) { s in decoder.node.properties[key.stringValue] = APISchema.nullable(s) }
        }

        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try optional(type, key) }
        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try optional(type, key) }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try optional(type, key) }
        func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try optional(type, key) }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try optional(type, key) }
        func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try optional(type, key) }
        func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try optional(type, key) }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try optional(type, key) }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try optional(type, key) }
        func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try optional(type, key) }
        func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try optional(type, key) }
        func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try optional(type, key) }
        func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try optional(type, key) }
        func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try optional(type, key) }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "nested containers are not described"))
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "nested containers are not described"))
        }
        func superDecoder() throws -> any Decoder { decoder }
        func superDecoder(forKey key: Key) throws -> any Decoder { decoder }
    }

    struct Unkeyed: UnkeyedDecodingContainer {
        let decoder: SchemaDecoder
        var codingPath: [any CodingKey] { decoder.path }
        var count: Int? { 1 }
        var currentIndex = 0
        var isAtEnd: Bool { currentIndex >= 1 }

        mutating func decodeNil() throws -> Bool { false }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            currentIndex += 1
            return try APISchema.placeholder(type, decoder.recorder) { s in decoder.node.items = s }
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "nested containers are not described"))
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "nested containers are not described"))
        }
        mutating func superDecoder() throws -> any Decoder { decoder }
    }

    struct Single: SingleValueDecodingContainer {
        let decoder: SchemaDecoder
        var codingPath: [any CodingKey] { decoder.path }
        func decodeNil() -> Bool { false }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try APISchema.placeholder(type, decoder.recorder) { s in decoder.node.single = s }
        }
    }
}
