import StarlingCrypto
import StarlingWire
import StarlingYaOK

/// The identity whose messages the harness tries to open (private keys of one
/// repeated byte, as in docs/PROTOCOL.md's examples).
let bob = Identity(noiseKey: try! .init(rawRepresentation: [UInt8](repeating: 3, count: 32)),
                   signingKey: try! .init(rawRepresentation: [UInt8](repeating: 4, count: 32)))
let bobID = UserID(bytes: [UInt8](repeating: 0x0B, count: 16))!
let aliceSigningKey = Identity(noiseKey: try! .init(rawRepresentation: [UInt8](repeating: 1, count: 32)),
                               signingKey: try! .init(rawRepresentation: [UInt8](repeating: 2, count: 32))).signingPublicKey

/// libFuzzer entry point: untrusted bytes as Ya OK's contact card (bytes and
/// URI, with its signature check), sealed message (opened as bob), sealed body
/// and base64. What decodes must re-encode to the same bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzYaOK(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let card = try? ContactCardBytes.decode(bytes) {
        guard (try? card.encode()) == bytes else { fatalError("a decoded contact card did not re-encode to its bytes") }
    }
    _ = try? ContactCard(bytes: bytes)
    let text = String(decoding: bytes, as: UTF8.self)
    _ = try? ContactCard(uri: text)
    _ = Base64.decode(text)
    if let message = try? SealedMessageBytes.decode(bytes) {
        guard message.encode() == bytes else { fatalError("a decoded sealed message did not re-encode to its bytes") }
    }
    _ = try? SealedMessage.open(bytes, as: bobID, with: bob, senderSigningKey: aliceSigningKey)
    if let body = try? SealedBody.decode(bytes) {
        guard (try? body.encode()) == bytes else { fatalError("a decoded sealed body did not re-encode to its bytes") }
    }
    return 0
}
