import Crypto
import Foundation
@testable import StarlingCrypto

func h(_ text: String) -> [UInt8] {
    var out = [UInt8]()
    var high: UInt8?
    for c in text.utf8 {
        let v: UInt8
        switch c {
        case 48...57: v = c - 48
        case 97...102: v = c - 87
        case 65...70: v = c - 55
        default: continue
        }
        if let hi = high { out.append(hi << 4 | v); high = nil } else { high = v }
    }
    return out
}

extension Array where Element == UInt8 {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}

func vectorURL(_ name: String) -> URL {
    Bundle.module.url(forResource: "Vectors/\(name)", withExtension: nil)!
}

func x25519(_ hex: String?) -> X25519PrivateKey? {
    guard let hex else { return nil }
    return try! X25519PrivateKey(rawRepresentation: h(hex))
}
