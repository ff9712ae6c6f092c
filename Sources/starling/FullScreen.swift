import CNcurses
import Foundation
import StarlingTerminal

/// The full-screen chat client, in the manner of irssi: a title, the
/// messages of the window in view, a status line with the window list and
/// unread counts, and an input line with editing, history, Tab completion
/// and bracketed paste. ncursesw draws; StarlingTerminal decodes the keys
/// and edits the line. One thread owns the terminal; other threads hand it
/// lines under a lock.
final class FullScreen: @unchecked Sendable {
    /// A line typed (or pasted) in a window.
    struct Submission: Sendable {
        let text: String
        /// A typed line starting with "/" is a command; a pasted one never is.
        let command: Bool
        /// The window it was typed in (#mesh, or a peer's name).
        let window: String
    }

    static let commands = ["/msg", "/query", "/win", "/close", "/who", "/send", "/files", "/accept", "/decline", "/requests", "/verify", "/block", "/unblock",
                           "/fav", "/unfav", "/nick", "/status", "/stats", "/ping", "/contacts", "/history", "/lock", "/group", "/board",
                           "/unlock", "/clear", "/help", "/leave", "/quit", "/panic"]

    private let lock = NSLock()
    private var buffers = ChatBuffers()
    private var editor = LineEditor()
    private var decoder = KeyDecoder()
    private var title = "starling"
    private var status = ""
    private var nicknames: [String] = []
    private var bell = false
    private var running = true
    private var secretInput = false
    private let submit: @Sendable (Submission) -> Void
    private let finished = DispatchSemaphore(value: 0)

    /// Where standard error goes while the screen is up (nil: left alone).
    private let log: URL?
    private var savedStandardError: Int32 = -1

    init(log: URL? = nil, submit: @escaping @Sendable (Submission) -> Void) {
        self.log = log
        self.submit = submit
    }

