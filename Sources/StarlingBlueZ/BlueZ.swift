import Foundation
import StarlingDBus

/// BlueZ, the Linux Bluetooth stack, over D-Bus: what the BLE transport needs
/// of it. Both roles: a GATT peripheral (an application with one service and
/// one characteristic, and an LE advertisement) and a central (discovery,
/// connection, notifications, writes without response).
public enum BlueZ {
    public static let bus = "org.bluez"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"
    static let properties = "org.freedesktop.DBus.Properties"

    /// Every object BlueZ has, with its interfaces and their properties.
    public static func objects(_ bus: DBusConnection) async throws -> [String: [String: [String: DBusValue]]] {
        let reply = try await bus.call(Self.bus, "/", objectManager, "GetManagedObjects")
        var out: [String: [String: [String: DBusValue]]] = [:]
        for (path, interfaces) in reply.first?.dictionary ?? [:] {
            var ifaces: [String: [String: DBusValue]] = [:]
            for (name, props) in interfaces.dictionary ?? [:] { ifaces[name] = props.dictionary ?? [:] }
            out[path] = ifaces
        }
        return out
    }

    /// The adapters (hci0, hci1 …) by object path, with their properties.
    public static func adapters(_ bus: DBusConnection) async throws -> [String: [String: DBusValue]] {
        try await objects(bus).compactMapValues { $0["org.bluez.Adapter1"] }
    }

    public static func set(_ bus: DBusConnection, _ path: String, _ interface: String, _ name: String, _ value: DBusValue) async throws {
        _ = try await bus.call(Self.bus, path, properties, "Set", [.string(interface), .string(name), .variant(value)])
    }
}

/// This node as a BLE peripheral: a GATT application with the service and its
/// characteristic (notify, write, write without response, read), and an LE
/// advertisement of the service UUID with no local name.
public final class BlueZPeripheral: @unchecked Sendable {
    public let adapter: String
    public let serviceUUID: String
    public let characteristicUUID: String
    public let root: String
    private let bus: DBusConnection
    private let lock = NSLock()
    private var value: [UInt8] = []
    private var notifying = false
    /// Values centrals wrote: the device object that wrote each, and the MTU BlueZ reported.
    public struct Write: Sendable {
        public var device: String
        public var bytes: [UInt8]
        public var mtu: Int?
    }
    public let writes: AsyncStream<Write>
    private let writeContinuation: AsyncStream<Write>.Continuation

    var servicePath: String { root + "/service0" }
    var characteristicPath: String { root + "/service0/char0" }
    var advertisementPath: String { root + "/advertisement0" }

    public init(bus: DBusConnection, adapter: String, serviceUUID: String, characteristicUUID: String,
                root: String = "/org/starling/ble") {
        self.bus = bus
        self.adapter = adapter
        self.serviceUUID = serviceUUID.lowercased()
        self.characteristicUUID = characteristicUUID.lowercased()
        self.root = root
        (writes, writeContinuation) = AsyncStream.makeStream(of: Write.self, bufferingPolicy: .bufferingNewest(1_024))
    }

    public var isNotifying: Bool { lock.withLock { notifying } }

    func serviceProperties() -> [String: DBusValue] {
        // Only GattService1's documented properties (strict clients refuse others).
        ["UUID": .string(serviceUUID), "Primary": .bool(true), "Handle": .uint16(0x000C)]
    }

    func characteristicProperties() -> [String: DBusValue] {
        lock.withLock {
            ["UUID": .string(characteristicUUID), "Service": .objectPath(servicePath), "Value": .bytes(value),
             "Notifying": .bool(notifying), "Flags": .strings(["read", "write", "write-without-response", "notify"]),
             "Handle": .uint16(0x0010)]
        }
    }

    func advertisementProperties() -> [String: DBusValue] {
        ["Type": .string("peripheral"), "ServiceUUIDs": .strings([serviceUUID]), "Discoverable": .bool(true)]
    }

