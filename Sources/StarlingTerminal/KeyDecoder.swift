/// What a person pressed, decoded from the bytes a terminal sends.
public enum Key: Hashable, Sendable {
    /// A printable character (UTF-8 decoded; invalid bytes become U+FFFD).
    case character(Character)
    case enter, tab, backTab, backspace, delete, escape
    case left, right, up, down, home, end, pageUp, pageDown
    /// Ctrl-Left / Ctrl-Right (or Alt-b / Alt-f): a word at a time.
    case wordLeft, wordRight
    /// Ctrl and a letter ("a" … "z"), other than the ones above (Tab is
    /// Ctrl-I, Enter Ctrl-M, Backspace Ctrl-H).
    case control(Character)
    /// Alt (Meta) and a character: Alt-1 … Alt-9 switch windows.
    case alt(Character)
    /// A bracketed paste (ESC [200~ … ESC [201~): one piece of text, with
    /// line breaks as "\n", never keys or commands. `cut` says it was longer
    /// than the decoder keeps.
    case paste(String, cut: Bool)
}

/// Turns terminal input into keys: UTF-8, the escape sequences of xterm,
/// VT100 application mode and rxvt, and bracketed paste. A value: bytes in,
/// keys out, nothing read or written. An escape sequence split across reads
/// is completed by the next `feed`; a lone ESC is a key only after
/// `flushPendingEscape()` (the caller's short timeout).
public struct KeyDecoder: Sendable {
    /// A paste is kept up to this many bytes; the rest is dropped and the
    /// paste marked `cut` (the person is told, nothing is cut silently).
    public var maxPasteBytes = 64 * 1024
    /// An unfinished escape sequence longer than this is dropped.
    static let maxSequence = 32

    private var pending: [UInt8] = []
    private var pasting = false
    private var paste: [UInt8] = []
    private var pasteCut = false

    public init() {}

