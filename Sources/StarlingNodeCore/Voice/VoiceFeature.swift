import StarlingCrypto
import StarlingMesh
import StarlingWire

/// Live voice as a part of the node (docs/PROTOCOL.md, "Voice"): bursts
/// public (signed 0x2A packets) and private (Noise payload 0x08) put back
/// together by the ``VoiceAssembler``, each note handed to the runtime to
/// save (``NodeCore/Output/saveVoice(_:)``) when it is whole or its time is up.
struct VoiceFeature: NodeFeature {
    private var assembler = VoiceAssembler()

    var tableSizes: [String: Int] { ["node.voiceBursts": assembler.count] }
    var nextDeadline: Millis? { assembler.nextDeadline }

    mutating func tick(_ context: inout NodeContext) {
        for note in assembler.tick(now: context.now) { context.output(.saveVoice(note)) }
    }

    /// A live voice burst packet (public, signed by its sender; or private, in its Noise session).
    /// One that does not decode is dropped (relayed if public and signed, as iOS does).
    mutating func take(_ bytes: [UInt8], from sender: PeerID, isPrivate: Bool, context: inout NodeContext) {
        guard let burst = try? VoiceBurst(decoding: bytes[...]) else {
            context.refuse(\.voice)
            return
        }
        for note in assembler.take(burst, from: sender, isPrivate: isPrivate, bytes: bytes.count, now: context.now) {
            context.output(.saveVoice(note))
        }
    }
}
