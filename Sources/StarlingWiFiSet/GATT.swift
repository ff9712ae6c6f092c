import StarlingWire

/// The WiFiSet GATT service of seed 003 (the stock ESP32 example UUIDs:
/// expect unrelated devices that advertise them too).
public enum WiFiSetGATT {
    public static let serviceUUID = "4FAFC201-1FB5-459E-8FCC-C5C9C331914B"

    public enum Characteristic: UInt8, Hashable, Sendable, CaseIterable {
        /// READ, NOTIFY: the device's network list (List Start, Network Entry, List End).
        case wifiList = 0x02
        /// WRITE: everything the phone sends.
        case credentialWrite = 0x03
        /// READ, NOTIFY: ACKs, status, errors and the secured-mode replies.
        case status = 0x04

        public var uuid: String {
            switch self {
            case .wifiList: "4FAFC202-1FB5-459E-8FCC-C5C9C331914B"
            case .credentialWrite: "4FAFC203-1FB5-459E-8FCC-C5C9C331914B"
            case .status: "4FAFC204-1FB5-459E-8FCC-C5C9C331914B"
            }
        }
    }

    /// The characteristic the device sends `message` on.
    public static func characteristic(for message: WiFiSet.Message) -> Characteristic {
        switch message {
        case .listStart, .networkEntry, .listEnd: .wifiList
        default: .status
        }
    }

    /// ATT takes 3 bytes of each PDU: a value carries MTU − 3 bytes.
    public static func valueSize(mtu: Int) -> Int { max(1, mtu - 3) }

    /// A message cut into values of at most `mtu − 3` bytes (seed 003,
    /// "Chunking": the receiver reads the header's length and collects
    /// notifications until the message is whole).
    public static func chunks(_ message: [UInt8], mtu: Int) -> [[UInt8]] {
        let size = valueSize(mtu: mtu)
        return stride(from: 0, to: max(message.count, 1), by: size).map { Array(message[$0..<min($0 + size, message.count)]) }
    }
}

/// Collects the values of one characteristic into whole messages: the header
/// says how long each is. A partial message older than `staleAfter` (a lost
/// chunk) is dropped; so is anything longer than `maxMessage`.
public struct WiFiSetAssembler: Sendable {
    public var maxMessage = 1_024
    public var staleAfter: UInt64 = 2_000
    private var buffer: [UInt8] = []
    private var lastAt: UInt64 = 0
    public private(set) var dropped = 0

    public init() {}

    public var isEmpty: Bool { buffer.isEmpty }

    /// Adds a value; returns the messages it completes.
    public mutating func add(_ value: [UInt8], now: UInt64) -> [[UInt8]] {
        if !buffer.isEmpty, now > lastAt, now - lastAt > staleAfter {
            buffer = []
            dropped += 1
        }
        lastAt = now
        buffer += value
        var out: [[UInt8]] = []
        while let length = WiFiSet.messageLength(buffer) {
            guard length <= maxMessage else {
                buffer = []
                dropped += 1
                break
            }
            guard buffer.count >= length else { break }
            out.append(Array(buffer[0..<length]))
            buffer.removeFirst(length)
        }
        return out
    }

    public mutating func reset() { buffer = [] }
}