    /// Exports the objects and registers them with BlueZ.
    public func start() async throws {
        try bus.export(root, subtree: true) { [weak self] call in
            guard let self else { return .notHandled }
            return self.handle(call)
        }
        _ = try await bus.call(BlueZ.bus, adapter, "org.bluez.GattManager1", "RegisterApplication",
                               [.objectPath(root), .properties([:])])
        _ = try await bus.call(BlueZ.bus, adapter, "org.bluez.LEAdvertisingManager1", "RegisterAdvertisement",
                               [.objectPath(advertisementPath), .properties([:])])
    }

    public func stop() async {
        _ = try? await bus.call(BlueZ.bus, adapter, "org.bluez.LEAdvertisingManager1", "UnregisterAdvertisement", [.objectPath(advertisementPath)])
        _ = try? await bus.call(BlueZ.bus, adapter, "org.bluez.GattManager1", "UnregisterApplication", [.objectPath(root)])
        bus.unexport(root)
        writeContinuation.finish()
    }

    /// Notifies every subscribed central (BlueZ sends a notification to each).
    public func notify(_ bytes: [UInt8]) throws {
        lock.withLock { value = bytes }
        try bus.emit(characteristicPath, BlueZ.properties, "PropertiesChanged",
                     [.string("org.bluez.GattCharacteristic1"), .properties(["Value": .bytes(bytes)]), .strings([])])
    }

    private func props(of path: String, _ interface: String) -> [String: DBusValue]? {
        switch (path, interface) {
        case (servicePath, "org.bluez.GattService1"): serviceProperties()
        case (characteristicPath, "org.bluez.GattCharacteristic1"): characteristicProperties()
        case (advertisementPath, "org.bluez.LEAdvertisement1"): advertisementProperties()
        default: nil
        }
    }

    private func handle(_ call: DBusMessageInfo) -> DBusReply {
        let path = call.path ?? ""
        switch (call.interface, call.member) {
        case (BlueZ.objectManager, "GetManagedObjects") where path == root:
            let objects: [(String, String, [String: DBusValue])] = [
                (servicePath, "org.bluez.GattService1", serviceProperties()),
                (characteristicPath, "org.bluez.GattCharacteristic1", characteristicProperties()),
            ]
            return .values([.dictionary(key: "o", value: "a{sa{sv}}", objects.map { p, i, props in
                .init(.objectPath(p), .dictionary(key: "s", value: "a{sv}", [.init(.string(i), .properties(props))]))
            })])
        case (BlueZ.properties, "GetAll"):
            guard let iface = call.args.first?.string else { return .error(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "interface?") }
            return .values([.properties(props(of: path, iface) ?? [:])])
        case (BlueZ.properties, "Get"):
            guard call.args.count == 2, let iface = call.args[0].string, let name = call.args[1].string,
                  let v = props(of: path, iface)?[name] else {
                return .error(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "no such property")
            }
            return .values([.variant(v)])
        case ("org.bluez.GattCharacteristic1", "ReadValue") where path == characteristicPath:
            return .values([.bytes(lock.withLock { value })])
        case ("org.bluez.GattCharacteristic1", "WriteValue") where path == characteristicPath:
            guard let bytes = call.args.first?.bytes else { return .error(name: "org.bluez.Error.InvalidArguments", message: "value?") }
            let options = call.args.dropFirst().first?.dictionary
            writeContinuation.yield(Write(device: options?["device"]?.string ?? "", bytes: bytes, mtu: options?["mtu"]?.int))
            return .values([])
        case ("org.bluez.GattCharacteristic1", "StartNotify") where path == characteristicPath:
            lock.withLock { notifying = true }
            return .values([])
        case ("org.bluez.GattCharacteristic1", "StopNotify") where path == characteristicPath:
            lock.withLock { notifying = false }
            return .values([])
        case ("org.bluez.GattCharacteristic1", "Confirm"), ("org.bluez.LEAdvertisement1", "Release"):
            return .values([])
        default:
            return .notHandled
        }
    }
}

/// This node as a BLE central: finds devices that offer the service (filtered
/// here, not by BlueZ's UUID filter, which has crashed bluetoothd 5.87),
/// connects, subscribes, writes without response.
public final class BlueZCentral: @unchecked Sendable {
    public let adapter: String
    public let serviceUUID: String
    public let characteristicUUID: String
    private let bus: DBusConnection

