/// The windows of a full-screen chat client, as irssi keeps them: window 1
/// is the public channel (and the client's own notices), each private
/// conversation has its own, with unread counts and receipts marked on the
/// line they belong to. A value; the renderer draws it.
public struct ChatBuffers: Sendable {
    public struct Line: Hashable, Sendable {
        /// "HH:mm" (the sender's time when the packet says it).
        public var time: String
        /// Who speaks (nil: a notice from the client).
        public var nick: String?
        public var text: String
        /// Our own message's ID, so that its receipts find it.
        public var messageID: String?
        /// ✓ sent, ✓✓ delivered, ✓✓ read, ✗ failed …
        public var mark: String?
        public var highlight: Bool
        /// Ours: never counted unread.
        public var own: Bool
        /// From the history, read before: shown, never counted unread.
        public var seen: Bool

        public init(time: String, nick: String? = nil, text: String, messageID: String? = nil, mark: String? = nil,
                    highlight: Bool = false, own: Bool = false, seen: Bool = false) {
            self.time = time
            self.nick = nick
            self.text = text
            self.messageID = messageID
            self.mark = mark
            self.highlight = highlight
            self.own = own
            self.seen = seen
        }
    }

    public struct Buffer: Hashable, Sendable {
        public let name: String
        public internal(set) var lines: [Line] = []
        public internal(set) var unread = 0
        public internal(set) var highlighted = false
        /// Lines scrolled back from the bottom (0: following).
        public internal(set) var scroll = 0
        /// Lines dropped from the top (for receipts' line numbers).
        var dropped = 0
    }

    public static let publicName = "#mesh"
    /// Lines kept per window; older ones go.
    public var maxLines = 2_000
    /// At most this many windows (a flood of private senders opens no more;
    /// their lines go to the public window).
    public var maxBuffers = 32

    public private(set) var buffers: [Buffer] = [Buffer(name: publicName)]
    public private(set) var current = 0
    /// Where each of our messages' lines are: window name and absolute line
    /// number (a file sent twice has one ID, its content's hash, on two lines;
    /// at most 8 lines an ID).
    private var messages: [String: [(buffer: String, line: Int)]] = [:]

    public init() {}

    public var currentBuffer: Buffer { buffers[current] }

    public func index(of name: String) -> Int? {
        buffers.firstIndex { $0.name.lowercased() == name.lowercased() }
    }

    /// The window for a conversation, opened when new (nil: too many windows).
    @discardableResult
    public mutating func open(_ name: String) -> Int? {
        if let i = index(of: name) { return i }
        guard buffers.count < maxBuffers else { return nil }
        buffers.append(Buffer(name: name))
        return buffers.count - 1
    }

    public mutating func select(_ index: Int) {
        guard buffers.indices.contains(index) else { return }
        current = index
        buffers[index].unread = 0
        buffers[index].highlighted = false
    }

    public mutating func close(_ index: Int) {
        guard index > 0, buffers.indices.contains(index) else { return }
        let name = buffers[index].name
        buffers.remove(at: index)
        messages = messages.compactMapValues { places in
            let kept = places.filter { $0.buffer != name }
            return kept.isEmpty ? nil : kept
        }
        if current >= index { current = max(0, current - 1) }
    }

    /// Adds a line to a window (the one in view when `name` is nil; the
    /// public one when no more windows can be opened); counts it unread
    /// unless that window is in view.
    public mutating func append(_ line: Line, to name: String? = nil) {
        let i = name.map { open($0) ?? 0 } ?? current
        buffers[i].lines.append(line)
        if let id = line.messageID {
            messages[id, default: []].append((buffers[i].name, buffers[i].dropped + buffers[i].lines.count - 1))
            if messages[id]!.count > 8 { messages[id]!.removeFirst() }
            if messages.count > maxBuffers * maxLines { messages.removeAll() }
        }
        if buffers[i].lines.count > maxLines {
            let extra = buffers[i].lines.count - maxLines
            buffers[i].lines.removeFirst(extra)
            buffers[i].dropped += extra
        }
        if i != current {
            if line.nick != nil, !line.own, !line.seen { buffers[i].unread += 1 }
            if line.highlight { buffers[i].highlighted = true }
        } else if buffers[i].scroll > 0 {
            buffers[i].scroll += 1 // reading back: the view stays where it is
        }
    }

    /// Sets the receipt mark of our message; false when its line is gone.
    @discardableResult
    public mutating func mark(_ messageID: String, _ mark: String) -> Bool {
        var marked = false
        for (name, absolute) in messages[messageID] ?? [] {
            guard let i = index(of: name) else { continue }
            let line = absolute - buffers[i].dropped
            guard buffers[i].lines.indices.contains(line) else { continue }
            buffers[i].lines[line].mark = mark
            marked = true
        }
        return marked
    }

    /// Empties the window in view (/clear).
    public mutating func clearCurrent() {
        buffers[current].dropped += buffers[current].lines.count
        buffers[current].lines = []
        buffers[current].scroll = 0
    }

    public mutating func scroll(by lines: Int) {
        buffers[current].scroll = max(0, min(buffers[current].lines.count, buffers[current].scroll + lines))
    }

    /// The window list for the status line: `1:#mesh 2:bob(3) 3:carol!`.
    public var activity: String {
        buffers.enumerated().map { i, b in
            let mark = i == current ? "*" : ""
            let unread = b.unread > 0 ? "(\(b.unread))" : ""
            return "\(i + 1):\(mark)\(b.name)\(unread)\(b.highlighted ? "!" : "")"
        }.joined(separator: " ")
    }
}
