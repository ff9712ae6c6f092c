import Foundation
import Testing
import StarlingWire
@testable import StarlingCrypto

struct CacophonyVector: Decodable, Sendable, CustomTestStringConvertible {
    struct Message: Decodable, Sendable { let payload: String; let ciphertext: String }
    let protocol_name: String
    let init_prologue: String
    let init_ephemeral: String
    let init_static: String?
    let init_remote_static: String?
    let init_psks: [String]?
    let resp_prologue: String
    let resp_ephemeral: String?
    let resp_static: String?
    let resp_remote_static: String?
    let resp_psks: [String]?
    let handshake_hash: String
    let messages: [Message]

    var testDescription: String { protocol_name }
}

/// Every protocol in the cacophony vectors (59 for 25519/ChaChaPoly/SHA256):
/// handshake messages, handshake hash and transport messages, both sides.
@Suite struct NoiseVectorTests {
    static let vectors: [CacophonyVector] = {
        struct File: Decodable { let vectors: [CacophonyVector] }
        let data = try! Data(contentsOf: vectorURL("noise_cacophony_25519_ChaChaPoly_SHA256.json"))
        return try! JSONDecoder().decode(File.self, from: data).vectors
    }()

    @Test func allFiftyNineProtocolsArePresent() {
        #expect(Self.vectors.count == 59)
        #expect(Set(Self.vectors.map(\.protocol_name)).count == 59)
    }

    @Test(arguments: vectors)
    func vector(_ v: CacophonyVector) throws {
        let proto = try NoiseProtocol(v.protocol_name)
        var initiator = try HandshakeState(
            protocol: proto, initiator: true, prologue: h(v.init_prologue),
            localStatic: x25519(v.init_static), localEphemeral: x25519(v.init_ephemeral),
            remoteStatic: v.init_remote_static.map(h), psks: (v.init_psks ?? []).map(h))
        var responder = try HandshakeState(
            protocol: proto, initiator: false, prologue: h(v.resp_prologue),
            localStatic: x25519(v.resp_static), localEphemeral: x25519(v.resp_ephemeral),
            remoteStatic: v.resp_remote_static.map(h), psks: (v.resp_psks ?? []).map(h))

        let handshakeCount = proto.pattern.messages.count
        var i = 0
        while !initiator.isComplete {
            let m = v.messages[i]
            let fromInitiator = i % 2 == 0
            let written = fromInitiator ? try initiator.writeMessage(payload: h(m.payload))
                                        : try responder.writeMessage(payload: h(m.payload))
            #expect(written.hexString == m.ciphertext, "handshake message \(i)")
            let read = fromInitiator ? try responder.readMessage(written) : try initiator.readMessage(written)
            #expect(read.hexString == m.payload, "handshake payload \(i)")
            i += 1
        }
        #expect(i == handshakeCount)
        #expect(responder.isComplete)
        #expect(initiator.handshakeHash.hexString == v.handshake_hash)
        #expect(responder.handshakeHash.hexString == v.handshake_hash)

        var (iSend, iReceive) = try initiator.split()
        var (rReceive, rSend) = try responder.split()
        for (j, m) in v.messages.enumerated().dropFirst(handshakeCount) {
            let fromInitiator = proto.pattern.isOneWay || j % 2 == 0
            let sealed = fromInitiator ? try iSend.encrypt(ad: [], plaintext: h(m.payload))
                                       : try rSend.encrypt(ad: [], plaintext: h(m.payload))
            #expect(sealed.hexString == m.ciphertext, "transport message \(j)")
            let opened = fromInitiator ? try rReceive.decrypt(ad: [], ciphertext: sealed)
                                       : try iReceive.decrypt(ad: [], ciphertext: sealed)
            #expect(opened.hexString == m.payload)
        }
    }
}
