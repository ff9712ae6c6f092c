import Foundation
import StarlingTransport
import StarlingWiFiSet
import StarlingWire

/// A GATT-like link between two processes over UDP on loopback, so that the
/// WiFiSet device emulator and the phone SDK run in separate processes exactly
/// as they will over BLE. One datagram per ATT operation:
///
/// ```
/// op u8 ‖ characteristic u8 ‖ value
/// 0x01 CONNECT     central → device   value = the MTU it asks for (u16 LE)
/// 0x02 CONNECTED   device → central   value = the MTU agreed (u16 LE, the smaller)
/// 0x03 SUBSCRIBE   central → device
/// 0x04 WRITE       central → device   value ≤ MTU − 3
/// 0x06 NOTIFY      device → central   value ≤ MTU − 3
/// 0x07 DISCONNECT  either way
/// ```
public enum GATTOverUDP {
    enum Op: UInt8 {
        case connect = 0x01, connected = 0x02, subscribe = 0x03, write = 0x04, notify = 0x06, disconnect = 0x07
    }

    static func datagram(_ op: Op, _ c: WiFiSetGATT.Characteristic? = nil, _ value: [UInt8] = []) -> [UInt8] {
        [op.rawValue, c?.rawValue ?? 0] + value
    }

    static func mtuBytes(_ mtu: Int) -> [UInt8] { [UInt8(mtu & 0xFF), UInt8(mtu >> 8 & 0xFF)] }
    static func mtu(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count == 2 else { return nil }
        return Int(bytes[bytes.startIndex]) | Int(bytes[bytes.startIndex + 1]) << 8
    }

    /// The device's end: serves one central at a time on a port.
    public final class Peripheral: WiFiSetPeripheral, @unchecked Sendable {
        private let socket: UDPSocket
        private let lock = NSLock()
        private var central: UDPAddress?
        private var agreed: Int
        public let maxMTU: Int
        public let events: AsyncStream<WiFiSetPeripheralEvent>
        private var pump: Task<Void, Never>?

        public var port: UInt16 { socket.localPort }

        public init(port: UInt16, maxMTU: Int = 512) throws {
            socket = try UDPSocket(bindTo: .loopback(port))
            self.maxMTU = maxMTU
            agreed = 23
            let (stream, continuation) = AsyncStream.makeStream(of: WiFiSetPeripheralEvent.self)
            events = stream
            let datagrams = socket.datagrams()
            pump = Task { [weak self] in
                for await (from, bytes) in datagrams {
                    guard let self else { break }
                    for e in self.handle(bytes, from: from) { continuation.yield(e) }
                }
                continuation.finish()
            }
        }

        public var mtu: Int { lock.withLock { agreed } }

        func handle(_ bytes: [UInt8], from: UDPAddress) -> [WiFiSetPeripheralEvent] {
            guard bytes.count >= 2, let op = Op(rawValue: bytes[0]) else { return [] }
            let c = WiFiSetGATT.Characteristic(rawValue: bytes[1])
            lock.lock()
            defer { lock.unlock() }
            switch op {
            case .connect:
                let asked = GATTOverUDP.mtu(bytes[2...]) ?? 23
                agreed = max(23, min(asked, maxMTU))
                var out: [WiFiSetPeripheralEvent] = []
                if let old = central, old != from { out.append(.disconnected) } // a new phone replaces the old one
                central = from
                socket.send(GATTOverUDP.datagram(.connected, nil, GATTOverUDP.mtuBytes(agreed)), to: from)
                return out
            case .subscribe:
                guard from == central, let c else { return [] }
                return [.subscribed(c)]
            case .write:
                guard from == central, let c, bytes.count - 2 <= WiFiSetGATT.valueSize(mtu: agreed) else { return [] }
                return [.written(c, Array(bytes[2...]))]
            case .disconnect:
                guard from == central else { return [] }
                central = nil
                return [.disconnected]
            case .connected, .notify:
                return []
            }
        }

        private func current() -> (UDPAddress?, Int) {
            lock.withLock { (central, agreed) }
        }

