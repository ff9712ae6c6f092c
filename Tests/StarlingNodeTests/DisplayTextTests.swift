import Testing
@testable import StarlingNode

@Suite struct DisplayTextTests {
    @Test func strangersCannotDriveTheTerminal() {
        #expect(DisplayText.clean("hi\u{1B}[2J there") == "hi[2J there")           // ESC stripped
        #expect(DisplayText.clean("evil\u{202E}txt.exe") == "eviltxt.exe")         // right-to-left override
        #expect(DisplayText.clean("a\u{200B}l\u{200D}i\u{FEFF}ce") == "alice")     // zero-width
        #expect(DisplayText.clean("bell\u{7}\r\nnew") == "bellnew")
        #expect(DisplayText.clean("\u{2066}iso\u{2069}") == "iso")
        #expect(DisplayText.clean("naïve café 🙂 中文") == "naïve café 🙂 中文")     // the rest is kept
        #expect(DisplayText.clean("c1\u{85}\u{9B}x") == "c1x")                      // C1 controls
    }

    @Test func mentions() {
        #expect(DisplayText.mentions("hey @Alice, look", nickname: "alice"))
        #expect(DisplayText.mentions("alice: ok", nickname: "Alice"))
        #expect(!DisplayText.mentions("malice aforethought", nickname: "alice"))
        #expect(!DisplayText.mentions("anything", nickname: ""))
    }
}