    public init(bus: DBusConnection, adapter: String, serviceUUID: String, characteristicUUID: String) {
        self.bus = bus
        self.adapter = adapter
        self.serviceUUID = serviceUUID.lowercased()
        self.characteristicUUID = characteristicUUID.lowercased()
    }

    public func startDiscovery() async throws {
        _ = try await bus.call(BlueZ.bus, adapter, "org.bluez.Adapter1", "StartDiscovery")
    }

    public func stopDiscovery() async {
        _ = try? await bus.call(BlueZ.bus, adapter, "org.bluez.Adapter1", "StopDiscovery")
    }

    /// Devices under this adapter that advertise the service, with their RSSI when known.
    public func candidates() async throws -> [(path: String, address: String, rssi: Int?)] {
        try await BlueZ.objects(bus).compactMap { path, ifaces in
            guard path.hasPrefix(adapter + "/"), let d = ifaces["org.bluez.Device1"],
                  let uuids = d["UUIDs"]?.array?.compactMap(\.string).map({ $0.lowercased() }),
                  uuids.contains(serviceUUID) else { return nil }
            return (path, d["Address"]?.string ?? "", d["RSSI"]?.int)
        }.sorted { $0.path < $1.path }
    }

    /// Connects to a device, finds the characteristic once services resolve,
    /// and subscribes to its notifications.
    public func connect(_ device: String, timeout: Duration = .seconds(10)) async throws -> BlueZLink {
        try await bus.addMatch("type='signal',sender='\(BlueZ.bus)',interface='\(BlueZ.properties)',member='PropertiesChanged',path_namespace='\(device)'")
        _ = try await bus.call(BlueZ.bus, device, "org.bluez.Device1", "Connect", timeout: timeout)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let objects = try await BlueZ.objects(bus)
            if let (path, _) = objects.first(where: { p, ifaces in
                p.hasPrefix(device + "/") && ifaces["org.bluez.GattCharacteristic1"]?["UUID"]?.string?.lowercased() == characteristicUUID
            }) {
                let mtu = objects[path]?["org.bluez.GattCharacteristic1"]?["MTU"]?.int ?? 23
                let link = BlueZLink(bus: bus, device: device, characteristic: path, mtu: mtu)
                _ = try await bus.call(BlueZ.bus, path, "org.bluez.GattCharacteristic1", "StartNotify")
                return link
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw DBusError(name: "org.starling.Error.Timeout", message: "no \(characteristicUUID) characteristic on \(device)")
    }
}

/// One connection to a peripheral: write without response, notifications in.
public final class BlueZLink: @unchecked Sendable {
    public let device: String
    public let characteristic: String
    /// The ATT MTU BlueZ reports (a value carries MTU − 3 bytes).
    public let mtu: Int
    private let bus: DBusConnection
    public let notifications: AsyncStream<[UInt8]>

    init(bus: DBusConnection, device: String, characteristic: String, mtu: Int) {
        self.bus = bus
        self.device = device
        self.characteristic = characteristic
        self.mtu = mtu
        let path = characteristic
        let signals = bus.signals
        notifications = AsyncStream { continuation in
            let task = Task {
                for await s in signals where s.path == path && s.member == "PropertiesChanged"
                    && s.args.first?.string == "org.bluez.GattCharacteristic1" {
                    if let v = s.args.dropFirst().first?.dictionary?["Value"]?.bytes { continuation.yield(v) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func write(_ bytes: [UInt8]) async throws {
        _ = try await bus.call(BlueZ.bus, characteristic, "org.bluez.GattCharacteristic1", "WriteValue",
                               [.bytes(bytes), .properties(["type": .string("command")])])
    }

    public func disconnect() async {
        _ = try? await bus.call(BlueZ.bus, characteristic, "org.bluez.GattCharacteristic1", "StopNotify")
        _ = try? await bus.call(BlueZ.bus, device, "org.bluez.Device1", "Disconnect")
    }
}