    /// Whether bytes wait for the rest of a sequence.
    public var hasPending: Bool { !pending.isEmpty || pasting }

    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Key] {
        pending.append(contentsOf: bytes)
        var keys: [Key] = []
        var i = 0
        while i < pending.count {
            if pasting {
                // Everything up to ESC [201~ is the paste's.
                if let end = Self.find([0x1B, 0x5B, 0x32, 0x30, 0x31, 0x7E], in: pending, from: i) {
                    appendPaste(pending[i..<end])
                    i = end + 6
                    pasting = false
                    keys.append(.paste(Self.text(paste), cut: pasteCut))
                    paste = []
                    pasteCut = false
                    continue
                }
                // Keep a possible partial terminator for the next feed.
                let keep = min(5, pending.count - i)
                appendPaste(pending[i..<(pending.count - keep)])
                pending = Array(pending[(pending.count - keep)...])
                return keys
            }
            let b = pending[i]
            switch b {
            case 0x1B:
                guard let (key, length) = escapeSequence(at: i) else {
                    // Incomplete: wait for more bytes (or the caller's flush).
                    if pending.count - i > Self.maxSequence { i += 1; continue }
                    pending = Array(pending[i...])
                    return keys
                }
                if let key { keys.append(key) }
                i += length
            case 0x0D, 0x0A:
                keys.append(.enter)
                // CR LF is one Enter.
                if b == 0x0D, i + 1 < pending.count, pending[i + 1] == 0x0A { i += 1 }
                i += 1
            case 0x09: keys.append(.tab); i += 1
            case 0x7F, 0x08: keys.append(.backspace); i += 1
            case 0x01...0x1A:
                keys.append(.control(Character(Unicode.Scalar(b + 0x60))))
                i += 1
            case 0x00, 0x1C...0x1F: i += 1 // Ctrl-@, Ctrl-\ … : nothing
            case 0x20...0x7E:
                keys.append(.character(Character(Unicode.Scalar(b))))
                i += 1
            default:
                // UTF-8: the sequence's length from its first byte.
                let length = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1
                guard i + length <= pending.count else {
                    pending = Array(pending[i...])
                    return keys
                }
                let decoded = String(decoding: pending[i..<i + length], as: UTF8.self)
                for c in decoded { keys.append(.character(c)) }
                i += length
            }
        }
        pending = []
        return keys
    }

    /// After a short wait with nothing more: a lone ESC was the Escape key
    /// (and an unfinished sequence is dropped).
    public mutating func flushPendingEscape() -> [Key] {
        guard !pasting, let first = pending.first, first == 0x1B else { return [] }
        let rest = Array(pending.dropFirst())
        pending = []
        return [.escape] + feed(rest)
    }

    private mutating func appendPaste(_ bytes: ArraySlice<UInt8>) {
        let room = maxPasteBytes - paste.count
        if bytes.count > room {
            paste.append(contentsOf: bytes.prefix(max(0, room)))
            pasteCut = true
        } else {
            paste.append(contentsOf: bytes)
        }
    }

    /// The key of the escape sequence at `i` and its length; nil when it is
    /// not complete yet. A sequence this decoder does not know is skipped
    /// (key nil, its length).
    private mutating func escapeSequence(at i: Int) -> (Key?, Int)? {
        guard i + 1 < pending.count else { return nil }
        let next = pending[i + 1]
        switch next {
        case 0x5B: // CSI: ESC [ params final
            var j = i + 2
            while j < pending.count, (0x30...0x3F).contains(pending[j]) || (0x20...0x2F).contains(pending[j]) { j += 1 }
            guard j < pending.count else { return nil }
            let params = String(decoding: pending[(i + 2)..<j], as: UTF8.self)
            let final = pending[j]
            let length = j - i + 1
            if final == 0x7E, params == "200" {
                pasting = true
                paste = []
                pasteCut = false
                return (nil, length)
            }
            return (Self.csiKey(params: params, final: final), length)
        case 0x4F: // SS3: ESC O letter (application cursor keys)
            guard i + 2 < pending.count else { return nil }
            let key: Key? = switch pending[i + 2] {
            case 0x41: .up
            case 0x42: .down
            case 0x43: .right
            case 0x44: .left
            case 0x48: .home
            case 0x46: .end
            default: nil
            }
            return (key, 3)
        case 0x1B:
            // ESC ESC: an Escape, then whatever the second starts.
            return (.escape, 1)
        case 0x7F:
            return (.control("w"), 2) // Alt-Backspace: delete a word
        default:
            // Alt and a character (UTF-8 too).
            let length = next >= 0xF0 ? 4 : next >= 0xE0 ? 3 : next >= 0xC0 ? 2 : 1
            guard i + 1 + length <= pending.count else { return nil }
            let text = String(decoding: pending[(i + 1)..<(i + 1 + length)], as: UTF8.self)
            guard let c = text.first else { return (nil, 1 + length) }
            if c == "b" { return (.wordLeft, 2) }
            if c == "f" { return (.wordRight, 2) }
            return (.alt(c), 1 + length)
        }
    }

    static func csiKey(params: String, final: UInt8) -> Key? {
        let parts = params.split(separator: ";")
        let modifier = parts.count > 1 ? Int(parts[1]) ?? 1 : 1
        let ctrl = modifier == 5 || modifier == 6
        switch final {
        case 0x41: return .up
        case 0x42: return .down
        case 0x43: return ctrl ? .wordRight : .right
        case 0x44: return ctrl ? .wordLeft : .left
        case 0x48: return .home
        case 0x46: return .end
        case 0x5A: return .backTab
        case 0x7E:
            switch parts.first.flatMap({ Int($0) }) {
            case 1, 7: return .home
            case 4, 8: return .end
            case 3: return .delete
            case 5: return .pageUp
            case 6: return .pageDown
            default: return nil
            }
        default: return nil
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var i = start
        while i <= haystack.count - needle.count {
            if haystack[i] == needle[0], Array(haystack[i..<(i + needle.count)]) == needle { return i }
            i += 1
        }
        return nil
    }

    /// Paste bytes as text: UTF-8 (invalid bytes replaced), CR LF and CR as "\n".
    static func text(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self).replacingCRLF()
    }
}

extension String {
    func replacingCRLF() -> String {
        var out = ""
        out.reserveCapacity(utf8.count)
        var lastWasCR = false
        for scalar in unicodeScalars {
            if scalar == "\r" {
                out.unicodeScalars.append("\n")
                lastWasCR = true
            } else {
                if !(scalar == "\n" && lastWasCR) { out.unicodeScalars.append(scalar) }
                lastWasCR = false
            }
        }
        return out
    }
}