        public func notify(_ c: WiFiSetGATT.Characteristic, _ value: [UInt8]) async {
            let (to, mtu) = current()
            guard let to, value.count <= WiFiSetGATT.valueSize(mtu: mtu) else { return }
            socket.send(GATTOverUDP.datagram(.notify, c, value), to: to)
        }

        public func close() {
            pump?.cancel()
            socket.close()
        }
    }

    /// The phone's end: connects to a device's address.
    public final class Central: WiFiSetCentral, @unchecked Sendable {
        public enum Error: Swift.Error, CustomStringConvertible {
            case noDevice(UDPAddress)
            public var description: String {
                switch self {
                case let .noDevice(a): "no WiFiSet device answered at \(a)"
                }
            }
        }

        private let socket: UDPSocket
        private let device: UDPAddress
        public let mtu: Int
        public let notifications: AsyncStream<(WiFiSetGATT.Characteristic, [UInt8])>
        private var pump: Task<Void, Never>?

        /// Connects (asking for `mtu`) and waits up to `timeout` for the device
        /// (10 s: a device that is starting, on a loaded machine, answers late).
        public static func connect(to device: UDPAddress, mtu: Int = 512, timeout: Duration = .seconds(10)) async throws -> Central {
            let socket = try UDPSocket(bindTo: .loopback(0))
            let datagrams = socket.datagrams()
            let (stream, continuation) = AsyncStream.makeStream(of: (WiFiSetGATT.Characteristic, [UInt8]).self)
            let (agreed, agreedContinuation) = AsyncStream.makeStream(of: Int.self)
            let pump = Task {
                for await (from, bytes) in datagrams where from == device && bytes.count >= 2 {
                    switch Op(rawValue: bytes[0]) {
                    case .connected: if let m = GATTOverUDP.mtu(bytes[2...]) { agreedContinuation.yield(m) }
                    case .notify: if let c = WiFiSetGATT.Characteristic(rawValue: bytes[1]) { continuation.yield((c, Array(bytes[2...]))) }
                    case .disconnect: continuation.finish()
                    default: break
                    }
                }
                continuation.finish()
            }
            let deadline = ContinuousClock.now + timeout
            var got: Int?
            while got == nil, ContinuousClock.now < deadline {
                socket.send(GATTOverUDP.datagram(.connect, nil, GATTOverUDP.mtuBytes(mtu)), to: device)
                got = await withTaskGroup(of: Int?.self) { group in
                    group.addTask { for await m in agreed { return m }; return nil }
                    group.addTask { try? await Task.sleep(for: .milliseconds(300)); return nil }
                    let first = await group.next() ?? nil
                    group.cancelAll()
                    return first
                }
            }
            guard let got else {
                pump.cancel()
                socket.close()
                throw Error.noDevice(device)
            }
            return Central(socket: socket, device: device, mtu: got, notifications: stream, pump: pump)
        }

        private init(socket: UDPSocket, device: UDPAddress, mtu: Int, notifications: AsyncStream<(WiFiSetGATT.Characteristic, [UInt8])>,
                     pump: Task<Void, Never>) {
            self.socket = socket
            self.device = device
            self.mtu = mtu
            self.notifications = notifications
            self.pump = pump
        }

        public func subscribe(_ c: WiFiSetGATT.Characteristic) async throws {
            socket.send(GATTOverUDP.datagram(.subscribe, c), to: device)
        }

        public func write(_ c: WiFiSetGATT.Characteristic, _ value: [UInt8]) async throws {
            guard value.count <= WiFiSetGATT.valueSize(mtu: mtu) else {
                throw WiFiSetLinkError.valueTooLarge(bytes: value.count, limit: WiFiSetGATT.valueSize(mtu: mtu))
            }
            socket.send(GATTOverUDP.datagram(.write, c, value), to: device)
        }

        public func disconnect() async {
            socket.send(GATTOverUDP.datagram(.disconnect), to: device)
            pump?.cancel()
            socket.close()
        }
    }
}
