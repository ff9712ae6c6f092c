/// A live voice burst packet (docs/PROTOCOL.md, "Voice (0x29)"): push-to-talk
/// audio as the iOS app (1.7) and Android (2.0) send it, the whole payload of a
/// public voiceFrame (0x29) packet, or the bytes after type 0x08 in a Noise
/// plaintext. `[burst ID 8][seq u16 BE][kind u8][body]`; the kind is an exact
/// value, not a set of bits.
///
/// Audio is AAC-LC at 16 kHz, mono, 1,024 samples (64 ms) a frame, each frame
/// a raw access unit (no ADTS, no container): ``adts(_:)`` makes one playable.
public struct VoiceBurst: Hashable, Sendable {
    public static let headerLength = 11
    public static let burstIDLength = 8
    /// Frames in one audio packet, at most (the apps' packetizer).
    public static let maxFramesPerPacket = 8
    /// The only codec the apps define: AAC-LC, 16 kHz, mono.
    public static let aacLC16kMono: UInt8 = 0x01
    /// Samples a frame, and the sample rate: a frame lasts 64 ms.
    public static let samplesPerFrame = 1_024
    public static let sampleRate = 16_000

    public enum Kind: Hashable, Sendable {
        /// The burst begins (seq 0), in this codec.
        case start(codec: UInt8)
        /// 1 to 8 AAC frames (seq 1, 2, …).
        case audio([[UInt8]])
        /// The burst is over: how many audio packets it had, and how long it lasted.
        case end(audioPackets: UInt16, durationMillis: UInt32)
        /// The speaker let go without sending.
        case cancelled
    }

    public var burstID: [UInt8]
    public var sequence: UInt16
    public var kind: Kind

    public init(burstID: [UInt8], sequence: UInt16, kind: Kind) {
        self.burstID = burstID
        self.sequence = sequence
        self.kind = kind
    }

    public func encoded() -> [UInt8] {
        var out = burstID + [UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
        switch kind {
        case let .start(codec): out += [0x01, codec]
        case let .audio(frames):
            out.append(0x00)
            for f in frames { out += [UInt8(f.count >> 8 & 0xFF), UInt8(f.count & 0xFF)] + f }
        case let .end(packets, ms):
            out += [0x02, UInt8(packets >> 8), UInt8(packets & 0xFF),
                    UInt8(ms >> 24), UInt8(ms >> 16 & 0xFF), UInt8(ms >> 8 & 0xFF), UInt8(ms & 0xFF)]
        case .cancelled: out.append(0x04)
        }
        return out
    }

    /// Reads as iOS reads (bitchat VoiceBurstPacket.swift): shorter than the
    /// header, an unknown kind, a start in an unknown codec, an end shorter
    /// than 6 bytes, an audio packet with no frame, more than 8, an empty one,
    /// or one that runs past the end, is refused; bytes after a start, an end
    /// or a cancel are ignored.
    public init(decoding bytes: ArraySlice<UInt8>) throws(WireError) {
        let b = Array(bytes)
        guard b.count >= Self.headerLength else {
            throw WireError(.truncated(needed: Self.headerLength, available: b.count), field: "voice.header", offset: 0)
        }
        burstID = Array(b[0..<8])
        sequence = UInt16(b[8]) << 8 | UInt16(b[9])
        let body = b[11...]
        switch b[10] {
        case 0x01:
            guard let codec = body.first else { throw WireError(.truncated(needed: 12, available: b.count), field: "voice.codec", offset: 11) }
            guard codec == Self.aacLC16kMono else { throw WireError(.invalidValue("codec \(codec)"), field: "voice.codec", offset: 11) }
            kind = .start(codec: codec)
        case 0x00:
            var frames: [[UInt8]] = [], i = 11
            while i < b.count {
                guard i + 2 <= b.count else { throw WireError(.truncated(needed: i + 2, available: b.count), field: "voice.frameLength", offset: i) }
                let n = Int(b[i]) << 8 | Int(b[i + 1])
                guard n > 0 else { throw WireError(.invalidValue("an empty frame"), field: "voice.frameLength", offset: i) }
                guard i + 2 + n <= b.count else { throw WireError(.truncated(needed: i + 2 + n, available: b.count), field: "voice.frame", offset: i + 2) }
                guard frames.count < Self.maxFramesPerPacket else { throw WireError(.invalidValue("more than 8 frames"), field: "voice.frame", offset: i) }
                frames.append(Array(b[(i + 2)..<(i + 2 + n)]))
                i += 2 + n
            }
            guard !frames.isEmpty else { throw WireError(.invalidValue("no frame"), field: "voice.frame", offset: 11) }
            kind = .audio(frames)
        case 0x02:
            guard body.count >= 6 else { throw WireError(.truncated(needed: 17, available: b.count), field: "voice.end", offset: 11) }
            kind = .end(audioPackets: UInt16(b[11]) << 8 | UInt16(b[12]),
                        durationMillis: UInt32(b[13]) << 24 | UInt32(b[14]) << 16 | UInt32(b[15]) << 8 | UInt32(b[16]))
        case 0x04:
            kind = .cancelled
        default:
            throw WireError(.invalidValue("kind \(b[10])"), field: "voice.kind", offset: 10)
        }
    }

    /// An AAC frame as ADTS (7-byte header: MPEG-4, no CRC, LC, 16 kHz, mono,
    /// fullness 0x7FF), as the apps save received bursts: a file of these plays.
    public static func adts(_ frame: [UInt8]) -> [UInt8] {
        let n = frame.count + 7
        return [0xFF, 0xF1, 0x60, UInt8(0x40 | (n >> 11) & 0x03), UInt8((n >> 3) & 0xFF), UInt8((n & 0x07) << 5 | 0x1F), 0xFC] + frame
    }
}
