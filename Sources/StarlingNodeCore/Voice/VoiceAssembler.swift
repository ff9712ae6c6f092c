import StarlingMesh
import StarlingWire

/// Live voice bursts put back together (docs/PROTOCOL.md, "Voice (0x29)"), as
/// the iOS app does (bitchat ChatLiveVoiceCoordinator.swift): bursts are kept
/// by (peer, private or public, burst ID), 8 at once; audio is taken in
/// sequence order, a hole waited for 0.5 s and then skipped (no silence put
/// in); a burst ends at its END once every audio packet before it came, at a
/// cancel (nothing kept), after 3 s with nothing heard, or past 384 KiB or
/// 6,000 bytes a second (plus 2 s of them). Plain value: bursts and times in,
/// finished notes out.
public struct VoiceAssembler: Sendable {
    public struct Limits: Hashable, Sendable {
        public var maxBursts = 8
        public var maxBytes = 384 << 10
        public var bytesPerSecond = 6_000
        public var idle: Millis = 3_000
        public var gapSkip: Millis = 500
        public init() {}
    }

    /// A burst put back together: its AAC frames in order.
    public struct Note: Hashable, Sendable {
        public var from: PeerID
        public var burstID: [UInt8]
        public var isPrivate: Bool
        public var frames: [[UInt8]]
        /// 64 ms a frame.
        public var durationMillis: Int { frames.count * VoiceBurst.samplesPerFrame * 1_000 / VoiceBurst.sampleRate }
        /// The frames as an ADTS file (AAC in ADTS: most desktop players play it).
        public var adts: [UInt8] { frames.flatMap(VoiceBurst.adts) }
        /// Its name: `voice_<burst ID>_<sender>_<dm|mesh>` (its file's, without `.aac`).
        public var id: String { "voice_\(burstID.hexString)_\(from)_\(isPrivate ? "dm" : "mesh")" }
    }

    struct Key: Hashable, Sendable {
        var peer: PeerID
        var isPrivate: Bool
        var burstID: [UInt8]
    }

    struct Burst: Sendable {
        var openedAt: Millis
        var lastAt: Millis
        var bytes = 0
        var nextSequence: UInt16 = 1
        var buffered: [UInt16: [[UInt8]]] = [:]
        var frames: [[UInt8]] = []
        var audioPackets: UInt16?
        /// Since when a hole has held up what came after it.
        var stalledSince: Millis?
    }

    public let limits: Limits
    private var bursts: [Key: Burst] = [:]
    /// Bursts refused because 8 were under way.
    public private(set) var refused = 0

    public init(limits: Limits = Limits()) { self.limits = limits }

    public var count: Int { bursts.count }

    /// A burst packet from `peer`, `bytes` long on the wire; the notes it finished.
    public mutating func take(_ packet: VoiceBurst, from peer: PeerID, isPrivate: Bool, bytes: Int, now: Millis) -> [Note] {
        let key = Key(peer: peer, isPrivate: isPrivate, burstID: packet.burstID)
        if bursts[key] == nil {
            switch packet.kind {
            case .start, .audio:
                guard bursts.count < limits.maxBursts else {
                    refused += 1
                    return []
                }
                bursts[key] = Burst(openedAt: now, lastAt: now)
            case .end, .cancelled:
                return [] // a burst we never had
            }
        }
        var b = bursts[key]!
        b.lastAt = now
        b.bytes += bytes
        let elapsed = Int((now >= b.openedAt ? now - b.openedAt : 0) / 1_000)
        if b.bytes > limits.maxBytes || b.bytes > limits.bytesPerSecond * (elapsed + 2) {
            bursts[key] = b
            return finish(key).map { [$0] } ?? []
        }
        switch packet.kind {
        case .start:
            break // a second START changes nothing
        case let .audio(frames):
            if packet.sequence >= b.nextSequence, b.buffered[packet.sequence] == nil { b.buffered[packet.sequence] = frames }
        case let .end(audioPackets, _):
            b.audioPackets = audioPackets
        case .cancelled:
            bursts[key] = nil
            return []
        }
        Self.drain(&b, now: now)
        bursts[key] = b
        if let total = b.audioPackets, b.nextSequence > total { return finish(key).map { [$0] } ?? [] }
        return []
    }

    /// What is due: holes waited for long enough are skipped, quiet bursts end.
    public mutating func tick(now: Millis) -> [Note] {
        var notes: [Note] = []
        for key in bursts.keys.sorted(by: { $0.burstID.lexicographicallyPrecedes($1.burstID) }) {
            guard var b = bursts[key] else { continue }
            if now >= b.lastAt + limits.idle {
                if let n = finish(key) { notes.append(n) }
                continue
            }
            if let since = b.stalledSince, now >= since + limits.gapSkip, let next = b.buffered.keys.min() {
                b.nextSequence = next
                b.stalledSince = nil
                Self.drain(&b, now: now)
            }
            bursts[key] = b
            if let total = b.audioPackets, b.nextSequence > total, let n = finish(key) { notes.append(n) }
        }
        return notes
    }

    /// When ``tick(now:)`` has something to do.
    public var nextDeadline: Millis? {
        bursts.values.map { b in min(b.lastAt + limits.idle, b.stalledSince.map { $0 + limits.gapSkip } ?? .max) }.min()
    }

    /// Takes the buffered packets that are next in order; notes a hole.
    private static func drain(_ b: inout Burst, now: Millis) {
        while let frames = b.buffered.removeValue(forKey: b.nextSequence) {
            b.frames += frames
            b.nextSequence &+= 1
            b.stalledSince = nil
        }
        if !b.buffered.isEmpty, b.stalledSince == nil { b.stalledSince = now }
    }

    /// Ends a burst: what came after the holes too, in order. Nothing heard: no note.
    private mutating func finish(_ key: Key) -> Note? {
        guard var b = bursts.removeValue(forKey: key) else { return nil }
        for seq in b.buffered.keys.sorted() { b.frames += b.buffered[seq] ?? [] }
        guard !b.frames.isEmpty else { return nil }
        return Note(from: key.peer, burstID: key.burstID, isPrivate: key.isPrivate, frames: b.frames)
    }
}
