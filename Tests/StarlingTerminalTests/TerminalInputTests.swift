import StarlingTerminal
import Testing

@Suite struct KeyDecoderTests {
    func keys(_ bytes: [UInt8]) -> [Key] {
        var d = KeyDecoder()
        return d.feed(bytes)
    }

    @Test func arrowsAndEditingKeysInEveryDialect() {
        #expect(keys([0x1B, 0x5B, 0x44, 0x1B, 0x5B, 0x43, 0x1B, 0x5B, 0x41, 0x1B, 0x5B, 0x42]) == [.left, .right, .up, .down])
        #expect(keys([0x1B, 0x4F, 0x44, 0x1B, 0x4F, 0x48, 0x1B, 0x4F, 0x46]) == [.left, .home, .end])
        #expect(keys(Array("\u{1B}[1~\u{1B}[4~\u{1B}[3~\u{1B}[5~\u{1B}[6~\u{1B}[7~\u{1B}[8~".utf8))
            == [.home, .end, .delete, .pageUp, .pageDown, .home, .end])
        #expect(keys(Array("\u{1B}[1;5D\u{1B}[1;5C\u{1B}b\u{1B}f\u{1B}[Z".utf8)) == [.wordLeft, .wordRight, .wordLeft, .wordRight, .backTab])
        #expect(keys([0x0D, 0x0A, 0x0D, 0x09, 0x7F, 0x08, 0x01, 0x05, 0x0B, 0x17]) ==
            [.enter, .enter, .tab, .backspace, .backspace, .control("a"), .control("e"), .control("k"), .control("w")])
        #expect(keys(Array("\u{1B}1\u{1B}9".utf8)) == [.alt("1"), .alt("9")])
        // Unknown sequences are skipped whole, not typed.
        #expect(keys(Array("\u{1B}[99xA".utf8)) == [.character("A")])
    }

    @Test func utf8AndSequencesSplitAcrossReads() {
        var d = KeyDecoder()
        let bytes = Array("é😀".utf8) + [0x1B, 0x5B, 0x44]
        var out: [Key] = []
        for b in bytes { out += d.feed([b]) }
        #expect(out == [.character("é"), .character("😀"), .left])
        #expect(!d.hasPending)
        // A lone ESC is a key only once the caller's wait says nothing follows.
        #expect(d.feed([0x1B]).isEmpty)
        #expect(d.hasPending)
        #expect(d.flushPendingEscape() == [.escape])
    }

    /// A paste is one key, even with line breaks and things that look like
    /// commands or escape sequences in it, and split across reads.
    @Test func bracketedPaste() {
        var d = KeyDecoder()
        let text = "line one\r\n/nick mallory\r\u{1B}[Dthree"
        let bytes = Array("\u{1B}[200~".utf8) + Array(text.utf8) + Array("\u{1B}[201~x".utf8)
        var out: [Key] = []
        for chunk in stride(from: 0, to: bytes.count, by: 5) { out += d.feed(bytes[chunk..<min(chunk + 5, bytes.count)]) }
        #expect(out == [.paste("line one\n/nick mallory\n\u{1B}[Dthree", cut: false), .character("x")])
        var small = KeyDecoder()
        small.maxPasteBytes = 10
        #expect(small.feed(Array("\u{1B}[200~0123456789abcdef\u{1B}[201~".utf8)) == [.paste("0123456789", cut: true)])
    }
}

@Suite struct LineEditorTests {
    func type(_ editor: inout LineEditor, _ keys: [Key]) -> [LineEditor.Action] {
        keys.compactMap { editor.apply($0) { word, atStart in
            (atStart && word.hasPrefix("/") ? ["/msg", "/me"] : ["bob", "bobby", "carol"]).filter { $0.hasPrefix(word) && !word.isEmpty }
        } }
    }

    func chars(_ s: String) -> [Key] { s.map { .character($0) } }

    @Test func arrowKeysEditInTheMiddle() {
        var e = LineEditor()
        let actions = type(&e, chars("hello world") + [.left, .left, .left, .left, .left, .backspace] + chars("_") + [.enter])
        #expect(actions == [.submit("hello_world", command: true)])
        #expect(e.isEmpty)
        _ = type(&e, chars("one two three") + [.wordLeft, .control("w")])
        #expect(e.line == "one three")
        _ = type(&e, [.home, .delete, .end, .control("u")])
        #expect(e.line == "")
        _ = type(&e, chars("ab") + [.home, .control("k"), .control("y"), .control("y")])
        #expect(e.line == "abab")
    }

    @Test func historyUpAndDownKeepsTheDraft() {
        var e = LineEditor()
        _ = type(&e, chars("first") + [.enter] + chars("second") + [.enter] + chars("draft"))
        _ = type(&e, [.up])
        #expect(e.line == "second")
        _ = type(&e, [.up, .up])
        #expect(e.line == "first")
        _ = type(&e, [.down, .down])
        #expect(e.line == "draft")
        #expect(e.history == ["first", "second"])
    }

