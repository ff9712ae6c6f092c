#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a state packet's box holds: the JSON `{"name", "state", "timestamp"}`
/// (keys sorted, no spaces), padded PKCS#7-style to exactly ``paddedSize``
/// bytes so that every state has the same length on the air.
///
/// 192 bytes padded make a 241-byte packet (13 + 8 + 12 + 192 + 16): one BLE
/// notification at an ATT MTU of 244 or more.
public struct StateReport: Hashable, Sendable, Codable {
    public static let paddedSize = 192
    /// The longest nickname a report carries, in bytes of UTF-8.
    public static let maxNameBytes = 64

    public var name: String
    public var state: StateKind
    public var timestamp: UInt64

    /// `name` cut to at most ``maxNameBytes`` bytes of UTF-8, whole characters only ("anon" when empty).
    public static func clip(_ name: String) -> String {
        var out = ""
        for c in name {
            if out.utf8.count + String(c).utf8.count > maxNameBytes { break }
            out.append(c)
        }
        return out.isEmpty ? "anon" : out
    }

    public init(name: String, state: StateKind, timestamp: UInt64) {
        self.name = name
        self.state = state
        self.timestamp = timestamp
    }

    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case nameLength(Int)
        case tooLong(Int)
        case badPadding
        case badJSON(String)

        public var description: String {
            switch self {
            case let .nameLength(n): "a state's name has 1 to \(StateReport.maxNameBytes) bytes of UTF-8, not \(n)"
            case let .tooLong(n): "the state's JSON has \(n) bytes; at most \(StateReport.paddedSize - 1) fit"
            case .badPadding: "the state's padding is not valid"
            case let .badJSON(why): "the state's JSON is not valid: \(why)"
            }
        }
    }

    /// The padded plaintext.
    public func encoded() throws(Error) -> [UInt8] {
        let nameBytes = name.utf8.count
        guard nameBytes >= 1, nameBytes <= Self.maxNameBytes else { throw .nameLength(nameBytes) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json: [UInt8]
        do { json = Array(try encoder.encode(self)) } catch { throw .badJSON("\(error)") }
        guard json.count < Self.paddedSize else { throw .tooLong(json.count) }
        let pad = Self.paddedSize - json.count
        return json + [UInt8](repeating: UInt8(pad), count: pad)
    }

    public init(decoding padded: [UInt8]) throws(Error) {
        guard padded.count == Self.paddedSize, let pad = padded.last, pad >= 1, Int(pad) <= padded.count,
              padded.suffix(Int(pad)).allSatisfy({ $0 == pad }) else { throw .badPadding }
        let json = padded.prefix(padded.count - Int(pad))
        do {
            self = try JSONDecoder().decode(StateReport.self, from: Data(json))
        } catch {
            throw .badJSON("\(error)")
        }
        let nameBytes = name.utf8.count
        guard nameBytes >= 1, nameBytes <= Self.maxNameBytes else { throw .nameLength(nameBytes) }
    }
}
