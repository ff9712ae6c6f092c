/// The input line of a chat client, as readline and irssi edit it: a value
/// that keys change. Characters are grapheme clusters, so an emoji or an
/// accented letter is one step of the cursor.
///
/// Keys: ← → Home End (Ctrl-A, Ctrl-E), Ctrl-← Ctrl-→ (Alt-B, Alt-F) by word,
/// Backspace, Delete (Ctrl-D), Ctrl-K / Ctrl-U kill to the end / start,
/// Ctrl-W the word before, Ctrl-Y yanks, ↑ ↓ the history, Tab completes.
/// A paste is inserted as it is (line breaks included) and marks the line:
/// a line that begins with pasted text is a message, never a command.
public struct LineEditor: Sendable {
    public enum Action: Hashable, Sendable {
        /// Enter: the line, and whether it may be a command (its first
        /// character was typed, not pasted).
        case submit(String, command: Bool)
        /// Tab found several completions: the common prefix was inserted and
        /// these are the choices.
        case choices([String])
        /// A paste longer than the decoder keeps: its end was dropped.
        case pasteCut(kept: Int)
    }

    public private(set) var text: [Character] = []
    public private(set) var cursor = 0
    /// At most this many characters on the line (typing stops; a paste is
    /// cut and says so).
    public var maxCharacters = 10_000
    public private(set) var history: [String] = []
    public var maxHistory = 500
    private var historyIndex: Int?
    private var draft: [Character] = []
    private var killed: [Character] = []
    private var firstCharacterPasted = false

    public init() {}

    public var line: String { String(text) }
    public var isEmpty: Bool { text.isEmpty }

    /// Applies one key; returns what the client should do, if anything.
    /// `complete` gives the candidates for the word before the cursor (and
    /// whether that word starts the line).
    public mutating func apply(_ key: Key, complete: (_ word: String, _ atStart: Bool) -> [String] = { _, _ in [] }) -> Action? {
        switch key {
        case let .character(c): insert([c], pasted: false)
        case let .paste(text, cut):
            let kept = insert(Array(text), pasted: true)
            if cut || kept < text.count { return .pasteCut(kept: kept) }
        case .enter:
            // A paste's trailing line breaks end the paste, not a line of the message.
            var submitted = line
            while submitted.last?.isNewline == true { submitted.removeLast() }
            let command = !firstCharacterPasted
            if submitted.contains(where: { !$0.isWhitespace }) {
                if history.last != submitted { history.append(submitted) }
                if history.count > maxHistory { history.removeFirst(history.count - maxHistory) }
            }
            text = []
            cursor = 0
            historyIndex = nil
            firstCharacterPasted = false
            return .submit(submitted, command: command)
        case .left: cursor = max(0, cursor - 1)
        case .right: cursor = min(text.count, cursor + 1)
        case .home, .control("a"): cursor = 0
        case .end, .control("e"): cursor = text.count
        case .wordLeft: cursor = wordStart(before: cursor)
        case .wordRight: cursor = wordEnd(after: cursor)
        case .backspace:
            guard cursor > 0 else { break }
            text.remove(at: cursor - 1)
            cursor -= 1
            if text.isEmpty { firstCharacterPasted = false }
        case .delete, .control("d"):
            guard cursor < text.count else { break }
            text.remove(at: cursor)
        case .control("k"):
            killed = Array(text[cursor...])
            text.removeSubrange(cursor...)
        case .control("u"):
            killed = Array(text[..<cursor])
            text.removeSubrange(..<cursor)
            cursor = 0
            firstCharacterPasted = false
        case .control("w"):
            let start = wordStart(before: cursor)
            killed = Array(text[start..<cursor])
            text.removeSubrange(start..<cursor)
            cursor = start
        case .control("y"):
            insert(killed, pasted: false)
        case .up: recall(older: true)
        case .down: recall(older: false)
        case .tab:
            let start = wordStart(before: cursor, spacesOnly: true)
            let word = String(text[start..<cursor])
            let candidates = complete(word, start == 0)
            guard !candidates.isEmpty else { break }
            if candidates.count == 1 {
                let suffix: [Character] = start == 0 && !word.hasPrefix("/") ? [":", " "] : [" "]
                replace(start..<cursor, with: Array(candidates[0]) + suffix)
            } else {
                let common = Self.commonPrefix(candidates)
                if common.count > word.count { replace(start..<cursor, with: Array(common)) }
                return .choices(candidates)
            }
        default:
            break
        }
        return nil
    }

    /// Drops the newest history entry (a secret that was typed).
    public mutating func forgetLast() {
        if !history.isEmpty { history.removeLast() }
    }

    @discardableResult
    private mutating func insert(_ characters: [Character], pasted: Bool) -> Int {
        let room = max(0, maxCharacters - text.count)
        let kept = Array(characters.prefix(room))
        guard !kept.isEmpty else { return 0 }
        if text.isEmpty { firstCharacterPasted = pasted }
        text.insert(contentsOf: kept, at: cursor)
        cursor += kept.count
        return kept.count
    }

    private mutating func replace(_ range: Range<Int>, with characters: [Character]) {
        text.replaceSubrange(range, with: characters)
        cursor = range.lowerBound + characters.count
    }

    private mutating func recall(older: Bool) {
        guard !history.isEmpty else { return }
        if historyIndex == nil {
            guard older else { return }
            draft = text
            historyIndex = history.count
        }
        var index = historyIndex!
        index += older ? -1 : 1
        if index < 0 { return }
        if index >= history.count {
            historyIndex = nil
            text = draft
        } else {
            historyIndex = index
            text = Array(history[index])
        }
        cursor = text.count
        firstCharacterPasted = false
    }

    private func wordStart(before position: Int, spacesOnly: Bool = false) -> Int {
        var i = position
        while i > 0, text[i - 1] == " " , !spacesOnly { i -= 1 }
        while i > 0, text[i - 1] != " " { i -= 1 }
        return i
    }

    private func wordEnd(after position: Int) -> Int {
        var i = position
        while i < text.count, text[i] == " " { i += 1 }
        while i < text.count, text[i] != " " { i += 1 }
        return i
    }

    static func commonPrefix(_ words: [String]) -> String {
        guard var prefix = words.first.map(Array.init) else { return "" }
        for word in words.dropFirst() {
            let w = Array(word)
            var n = 0
            while n < prefix.count, n < w.count, prefix[n].lowercased() == w[n].lowercased() { n += 1 }
            prefix = Array(prefix.prefix(n))
        }
        return String(prefix)
    }
}