    @Test func tabCompletesNicknamesAndCommands() {
        var e = LineEditor()
        _ = type(&e, chars("car") + [.tab])
        #expect(e.line == "carol: ", "a nickname at the start gets a colon")
        var f = LineEditor()
        _ = type(&f, chars("/ms") + [.tab])
        #expect(f.line == "/msg ")
        let choices = type(&f, chars("bo") + [.tab])
        #expect(choices == [.choices(["bob", "bobby"])])
        #expect(f.line == "/msg bob")
    }

    /// A paste is one message, never a command; a long paste is cut with a word.
    @Test func pastesAreMessages() {
        var e = LineEditor()
        let actions = type(&e, [.paste("/nick mallory\nsecond line", cut: false), .enter])
        #expect(actions == [.submit("/nick mallory\nsecond line", command: false)])
        var g = LineEditor()
        g.maxCharacters = 5
        #expect(type(&g, [.paste("0123456789", cut: false)]) == [.pasteCut(kept: 5)])
        var h = LineEditor()
        #expect(type(&h, chars("/msg bob ") + [.paste("pasted", cut: false), .enter]) == [.submit("/msg bob pasted", command: true)])
        // A paste's trailing line breaks are not an empty last line of the message;
        // the line breaks inside it are kept (the control: the same text without them).
        var t = LineEditor()
        #expect(type(&t, [.paste("one\ntwo\n\n", cut: false), .enter]) == [.submit("one\ntwo", command: false)])
        var u = LineEditor()
        #expect(type(&u, [.paste("one\ntwo", cut: false), .enter]) == [.submit("one\ntwo", command: false)])
    }
}

@Suite struct ChatBuffersTests {
    func line(_ text: String, nick: String? = "bob", id: String? = nil, own: Bool = false, highlight: Bool = false) -> ChatBuffers.Line {
        .init(time: "12:00", nick: nick, text: text, messageID: id, highlight: highlight, own: own)
    }

    @Test func windowsUnreadAndReceiptsOnTheirLine() {
        var b = ChatBuffers()
        b.append(line("hello all"), to: ChatBuffers.publicName)
        b.append(line("psst", highlight: true), to: "bob")
        b.append(line("mine", nick: "you", id: "m1", own: true), to: "carol")
        #expect(b.activity == "1:*#mesh 2:bob(1)! 3:carol")
        let marked = b.mark("m1", "✓✓ read")
        #expect(marked)
        #expect(b.buffers[2].lines[0].mark == "✓✓ read")
        b.select(1)
        #expect(b.activity == "1:#mesh 2:*bob 3:carol")
        b.append(line("a notice", nick: nil))
        #expect(b.buffers[1].lines.last?.text == "a notice", "a line without a window goes to the one in view")
        b.close(2)
        let gone = b.mark("m1", "x")
        #expect(!gone, "its window is gone")
        b.close(0)
        #expect(b.buffers.count == 2, "#mesh stays")
    }

    /// Old lines go past the cap, and a receipt still finds its line.
    @Test func boundsAndMarksAfterTrimming() {
        var b = ChatBuffers()
        b.maxLines = 10
        b.maxBuffers = 3
        b.append(line("first", id: "early"), to: "bob")
        b.append(line("mine", nick: "you", id: "late", own: true), to: "bob")
        for i in 0..<9 { b.append(line("\(i)"), to: "bob") }
        #expect(b.buffers[1].lines.count == 10)
        let early = b.mark("early", "✓✓"), late = b.mark("late", "✓✓")
        #expect(!early)
        #expect(late)
        #expect(b.buffers[1].lines[0].mark == "✓✓")
        b.append(line("x"), to: "carol")
        b.append(line("overflow"), to: "dave")
        #expect(b.buffers.count == 3)
        #expect(b.buffers[0].lines.last?.text == "overflow", "no more windows: the public one")
    }
}

@Suite struct TextWidthTests {
    @Test func widthsAndWrapping() {
        #expect(TextWidth.of("abc") == 3)
        #expect(TextWidth.of("日本") == 4)
        #expect(TextWidth.of("😀") == 2)
        #expect(TextWidth.of("e\u{301}") == 1)
        #expect(TextWidth.wrap("the quick brown fox", width: 10) == ["the quick", "brown fox"])
        #expect(TextWidth.wrap("a\nb", width: 10) == ["a", "b"])
        #expect(TextWidth.wrap("abcdefghij", width: 4) == ["abcd", "efgh", "ij"])
        let (shown, cursor) = TextWidth.window(Array("0123456789"), cursor: 10, width: 5)
        #expect(shown == "6789" && cursor == 4)
    }
}
