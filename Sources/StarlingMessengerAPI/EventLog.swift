import Foundation
import StarlingAPIContract

/// The messenger's events as the API serves them: each a JSON object with a
/// sequence number, kept in a ring of `capacity` so that a client that
/// reconnects resumes after the last one it saw without losing one. A client
/// further behind than the ring is told how many it missed (a `gap` event)
/// before what is still kept.
public actor EventLog {
    public struct Entry: Sendable {
        public let seq: UInt64
        /// One line of JSON (no newline).
        public let json: Data
    }

    public let capacity: Int
    private var entries: [Entry] = []
    private var head = 0
    public private(set) var lastSeq: UInt64 = 0
    private var subscribers: [UUID: AsyncStream<Entry>.Continuation] = [:]
    /// Clients following at once (each one's own buffer bounded too).
    public let maxSubscribers: Int

    public init(capacity: Int = 10_000, maxSubscribers: Int = 64) {
        self.capacity = max(1, capacity)
        self.maxSubscribers = maxSubscribers
    }

    /// Appends an event (the log gives it its "seq").
    @discardableResult
    public func append(_ event: APIEvent) -> UInt64 {
        lastSeq += 1
        // Plain strings, numbers and booleans: an encoding that fails is a bug, said in the stream.
        let data = (try? APIJSONCoding.data(APISequencedEvent(seq: lastSeq, event: event)))
            ?? Data(#"{"event":"warning","seq":\#(lastSeq),"text":"an event could not be written"}"#.utf8)
        let entry = Entry(seq: lastSeq, json: data)
        if entries.count < capacity {
            entries.append(entry)
        } else {
            entries[head] = entry
            head = (head + 1) % capacity
        }
        // A follower that fell a whole ring behind is ended (never skipped in silence):
        // it reconnects with its last sequence number and hears of the gap.
        for (id, c) in subscribers {
            if case .dropped = c.yield(entry) {
                c.finish()
                subscribers[id] = nil
            }
        }
        return lastSeq
    }

    /// What is kept, oldest first.
    private var ordered: ArraySlice<Entry> { entries.count < capacity ? entries[...] : (entries[head...] + entries[..<head])[...] }

    /// The events after `since` still kept, and how many after it are no longer kept.
    public func after(_ since: UInt64) -> (missed: UInt64, entries: [Entry]) {
        // A number from before a restart (past the last one): from the start.
        let since = since > lastSeq ? 0 : since
        let kept = ordered
        guard let first = kept.first else { return (0, []) }
        let missed = first.seq > since + 1 ? first.seq - since - 1 : 0
        return (missed, kept.filter { $0.seq > since })
    }

    /// Everything after `since`, then what comes, until the client goes (nil: too many clients).
    public func follow(after since: UInt64) -> AsyncStream<Entry>? {
        guard subscribers.count < maxSubscribers else { return nil }
        let id = UUID()
        let since = since > lastSeq ? 0 : since
        // Room for the whole ring and a gap event.
        let (stream, continuation) = AsyncStream.makeStream(of: Entry.self, bufferingPolicy: .bufferingOldest(capacity + 1))
        let (missed, backlog) = after(since)
        if missed > 0 {
            let gap = APISequencedEvent(seq: since + missed, event: .gap(.init(missed: missed)))
            continuation.yield(Entry(seq: since + missed, json: (try? APIJSONCoding.data(gap)) ?? Data()))
        }
        for e in backlog { continuation.yield(e) }
        subscribers[id] = continuation
        continuation.onTermination = { _ in Task { await self.drop(id) } }
        return stream
    }

    private func drop(_ id: UUID) { subscribers[id] = nil }

    public var subscriberCount: Int { subscribers.count }

    /// Ends every follower's stream (the daemon stops).
    public func finish() {
        for c in subscribers.values { c.finish() }
        subscribers = [:]
    }
}
