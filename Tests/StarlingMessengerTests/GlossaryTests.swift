import Foundation
import Testing

/// One word, one meaning (docs/GLOSSARY.md, issue 55 item 4): the meanings it
/// retires are found nowhere in Sources, but where an old name is kept as an
/// alias on purpose.
@Suite struct GlossaryTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Retired words, and the one file each may still stand in (its alias).
    static let retired: [(word: String, allowedIn: String?)] = [
        ("relay server", nil), ("relay-server", "Sources/starling/ServerCommands.swift"), ("queued at the relay", nil),
        ("MailboxTransport", nil), ("mailbox transport", nil), ("YaOKServerMailbox", nil), ("YaOKStore", nil),
        ("the server's mailbox", nil), ("Ya OK server's mailbox", nil),
        // What `send --server` said of a Ya OK server's refusal and silence (seen in a person's pass).
        ("the relay refused it", nil), ("the relay did not answer", nil),
    ]

    @Test func theRetiredMeaningsAreGoneFromSources() throws {
        let sources = Self.root.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
        #expect(files.count > 200, "the sources: \(files.count) files")
        var found: [String] = [], allowed = 0
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8).lowercased()
            for (word, place) in Self.retired where text.contains(word.lowercased()) {
                if place == "Sources/" + file { allowed += 1 } else { found.append("\(word) in Sources/\(file)") }
            }
        }
        #expect(found.isEmpty, "retired meanings (docs/GLOSSARY.md): \(found)")
        // The control: the scan sees the one alias kept on purpose.
        #expect(allowed == 1, "relay-server stays as yaok-server's alias")
        let glossary = try String(contentsOf: Self.root.appendingPathComponent("docs/GLOSSARY.md"), encoding: .utf8)
        for word in ["relay", "Nostr relay", "Ya OK server", "off-mesh transport", "courier mailbox", "courier", "store"] {
            #expect(glossary.contains("**\(word)**"), "GLOSSARY.md defines \(word)")
        }
    }
}
