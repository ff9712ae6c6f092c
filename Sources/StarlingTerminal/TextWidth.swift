/// How many terminal columns text takes: wide (East Asian) characters and
/// emoji take two, combining marks none. An approximation of wcwidth that
/// needs no locale.
public enum TextWidth {
    public static func of(_ c: Character) -> Int {
        guard let first = c.unicodeScalars.first else { return 0 }
        let v = first.value
        if v < 0x20 || (0x7F..<0xA0).contains(v) { return 0 }
        if c.unicodeScalars.contains(where: { $0.properties.isEmojiPresentation })
            || c.unicodeScalars.contains(where: { $0.value == 0xFE0F }) { return 2 }
        if (0x1100...0x115F).contains(v) || (0x2E80...0xA4CF).contains(v) || (0xAC00...0xD7A3).contains(v)
            || (0xF900...0xFAFF).contains(v) || (0xFE30...0xFE4F).contains(v) || (0xFF00...0xFF60).contains(v)
            || (0xFFE0...0xFFE6).contains(v) || (0x20000...0x3FFFD).contains(v) { return 2 }
        if first.properties.generalCategory == .nonspacingMark || first.properties.generalCategory == .enclosingMark { return 0 }
        return 1
    }

    public static func of(_ s: some StringProtocol) -> Int { s.reduce(0) { $0 + of($1) } }

    /// `text` in lines of at most `width` columns, broken at a space where
    /// one is near, and at every "\n".
    public static func wrap(_ text: String, width: Int) -> [String] {
        guard width > 0 else { return [text] }
        var out: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line: [Character] = []
            var used = 0
            for c in paragraph {
                let w = of(c)
                if used + w > width {
                    // Break at the last space in the second half of the line, if any.
                    if let space = line.lastIndex(of: " "), space > line.count / 2 {
                        out.append(String(line[..<space]))
                        line = Array(line[(space + 1)...])
                    } else {
                        out.append(String(line))
                        line = []
                    }
                    used = of(String(line))
                }
                line.append(c)
                used += w
            }
            out.append(String(line))
        }
        return out
    }

    /// The last columns of `text` that fit `width`, and the cursor's column
    /// within them: a long input line scrolls left as it grows.
    public static func window(_ text: [Character], cursor: Int, width: Int) -> (String, Int) {
        guard width > 1 else { return ("", 0) }
        var start = 0
        var before = of(String(text[..<cursor]))
        while before >= width, start < cursor {
            before -= of(text[start])
            start += 1
        }
        var shown: [Character] = []
        var used = 0
        for c in text[start...] {
            let w = of(c)
            if used + w > width { break }
            shown.append(c)
            used += w
        }
        return (String(shown), before)
    }
}
