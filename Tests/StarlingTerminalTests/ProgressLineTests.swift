import StarlingTerminal
import Testing

struct ProgressLineTests {
    @Test func theBarTheShareAndTheTimeLeft() {
        var p = ProgressLine()
        p.width = 10
        #expect(p.line("private", done: 0, elapsed: 0) == "private [          ] 0%")
        // Too early to guess the time left: nothing said of it.
        #expect(p.line("private", done: 0.005, elapsed: 5) == "private [          ] 0%")
        #expect(p.line("private", done: 0.5, elapsed: 0.5) == "private [#####     ] 50%")
        // Half done in 30 s: about 30 s left.
        #expect(p.line("private", done: 0.5, elapsed: 30) == "private [#####     ] 50% · about 0:30 left")
        #expect(p.line("x", done: 0.25, elapsed: 1_200) == "x [##        ] 25% · about 1:00:00 left")
        #expect(p.line("x", done: 1, elapsed: 80) == "x [##########] 100%")
        // Out of range and not a number are held in range.
        #expect(p.line("x", done: 7, elapsed: 1) == "x [##########] 100%")
        #expect(p.line("x", done: .nan, elapsed: 1) == "x [          ] 0%")
        #expect(ProgressLine.duration(85) == "1:25" && ProgressLine.duration(0.2) == "0:01" && ProgressLine.duration(3_723) == "1:02:03")
    }
}
