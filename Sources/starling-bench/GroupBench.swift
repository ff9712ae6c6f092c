import Crypto
import StarlingCrypto
import StarlingWire

/// `starling-bench groups`: what a group message costs (issue 36) against a
/// private message with the same text, in one run: sending (encode, sign,
/// seal, frame the packet), receiving (decode, open, verify) and bytes on the
/// air. A group message is one packet for every member, sealed once and
/// signed by its sender (its signature proves the author to each member);
/// a private message is one Noise frame a recipient, unsigned (the session
/// authenticates it). So the group's cost is set against one private message
/// and against one for each of a group's members (the alternative: sending
/// the text privately to each).
enum GroupBench {
    static func run() {
        print("starling-bench groups (release build; one core; median of 5 rounds)")
        let alice = Identity.generate(), bob = Identity.generate()
        var (sender, receiver) = NoiseBench.session(alice, bob)
        let groupID = [UInt8](repeating: 7, count: 16), key = [UInt8](repeating: 0x42, count: 32)
        // (A private message's text is at most 255 bytes: its TLV length is a byte.)
        for text in ["summit at noon", String(repeating: "the trail is closed; ", count: 11)] {
            print("\na \(text.utf8.count)-byte text")
            // Private: the payload, sealed in the session, in a 0x11 packet; the receiver opens and decodes.
            let privateSend = Timer.measure("private: encode + Noise seal + packet") {
                let payload = try! NoisePayload.privateMessage(PrivateMessage(messageID: "6F9619FF-8B86-4011-B42D-00C04FC964FF", content: text)).encoded()
                let frame = try! sender.seal(payload)
                blackHole(try! Packet(type: .noiseEncrypted, ttl: 7, timestamp: 1, senderID: alice.peerID, recipientID: bob.peerID,
                                      payload: frame, compress: false).encoded())
            }
            var frames: [[UInt8]] = []
            for _ in 0..<2_048 {
                let payload = try! NoisePayload.privateMessage(PrivateMessage(messageID: "6F9619FF-8B86-4011-B42D-00C04FC964FF", content: text)).encoded()
                frames.append(try! Packet(type: .noiseEncrypted, ttl: 7, timestamp: 1, senderID: alice.peerID, recipientID: bob.peerID,
                                          payload: try! sender.seal(payload), compress: false).encoded())
            }
            var next = 0
            var window = receiver
            let privateReceive = Timer.measure("private: packet + Noise open + decode") {
                if next == frames.count { // a fresh receiver for the same frames (its replay window would refuse them)
                    window = receiver
                    next = 0
                }
                let p = try! Packet(decoding: frames[next])
                blackHole(try! NoisePayload(decoding: try! window.open(p.payload)))
                next += 1
            }
            receiver = window
            // Group: signed, sealed once, an unsigned 0x25 packet; the receiver opens and verifies the signature.
            let body = GroupMessageBody(messageID: "6F9619FF-8B86-4011-B42D-00C04FC964FF", senderSigningKey: [], senderNickname: "alice",
                                        timestamp: 1, content: text)
            let groupSend = Timer.measure("group: sign + seal + envelope + packet") {
                let envelope = try! GroupSealing.seal(body, groupID: groupID, epoch: 1, key: key, sender: alice.signingKey)
                blackHole(try! Packet(type: .groupMessage, ttl: 7, timestamp: 1, senderID: alice.peerID, payload: envelope.encoded(),
                                      compress: false).encoded())
            }
            let groupPacket = try! Packet(type: .groupMessage, ttl: 7, timestamp: 1, senderID: alice.peerID,
                                          payload: GroupSealing.seal(body, groupID: groupID, epoch: 1, key: key, sender: alice.signingKey).encoded(),
                                          compress: false).encoded()
            let groupReceive = Timer.measure("group: packet + envelope + open + verify") {
                let p = try! Packet(decoding: groupPacket)
                blackHole(try! GroupSealing.open(try! GroupEnvelope(decoding: p.payload[...]), key: key))
            }
            let signed = try! alice.signingKey.signature(for: Array(text.utf8) + [UInt8](repeating: 1, count: 60))
            let verify = Timer.measure("of which: Ed25519 verify alone") {
                blackHole(alice.signingKey.publicKey.isValidSignature(signed, for: Array(text.utf8) + [UInt8](repeating: 1, count: 60)))
            }
            [privateSend, privateReceive, groupSend, groupReceive, verify].forEach(Timer.report)
            Timer.ratio("send: group / one private", baseline: groupSend, ours: privateSend)
            Timer.ratio("receive: group / one private", baseline: groupReceive, ours: privateReceive)
            for members in [4, 16] {
                print("  a group of \(members): sending once costs \(format2(groupSend.nanosPerOp / (Double(members - 1) * privateSend.nanosPerOp)))× "
                      + "sending privately to the \(members - 1) others")
            }
            print("  bytes on the air: group packet \(groupPacket.count), private packet \(frames[0].count) (each member: 1 group packet, or 1 private packet each)")
        }
    }
}
