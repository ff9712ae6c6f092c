import Crypto
import Foundation
@testable import StarlingCrypto
import StarlingWire

/// Bytes from hex written for reading (StarlingWire's parser).
func h(_ text: String) -> [UInt8] {
    try! [UInt8](hex: text)
}

func vectorURL(_ name: String) -> URL {
    Bundle.module.url(forResource: "Vectors/\(name)", withExtension: nil)!
}

func x25519(_ hex: String?) -> X25519PrivateKey? {
    guard let hex else { return nil }
    return try! X25519PrivateKey(rawRepresentation: h(hex))
}