    /// Standard error into the log file while the screen is up: a library's
    /// warning must not write across the screen. The file is kept under 1 MiB
    /// (the previous one is kept as .1).
    private func divertStandardError() {
        guard let log else { return }
        if let size = (try? FileManager.default.attributesOfItem(atPath: log.path))?[.size] as? Int, size > 1 << 20 {
            let old = log.appendingPathExtension("1")
            try? FileManager.default.removeItem(at: old)
            try? FileManager.default.moveItem(at: log, to: old)
        }
        let fd = Glibc.open(log.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        savedStandardError = dup(STDERR_FILENO)
        dup2(fd, STDERR_FILENO)
        close(fd)
    }

    private func restoreStandardError() {
        guard savedStandardError >= 0 else { return }
        dup2(savedStandardError, STDERR_FILENO)
        close(savedStandardError)
        savedStandardError = -1
    }

    // MARK: From any thread

    func append(_ line: ChatBuffers.Line, to window: String? = nil) {
        locked { buffers.append(line, to: window) }
    }

    func mark(_ messageID: String, _ mark: String) {
        locked { buffers.mark(messageID, mark) }
    }

    func ring() { locked { bell = true } }
    func setTitle(_ text: String) { locked { title = text } }
    func setStatus(_ text: String) { locked { status = text } }
    func setNicknames(_ names: [String]) { locked { nicknames = names } }
    /// The next line is a secret: shown as stars, not kept in the history.
    func expectSecret() { locked { secretInput = true } }

    func open(_ window: String) { locked { if let i = buffers.open(window) { buffers.select(i) } } }
    /// Opens a window without going to it (the groups at start: the chat opens on #mesh).
    func openBehind(_ window: String) { locked { _ = buffers.open(window) } }
    func select(_ number: Int) { locked { buffers.select(number - 1) } }
    func hasWindow(_ name: String) -> Bool { locked { buffers.index(of: name) != nil } }
    func closeCurrent() { locked { buffers.close(buffers.current) } }
    func clearCurrent() { locked { buffers = ChatBuffers.clearing(buffers) } }
    var windowInView: String { locked { buffers.currentBuffer.name } }

    @discardableResult
    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    // MARK: The terminal's thread

    func start() {
        divertStandardError()
        let thread = Thread { [self] in run() }
        thread.name = "starling-screen"
        thread.start()
    }

    /// Ends the screen and gives the terminal back (waits for its thread).
    func stop() {
        locked { running = false }
        _ = finished.wait(timeout: .now() + 2)
    }

    private func run() {
        setlocale(LC_ALL, "")
        _ = initscr()
        raw()
        noecho()
        nonl()
        keypad(starling_stdscr(), false)
        wtimeout(starling_stdscr(), 50)
        if has_colors() {
            start_color()
            use_default_colors()
            for (i, colour) in [COLOR_RED, COLOR_GREEN, COLOR_YELLOW, COLOR_BLUE, COLOR_MAGENTA, COLOR_CYAN].enumerated() {
                init_pair(Int16(i + 1), Int16(colour), -1)
            }
        }
        // Bracketed paste: a paste arrives as one piece, never as typed keys.
        StandardOutput.write(Data("\u{1B}[?2004h".utf8))
        var needsDraw = true
        while locked({ running }) {
            var bytes: [UInt8] = []
            var c = wgetch(starling_stdscr())
            while c != ERR, bytes.count < 65_536 {
                if c >= 0, c < 256 { bytes.append(UInt8(c)) } else { needsDraw = true }
                wtimeout(starling_stdscr(), 0)
                c = wgetch(starling_stdscr())
            }
            wtimeout(starling_stdscr(), 50)
            var keys = decoder.feed(bytes)
            if bytes.isEmpty, decoder.hasPending { keys += decoder.flushPendingEscape() }
            for key in keys { handle(key) }
            needsDraw = needsDraw || !keys.isEmpty
            draw()
            _ = needsDraw
            needsDraw = false
        }
        StandardOutput.write(Data("\u{1B}[?2004l".utf8))
        endwin()
        restoreStandardError()
        finished.signal()
    }

    private func handle(_ key: Key) {
        var submission: Submission?
        locked {
            switch key {
            case let .alt(c) where ("1"..."9").contains(c):
                buffers.select(Int(String(c))! - 1)
            case .alt("0"):
                buffers.select(9)
            case .control("n"):
                buffers.select((buffers.current + 1) % buffers.buffers.count)
            case .control("p"):
                buffers.select((buffers.current + buffers.buffers.count - 1) % buffers.buffers.count)
            case .pageUp:
                buffers.scroll(by: max(1, Int(starling_lines()) - 4))
            case .pageDown:
                buffers.scroll(by: -max(1, Int(starling_lines()) - 4))
            case .control("l"):
                clearok(starling_stdscr(), true)
            case .control("c"):
                submission = Submission(text: "/quit", command: true, window: buffers.currentBuffer.name)
            default:
                let names = nicknames
                let action = editor.apply(key) { word, atStart in
                    if atStart, word.hasPrefix("/") { return Self.commands.filter { $0.hasPrefix(word.lowercased()) } }
                    guard !word.isEmpty else { return [] }
                    return names.filter { $0.lowercased().hasPrefix(word.lowercased()) }
                }
                switch action {
                case let .submit(text, command)?:
                    if secretInput {
                        secretInput = false
                        editor.forgetLast()
                        submission = Submission(text: text, command: false, window: "\u{0}secret")
                    } else if text.contains(where: { !$0.isWhitespace }) {
                        submission = Submission(text: text, command: command, window: buffers.currentBuffer.name)
                    }
                case let .choices(list)?:
                    buffers.append(.init(time: Self.clock(), text: "· " + list.joined(separator: "  ")))
                case let .pasteCut(kept)?:
                    buffers.append(.init(time: Self.clock(), text: "! the paste was cut to its first \(kept) characters (the longest line is 10,000)"))
                case nil:
                    break
                }
            }
        }
        if let submission { submit(submission) }
    }

    /// Now, or a packet's timestamp (Unix ms), as HH:mm.
    static func clock(_ timestamp: UInt64? = nil) -> String {
        let f = DateFormatter()
        f.dateFormat = "HH:mm"
        return f.string(from: timestamp.map { Date(timeIntervalSince1970: Double($0) / 1000) } ?? Date())
    }

    /// A nickname's colour: one of six, the same for the same name.
    static func colour(of nick: String) -> Int32 {
        var h: UInt32 = 2_166_136_261
        for b in nick.utf8 { h = (h ^ UInt32(b)) &* 16_777_619 }
        return Int32(h % 6) + 1
    }

    private func draw() {
        lock.lock()
        let rows = Int(starling_lines()), cols = Int(starling_cols())
        let buffer = buffers.currentBuffer
        let title = self.title, activity = buffers.activity, status = self.status
        // A pasted line break shows as ⏎ (one column, so the cursor stays where it is).
        let shown = secretInput ? Array(String(repeating: "*", count: editor.text.count)) : editor.text.map { $0.isNewline ? "⏎" : $0 }
        let (input, cursor) = TextWidth.window(shown, cursor: editor.cursor, width: max(2, cols - TextWidth.of("[\(buffer.name)] ") - 1))
        let breaks = secretInput ? 0 : editor.text.count(where: \.isNewline)
        let bell = self.bell
        self.bell = false
        lock.unlock()
        guard rows >= 4, cols >= 20 else { return }
        let screen = starling_stdscr()
        werase(screen)
        // Title.
        wattron(screen, starling_reverse())
        mvwaddstr(screen, 0, 0, pad(title, cols))
        wattroff(screen, starling_reverse())
        // Messages: wrapped, the newest at the bottom, `scroll` lines back.
        let height = rows - 3
        var rendered: [(line: ChatBuffers.Line, text: String, first: Bool)] = []
        for line in buffer.lines.suffix(height + buffer.scroll + 50) {
            let mark = line.mark.map { "  " + $0 } ?? ""
            let head = line.nick.map { "\(line.time) <\($0)> " } ?? "\(line.time) "
            // Continuation rows are marked, so that text with line breaks
            // cannot pass for another person's line.
            let wrapped = TextWidth.wrap(head + line.text + mark, width: cols - 4)
            for (i, piece) in wrapped.enumerated() { rendered.append((line, i == 0 ? piece : "  ┆ " + piece, i == 0)) }
        }
        let end = max(0, rendered.count - buffer.scroll)
        let visible = rendered[max(0, end - height)..<end]
        for (row, item) in visible.enumerated() {
            let y = Int32(1 + row)
            if item.first, let nick = item.line.nick {
                let time = item.line.time + " "
                wattron(screen, starling_dim())
                mvwaddstr(screen, y, 0, time)
                wattroff(screen, starling_dim())
                waddstr(screen, "<")
                let pair = starling_color_pair(Self.colour(of: nick)) | (item.line.highlight ? starling_bold() : 0)
                wattron(screen, pair)
                waddstr(screen, nick)
                wattroff(screen, pair)
                waddstr(screen, String(item.text.dropFirst(TextWidth.of(time) + nick.count + 1)))
            } else if item.line.nick == nil, item.line.highlight {
                // An alert (an SOS): red and bold, as the plain client draws it with escape codes.
                let pair = starling_color_pair(1) | starling_bold()
                wattron(screen, pair)
                mvwaddstr(screen, y, 0, item.text)
                wattroff(screen, pair)
            } else {
                mvwaddstr(screen, y, 0, item.text)
            }
        }
        // Status line (a paste of several lines says what Enter will send).
        wattron(screen, starling_reverse())
        let pasted = breaks > 0 ? " · a paste of \(breaks + 1) lines (⏎): Enter sends it as one message" : ""
        mvwaddstr(screen, Int32(rows - 2), 0, pad("[\(Self.clock())] [\(activity)] \(status)\(pasted)", cols))
        wattroff(screen, starling_reverse())
        // Input line.
        let prompt = "[\(buffer.name)] "
        mvwaddstr(screen, Int32(rows - 1), 0, prompt + input)
        wmove(screen, Int32(rows - 1), Int32(TextWidth.of(prompt) + cursor))
        wrefresh(screen)
        if bell { beep() }
    }

    private func pad(_ text: String, _ width: Int) -> String {
        var out = ""
        var used = 0
        for c in text {
            let w = TextWidth.of(c)
            if used + w > width { break }
            out.append(c)
            used += w
        }
        return out + String(repeating: " ", count: max(0, width - used))
    }
}

extension ChatBuffers {
    /// The same windows with the one in view emptied (/clear).
    static func clearing(_ b: ChatBuffers) -> ChatBuffers {
        var copy = b
        copy.clearCurrent()
        return copy
    }
}
