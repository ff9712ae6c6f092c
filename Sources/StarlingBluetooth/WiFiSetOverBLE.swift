import Foundation
import StarlingBlueZ
import StarlingDBus
import StarlingWiFiSet

/// WiFiSet over Bluetooth LE through BlueZ: the device emulator serves the
/// seed's service and three characteristics as a GATT peripheral; the phone's
/// client connects as a central.
public enum WiFiSetOverBLE {
    static func uuid(_ c: WiFiSetGATT.Characteristic) -> String { c.uuid.lowercased() }
    static func characteristic(_ uuid: String) -> WiFiSetGATT.Characteristic? {
        WiFiSetGATT.Characteristic.allCases.first { $0.uuid.lowercased() == uuid.lowercased() }
    }

    /// The device's end.
    public final class Peripheral: WiFiSetPeripheral, @unchecked Sendable {
        private let gatt: BlueZPeripheral
        private let lock = NSLock()
        private var lastMTU: Int
        public let events: AsyncStream<WiFiSetPeripheralEvent>
        private var pump: Task<Void, Never>?

        public init(bus: DBusConnection, adapter: String, mtu: Int = 512) {
            gatt = BlueZPeripheral(bus: bus, adapter: adapter.hasPrefix("/") ? adapter : "/org/bluez/" + adapter,
                                   serviceUUID: WiFiSetGATT.serviceUUID, characteristics: [
                                       .init(uuid: WiFiSetGATT.Characteristic.wifiList.uuid, flags: ["read", "notify"]),
                                       .init(uuid: WiFiSetGATT.Characteristic.credentialWrite.uuid, flags: ["write"]),
                                       .init(uuid: WiFiSetGATT.Characteristic.status.uuid, flags: ["read", "notify"]),
                                   ], root: "/org/starling/wifiset")
            lastMTU = mtu
            let (stream, continuation) = AsyncStream.makeStream(of: WiFiSetPeripheralEvent.self)
            events = stream
            let source = gatt.events
            pump = Task { [weak self] in
                for await e in source {
                    switch e {
                    case let .write(w):
                        if let m = w.mtu { self?.lock.withLock { self?.lastMTU = m } }
                        if let c = WiFiSetOverBLE.characteristic(w.characteristic) { continuation.yield(.written(c, w.bytes)) }
                    case let .subscribed(uuid):
                        if let c = WiFiSetOverBLE.characteristic(uuid) { continuation.yield(.subscribed(c)) }
                    case .unsubscribed:
                        break
                    }
                }
                continuation.finish()
            }
        }

        public func start() async throws { try await gatt.start() }
        public func stop() async { await gatt.stop() }

        public var mtu: Int { lock.withLock { lastMTU } }

        public func notify(_ c: WiFiSetGATT.Characteristic, _ value: [UInt8]) async {
            do { try gatt.notify(value, on: WiFiSetOverBLE.uuid(c)) } catch {
                BlueZ.logger.debug("WiFiSet notification failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// The phone's end.
    public final class Central: WiFiSetCentral, @unchecked Sendable {
        private let device: BlueZDevice
        public let mtu: Int
        public let notifications: AsyncStream<(WiFiSetGATT.Characteristic, [UInt8])>

        /// Finds the first device advertising the WiFiSet service and connects.
        public static func connect(bus: DBusConnection, adapter: String, timeout: Duration = .seconds(20)) async throws -> Central {
            let path = adapter.hasPrefix("/") ? adapter : "/org/bluez/" + adapter
            let central = BlueZCentral(bus: bus, adapter: path, serviceUUID: WiFiSetGATT.serviceUUID)
            try await central.startDiscovery()
            let found = try await central.discover(within: timeout).first?.path
            await central.stopDiscovery()
            guard let found else { throw DBusError(name: "org.starling.Error.NotFound", message: "no WiFiSet device nearby") }
            let device = try await central.connectGATT(found, characteristics: WiFiSetGATT.Characteristic.allCases.map(\.uuid))
            return Central(device: device)
        }

        init(device: BlueZDevice) {
            self.device = device
            mtu = device.mtu
            let source = device.notifications
            notifications = AsyncStream { continuation in
                let task = Task {
                    for await (uuid, v) in source {
                        if let c = WiFiSetOverBLE.characteristic(uuid) { continuation.yield((c, v)) }
                    }
                    continuation.finish()
                }
                continuation.onTermination = { _ in task.cancel() }
            }
        }

        public func subscribe(_ c: WiFiSetGATT.Characteristic) async throws { try await device.subscribe(WiFiSetOverBLE.uuid(c)) }

        public func write(_ c: WiFiSetGATT.Characteristic, _ value: [UInt8]) async throws {
            try await device.write(value, to: WiFiSetOverBLE.uuid(c), withResponse: true)
        }

        public func disconnect() async { await device.disconnect() }
    }
}
