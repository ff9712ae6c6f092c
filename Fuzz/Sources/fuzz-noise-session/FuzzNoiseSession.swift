import StarlingCrypto
import StarlingWire

/// libFuzzer entry point: untrusted bytes as Noise handshake messages and
/// transport frames, against a session manager mid-handshake and established.
/// Input: u8 selector ‖ bytes.
let responderIdentity = Identity.generate()
let initiatorIdentity = Identity.generate()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNoiseSession(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let selector = bytes.first else { return 0 }
    let body = Array(bytes.dropFirst())
    let peer = initiatorIdentity.peerID
    var b = SessionManager(identity: responderIdentity)
    switch selector % 3 {
    case 0: // as a first message
        _ = try? b.receiveHandshake(body, from: peer, now: 0)
    case 1: // as a third message, after a real first one
        var a = SessionManager(identity: initiatorIdentity)
        guard let m1 = try? a.initiateHandshake(with: responderIdentity.peerID, now: 0),
              (try? b.receiveHandshake(m1, from: peer, now: 0))?.reply != nil else { fatalError("handshake setup") }
        _ = try? b.receiveHandshake(body, from: peer, now: 0)
    default: // as a transport frame on an established session
        var a = SessionManager(identity: initiatorIdentity)
        let m1 = try! a.initiateHandshake(with: responderIdentity.peerID, now: 0)
        let m2 = try! b.receiveHandshake(m1, from: peer, now: 0).reply!
        let m3 = try! a.receiveHandshake(m2, from: responderIdentity.peerID, now: 0).reply!
        _ = try! b.receiveHandshake(m3, from: peer, now: 0)
        if case .plaintext? = try? b.open(body, from: peer, now: 0) { fatalError("a forged frame opened") }
    }
    return 0
}
