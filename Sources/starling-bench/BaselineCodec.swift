import Foundation
import StarlingWire

/// A baseline for the codec benchmark: the straightforward approach of building
/// and reading the packet in Foundation `Data` one field at a time, with a
/// copy per field, as most bitchat implementations do. Same bytes out as
/// `Packet.encoded()` for uncompressed, unrouted v1 packets.
enum BaselineCodec {
    struct Decoded {
        var type: UInt8, ttl: UInt8, timestamp: UInt64, flags: UInt8
        var sender: Data, recipient: Data?, payload: Data, signature: Data?
    }

    static func encode(_ p: Packet) -> Data {
        var data = Data()
        data.append(p.version)
        data.append(p.type.rawValue)
        data.append(p.ttl)
        for i in (0..<8).reversed() { data.append(UInt8((p.timestamp >> (UInt64(i) * 8)) & 0xFF)) }
        var flags: UInt8 = 0
        if p.recipientID != nil { flags |= 0x01 }
        if p.signature != nil { flags |= 0x02 }
        data.append(flags)
        let length = UInt16(p.payload.count)
        data.append(UInt8(length >> 8))
        data.append(UInt8(length & 0xFF))
        data.append(Data(p.senderID.bytes))
        if let r = p.recipientID { data.append(Data(r.bytes)) }
        data.append(Data(p.payload))
        if let s = p.signature { data.append(Data(s.bytes)) }
        return data
    }

    static func decode(_ data: Data) -> Decoded? {
        guard data.count >= 22, data[0] == 1 else { return nil }
        let type = data[1], ttl = data[2]
        let timestamp = data[3..<11].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let flags = data[11]
        let length = Int(data[12..<14].reduce(UInt16(0)) { $0 << 8 | UInt16($1) })
        var offset = 14
        let sender = Data(data[offset..<offset + 8]); offset += 8
        var recipient: Data?
        if flags & 0x01 != 0 {
            guard data.count >= offset + 8 else { return nil }
            recipient = Data(data[offset..<offset + 8]); offset += 8
        }
        guard data.count >= offset + length else { return nil }
        let payload = Data(data[offset..<offset + length]); offset += length
        var signature: Data?
        if flags & 0x02 != 0 {
            guard data.count >= offset + 64 else { return nil }
            signature = Data(data[offset..<offset + 64])
        }
        return Decoded(type: type, ttl: ttl, timestamp: timestamp, flags: flags,
                       sender: sender, recipient: recipient, payload: payload, signature: signature)
    }
}
