import Crypto
import StarlingCrypto

/// `starling-bench noise`: Noise XX handshakes and bitchat transport frames.
enum NoiseBench {
    /// A completed XX handshake between two identities: the initiator's and the responder's transports.
    static func session(_ alice: Identity, _ bob: Identity) -> (NoiseTransport, NoiseTransport) {
        var i = try! HandshakeState(protocol: .bitchat, initiator: true, localStatic: alice.noiseKey)
        var r = try! HandshakeState(protocol: .bitchat, initiator: false, localStatic: bob.noiseKey)
        _ = try! r.readMessage(try! i.writeMessage())
        _ = try! i.readMessage(try! r.writeMessage())
        _ = try! r.readMessage(try! i.writeMessage())
        let (i2r, r2i) = try! i.split()
        return (NoiseTransport(sending: i2r, receiving: r2i), NoiseTransport(sending: r2i, receiving: i2r))
    }

    static func run() {
        print("starling-bench noise (release build; one core; median of 5 rounds)")
        let alice = Identity.generate(), bob = Identity.generate()

        // 1. Full XX handshakes, both sides in this process.
        print("\nNoise_XX_25519_ChaChaPoly_SHA256 handshake (both sides)")
        let handshake = Timer.measure("full XX handshake") {
            var i = try! HandshakeState(protocol: .bitchat, initiator: true, localStatic: alice.noiseKey)
            var r = try! HandshakeState(protocol: .bitchat, initiator: false, localStatic: bob.noiseKey)
            _ = try! r.readMessage(try! i.writeMessage())
            _ = try! i.readMessage(try! r.writeMessage())
            _ = try! r.readMessage(try! i.writeMessage())
            blackHole((try! i.split(), try! r.split()))
        }

        // The primitive work one handshake performs, counted from the XX pattern:
        // 2 ephemeral key generations, 6 X25519 (ee, es, se on each side),
        // 8 HKDF calls (3 MixKey per side + 1 Split per side), 8 AEAD operations
        // (s and payload in messages 2 and 3, sealed and opened), 16 MixHash.
        let peerPublic = bob.noiseKey.publicKey
        let keygen = Timer.measure("primitive: X25519 key generation") { blackHole(Curve25519.KeyAgreement.PrivateKey().publicKey) }
        let dh = Timer.measure("primitive: X25519") { blackHole(try! alice.noiseKey.sharedSecretFromKeyAgreement(with: peerPublic)) }
        let ck = SymmetricKey(size: .bits256)
        let ckBytes = ck.withUnsafeBytes { Array($0) }
        let hkdf = Timer.measure("primitive: HKDF-SHA256 (2 × 32 bytes)") {
            blackHole(HKDF<SHA256>.deriveKey(inputKeyMaterial: ck, salt: ckBytes, outputByteCount: 64))
        }
        let nonce = ChaChaPoly.Nonce()
        let sealed32 = try! ChaChaPoly.seal([UInt8](repeating: 1, count: 32), using: ck, nonce: nonce, authenticating: ckBytes)
        let aead = Timer.measure("primitive: ChaChaPoly seal+open (32 bytes)", opsPerCall: 2) {
            blackHole(try! ChaChaPoly.seal([UInt8](repeating: 1, count: 32), using: ck, nonce: nonce, authenticating: ckBytes))
            blackHole(try! ChaChaPoly.open(sealed32, using: ck, authenticating: ckBytes))
        }
        let hash = Timer.measure("primitive: SHA-256 (32 + 48 bytes)") {
            var hasher = SHA256()
            hasher.update(data: ckBytes)
            hasher.update(data: ckBytes + ckBytes.prefix(16))
            blackHole(hasher.finalize())
        }
        [handshake, keygen, dh, hkdf, aead, hash].forEach(Timer.report)
        let floor = 2 * keygen.nanosPerOp + 6 * dh.nanosPerOp + 8 * hkdf.nanosPerOp + 8 * aead.nanosPerOp + 16 * hash.nanosPerOp
        print("  sum of primitives per handshake              \(format1(floor / 1000).leftPadding(9)) µs")
        print("  handshakes per second                        \(format1(1e9 / handshake.nanosPerOp).leftPadding(9))")
        print("  ratio handshake / primitives                 \(format2(handshake.nanosPerOp / floor).leftPadding(9))   (goal ≤ 1.3)")

        // 2. Transport frames against raw ChaChaPoly on the same sizes.
        var (sender, receiver) = session(alice, bob)
        print("\ntransport frames (seal + open) vs raw ChaChaPoly seal + open")
        for size in [256, 469, 64 * 1024] {
            let plaintext = [UInt8](repeating: 0x42, count: size)
            let ours = Timer.measure("frame \(size) B seal+open") {
                blackHole(try! receiver.open(try! sender.seal(plaintext)))
            }
            let raw = Timer.measure("raw ChaChaPoly \(size) B seal+open") {
                let box = try! ChaChaPoly.seal(plaintext, using: ck, nonce: nonce)
                blackHole(try! ChaChaPoly.open(box, using: ck))
            }
            Timer.report(ours)
            Timer.report(raw)
            let mbps = Double(size) / ours.nanosPerOp * 1e9 / 1_048_576
            print("  throughput \(format1(mbps)) MiB/s; ours / raw speed      \(format2(raw.nanosPerOp / ours.nanosPerOp).leftPadding(9))   (goal ≥ 0.85 at 64 KiB)")
        }
    }
}
