/// Text from strangers, made safe to print on a terminal.
public enum DisplayText {
    /// Strips control characters (C0, C1, DEL, and so escape sequences),
    /// bidirectional overrides and isolates, and zero-width characters.
    public static func clean(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter(isSafe)))
    }

    static func isSafe(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x00...0x1F, 0x7F...0x9F: false                 // control, including ESC
        case 0x200B...0x200F, 0x2060...0x2064, 0xFEFF: false // zero-width, LRM/RLM, word joiner
        case 0x202A...0x202E, 0x2066...0x2069: false         // bidirectional embeddings, overrides, isolates
        default: true
        }
    }

    /// Whether `text` mentions `nickname` as a word (case-insensitive, with or without @).
    public static func mentions(_ text: String, nickname: String) -> Bool {
        let name = nickname.lowercased()
        guard !name.isEmpty else { return false }
        let words = text.lowercased().split { !($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
        return words.contains { $0 == name[...] }
    }
}
