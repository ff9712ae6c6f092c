import Foundation
import StarlingWire

/// Prints a ``DissectedField`` tree as indented text or as JSON.
enum FieldRenderer {
    static let bytesShown = 48

    static func text(_ root: DissectedField) -> String {
        var out = ""
        write(root, depth: 0, into: &out)
        return out
    }

    private static func write(_ f: DissectedField, depth: Int, into out: inout String) {
        out += String(repeating: "  ", count: depth) + f.name + ": " + describe(f.value)
        if let note = f.note { out += f.value == .none ? note : " (\(note))" }
        out += "\n"
        for c in f.children { write(c, depth: depth + 1, into: &out) }
    }

    private static func describe(_ v: DissectedField.Value) -> String {
        switch v {
        case let .text(s): return "\"\(s)\""
        case let .number(n): return String(n)
        case let .bool(b): return String(b)
        case let .bytes(b):
            if b.isEmpty { return "(empty)" }
            if b.count <= bytesShown { return b.hexString + " [\(b.count)]" }
            return Array(b.prefix(bytesShown)).hexString + "… [\(b.count) bytes]"
        case let .list(items): return items.isEmpty ? "[]" : "[" + items.joined(separator: ", ") + "]"
        case .none: return ""
        }
    }

    static func json(_ root: DissectedField) -> String {
        let object: [String: Any] = [root.name: jsonValue(root)]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// A leaf is its value; a leaf with a note is {value, note}; a field with
    /// children is an object of them (with value and note when present).
    private static func jsonValue(_ f: DissectedField) -> Any {
        let value = plain(f.value)
        if f.children.isEmpty && f.note == nil { return value }
        var object: [String: Any] = [:]
        if f.value != .none || f.children.isEmpty { object["value"] = value }
        if let note = f.note { object["note"] = note }
        for c in f.children { object[c.name] = jsonValue(c) }
        return object
    }

    private static func plain(_ v: DissectedField.Value) -> Any {
        switch v {
        case let .text(s): s
        case let .number(n): n
        case let .bool(b): b
        case let .bytes(b): b.hexString
        case let .list(items): items
        case .none: NSNull()
        }
    }
}
