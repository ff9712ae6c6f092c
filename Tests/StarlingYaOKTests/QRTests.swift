import Foundation
import StarlingQR
import StarlingYaOK
import Testing

/// libqrencode makes the code, libzbar (an independent decoder) reads it back.
@Suite struct QRTests {
    @Test func aContactCardRoundTripsThroughAPNG() throws {
        let card = try ContactCard(identity: ContactCardTests.alice, userID: ContactCardTests.aliceID, displayName: "alice")
        let code = try QRCode(text: card.uri)
        #expect(code.size >= 21 && (code.size - 17) % 4 == 0, "a QR version's size")
        let dir = temporaryDirectory("qr")
        defer { try? FileManager.default.removeItem(at: dir) }
        let png = dir.appendingPathComponent("alice.png").path
        try code.writePNG(to: png)
        let header = Array(try Data(contentsOf: URL(fileURLWithPath: png)).prefix(8))
        #expect(header == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        #expect(try QRCode.scan(pngAt: png) == [card.uri])
        #expect(try ContactCard(uri: try QRCode.scan(pngAt: png)[0]) == card)
    }

    /// What the terminal shows, read back character by character into
    /// modules, is the same code: zbar reads it.
    @Test func theTerminalDrawingIsTheCode() throws {
        let code = try QRCode(text: "yaok://contact?v=1&d=terminal-test")
        for dark in [true, false] {
            let text = code.terminalText(border: 2, darkTerminal: dark)
            let lines = text.split(separator: "\n").map { Array($0) }
            let side = code.size + 4
            #expect(lines.count == (side + 1) / 2)
            #expect(lines.allSatisfy { $0.count == side })
            var modules = [Bool](repeating: false, count: side * side)
            for (row, line) in lines.enumerated() {
                for (x, ch) in line.enumerated() {
                    let top = ch == "█" || ch == "▀", bottom = ch == "█" || ch == "▄"
                    modules[2 * row * side + x] = dark ? !top : top
                    if 2 * row + 1 < side { modules[(2 * row + 1) * side + x] = dark ? !bottom : bottom }
                }
            }
            let redrawn = QRCode(size: side, modules: modules)
            let (width, pixels) = redrawn.pixels(scale: 6, border: 2)
            #expect(QRCode.scan(gray: pixels, width: width, height: width) == ["yaok://contact?v=1&d=terminal-test"])
        }
    }

    @Test func picturesWithoutACodeAndNonPictures() throws {
        let dir = temporaryDirectory("qr-none")
        defer { try? FileManager.default.removeItem(at: dir) }
        let blank = QRCode(size: 21, modules: [Bool](repeating: false, count: 441))
        let png = dir.appendingPathComponent("blank.png").path
        try blank.writePNG(to: png)
        #expect(throws: QRCode.Error.noCode(png)) { try QRCode.scan(pngAt: png) }
        let text = dir.appendingPathComponent("not.png").path
        try Data("hello".utf8).write(to: URL(fileURLWithPath: text))
        #expect(throws: QRCode.Error.self) { try QRCode.scan(pngAt: text) }
        #expect(throws: QRCode.Error.self) { try QRCode.scan(pngAt: dir.appendingPathComponent("missing.png").path) }
        #expect(QRCode.scan(gray: [1, 2, 3], width: 5, height: 5).isEmpty)
    }
}
